"""The reliability diagrams' data, apart from their drawing (SPEC 6; STYLE "compute the picture's data apart
from drawing it"): ``prepare_binned`` / ``prepare_smooth`` return frozen dataclasses that
:mod:`calibcli.diagram.plot` plots (``plot_*(data, *, ax=None)``); the streamed case is
:class:`calibcli.diagram.accumulator.DiagramInputAccumulator`. No matplotlib here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from calibcli.binned.estimators import binned_calibration
from calibcli.core.binning import STRATEGIES
from calibcli.core.errors import CalibcliError
from calibcli.core.results import Metric
from calibcli.core.validation import check_binary, check_option, check_options
from calibcli.diagram.bands import BAND_DESCRIPTIONS, DIAGRAM_BANDS, binomial_band, bootstrap_band
from calibcli.smooth.estimator import smooth_curve

#: Name of the binned metric printed on the diagram.
BINNED_METRIC = "ece_l1_plugin"


#: What the diagram's intervals are, for the report's parameters (the metrics' own descriptions are
#: in :data:`calibcli.metrics.REGISTRY`); the default band's (``--band``,
#: :data:`calibcli.diagram.bands.BAND_DESCRIPTIONS`).
BIN_ACCURACY_INTERVAL = BAND_DESCRIPTIONS["wilson"]
#: The band drawn around each bin's observed frequency unless another is asked for (docs/commands/diagram.md
#: says why: coverage close to the nominal level on average at every bin size, never of zero width).
DEFAULT_BAND = "wilson"
SMOOTH_BAND = (
    "pointwise percentile band of the kernel regression over the same bootstrap resamples (bandwidth re-solved on each)"
)


@dataclass(frozen=True)
class BinnedDiagramData:
    """What a binned reliability diagram of one binary problem shows (SPEC 6).

    Per non-empty bin ``j`` (empty bins are absent from these arrays): its range
    ``[bin_lower, bin_upper)``, ``count`` (rows), ``weight`` (sum of sample weights),
    ``confidence`` (weighted mean prediction), ``accuracy`` (weighted mean label) and its interval
    ``[acc_low, acc_high]`` at level ``1 - alpha``, made as ``band`` says (:mod:`calibcli.diagram.bands`: ``wilson``,
    ``clopper-pearson`` or ``bootstrap``). ``bounds``, ``counts_all`` (rows)
    and ``weights_all`` (sums of the frequency weights) describe every bin (empty ones included) for
    the histogram, which shows the weights when the rows are weighted. ``estimate``, ``ci_low``,
    ``ci_high`` are the ``ece_l1_plugin`` and its percentile bootstrap interval (None without
    bootstrap), made as ``ci_method`` says.
    """

    name: str
    problem: str
    n: int
    weight_total: float
    strategy: str
    n_bins: int
    n_bins_nonempty: int
    bounds: np.ndarray
    counts_all: np.ndarray
    weights_all: np.ndarray
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    acc_low: np.ndarray
    acc_high: np.ndarray
    metric: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    alpha: float
    ci_method: str | None = None
    band: str = DEFAULT_BAND

    def to_dict(self) -> dict:
        """The report's ``binned`` section of a curve: bins, the metric with its interval, the band, every non-empty
        bin with its band (``band_low``/``band_high``; also ``wilson_low``/``wilson_high`` for the Wilson band,
        the names of calibcli 0.2.0)."""
        wilson = self.band == "wilson"
        return {
            "strategy": self.strategy,
            "n_bins": self.n_bins,
            "n_bins_nonempty": self.n_bins_nonempty,
            "metrics": {
                self.metric: Metric(self.metric, self.estimate, self.ci_low, self.ci_high, self.ci_method).to_dict()
            },
            "band": {
                "method": self.band,
                "confidence_level": 1.0 - self.alpha,
                "n_boot": self.n_boot if self.band == "bootstrap" else None,
            },
            "per_bin": [
                {
                    "lower": float(lo),
                    "upper": float(hi),
                    "count": int(c),
                    "mean_confidence": float(conf),
                    "accuracy": float(acc),
                    "band_low": _num(al),
                    "band_high": _num(ah),
                    **({"wilson_low": float(al), "wilson_high": float(ah)} if wilson else {}),
                }
                for lo, hi, c, conf, acc, al, ah in zip(
                    self.bin_lower,
                    self.bin_upper,
                    self.count,
                    self.confidence,
                    self.accuracy,
                    self.acc_low,
                    self.acc_high,
                    strict=True,
                )
            ],
        }


def _num(x) -> float | None:
    """A bound for JSON: NaN (a bin no resample reached) as null."""
    return None if np.isnan(x) else float(x)


@dataclass(frozen=True)
class SmoothDiagramData:
    """What a smooth reliability diagram of one binary problem shows (SPEC 3 and 6, seed 003).

    ``yhat`` is the kernel regression of y on z at ``t`` (bandwidth ``sigma`` = s*), NaN where the
    predictions' density vanishes; ``band_low``/``band_high`` its pointwise bootstrap band (None
    without bootstrap); ``density`` the predictions' smoothed density. ``smece`` and
    ``ci_low``/``ci_high`` are the SmoothECE and its percentile bootstrap interval, made as
    ``ci_method`` says; ``grid_cells`` the grid s* was solved on (when known).
    """

    name: str
    problem: str
    n: int
    weight_total: float
    t: np.ndarray
    yhat: np.ndarray
    band_low: np.ndarray | None
    band_high: np.ndarray | None
    density: np.ndarray
    sigma: float
    smece: float
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    alpha: float
    ci_method: str | None = None
    grid_cells: int | None = None

    def to_dict(self) -> dict:
        """The report's ``smooth`` section of a curve: s*, the SmoothECE with its interval, the band."""
        return {
            "sigma": self.sigma,
            "grid_cells": self.grid_cells,
            "metrics": {"smece": Metric("smece", self.smece, self.ci_low, self.ci_high, self.ci_method).to_dict()},
            "band": None if self.band_low is None else f"pointwise percentile band, {self.ci_method}",
        }


