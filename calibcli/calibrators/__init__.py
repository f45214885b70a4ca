"""Recalibration maps: fit on (y, z), apply to new predictions, save as plain JSON (SPEC 5).

Binary methods (each ``fit_<method>(y_true, y_prob, *, ...)`` returns a frozen calibrator with
``predict(y_prob)`` and ``to_dict()``):

====================  ==============================================================  =================
method                map                                                             module
====================  ==============================================================  =================
``platt``             ``sigmoid(a logit(z) + b)``, log-loss, Newton / IRLS             :mod:`.parametric`
``temperature``       ``softmax(log P / T)``; binary via ``P = (1 - z, z)``            :mod:`.parametric`
``histogram``         mean label per bin (uniform / quantile); certificate Thm 12.6    :mod:`.binned`
``isotonic``          PAVA, ties pooled, weighted; step or linear prediction           :mod:`.isotonic`
``scaling-binning``   Platt, then equal-mass bins of g, bin means of g (Kumar et al.)  :mod:`.binned`
``polynomial``        least squares of degree d, clipped to [0, 1]                     :mod:`.parametric`
``beta``              logistic regression on ``(ln z, -ln(1 - z))`` (Kull et al.)      :mod:`.parametric`
``venn-abers``        inductive Venn-Abers ``p1 / (1 - p0 + p1)``, interval [p0, p1]   :mod:`.isotonic`
====================  ==============================================================  =================

Multiclass (:func:`fit_multiclass`): ``temperature`` natively; the others one-vs-rest (``marginal``, rows
renormalised) or on the top-label confidence (``top-label``), see :mod:`.multiclass`.

Saving: ``to_dict()`` gives a dict of JSON values (``method``, ``mode``, ``params``, ``options``, ``info``;
wrappers add ``n_classes`` and ``calibrators``); :func:`calibrator_from_dict` validates such a dict and
rebuilds the calibrator, raising :class:`~calibcli.core.errors.CalibcliError` on an unknown method or a missing
or malformed field. Floats survive JSON exactly, so ``predict`` after a round trip gives identical numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from calibcli.calibrators._common import BinaryCalibrator, Fields
from calibcli.calibrators.binned import (
    BinningCertificate,
    HistogramCalibrator,
    ScalingBinningCalibrator,
    binning_certificate,
    fit_histogram,
    fit_scaling_binning,
)
from calibcli.calibrators.isotonic import IsotonicCalibrator, VennAbersCalibrator, fit_isotonic, fit_venn_abers
from calibcli.calibrators.multiclass import WRAP_MODES, MulticlassCalibrator, top_label_problem
from calibcli.calibrators.parametric import (
    BetaCalibrator,
    PlattCalibrator,
    PolynomialCalibrator,
    TemperatureCalibrator,
    fit_beta,
    fit_platt,
    fit_polynomial,
    fit_temperature,
)
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_multiclass

METHODS = ("platt", "temperature", "histogram", "isotonic", "scaling-binning", "polynomial", "beta", "venn-abers")

#: Methods whose output takes finitely many values (a binomial test per value suits them, SPEC 4.4).
DISCRETE_METHODS = ("histogram", "scaling-binning")

_FITTERS: dict[str, Callable[..., Any]] = {
    "platt": fit_platt,
    "temperature": fit_temperature,
    "histogram": fit_histogram,
    "isotonic": fit_isotonic,
    "scaling-binning": fit_scaling_binning,
    "polynomial": fit_polynomial,
    "beta": fit_beta,
    "venn-abers": fit_venn_abers,
}

#: The keyword options each method takes (besides sample_weight and rng).
METHOD_OPTIONS: dict[str, tuple[str, ...]] = {
    "platt": ("clip",),
    "temperature": ("eps", "logits"),
    "histogram": ("n_bins", "strategy"),
    "isotonic": ("interpolation",),
    "scaling-binning": ("n_bins", "clip"),
    "polynomial": ("degree",),
    "beta": ("clip", "monotone"),
    "venn-abers": (),
}

#: Methods that accept sample weights.
WEIGHTED_METHODS = ("platt", "temperature", "histogram", "isotonic", "polynomial", "beta")

_CLASSES: dict[str, type[BinaryCalibrator]] = {
    "platt": PlattCalibrator,
    "histogram": HistogramCalibrator,
    "isotonic": IsotonicCalibrator,
    "scaling-binning": ScalingBinningCalibrator,
    "polynomial": PolynomialCalibrator,
    "beta": BetaCalibrator,
    "venn-abers": VennAbersCalibrator,
}

Calibrator = BinaryCalibrator | TemperatureCalibrator | MulticlassCalibrator


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise CalibcliError(f"unknown recalibration method {method!r}: expected one of {', '.join(METHODS)}")


def _method_kwargs(method: str, sample_weight, rng, options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(METHOD_OPTIONS[method]))
    if unknown:
        allowed = ", ".join(METHOD_OPTIONS[method]) or "none"
        raise CalibcliError(f"option {unknown[0]!r} does not apply to method {method!r} (its options: {allowed})")
    kwargs = dict(options)
    if sample_weight is not None:
        if method not in WEIGHTED_METHODS:
            raise CalibcliError(
                f"method {method!r} does not take sample weights: drop {{opt:weight_col}} or choose "
                f"one of {', '.join(WEIGHTED_METHODS)}"
            )
        kwargs["sample_weight"] = sample_weight
    if method == "scaling-binning":
        kwargs["rng"] = rng
    return kwargs


def fit_calibrator(
    method: str, y_true, y_prob, *, sample_weight=None, rng: np.random.Generator | None = None, **options
) -> BinaryCalibrator | TemperatureCalibrator:
    """Fit the binary calibrator ``method`` on labels ``y_true`` and predictions ``y_prob`` (1-D).

    ``options`` are the method's own (:data:`METHOD_OPTIONS`); ``rng`` is used by ``scaling-binning``.
    """
    _check_method(method)
    return _FITTERS[method](y_true, y_prob, **_method_kwargs(method, sample_weight, rng, options))


def fit_multiclass(
    method: str,
    y_true,
    y_prob,
    *,
    mode: str = "top-label",
    sample_weight=None,
    rng: np.random.Generator | None = None,
    **options,
) -> TemperatureCalibrator | MulticlassCalibrator:
    """Fit ``method`` to K-class probabilities ``y_prob`` (n, K) in ``mode`` (see :mod:`.multiclass`).

    ``temperature`` is fitted natively on the whole vector whatever the mode. ``marginal`` fits one
    calibrator per class (in class order, drawing from the same ``rng``), ``top-label`` one on the
    confidence, ``binary`` (K = 2 only) one on column 1.
    """
    _check_method(method)
    if method == "temperature":
        return fit_temperature(y_true, y_prob, sample_weight=sample_weight, **options)
    if mode not in WRAP_MODES:
        raise CalibcliError(f"unknown mode {mode!r} for recalibration: expected one of {', '.join(WRAP_MODES)}")
    c, P, w = check_multiclass(y_true, y_prob, sample_weight)
    K = P.shape[1]
    kwargs = _method_kwargs(method, sample_weight, rng, options)
    fit = _FITTERS[method]
    if mode == "binary":
        if K != 2:
            raise CalibcliError(
                f"mode 'binary' needs 2 probability columns, got {K}: use {{opt:mode}} top-label or marginal"
            )
        return MulticlassCalibrator("binary", 2, (fit(c, P[:, 1], **kwargs),))
    if mode == "top-label":
        correct, conf = top_label_problem(c, P)
        return MulticlassCalibrator("top-label", K, (fit(correct, conf, **kwargs),))
    return MulticlassCalibrator(
        "marginal", K, tuple(fit((c == k).astype(np.int64), P[:, k], **kwargs) for k in range(K))
    )


def _binary_from_dict(f: Fields) -> BinaryCalibrator:
    method = f.choice("method", tuple(_CLASSES))
    f.choice("mode", ("binary",))
    info = dict(f.sub("info", optional=True).any_keys().d)
    cal = _CLASSES[method].from_fields(f.sub("params"), f.sub("options", optional=True), info)
    f.check_all_read()
    return cal


#: Most classes a saved calibrator may declare (a marginal one lists a map per class, so its file bounds it
#: first; a temperature or top-label one names the count only).
MAX_SAVED_CLASSES = 2**31 - 1


def calibrator_from_dict(d: Any) -> Calibrator:
    """Rebuild a calibrator from :meth:`to_dict` output, validating every field.

    Raises :class:`~calibcli.core.errors.CalibcliError` naming the field for an unknown method or mode, a missing
    field, or a value of the wrong type, length, range or order.
    """
    f = Fields(d, "")
    method = f.get("method")
    if method not in METHODS:
        raise CalibcliError(f"calibrator: unknown method {method!r}: expected one of {', '.join(METHODS)}")
    if method == "temperature":
        info = dict(f.sub("info", optional=True).any_keys().d)
        cal = TemperatureCalibrator.from_fields(f, f.sub("params"), f.sub("options"), info)
        f.check_all_read()
        return cal
    if "calibrators" not in d:
        return _binary_from_dict(f)
    mode = f.choice("mode", WRAP_MODES)
    n_classes = f.integer("n_classes", low=2, high=MAX_SAVED_CLASSES)
    f.read.add("renormalised")  # written for the reader's information: it follows from the mode
    items = f.get("calibrators")
    expected = n_classes if mode == "marginal" else 1
    if not isinstance(items, list) or len(items) != expected:
        raise CalibcliError(
            f"calibrator: field 'calibrators' must be a list of {expected} calibrators "
            f"for mode {mode!r} with {n_classes} classes"
        )
    if mode == "binary" and n_classes != 2:
        raise CalibcliError(f"calibrator: mode 'binary' has n_classes {n_classes}: expected 2")
    calibrators = tuple(_binary_from_dict(Fields(item, f"calibrators[{i}]")) for i, item in enumerate(items))
    f.check_all_read()
    if any(cal.method != method for cal in calibrators):
        raise CalibcliError(f"calibrator: the per-class calibrators do not all use method {method!r}")
    return MulticlassCalibrator(mode, n_classes, calibrators)


__all__ = [
    "METHODS",
    "METHOD_OPTIONS",
    "WEIGHTED_METHODS",
    "DISCRETE_METHODS",
    "Calibrator",
    "BinaryCalibrator",
    "PlattCalibrator",
    "BetaCalibrator",
    "PolynomialCalibrator",
    "TemperatureCalibrator",
    "HistogramCalibrator",
    "ScalingBinningCalibrator",
    "IsotonicCalibrator",
    "VennAbersCalibrator",
    "MulticlassCalibrator",
    "BinningCertificate",
    "fit_platt",
    "fit_beta",
    "fit_polynomial",
    "fit_temperature",
    "fit_histogram",
    "fit_scaling_binning",
    "fit_isotonic",
    "fit_venn_abers",
    "fit_calibrator",
    "fit_multiclass",
    "calibrator_from_dict",
    "binning_certificate",
    "top_label_problem",
]
