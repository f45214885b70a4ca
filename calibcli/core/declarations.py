"""The options the command line and the library share, declared once (SPEC 1, 2.1): each a
:class:`~calibcli.core.validation.Param` carrying its flag, help and choices.

The families' options dataclasses take them as fields (:mod:`calibcli.core.family` re-exports them, and narrows
one with :meth:`~calibcli.core.validation.Param.narrowed`); the library's front door (:mod:`calibcli.api`) checks
its keyword arguments against the same declarations (:func:`calibcli.core.validation.check_params`), so a value is
refused with the same words whether it came from a flag or a keyword.
"""

from __future__ import annotations

from calibcli.core.binning import STRATEGIES
from calibcli.core.modes import CLASS_WEIGHTS, MODES
from calibcli.core.validation import Param

#: The classical tests ``tcal --test`` runs (:mod:`calibcli.clinical.family`), named here so that the tcal
#: command and family list them without importing them (their family loads the calibrators and smoothing).
CLINICAL_TEST_NAMES = ("spiegelhalter", "hosmer-lemeshow", "ecce")


def auto(value):
    """How the report shows an option whose None means "chosen from the data": ``auto``."""
    return "auto" if value is None else value


MODE = Param(
    ("--mode",),
    "binary, top-label or marginal. Default: binary for one or two probability columns, top-label for K > 2.",
    choices=MODES,
    shown=auto,
)
CLASS_WEIGHTS_PARAM = Param(
    ("--class-weights",),
    "Marginal aggregate weights: uniform (1/K) or prior (class frequencies).",
    choices=CLASS_WEIGHTS,
)
N_BINS = Param(("--n-bins",), "Number of bins.", count=True)
STRATEGY = Param(("--strategy",), "Binning: uniform (equal width) or quantile (equal mass).", choices=STRATEGIES)
ALPHA = Param(("--alpha",), "1 - confidence level of the intervals and bounds.")
