"""calibcli: measure, test and fix the calibration of probabilistic classifiers.

The library API is the compute layer the CLI uses: functions on NumPy arrays with keyword-only
options, returning frozen dataclasses. Names are imported lazily, so ``import calibcli`` stays cheap.

- :func:`binned_calibration` (SPEC 2): every binned estimator of one binary problem, with intervals.
- :func:`evaluate_binned`: the same in binary, top-label or marginal mode for (n, K) probabilities.
- :func:`read_input`, :class:`ColumnSpec`: read and validate a prediction file as the CLI does.
"""

from __future__ import annotations

import importlib

from calibcli._version import __version__

_LAZY = {
    "binned_calibration": "calibcli.estimators",
    "bin_statistics": "calibcli.estimators",
    "BinStats": "calibcli.estimators",
    "CalibrationResult": "calibcli.estimators",
    "Metric": "calibcli.estimators",
    "ece_l2_sq_sun_interval": "calibcli.estimators",
    "fit_binning": "calibcli.binning",
    "evaluate_binned": "calibcli.evaluation",
    "binary_problems": "calibcli.modes",
    "read_input": "calibcli.io",
    "ColumnSpec": "calibcli.io",
    "CalibcliError": "calibcli.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli' has no attribute {name!r}")
