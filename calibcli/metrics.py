"""The metrics, as users import them: the registry of every number calibcli reports
(:mod:`calibcli.core.registry`: name -> description, SPEC section, direction, class rule) and the metric
functions on array-likes (:mod:`calibcli.api`: :func:`ece`, :func:`dce`, :func:`sun_interval`,
:func:`brier_decomposition`, :func:`brier_score`, :func:`log_loss`, :func:`smooth_ece`, :func:`tcal_test`,
:func:`clinical_test`, :func:`compute`; for regression predictions :func:`regression_metrics`),
each returning a :class:`MetricResult` with the CLI's numbers.
The scikit-learn scorer :func:`make_calibration_scorer` (:mod:`calibcli.sklearn`) is reachable from here too, loaded
when asked for; :func:`monitor` (calibration over time windows of a DataFrame, :mod:`calibcli.monitor.frame`) too.
"""

from __future__ import annotations

from calibcli.api import (  # noqa: F401  (the library's metric functions, where users find them)
    ECE_ESTIMATORS,
    ECE_NAMES,
    NORMS,
    binned_metric,
    brier_decomposition,
    brier_score,
    clinical_test,
    compute,
    dce,
    ece,
    log_loss,
    smooth_ece,
    sun_interval,
    tcal_test,
)
from calibcli.core.registry import (  # noqa: F401  (the registry's names)
    _ENTRIES,
    REGISTRY,
    ClassRule,
    MetricInfo,
    aggregate_over_classes,
    describe,
    worse,
)
from calibcli.core.results import MetricResult  # noqa: F401  (the result type, where users find it)
from calibcli.monitor.frame import monitor_frame as monitor  # noqa: F401  (calibration over time windows)
from calibcli.regression.library import regression_metrics  # noqa: F401  (regression predictions, SPEC 10)


def __getattr__(name: str):
    # make_calibration_scorer lives with the other scikit-learn pieces; scikit-learn (heavy, optional) is
    # imported only when the scorer is asked for
    if name == "make_calibration_scorer":
        from calibcli.sklearn import make_calibration_scorer

        return make_calibration_scorer
    raise AttributeError(f"module 'calibcli.metrics' has no attribute {name!r}")
