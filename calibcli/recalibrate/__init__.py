"""Fitting and evaluating recalibration maps over streams (``calibcli recalibrate fit|evaluate``, the
report's recalibration section): the fit and evaluate accumulators, the runs and the family. The maps
themselves are :mod:`calibcli.calibrators`."""
