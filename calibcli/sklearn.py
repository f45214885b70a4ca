"""calibcli in scikit-learn: a recalibrating meta-estimator and calibration scorers.

Install with ``pip install "calibcli[sklearn]"``.

- :class:`Recalibrator` wraps a classifier and recalibrates its ``predict_proba`` with any method of
  ``calibcli recalibrate`` (SPEC 5): on held-out data with the classifier already fitted (or wrapped in
  :class:`sklearn.frozen.FrozenEstimator`), or by cross-fitting with ``cv`` as
  :class:`sklearn.calibration.CalibratedClassifierCV` does. Its map saves to, and loads from, the calibrator
  document ``calibcli recalibrate fit`` writes (:meth:`Recalibrator.to_json`, :meth:`Recalibrator.from_json`),
  so a map fitted in Python is applied by ``calibcli recalibrate apply`` and the reverse.
- :func:`make_calibration_scorer` turns a metric of :mod:`calibcli.metrics` into a scorer for
  ``cross_validate``, ``GridSearchCV`` and friends.

scikit-learn is imported by this module only: the rest of calibcli never needs it.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, TransformerMixin, clone
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from calibcli.api import compute
from calibcli.calibrators import METHOD_OPTIONS, METHODS, WEIGHTED_METHODS, calibrator_from_dict
from calibcli.calibrators._common import BinaryCalibrator
from calibcli.calibrators.document import (
    CALIBRATOR_KIND,
    CALIBRATOR_SCHEMA_VERSION,
    calibrator_document,
    calibrator_json,
    check_document,
    fit_arrays,
    load_calibrator,
)
from calibcli.calibrators.files import parse_calibrator_json
from calibcli.calibrators.isotonic import VennAbersCalibrator
from calibcli.calibrators.multiclass import WRAP_MODES, MulticlassCalibrator
from calibcli.calibrators.parametric import TemperatureCalibrator
from calibcli.core.documents import to_json
from calibcli.core.errors import CalibcliError
from calibcli.core.outputs import write_output as write_atomic
from calibcli.core.registry import REGISTRY
from calibcli.regression import recalibration, recalibrators

#: Options of the calibration methods, as constructor parameters (None: the method's default).
OPTION_PARAMS = ("n_bins", "strategy", "degree", "interpolation", "clip", "monotone")

#: Probability column written for a binary map in the calibrator document (``calibcli recalibrate apply``
#: reads this column unless told otherwise).
BINARY_COLUMN = "prob"


class Recalibrator(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Recalibrate a classifier's probabilities with a method of ``calibcli recalibrate`` (SPEC 5).

    Parameters
    ----------
    estimator : classifier with ``predict_proba``
        With ``cv=None`` it must be fitted already (or a :class:`sklearn.frozen.FrozenEstimator`): ``fit``
        then fits only the recalibration map, on the data it is given (held out from the classifier's
        training data). With ``cv``, clones of it are fitted by cross-fitting.
    method : str, default="isotonic"
        ``platt``, ``temperature``, ``histogram``, ``isotonic``, ``scaling-binning``, ``polynomial``, ``beta``
        or ``venn-abers`` (:data:`calibcli.calibrators.METHODS`).
    mode : str, default=None
        For K > 2 classes: ``top-label`` (default) or ``marginal`` (one-vs-rest, rows renormalised);
        ``temperature`` recalibrates the whole vector whatever the mode. Two classes: the map is fitted on the
        probability of ``classes_[1]`` (``binary``), as ``calibcli recalibrate fit`` on one probability column.
    cv : int, cross-validation generator or iterable, default=None
        None: the estimator is fitted, only the map is fitted. Otherwise the folds of cross-fitting
        (:func:`sklearn.model_selection.check_cv`, stratified for an int).
    ensemble : bool, default=False
        With ``cv``: False fits one map on the out-of-fold probabilities of every row and refits the estimator
        on all of ``X`` (one map, which :meth:`to_json` saves); True keeps one (estimator, map) pair per fold
        and averages their probabilities, as ``CalibratedClassifierCV(ensemble=True)``.
    n_bins, strategy, degree, interpolation, clip, monotone : default=None
        The method's options (``calibcli recalibrate fit --n-bins`` etc.; None: the method's default). Giving
        one the method does not take is an error.
    seed : int, default=0
        Seed of the methods that draw (``scaling-binning`` splits its data at random).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    calibrated_classifiers_ : list of (estimator, calibrator) pairs
        One pair, or one per fold with ``ensemble=True``. A calibrator is a frozen object of
        :mod:`calibcli.calibrators` with ``predict`` and ``to_dict``.
    estimator_, calibrator_ :
        The fitted estimator and the map, when there is one pair.
    n_features_in_, feature_names_in_ :
        Those of the fitted estimator, when it has them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from calibcli.metrics import ece
    >>> from calibcli.sklearn import Recalibrator
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_fit, X_rest, y_fit, y_rest = train_test_split(X, y, test_size=0.6, random_state=0)
    >>> X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)
    >>> model = GaussianNB().fit(X_fit, y_fit)
    >>> recal = Recalibrator(FrozenEstimator(model), method="isotonic").fit(X_cal, y_cal)
    >>> P = recal.predict_proba(X_test)
    >>> P.shape, bool(np.allclose(P.sum(axis=1), 1.0))
    ((171, 2), True)
    >>> ece(y_test, P).name
    'ece_l1_plugin'
    """

    def __init__(
        self,
        estimator=None,
        method="isotonic",
        *,
        mode=None,
        cv=None,
        ensemble=False,
        n_bins=None,
        strategy=None,
        degree=None,
        interpolation=None,
        clip=None,
        monotone=None,
        seed=0,
    ):
        self.estimator = estimator
        self.method = method
        self.mode = mode
        self.cv = cv
        self.ensemble = ensemble
        self.n_bins = n_bins
        self.strategy = strategy
        self.degree = degree
        self.interpolation = interpolation
        self.clip = clip
        self.monotone = monotone
        self.seed = seed

    # -- parameters --------------------------------------------------------------------------

    def _method_options(self) -> dict:
        """The method's keyword options from the constructor's (as ``calibcli recalibrate fit`` builds them)."""
        if self.method not in METHODS:
            raise ValueError(f"method is {self.method!r}: expected one of {', '.join(METHODS)}")
        if self.mode is not None and self.mode not in WRAP_MODES:
            raise ValueError(f"mode is {self.mode!r}: expected None or one of {', '.join(WRAP_MODES)}")
        takes = set(METHOD_OPTIONS[self.method]) | ({"clip"} if self.method == "temperature" else set())
        options = {}
        for name in OPTION_PARAMS:
            value = getattr(self, name)
            if value is None:
                continue
            if name not in takes:
                users = [m for m in METHODS if name in METHOD_OPTIONS[m] or (name == "clip" and m == "temperature")]
                raise ValueError(
                    f"{name} does not apply to method {self.method!r}: it is an option of {', '.join(users)}"
                )
            options["eps" if (name, self.method) == ("clip", "temperature") else name] = value
        return options

    # -- fitting -----------------------------------------------------------------------------

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the recalibration map on ``(X, y)`` (and, with ``cv``, the estimator by cross-fitting).

        ``sample_weight`` weighs the rows of the map's fit (methods that take weights) and of the estimator's
        fits with ``cv`` (when its ``fit`` takes them); ``fit_params`` go to the estimator's ``fit`` (with ``cv``).
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        if self.estimator is None:
            raise ValueError("estimator is None: give the classifier to recalibrate")
        from sklearn.utils import indexable
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import _num_samples

        options = self._method_options()
        X, y = indexable(X, y)
        if _num_samples(X) == 0:
            raise ValueError(
                f"Found array with 0 sample(s) (shape={getattr(X, 'shape', (0,))}) while a minimum of 1 "
                f"is required by {type(self).__name__}."
            )
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        w = None
        if sample_weight is not None:
            from sklearn.utils.validation import _check_sample_weight

            w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
            if len(w) != len(y):
                raise ValueError(f"sample_weight has {len(w)} values but y has {len(y)}: expected one weight per row")
            w = _check_sample_weight(w, y, dtype=np.float64)  # NaN and inf: scikit-learn's own ValueError
            if self.method not in WEIGHTED_METHODS:
                raise ValueError(
                    f"method {self.method!r} does not take sample weights: fit without them, or use one of "
                    f"{', '.join(WEIGHTED_METHODS)}"
                )
        if self.cv is None:
            if fit_params:
                raise ValueError(
                    f"fit parameters {sorted(fit_params)} are for the estimator's fit, which cv=None does "
                    f"not run (the estimator is fitted already): drop them, or pass cv to cross-fit"
                )
            self._fit_prefit(X, y, w, options)
        else:
            self._fit_cross(X, y, w, options, fit_params)
        first = self.calibrated_classifiers_[0][0]
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, attr):
                setattr(self, attr, getattr(first, attr))
        self._fitted: dict[str, Any] = {"n": len(y), "weighted": w is not None, "options": options, "columns": None}
        return self

    def _fit_prefit(self, X, y, w, options):
        from sklearn.exceptions import NotFittedError

        try:
            check_is_fitted(self.estimator)
        except NotFittedError:
            raise NotFittedError(
                f"{type(self.estimator).__name__} is not fitted: with cv=None the Recalibrator fits only the map, on "
                "data held out from the estimator's training; fit the estimator first (or wrap it in "
                f"FrozenEstimator), or pass cv=5 to cross-fit both"
            ) from None
        self.classes_ = np.asarray(self.estimator.classes_)
        labels = _encode(y, self.classes_)
        present = np.unique(labels)
        if len(present) < 2:  # a map fitted on one class is a constant (it was 0.0 without a word)
            raise ValueError(
                f"y holds one class ({_value_text(self.classes_[present[0]])}): fitting the "
                f"recalibration map needs examples of at least 2 classes"
            )
        cal, mode = self._fit_map(labels, _probabilities(self.estimator, X, self.classes_), w, options)
        self._set_pairs([(self.estimator, cal)], mode)

    def _fit_cross(self, X, y, w, options, fit_params):
        from sklearn.model_selection import check_cv
        from sklearn.utils import _safe_indexing

        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"y holds one class ({_value_text(self.classes_[0])}): a classifier needs at least 2 classes"
            )
        labels = _encode(y, self.classes_)
        folds = list(check_cv(self.cv, y, classifier=True).split(X, y))
        fitted = []
        for train, _ in folds:
            train_w = None if w is None else w[train]
            fitted.append(self._fit_estimator(_safe_indexing(X, train), _safe_indexing(y, train), train_w, fit_params))
        if self.ensemble:
            pairs, mode = [], None
            for est, (_, test) in zip(fitted, folds, strict=True):
                cal, mode = self._fit_map(
                    labels[test],
                    _probabilities(est, _safe_indexing(X, test), self.classes_),
                    None if w is None else w[test],
                    options,
                )
                pairs.append((est, cal))
            self._set_pairs(pairs, mode)
            return
        P = np.empty((len(y), len(self.classes_)))
        for est, (_, test) in zip(fitted, folds, strict=True):
            P[test] = _probabilities(est, _safe_indexing(X, test), self.classes_)
        cal, mode = self._fit_map(labels, P, w, options)
        self._set_pairs([(self._fit_estimator(X, y, w, fit_params), cal)], mode)

    def _fit_estimator(self, X, y, w, fit_params):
        from sklearn.utils.validation import has_fit_parameter

        est = clone(self.estimator)
        if w is not None and has_fit_parameter(est, "sample_weight"):
            return est.fit(X, y, sample_weight=w, **fit_params)
        if w is not None:
            warnings.warn(
                f"{type(est).__name__}.fit does not take sample_weight: the weights are used by the "
                f"recalibration map only",
                UserWarning,
                stacklevel=3,
            )
        return est.fit(X, y, **fit_params)

    def _fit_map(self, labels, P, w, options):
        """The map on class indices and ``(n, K)`` probabilities: ``calibcli recalibrate fit``'s own fit
        (:func:`calibcli.calibrators.document.fit_arrays`), on the probability of ``classes_[1]`` for two classes."""
        probs = P[:, 1] if _one_column(P.shape[1], self.mode) else P
        return fit_arrays(self.method, labels, probs, w, mode=self.mode, options=options, seed=self.seed)

    def _set_pairs(self, pairs, mode):
        self.calibrated_classifiers_ = pairs
        self._map_mode = mode
        for attr in ("estimator_", "calibrator_"):
            if hasattr(self, attr):
                delattr(self, attr)
        if len(pairs) == 1:
            self.estimator_, self.calibrator_ = pairs[0]

    # -- prediction --------------------------------------------------------------------------

    def predict_proba(self, X):
        """Recalibrated class probabilities, ``(n, n_classes)``, rows summing to 1 (averaged over the pairs of an
        ensemble)."""
        check_is_fitted(self)
        out: np.ndarray | None = None
        for est, cal in self.calibrated_classifiers_:
            P = _apply(cal, _probabilities(est, X, self.classes_))
            out = P if out is None else out + P
        assert out is not None  # (a fitted Recalibrator holds at least one pair)
        return out / len(self.calibrated_classifiers_)

    def predict(self, X):
        """The class of largest recalibrated probability."""
        P = self.predict_proba(X)
        return self.classes_[np.argmax(P, axis=1)]

    def predict_interval(self, X):
        """Venn-Abers intervals ``(p0, p1)``: the isotonic fits at each prediction with the test label 0 and 1
        (SPEC 5). Two classes: the interval of the probability of ``classes_[1]`` (arrays of shape ``(n,)``);
        ``top-label``: of the recalibrated top-class confidence ``(n,)``; ``marginal``: per class before the
        rows are renormalised ``(n, K)``. Needs ``method="venn-abers"`` and one map.

        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(400, 2))
        >>> y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
        >>> va = Recalibrator(LogisticRegression(), method="venn-abers", cv=3).fit(X, y)
        >>> p0, p1 = va.predict_interval(X[:5])
        >>> bool(np.all(p0 <= p1)), p0.shape
        (True, (5,))
        """
        check_is_fitted(self)
        if self.method != "venn-abers":
            raise ValueError(f"predict_interval is Venn-Abers' interval: this Recalibrator uses method {self.method!r}")
        if len(self.calibrated_classifiers_) != 1:
            raise ValueError("predict_interval needs one map: fit with ensemble=False (or cv=None)")
        P = _probabilities(self.estimator_, X, self.classes_)
        cal = self.calibrator_
        if isinstance(cal, VennAbersCalibrator):
            return cal.predict_interval(P[:, 1])
        assert isinstance(cal, MulticlassCalibrator)
        maps = [c for c in cal.calibrators if isinstance(c, VennAbersCalibrator)]  # (all of them: the method's)
        if cal.mode == "binary":
            return maps[0].predict_interval(P[:, 1])
        if cal.mode == "top-label":
            return maps[0].predict_interval(P.max(axis=1))
        bounds = [c.predict_interval(P[:, k]) for k, c in enumerate(maps)]
        return np.column_stack([b[0] for b in bounds]), np.column_stack([b[1] for b in bounds])

    # -- the calibrator document -------------------------------------------------------------

    def to_json(self, path=None, *, prob_cols=None) -> str:
        """The map as the calibrator document of ``calibcli recalibrate fit`` (a versioned JSON text, never a
        pickle); written atomically to ``path`` when given.

        The document names the probability columns ``calibcli recalibrate apply`` will read: ``prob`` for two
        classes, ``p_<class>`` per class otherwise, or ``prob_cols``. Needs one map (``ensemble=False``).

        >>> import json
        >>> from sklearn.linear_model import LogisticRegression
        >>> X, y = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]], [0, 0, 1, 0, 1, 1]
        >>> recal = Recalibrator(LogisticRegression(), method="platt", cv=2).fit(X, y)
        >>> doc = json.loads(recal.to_json())
        >>> doc["kind"], doc["method"], doc["mode"], doc["columns"]["probabilities"]
        ('calibcli calibrator', 'platt', 'binary', ['prob'])
        """
        check_is_fitted(self)
        if len(self.calibrated_classifiers_) != 1:
            raise ValueError(
                "to_json saves one map: this Recalibrator holds one per fold (ensemble=True); "
                "fit with ensemble=False to save it"
            )
        info = self._fitted
        names = [str(c) for c in self.classes_]
        one_column = _takes_column(self.calibrator_)
        columns = list(prob_cols or info["columns"] or ([BINARY_COLUMN] if one_column else [f"p_{n}" for n in names]))
        expected = 1 if one_column else len(names)
        if len(columns) != expected:
            raise ValueError(f"prob_cols names {len(columns)} columns: this map reads {expected}")
        from types import SimpleNamespace

        model = self.estimator_
        if type(model).__name__ == "FrozenEstimator":
            model = model.estimator
        # what calibrator_document reads of the data a map was fitted on (a file's description, for the CLI)
        fitted_on = SimpleNamespace(
            path=f"calibcli.sklearn.Recalibrator: {type(model).__name__}.predict_proba",
            n_classes=len(names),
            class_names=tuple(names),
            prob_columns=tuple(columns),
            logits=False,
            label_column="label",
            weight_column="weight" if info["weighted"] else None,
            n_rows=info["n"],
            n_rows_dropped=0,
            probs=np.empty((0,) if one_column else (0, len(names))),
            described={},  # an estimator's predictions, not an LLM dump: no reader's facts to keep
        )
        doc = calibrator_document(
            self.calibrator_,
            fitted_on,
            method=self.method,
            mode=self._map_mode,
            options=info["options"],
            seed=self.seed,
        )
        text = calibrator_json(doc)
        if path is not None:
            write_atomic(os.fspath(path), text + "\n")
        return text

    @classmethod
    def from_json(cls, source, estimator) -> Recalibrator:
        """A fitted Recalibrator from a calibrator document (``calibcli recalibrate fit``'s file, its text, or
        the parsed dict) and the fitted ``estimator`` whose ``predict_proba`` it recalibrates.

        The estimator's classes must be as many as the document's, in the same order (its probability
        columns as the CLI read them). A map fitted on a file's logits is applied to probabilities, as
        ``calibcli recalibrate apply`` turns the file's logits into probabilities first.
        """
        if isinstance(source, dict) or (isinstance(source, str) and source.lstrip().startswith("{")):
            doc, cal = _document(source if isinstance(source, dict) else _parse(source))
        else:
            doc, cal = load_calibrator(os.fspath(source))
        check_is_fitted(estimator)
        classes = np.asarray(estimator.classes_)
        if len(classes) != doc["n_classes"]:
            raise ValueError(
                f"the calibrator was fitted on {doc['n_classes']} classes ({doc['class_names']}) but "
                f"{type(estimator).__name__} has {len(classes)}"
            )
        options = {("clip" if k == "eps" else k): v for k, v in (doc.get("options") or {}).items()}
        mode = doc["mode"] if doc["mode"] in ("top-label", "marginal") else None
        if doc["mode"] == "binary" and not _takes_column(cal):
            mode = "binary"
        self = cls(
            estimator,
            method=doc["method"],
            mode=mode,
            seed=int(doc.get("seed", 0)),
            **{k: v for k, v in options.items() if k in OPTION_PARAMS},
        )
        self.classes_ = classes
        self._set_pairs([(estimator, cal)], doc["mode"])
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator, attr):
                setattr(self, attr, getattr(estimator, attr))
        self._fitted = {
            "n": int(doc.get("n", 0)),
            "weighted": doc["columns"].get("weight") is not None,
            "options": dict(doc.get("options") or {}),
            "columns": list(doc["columns"]["probabilities"]),
        }
        return self

    def __sklearn_tags__(self):
        from sklearn.utils import get_tags

        tags = super().__sklearn_tags__()
        if self.estimator is not None:
            tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags


