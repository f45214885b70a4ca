"""The binned estimators (SPEC 1, 2): per-bin sufficient statistics, the ECE, Brier and log-loss estimators on
them, the bootstrap over bins and groups, their compiled loops and the binned accumulator."""
