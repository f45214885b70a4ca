"""The options the command line and the library share, declared once (SPEC 1, 2.1): each a
:class:`~calibcli.core.validation.Param` carrying its flag, help and choices.

The families' options dataclasses take them as fields (:mod:`calibcli.core.family` re-exports them, and narrows
one with :meth:`~calibcli.core.validation.Param.narrowed`); the library's front door (:mod:`calibcli.api`) checks
its keyword arguments against the same declarations (:func:`calibcli.core.validation.check_params`), so a value is
refused with the same words whether it came from a flag or a keyword.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from calibcli.core.binning import STRATEGIES
from calibcli.core.modes import CLASS_WEIGHTS, MODES
from calibcli.core.validation import Param, field_types, library_defaults

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


def library_signature(options_class: type, *names: str) -> Callable:
    """Decorator of a library function that takes ``**options``: these declared options of ``options_class``
    become its keyword-only parameters, with the library's defaults stated in their declarations
    (:func:`library_defaults`) and their annotated types, so ``help()``, ``inspect.signature`` and an editor list
    them as if written out; a keyword it does not take is refused as Python refuses one."""
    defaults, hints = library_defaults(options_class), field_types(options_class)

    def decorate(func):
        signature = inspect.signature(func)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        taken = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name], annotation=hints[name])
            for name in names
        ]
        known = {p.name for p in own} | set(names)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for name in kwargs:
                if name not in known:
                    raise TypeError(f"{func.__name__}() got an unexpected keyword argument {name!r}")
            return func(*args, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=[*own, *taken])  # type: ignore[attr-defined]
        return wrapper

    return decorate