@dataclass(frozen=True)
class DiagramPanel:
    """One panel of a figure: a title and the curves overlaid in it (binned, smooth or both)."""

    title: str
    binned: tuple[BinnedDiagramData, ...] = ()
    smooth: tuple[SmoothDiagramData, ...] = ()


def check_band(band: str) -> str:
    """``band`` if it is one the diagram draws, else the option's error."""
    check_option(band in DIAGRAM_BANDS, f"{{opt:band}} is {band!r}: expected one of {', '.join(DIAGRAM_BANDS)}")
    return band


def binned_data_from_result(
    result, *, name: str = "", problem: str = "binary", band: str = DEFAULT_BAND
) -> BinnedDiagramData:
    """The binned diagram of one binary problem from its :class:`calibcli.binned.estimators.CalibrationResult`.

    ``result`` is what :meth:`calibcli.binned.accumulator.BinnedAccumulator.result` (or, for rows in
    memory, :func:`calibcli.binned.estimators.binned_calibration`) returns: its per-bin sums give the points,
    its ``ece_l1_plugin`` the legend; the band of each bin's observed frequency, at the result's level
    ``1 - alpha``, is added here (:mod:`calibcli.diagram.bands`). Weights are frequency weights, as in the rest of the
    diagram: a bin's trials are its sum of weights. ``band="bootstrap"`` needs the result's per-bin
    replicates (made with ``n_boot > 0`` and ``keep_replicates=True``).
    """
    check_band(band)
    s = result.bin_stats
    bounds = np.asarray(result.bin_bounds, dtype=np.float64)
    keep = s.nonempty & (s.weight > 0)
    weight = s.weight[keep]
    if band == "bootstrap":
        reps = getattr(result, "bin_replicates", None)
        if reps is None or result.n_boot <= 0:
            raise CalibcliError(
                "{opt:band} bootstrap needs bootstrap resamples: pass {opt:n_boot} above 0, or another band"
            )
        drawn = bootstrap_band(s.sum_y[keep], weight, reps.sum_y[:, keep], reps.weight[:, keep], alpha=result.alpha)
    else:
        drawn = binomial_band(s.sum_y[keep], weight, None, method=band, alpha=result.alpha)
    acc_low, acc_high = drawn.lower, drawn.upper
    m = result.metrics[BINNED_METRIC]
    return BinnedDiagramData(
        name=name,
        problem=problem,
        n=result.n,
        weight_total=result.weight_total,
        strategy=result.strategy,
        n_bins=result.n_bins,
        n_bins_nonempty=int(keep.sum()),
        bounds=bounds,
        counts_all=np.asarray(s.count, dtype=np.int64),
        weights_all=np.asarray(s.weight, dtype=np.float64),
        bin_lower=bounds[:-1][keep],
        bin_upper=bounds[1:][keep],
        count=np.asarray(s.count[keep], dtype=np.int64),
        weight=weight,
        confidence=s.sum_z[keep] / weight,
        accuracy=s.sum_y[keep] / weight,
        acc_low=acc_low,
        acc_high=acc_high,
        metric=BINNED_METRIC,
        estimate=m.estimate,
        ci_low=m.ci_low,
        ci_high=m.ci_high,
        n_boot=result.n_boot,
        alpha=result.alpha,
        ci_method=m.ci_method,
        band=band,
    )