def _value_text(value) -> str:
    """A label as the user wrote it (``0``, ``'spam'``), not NumPy's repr (``np.int64(0)``)."""
    value = value.item() if isinstance(value, np.generic) else value
    return repr(value)


def _parse(text: str) -> dict:
    """A calibrator document's text through the same checks as a file's (UTF-8, JSON, depth, integer sizes)."""
    return parse_calibrator_json(text.encode("utf-8", "surrogatepass"))


def _document(doc: dict):
    """Validate a calibrator document given as a dict: the checks of ``load_calibrator`` on a file."""
    if not isinstance(doc, dict) or doc.get("kind") != CALIBRATOR_KIND:
        raise CalibcliError(
            f'not a calibrator: the JSON has no "kind": "{CALIBRATOR_KIND}": expected the JSON '
            f"document written by `calibcli recalibrate fit`"
        )
    if doc.get("schema_version") != CALIBRATOR_SCHEMA_VERSION:
        raise CalibcliError(
            f"calibrator schema version {doc.get('schema_version')!r} is not supported (this calibcli "
            f"reads version {CALIBRATOR_SCHEMA_VERSION})"
        )
    cal = calibrator_from_dict(doc.get("calibrator"))
    check_document(doc, cal)
    return doc, cal


def _one_column(n_classes: int, mode: str | None) -> bool:
    """Whether a map is fitted on the probability of ``classes_[1]`` alone (two classes, binary mode)."""
    return n_classes == 2 and mode in (None, "binary")


