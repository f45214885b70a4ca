"""calibcli: measure, test and fix the calibration of probabilistic classifiers."""

from calibcli._version import __version__

__all__ = ["__version__"]
