"""calibcli: measure, test and fix the calibration of probabilistic classifiers.

The library API is the compute layer the CLI uses: functions on NumPy arrays with keyword-only
options, returning frozen dataclasses. Names are imported lazily, so ``import calibcli`` stays cheap.

- :func:`binned_calibration` (SPEC 2): every binned estimator of one binary problem, with intervals.
- :func:`evaluate_binned`: the same in binary, top-label or marginal mode for (n, K) probabilities.
- :func:`smooth_ece`, :func:`smece_at_sigma`, :func:`smooth_curve` (SPEC 3): SmoothECE and the smooth
  reliability curve.
- :func:`tcal_test`, :func:`binomial_test` (SPEC 4): is the miscalibration statistically real?
- :func:`fit_calibrator`, :func:`fit_multiclass`, :func:`calibrator_from_dict` (SPEC 5): recalibration maps.
- :func:`prepare_binned`, :func:`prepare_smooth`, :func:`plot_diagram` (SPEC 6): reliability diagrams.
- :func:`read_input`, :class:`ColumnSpec`: read and validate a prediction file as the CLI does.
- :func:`ece`, :func:`dce`, :func:`sun_interval`, :func:`brier_decomposition`, :func:`brier_score`,
  :func:`log_loss`, :func:`compute` (:mod:`calibcli.metrics`): the metrics on array-likes (NumPy, lists,
  pandas, polars, pyarrow, torch/JAX), returning a :class:`MetricResult` with the CLI's numbers. Their
  SmoothECE and T-Cal are ``calibcli.metrics.smooth_ece`` and ``calibcli.metrics.tcal_test`` (the names
  ``calibcli.smooth_ece`` and ``calibcli.tcal_test`` stay the compute cores above).
- :class:`Recalibrator`, :func:`make_calibration_scorer` (:mod:`calibcli.sklearn`, needs scikit-learn):
  recalibration as a scikit-learn meta-estimator, calibration metrics as scorers.
"""

from __future__ import annotations

import importlib

from calibcli._version import __version__

_LAZY = {
    "binned_calibration": "calibcli.binned.estimators",
    "bin_statistics": "calibcli.binned.stats",
    "BinStats": "calibcli.binned.stats",
    "CalibrationResult": "calibcli.binned.estimators",
    "Metric": "calibcli.core.results",
    "ece_l2_sq_sun_interval": "calibcli.binned.estimators",
    "fit_binning": "calibcli.core.binning",
    "evaluate_binned": "calibcli.ece_family.accumulator",
    "binary_problems": "calibcli.core.modes",
    "read_input": "calibcli.io.loaded",
    "ColumnSpec": "calibcli.io.columns",
    "CalibcliError": "calibcli.core.errors",
    "smooth_ece": "calibcli.smooth.estimator",
    "smece_at_sigma": "calibcli.smooth.estimator",
    "smooth_curve": "calibcli.smooth.estimator",
    "tcal_test": "calibcli.tcal.procedure",
    "tcal_statistic": "calibcli.tcal.procedure",
    "binomial_test": "calibcli.tcal.binomial",
    "simplex_bin_index": "calibcli.tcal.simplex",
    "fit_calibrator": "calibcli.calibrators",
    "fit_multiclass": "calibcli.calibrators",
    "calibrator_from_dict": "calibcli.calibrators",
    "prepare_binned": "calibcli.diagram.data",
    "prepare_smooth": "calibcli.diagram.data",
    "plot_diagram": "calibcli.diagram.plot",
    "ece": "calibcli.metrics",
    "dce": "calibcli.metrics",
    "sun_interval": "calibcli.metrics",
    "brier_decomposition": "calibcli.metrics",
    "brier_score": "calibcli.metrics",
    "log_loss": "calibcli.metrics",
    "compute": "calibcli.metrics",
    "MetricResult": "calibcli.metrics",
    "Recalibrator": "calibcli.sklearn",
    "make_calibration_scorer": "calibcli.sklearn",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli' has no attribute {name!r}")