def _takes_column(cal) -> bool:
    """Whether a calibrator maps one probability column (a binary map) rather than ``(n, K)`` rows."""
    return isinstance(cal, BinaryCalibrator) or (isinstance(cal, TemperatureCalibrator) and cal.mode == "binary")


def _apply(cal, P: np.ndarray) -> np.ndarray:
    if _takes_column(cal):
        g = cal.predict(P[:, 1])
        return np.column_stack([1.0 - g, g])
    return cal.predict(P)


def _probabilities(estimator, X, classes: np.ndarray) -> np.ndarray:
    """``estimator.predict_proba(X)`` as ``(n, len(classes))`` columns in the order of ``classes`` (a fold's
    estimator may have seen fewer classes: their columns are 0), clipped into [0, 1] against round-off."""
    P = np.asarray(estimator.predict_proba(X), dtype=np.float64)
    own = np.asarray(estimator.classes_)
    if len(own) != len(classes) or np.any(own != classes):
        full = np.zeros((P.shape[0], len(classes)))
        full[:, _encode(own, classes)] = P
        P = full
    return np.clip(P, 0.0, 1.0)


def _encode(y, classes: np.ndarray) -> np.ndarray:
    """Class indices of labels ``y`` in ``classes``; a label that is not a class is an error."""
    y = np.asarray(y)
    order = np.argsort(classes, kind="stable")
    ordered = classes[order]
    pos = np.clip(np.searchsorted(ordered, y), 0, len(classes) - 1)
    bad = ordered[pos] != y
    if np.any(bad):
        raise ValueError(
            f"y holds the label {y[np.flatnonzero(bad)[0]].item()!r}, which is not one of the "
            f"estimator's classes {classes.tolist()}"
        )
    return order[pos].astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Scorers


