"""SmoothECE (SPEC 3): the grid, the estimator, its bootstrap and compiled loops, the accumulator, the input
accumulator and the ``smece`` family."""