def smooth_data_from_result(result, *, name: str = "", problem: str = "binary") -> SmoothDiagramData:
    """The smooth diagram of one binary problem from its SmoothECE result.

    ``result`` is a :class:`calibcli.smooth.estimator.SmoothECEResult` made with its curve
    (:meth:`calibcli.smooth.accumulator.SmoothAccumulator.result` with ``curve_points``), or the
    :class:`calibcli.smooth.estimator.SmoothCurve` itself (:func:`calibcli.smooth.estimator.smooth_curve`).
    """
    curve = getattr(result, "curve", result)
    if curve is None:
        raise ValueError("the SmoothECE result has no curve: ask for one with curve_points")
    method = curve.ci_method
    if method is not None and curve.sigma_is_fixed_point:
        method += ", bandwidth re-solved on each"
    return SmoothDiagramData(
        name=name,
        problem=problem,
        n=int(curve.n),
        weight_total=float(curve.weight_total),
        t=np.asarray(curve.t),
        yhat=np.asarray(curve.yhat),
        band_low=None if curve.band_low is None else np.asarray(curve.band_low),
        band_high=None if curve.band_high is None else np.asarray(curve.band_high),
        density=np.asarray(curve.density),
        sigma=float(curve.sigma),
        smece=float(curve.smece),
        ci_low=curve.ci_low,
        ci_high=curve.ci_high,
        n_boot=int(curve.n_boot),
        alpha=float(curve.alpha),
        ci_method=method,
        grid_cells=getattr(result, "grid_size", None),
    )


def prepare_binned(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    n_bins: int = 15,
    strategy: str = "uniform",
    n_boot: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    name: str = "",
    problem: str = "binary",
    band: str = DEFAULT_BAND,
) -> BinnedDiagramData:
    """The data of a binned reliability diagram of rows in memory (SPEC 2.1 bins, SPEC 6).

    The one-batch case of :func:`binned_data_from_result`: rows ``0..n-1`` through
    :func:`calibcli.binned.estimators.binned_calibration`, which is what a binned accumulator holding every
    row computes, so the numbers are ``calibcli ece``'s for the same options and ``seed`` (the
    Poisson bootstrap keyed by ``(seed, row)``). ``band``: the interval of each bin's observed frequency,
    ``wilson`` (default), ``clopper-pearson`` or ``bootstrap`` (over the same ``n_boot`` resamples; see
    :mod:`calibcli.diagram.bands`).
    """
    check_options({"strategy": STRATEGIES}, strategy=strategy)
    check_band(band)
    result = binned_calibration(
        y_true,
        y_prob,
        sample_weight=sample_weight,
        n_bins=n_bins,
        strategy=strategy,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        keep_replicates=band == "bootstrap",
    )
    return binned_data_from_result(result, name=name, problem=problem, band=band)


def prepare_smooth(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    n_boot: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    n_points: int = 501,
    name: str = "",
    problem: str = "binary",
) -> SmoothDiagramData:
    """The data of a smooth reliability diagram of rows in memory (seed 003).

    The one-batch case of :func:`smooth_data_from_result`: :func:`calibcli.smooth.estimator.smooth_curve` with
    the bootstrap keyed by ``(seed, row)``, which is what a smooth accumulator fed rows ``0..n-1``
    gives (``calibcli smece``'s numbers for the same ``seed``).
    """
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    with warnings.catch_warnings():
        # Where no resample has data, the band is NaN (not drawn); numpy's "All-NaN slice" warning
        # about it is not news for the user.
        warnings.simplefilter("ignore", RuntimeWarning)
        c = smooth_curve(
            y,
            z,
            sample_weight=None if sample_weight is None else w,
            n_points=n_points,
            n_boot=n_boot,
            alpha=alpha,
            rng=int(seed),
        )
    return smooth_data_from_result(c, name=name, problem=problem)