class CalibrationScorer:
    """A scorer ``scorer(estimator, X, y_true, sample_weight=None)`` for a metric of :mod:`calibcli.metrics`.

    It calls ``estimator.predict_proba(X)``, maps ``y_true`` to the estimator's ``classes_`` (two classes:
    the probability of ``classes_[1]``; K > 2: the whole vector, in the metric's ``mode``), computes
    :func:`calibcli.metrics.compute` and returns the estimate signed as scikit-learn wants it: a metric where
    lower is better is returned negated (``greater_is_better=False``, as ``neg_log_loss``), and one with a
    calibrated value (``cox_slope``: 1, ``cox_intercept``: 0) as minus its distance from it, so that larger
    scores are always better.
    """

    def __init__(self, metric: str, kwargs: dict):
        info = REGISTRY.get(metric)
        if info is None:
            raise ValueError(f"unknown metric {metric!r}: expected one of {', '.join(REGISTRY)}")
        if info.better == "none":
            raise ValueError(
                f"{metric} is a part of a decomposition, neither better when lower nor when higher: "
                f"score with brier_score, or a calibration error"
            )
        self.metric = metric
        self.kwargs = dict(kwargs)
        self.greater_is_better = info.better == "higher"
        self._sign = 1 if self.greater_is_better else -1
        # a metric with a calibrated value (a Cox slope of 1): the score is minus the distance to it
        self._target = info.target if info.better == "target" else None

    def __call__(self, estimator, X, y_true, sample_weight=None) -> float:
        classes = np.asarray(estimator.classes_)
        P = _probabilities(estimator, X, classes)
        labels = _encode(column_or_1d(y_true), classes)
        probs = P[:, 1] if len(classes) == 2 else P
        value = compute(self.metric, labels, probs, sample_weight=sample_weight, **self.kwargs).estimate
        if self._target is not None:
            return -abs(value - self._target)
        return self._sign * value

    def get_metadata_routing(self):
        """With ``sklearn.set_config(enable_metadata_routing=True)``, ``sample_weight`` given to ``cross_validate``
        (``params=``) or a search's ``fit`` reaches the scorer, which weighs the rows of the metric by it."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="sample_weight", alias=True)
        return request

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"make_calibration_scorer({self.metric!r}{args})"


def make_calibration_scorer(metric: str = "ece_l1_plugin", **kwargs) -> CalibrationScorer:
    """A scikit-learn scorer for the calibration metric ``metric`` (a name of :data:`calibcli.metrics.REGISTRY`)
    with the options ``kwargs`` of the function computing it (``n_bins=10``, ``mode="marginal"``, ...).

    It uses ``predict_proba`` and works for binary and multiclass classifiers. Lower is better for a
    calibration error, so the scorer returns it negated (``greater_is_better=False``); p-values
    (``tcal_p_value``) are returned as they are.

    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import cross_validate
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from calibcli.sklearn import make_calibration_scorer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> scores = cross_validate(GaussianNB(), X, y, cv=3,
    ...                         scoring={"ece": make_calibration_scorer("ece_l1_plugin", n_bins=10)})
    >>> bool(all(scores["test_ece"] < 0))
    True
    """
    return CalibrationScorer(metric, kwargs)


# ---------------------------------------------------------------------------------------------
# Regression: recalibrating a regressor's predictive uncertainty (SPEC 10 "Recalibration")


class RegressionRecalibrator(TransformerMixin, BaseEstimator):
    """Recalibrate a regressor's predictive uncertainty with a method of ``calibcli recalibrate fit`` for
    regression predictions (docs/commands/regression.md): the same fit, the same numbers, the same JSON document.

    Parameters
    ----------
    method : str, default="std-scaling"
        ``std-scaling`` (Gaussian: the std times the NLL-optimal factor), ``isotonic-pit`` (Gaussian, quantiles,
        samples: Kuleshov et al. 2018's map of the PIT) or ``conformal`` (Gaussian, intervals, quantiles with a
        symmetric pair of levels: the split-conformal margin).
    kind : str, default="gaussian"
        What ``X`` holds, column by column (:data:`calibcli.regression.recalibration.ARRAY_KINDS`): ``gaussian``
        (mean, std), ``quantiles`` (at ``quantile_levels``), ``intervals`` (lower, upper at ``level``) or
        ``samples``.
    quantile_levels : sequence of float, default=None
        The levels of the quantile columns (``kind="quantiles"``), increasing, in (0, 1).
    level : float, default=0.9
        ``intervals``: the interval's level; ``conformal`` on a Gaussian: the level of the central interval it
        adjusts (``calibcli recalibrate fit --alpha`` is ``1 - level``).
    seed : int, default=0
        The seed of the quantiles' and samples' randomised PIT (``--seed``): rows ``0 .. n - 1`` of ``X`` are
        keyed as the rows of a file.

    Attributes
    ----------
    calibrator_ : the fitted map (:mod:`calibcli.regression.recalibrators`)
    kind_out_, levels_out_ : the kind and levels of what :meth:`transform` returns (``isotonic-pit`` writes a
        Gaussian's quantiles at ``0.05 ... 0.95`` and re-labels quantiles and samples with their recalibrated
        levels; ``conformal`` turns a Gaussian into its interval at ``level``).

    Examples
    --------
    >>> import numpy as np
    >>> from calibcli.sklearn import RegressionRecalibrator
    >>> rng = np.random.default_rng(0)
    >>> mean, std = rng.normal(size=400), np.full(400, 0.5)
    >>> y = mean + rng.normal(size=400)  # the std is half the errors' spread
    >>> recal = RegressionRecalibrator(method="std-scaling").fit(np.column_stack([mean, std]), y)
    >>> round(recal.calibrator_.factor, 3)
    2.011
    >>> recal.transform(np.column_stack([mean, std]))[:2, 1].round(4).tolist()
    [1.0055, 1.0055]
    """

    def __init__(self, method="std-scaling", *, kind="gaussian", quantile_levels=None, level=0.9, seed=0):
        self.method = method
        self.kind = kind
        self.quantile_levels = quantile_levels
        self.level = level
        self.seed = seed

    def _target(self, X):
        if self.method not in recalibration.REGRESSION_METHODS:
            methods = ", ".join(recalibration.REGRESSION_METHODS)
            raise ValueError(f"method is {self.method!r}: expected one of {methods}")
        X = check_array(X, dtype=np.float64, ensure_min_samples=1)
        return recalibration.array_target(self.kind, X, quantile_levels=self.quantile_levels, level=self.level), X

    def fit(self, X, y, sample_weight=None):
        """Fit the map on the predictions ``X`` (their columns as ``kind`` says) and the observed ``y``."""
        target, X = self._target(X)
        y = column_or_1d(y).astype(np.float64)
        if len(y) != len(X) or not np.isfinite(y).all():
            raise ValueError(f"y has {len(y)} values for {len(X)} rows of X: expected one finite target per row")
        w = None if sample_weight is None else column_or_1d(sample_weight).astype(np.float64)
        rows = recalibration.Rows(target, X, y, w, np.arange(len(y), dtype=np.int64), {})
        where = f"{type(self).__name__}"
        self.calibrator_ = recalibration.fit_rows(
            rows, self.method, level=float(self.level), seed=self.seed, where=where
        )
        self._document = recalibration.document(self.calibrator_, rows, f"calibcli.sklearn.{where}", self.seed)
        self._outputs(X.shape[1])
        return self

    def _outputs(self, m: int) -> None:
        """``kind_out_``, ``levels_out_`` and ``n_features_in_``: what a row of ``m`` columns turns into."""
        target, one = self._target(np.arange(1.0, m + 1.0)[None, :])  # (a valid row of any kind)
        out = recalibration.recalibrated(self._document, target, one, type(self).__name__)
        self.kind_out_, self.levels_out_, self.n_features_in_ = out.kind, tuple(out.levels), m

    def transform(self, X):
        """The recalibrated predictions (``kind_out_`` at ``levels_out_``), what ``recalibrate apply`` writes."""
        check_is_fitted(self)
        target, X = self._target(X)
        return recalibration.recalibrated(self._document, target, X, type(self).__name__).preds

    def to_json(self, path=None) -> str:
        """The map as ``calibcli recalibrate fit``'s document (``recalibrate apply`` applies it to a file);
        written atomically to ``path`` when given."""
        check_is_fitted(self)
        text = to_json(self._document)
        if path is not None:
            write_atomic(os.fspath(path), text + "\n")
        return text

    @classmethod
    def from_json(cls, source) -> RegressionRecalibrator:
        """A fitted RegressionRecalibrator from ``calibcli recalibrate fit``'s document (its file, its text or
        the parsed dict); its ``kind`` and ``quantile_levels`` are those the map was fitted on."""
        if isinstance(source, dict):
            doc = source
        elif isinstance(source, str) and source.lstrip().startswith("{"):
            doc = _parse(source)
        else:
            with open(os.fspath(source), encoding="utf-8") as fh:
                doc = _parse(fh.read())
        cal = recalibrators.from_dict(doc)
        columns = (doc.get("fitted_on") or {}).get("columns") or {}
        kind = columns.get("kind", "gaussian")
        level = doc.get("level", (columns.get("levels") or [0.9])[0] if kind == "intervals" else 0.9)
        self = cls(
            doc["method"],
            kind=kind,
            quantile_levels=columns.get("levels") if kind == "quantiles" else None,
            level=level,
            seed=int((doc.get("fitted_on") or {}).get("seed", 0)),
        )
        self.calibrator_, self._document = cal, doc
        m = {"gaussian": 2, "intervals": 2}.get(kind) or len(
            columns.get("levels" if kind == "quantiles" else "samples", [])
        )
        self._outputs(m)
        return self
