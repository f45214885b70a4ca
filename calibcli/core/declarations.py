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
import operator
import types
import typing
from collections.abc import Callable
from typing import Any

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
WEIGHT_COL = Param(("--weight-col",), "Column with sample (frequency) weights.")
GROUP_BY = Param(
    ("--group-by",),
    "Report one entry per value of these columns (comma-separated; hive partition columns of a directory too), "
    "with the worst group and the spread.",
)
ALPHA = Param(("--alpha",), "1 - confidence level of the intervals and bounds.")
N_BOOT = Param(("--n-boot",), "Bootstrap resamples for the confidence intervals (0: none).")
#: The metric ``--fail-above`` and ``--fail-above-upper`` read (each family its own default).
GATE_METRIC = Param(("--metric",), "Metric the gates look at (a name from the report).")


def library_signature(options_class: type, *names: str) -> Callable:
    """Decorator of a library function that takes ``**options``: these declared options of ``options_class``
    become its keyword-only parameters, with the library's defaults stated in their declarations
    (:func:`library_defaults`) and their annotated types, so ``help()``, ``inspect.signature`` and an editor list
    them as if written out; a keyword it does not take is refused as Python refuses one.

    The declared options follow the function's own parameters, in the order of ``names``; a name that is one of
    the function's own keyword-only parameters (``sample_weight``) places that parameter there among them. An
    option whose library default is not None takes no None in the library: its type loses ``| None``."""
    defaults, hints = library_defaults(options_class), field_types(options_class)

    def decorate(func):
        signature = inspect.signature(func)
        own = {p.name: p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD}
        taken = {
            name: inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults[name],
                annotation=_library_type(hints[name], defaults[name]),
            )
            for name in names
            if name not in own
        }
        unplaced = [p for name, p in own.items() if name not in names]
        parameters = [*unplaced, *(own[name] if name in own else taken[name] for name in names)]
        known = set(own) | set(names)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for name in kwargs:
                if name not in known:
                    raise TypeError(f"{func.__name__}() got an unexpected keyword argument {name!r}")
            return func(*args, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def _library_type(hint: Any, default: Any) -> Any:
    """``hint`` without ``None`` when the library's ``default`` is not None (``int | None`` -> ``int``)."""
    args = typing.get_args(hint)
    if default is None or type(None) not in args or typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint
    return functools.reduce(operator.or_, [a for a in args if a is not type(None)])
