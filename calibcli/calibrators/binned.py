"""Binned recalibration maps: histogram binning and scaling-binning (SPEC 5).

- ``histogram`` (Zadrozny & Elkan 2001; seed 001 "histogram binning"; seed 002 "binning"): B bins of z
  (``uniform`` or ``quantile``, :mod:`calibcli.core.binning`); each bin outputs the (weighted) mean label of the
  calibration points in it; an empty bin outputs its midpoint. Seed 002, Theorem 12.6 certifies the result
  without any assumption on the data: for a partition fixed in advance,
  ``E[ECE(h o f)] <= sqrt(B / (2 n))`` and ``ECE(h o f) <= sqrt(B / n) / sqrt(2 delta)`` with probability
  ``1 - delta`` (:meth:`HistogramCalibrator.certificate`).
- ``scaling-binning`` (Kumar, Liang & Ma 2019, seed 000 / 001): split the calibration data in three at
  random; fit Platt scaling g on part 1; cut g(z) of part 2 into B equal-mass bins; each bin outputs the mean
  of g(z) over the part-3 points in it (an empty bin its midpoint). The output takes at most B values, so its
  calibration error can be measured with the debiased estimator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from calibcli.calibrators._common import DEFAULT_CLIP, BinaryCalibrator, Fields, check_clip, float_list, shown_number
from calibcli.calibrators.parametric import _CLIP_WHY, _COEF_WHY, MAX_COEFFICIENT, PlattCalibrator, fit_platt
from calibcli.core.binning import STRATEGIES, Binning, fit_binning
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_binary, check_option, check_options


def _check_n_bins(n_bins) -> int:
    check_option(
        isinstance(n_bins, (int, np.integer)) and not isinstance(n_bins, bool),
        f"{{opt:n_bins}} is {n_bins!r}: expected a positive integer",
    )
    check_options(n_bins=int(n_bins))  # positive, and its arrays within the memory budget
    return int(n_bins)


def _bin_means(index: np.ndarray, values: np.ndarray, w: np.ndarray, n_bins: int):
    """Weighted mean of ``values`` per bin and the weight per bin (0 for an empty bin)."""
    weight = np.bincount(index, weights=w, minlength=n_bins)
    total = np.bincount(index, weights=w * values, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / weight
    return mean, weight


#: Most bins a saved calibrator may declare: beyond any fit within a memory budget (and a uniform binning's
#: ``values`` must list every bin anyway, so the file's own size bounds it first).
MAX_SAVED_BINS = 2**31 - 1

#: Rounding allowed when a saved value is compared with its bin's bounds or midpoint (both are recomputed).
_BOUNDS_ROUNDING = 1e-12


def _binning_from_fields(options: Fields, params: Fields) -> tuple[Binning, np.ndarray]:
    """The binning and the per-bin ``values`` (in [0, 1], one per bin): the number of values is checked
    against ``n_bins`` (uniform) or the edges (quantile) before any array is built from ``n_bins``."""
    strategy = options.choice("strategy", STRATEGIES)
    n_bins = options.integer("n_bins", low=1, high=MAX_SAVED_BINS)
    if strategy == "uniform":
        values = params.array("values", length=n_bins, low=0.0, high=1.0)
        edges = np.arange(1, n_bins) / n_bins
    else:
        edges = params.array("edges", low=0.0, high=1.0, increasing=True, strictly=True)
        if len(edges) > n_bins - 1:
            raise CalibcliError(
                f"calibrator: field '{params.where}.edges' has {len(edges)} edges: expected at most {n_bins - 1}"
            )
        values = params.array("values", length=len(edges) + 1, low=0.0, high=1.0)
    return Binning(strategy, n_bins, edges), values


# --------------------------------------------------------------------------- histogram binning


@dataclass(frozen=True)
class BinningCertificate:
    """Seed 002, Theorem 12.6: distribution-free bounds on the l1 ECE of histogram binning.

    ``expected_ece_bound = sqrt(B / (2 n))`` bounds ``E[ECE]``; ``ece_bound = sqrt(B / n) / sqrt(2 delta)``
    holds with probability ``1 - delta``. ``n`` is the number of calibration rows (the Kish effective size
    ``(sum w)^2 / sum w^2`` when weights are unequal). The theorem assumes a partition fixed before seeing the
    data: ``fixed_partition`` is False for quantile bins cut on the same data, and then the bounds are a
    heuristic.
    """

    n_bins: int
    n: float
    delta: float
    expected_ece_bound: float
    ece_bound: float
    fixed_partition: bool
    weighted: bool


def binning_certificate(
    n_bins: int, n: float, *, delta: float = 0.05, fixed_partition: bool = True, weighted: bool = False
) -> BinningCertificate:
    """The bounds of seed 002 Thm 12.6 for B bins and n calibration points."""
    check_options(delta=delta)
    return BinningCertificate(
        n_bins,
        float(n),
        float(delta),
        math.sqrt(n_bins / (2.0 * n)),
        math.sqrt(n_bins / n) / math.sqrt(2.0 * delta),
        fixed_partition,
        weighted,
    )


@dataclass(frozen=True, eq=False)
class HistogramCalibrator(BinaryCalibrator):
    """Each bin of ``binning`` outputs ``values[bin]`` (mean calibration label, or the bin's midpoint if empty)."""

    method: ClassVar[str] = "histogram"
    binning: Binning
    values: np.ndarray
    counts: np.ndarray  # calibration weight per bin

    def _predict(self, z: np.ndarray) -> np.ndarray:
        return self.values[self.binning.assign(z)]

    def certificate(self, delta: float = 0.05) -> BinningCertificate:
        """Seed 002 Thm 12.6 bounds for this fit (see :class:`BinningCertificate`)."""
        return binning_certificate(
            self.binning.n_bins_effective,
            self.info["n_effective"],
            delta=delta,
            fixed_partition=self.binning.strategy == "uniform",
            weighted=bool(self.info.get("weighted", False)),
        )

    def params(self) -> dict[str, Any]:
        p = {"values": float_list(self.values), "counts": float_list(self.counts)}
        if self.binning.strategy != "uniform":
            p["edges"] = float_list(self.binning.edges)
        return p

    def options(self) -> dict[str, Any]:
        return {"n_bins": int(self.binning.n_bins), "strategy": self.binning.strategy}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> HistogramCalibrator:
        binning, values = _binning_from_fields(options, params)
        m = binning.n_bins_effective
        counts = params.array("counts", length=m, low=0.0)
        bounds = binning.bounds()
        midpoints = 0.5 * (bounds[:-1] + bounds[1:])
        moved = (counts == 0) & (np.abs(values - midpoints) > _BOUNDS_ROUNDING)
        if moved.any():  # fitting gives an empty bin its midpoint: any other value was not fitted
            i = int(np.flatnonzero(moved)[0])
            raise CalibcliError(
                f"calibrator: field '{params.where}.values' has {shown_number(params.d['values'][i])} for bin {i}, "
                f"which has no calibration weight ('{params.where}.counts' is 0): fitting gives an empty bin its "
                f"midpoint {shown_number(float(midpoints[i]))}; refit the calibrator"
            )
        info = dict(info)
        # the certificate reads n_effective from info: check it, or fall back to the total count
        if "n_effective" in info:
            info["n_effective"] = Fields(info, "info").number("n_effective", low=0.0, open_low=True)
        else:
            info["n_effective"] = float(counts.sum())
        return cls(binning, values, counts, info=info)


def fit_histogram(
    y_true, y_prob, *, sample_weight=None, n_bins: int = 15, strategy: str = "uniform"
) -> HistogramCalibrator:
    """Histogram binning (SPEC 5, `histogram`): per bin, the weighted mean label; empty bin: its midpoint.

    Quantile edges are cut on the unweighted predictions (:func:`calibcli.core.binning.fit_binning`).
    """
    n_bins = _check_n_bins(n_bins)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    binning = fit_binning(z, n_bins=n_bins, strategy=strategy)
    m = binning.n_bins_effective
    mean, weight = _bin_means(binning.assign(z), y.astype(np.float64), w, m)
    bounds = binning.bounds()
    midpoints = 0.5 * (bounds[:-1] + bounds[1:])
    values = np.where(weight > 0, mean, midpoints)
    weighted = bool(np.any(w != w[0]))
    info = {
        "n": int(len(y)),
        "n_effective": float(w.sum() ** 2 / np.dot(w, w)) if weighted else float(len(y)),
        "weighted": weighted,
        "n_bins_effective": m,
        "n_nonempty_bins": int(np.count_nonzero(weight > 0)),
    }
    return HistogramCalibrator(binning, values, weight, info=info)


# --------------------------------------------------------------------------- scaling-binning


@dataclass(frozen=True, eq=False)
class ScalingBinningCalibrator(BinaryCalibrator):
    """``values[bin(g(z))]`` with ``g`` a Platt map and bins equal-mass in g (Kumar et al. 2019)."""

    method: ClassVar[str] = "scaling-binning"
    scaler: PlattCalibrator
    binning: Binning  # on the g scale
    values: np.ndarray

    def _predict(self, z: np.ndarray) -> np.ndarray:
        return self.values[self.binning.assign(self.scaler._predict(z))]

    def params(self) -> dict[str, Any]:
        return {
            "a": float(self.scaler.a),
            "b": float(self.scaler.b),
            "edges": float_list(self.binning.edges),
            "values": float_list(self.values),
        }

    def options(self) -> dict[str, Any]:
        return {"n_bins": int(self.binning.n_bins), "clip": float(self.scaler.clip)}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> ScalingBinningCalibrator:
        clip = options.number("clip", low=0.0, high=0.49, open_low=True, why=_CLIP_WHY)
        n_bins = options.integer("n_bins", low=1, high=MAX_SAVED_BINS)
        edges = params.array("edges", low=0.0, high=1.0, increasing=True, strictly=True)
        if len(edges) > n_bins - 1:
            raise CalibcliError(
                f"calibrator: field '{params.where}.edges' has {len(edges)} edges: expected at most {n_bins - 1}"
            )
        values = params.array("values", length=len(edges) + 1, low=0.0, high=1.0, increasing=True)
        # each value is the mean of g over its bin (or the bin's midpoint): within the bin's bounds
        bounds = np.concatenate([[0.0], edges, [1.0]])
        outside = (values < bounds[:-1] - _BOUNDS_ROUNDING) | (values > bounds[1:] + _BOUNDS_ROUNDING)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise CalibcliError(
                f"calibrator: field '{params.where}.values' has {shown_number(params.d['values'][i])} for bin {i}, "
                f"outside the bin [{shown_number(float(bounds[i]))}, {shown_number(float(bounds[i + 1]))}]: fitting "
                f"gives each bin the mean of the scaled predictions in it; refit the calibrator"
            )
        scaler = PlattCalibrator(
            params.number("a", magnitude=MAX_COEFFICIENT, why=_COEF_WHY),
            params.number("b", magnitude=MAX_COEFFICIENT, why=_COEF_WHY),
            clip,
        )
        return cls(scaler, Binning("quantile", n_bins, edges), values, info=info)


def fit_scaling_binning(
    y_true, y_prob, *, rng: np.random.Generator, n_bins: int = 15, clip: float = DEFAULT_CLIP
) -> ScalingBinningCalibrator:
    """Scaling-binning (seed 000; SPEC 5, `scaling-binning`), with the three-way split drawn from ``rng``.

    The rows are permuted by ``rng`` and cut into three parts of sizes differing by at most one
    (``numpy.array_split``): Platt scaling on part 1, equal-mass bins of g(z) on part 2, per-bin means of
    g(z) on part 3. Sample weights are not supported (the split and the equal-mass bins count rows).
    """
    n_bins = _check_n_bins(n_bins)
    clip = check_clip(clip)
    if not isinstance(rng, np.random.Generator):
        raise CalibcliError("scaling-binning needs rng=numpy.random.Generator for its three-way split")
    y, z, _ = check_binary(y_true, y_prob)
    if len(y) < 3:
        raise CalibcliError(f"scaling-binning needs at least 3 calibration rows (one per part), got {len(y)}")
    part1, part2, part3 = np.array_split(rng.permutation(len(y)), 3)
    scaler = fit_platt(y[part1], z[part1], clip=clip)
    binning = fit_binning(scaler._predict(z[part2]), n_bins=n_bins, strategy="quantile")
    m = binning.n_bins_effective
    g3 = scaler._predict(z[part3])
    mean, weight = _bin_means(binning.assign(g3), g3, np.ones_like(g3), m)
    bounds = binning.bounds()
    values = np.where(weight > 0, mean, 0.5 * (bounds[:-1] + bounds[1:]))
    info = {
        "n": int(len(y)),
        "n_parts": [len(part1), len(part2), len(part3)],
        "n_bins_effective": m,
        "n_nonempty_bins": int(np.count_nonzero(weight > 0)),
        "platt": dict(scaler.info),
    }
    return ScalingBinningCalibrator(scaler, binning, values, info=info)
