"""Statistics that clinical and regulatory reports ask for: Cox calibration, Spiegelhalter's Z, the
Hosmer-Lemeshow test, the integrated calibration index (ICI, E50, E90, Emax) and the Brier skill score.

Binary problems (predictions ``p_i`` in [0, 1], labels ``y_i`` in {0, 1}, frequency weights ``w_i >= 0``
with total ``W``; every sum below is weighted). Each statistic is computed from sums that add across
batches and workers (:mod:`calibcli.clinical.accumulator` streams them, SPEC 8); the functions taking
``y_true, y_prob`` are the one-batch case and give the numbers ``calibcli ece`` / ``calibcli tcal --test``
report for the same rows.

- **Cox calibration** (D. R. Cox, "Two further applications of a model for binary regression",
  Biometrika 45, 1958): the logistic regression ``logit P(y = 1) = a + b logit(p)``. The calibration
  slope ``b`` (1 when calibrated; below 1: predictions too extreme, overfitting) and intercept ``a``
  are fitted together; *calibration-in-the-large* is the intercept of ``logit P(y = 1) = a' + logit(p)``
  with the slope fixed at 1 (``logit(p)`` an offset; 0 when the predictions are right on average).
  Wald intervals ``estimate +- z_{1-alpha/2} se`` with ``se`` from the observed Fisher information at
  the maximum (``X^T diag(w mu (1 - mu)) X``, which for the logit link equals the expected one), and
  the Wald tests of ``b = 1``, ``a = 0`` and ``a' = 0``. Predictions are clipped to
  ``[1e-12, 1 - 1e-12]`` before the logit, as Platt scaling clips them (the Newton steps of
  :func:`calibcli.calibrators.parametric.fit_logistic`: the Platt fit *is* this regression; :mod:`calibcli.clinical.cox`
  takes them for every group of ``--group-by`` at once).
  R's ``rms::val.prob`` and ``CalibrationCurves::val.prob.ci.2`` report the same two fits.
- **Spiegelhalter's Z** (D. J. Spiegelhalter, "Probabilistic prediction in patient management and
  clinical trials", Statistics in Medicine 5, 1986): ``Z = sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2
  p (1 - p))``, standard normal under perfect calibration (the Brier score's deviation from its
  expectation, standardised); two-sided p-value ``2 (1 - Phi(|Z|))``. Three sums.
- **Hosmer-Lemeshow C-hat** (D. W. Hosmer and S. Lemeshow, "Goodness of fit tests for the multiple
  logistic regression model", Communications in Statistics 1980; *Applied Logistic Regression*, 3rd ed.
  2013, section 5.2.2): groups by deciles of risk (the project's quantile bins, SPEC 2.1, ``n_bins``
  default 10), ``C = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` with ``O_g = sum w y``,
  ``E_g = sum w p``, ``n_g = sum w`` over group g, referred to chi-square with ``G - 2`` degrees of
  freedom (G the non-empty groups). Known caveats, stated in every report: the value and the decision
  depend on the number of groups and on how tied predictions are grouped (here ties never straddle an
  edge, so groups merge and G may be below ``n_bins``); the test has little power at small n (a
  badly calibrated model can pass); at large n it rejects almost every model, since no model is exactly
  calibrated; and the ``G - 2`` degrees of freedom are those of a model fitted on the same data (for
  external validation some authors use ``G``). A p-value, not a measure of how large the miscalibration
  is: report it with the ICI or the ECE.
- **ICI, E50, E90, Emax** (P. C. Austin and E. W. Steyerberg, "The Integrated Calibration Index (ICI)
  and related metrics for quantifying the calibration of logistic regression models", Statistics in
  Medicine 38, 2019): with ``f`` a smooth calibration curve (an estimate of ``P(y = 1 | p)``), ICI is the
  weighted mean over predictions of ``|f(p_i) - p_i|``, E50 and E90 its weighted median and 90th
  percentile (R's default quantile, type 7, on the weights as frequencies), Emax its maximum. Austin &
  Steyerberg fit ``f`` by loess; here ``f`` is the SmoothECE kernel regression (SPEC 3, 6) at the
  fixed-point bandwidth ``s*``: reflected Gaussian kernel, ``f(t) = sum w K(t, p) y / sum w K(t, p)``, the
  curve ``calibcli diagram --kind smooth`` draws. It is computed from per-(label, cell) sums on a uniform
  grid of ``ICI_GRID`` = 2^14 cells (a cell's rows at their mean prediction, less than 6.1e-5 from each):
  two bincounts per batch (:class:`GridSums`), the same whatever the batch sizes. A fixed point below
  8 cells (s* < 4.9e-4) is reported as under-resolved. Many groups' ICIs are solved together
  (:func:`calibcli.clinical.ici.ici_groups`: their fixed points in lockstep), each group's the same as alone.
- **Brier skill score** (A. H. Murphy, "Hedging and skill scores for probability forecasts", J. Applied
  Meteorology 1973; D. S. Wilks, *Statistical Methods in the Atmospheric Sciences*, section 9.4):
  ``BSS = 1 - Brier / (ybar (1 - ybar))``, the climatology forecast ``ybar`` as reference; 1 is perfect, 0
  no better than the event rate, negative worse. It is reported by the binned family
  (:func:`calibcli.binned.estimators.brier_skill_score`), with bootstrap intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibcli.binned.estimators import binned_calibration
from calibcli.clinical.cox import (
    CoxCalibration,
    _two_sided_p,
    cox_from_rows,
)
from calibcli.clinical.ici import (
    ICI_GRID,
    SmoothCalibrationIndex,
    UniformCells,
    ici_groups,
)
from calibcli.core.arraystate import ArrayState
from calibcli.core.compensated import add_exact, add_exact_at, bincount_exact
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_binary, check_options

HL_CAVEATS = (
    "depends on the number of groups and on how ties are grouped; little power at small n; rejects "
    "almost every model at large n; df = G - 2 (G non-empty groups) as for a model fitted on the same data"
)


# ---------------------------------------------------------------------------------------------
# Cox calibration: intercept and slope (calibcli.clinical.cox fits every group's at once)


def cox_from_grid(grid: GridSums, *, alpha: float = 0.05) -> CoxCalibration:
    """:class:`CoxCalibration` from a :class:`GridSums` of every row: each cell's rows stand at their
    weighted mean prediction (see :class:`GridSums` for the cells and the error this makes)."""
    label, p, W = grid.cox_rows()
    return cox_from_rows(label, p, W, alpha=alpha, n=grid.n)


def cox_calibration(y_true, y_prob, *, sample_weight=None, alpha: float = 0.05) -> CoxCalibration:
    """Cox (1958) calibration intercept and slope, and calibration-in-the-large, with Wald intervals.

    >>> from calibcli.clinical.classical_tests import cox_calibration
    >>> r = cox_calibration([0, 0, 1, 1, 0, 1, 1, 0], [0.1, 0.3, 0.35, 0.8, 0.6, 0.9, 0.45, 0.2])
    >>> round(r.slope.estimate, 4), round(r.intercept.estimate, 4), round(r.calibration_in_the_large.estimate, 4)
    (1.4444, 0.3532, 0.2088)
    """
    check_options({}, alpha=alpha)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    return cox_from_rows(y, z, w, alpha=alpha)


# ---------------------------------------------------------------------------------------------
# Spiegelhalter's Z


@dataclass(frozen=True)
class SpiegelhalterTest:
    """Spiegelhalter's (1986) Z test of one binary problem: ``z``, two-sided ``p_value``, the decision at
    ``alpha`` and the two sums it is made of (``numerator = sum w (y - p)(1 - 2p)``, ``variance = sum w
    (1 - 2p)^2 p (1 - p)``)."""

    statistic: float
    p_value: float
    reject: bool
    alpha: float
    numerator: float
    variance: float
    n: int
    weight_total: float
    method: str = (
        "Spiegelhalter (1986) Z = sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2 p (1 - p)), N(0, 1), two-sided"
    )


def spiegelhalter_sums(z: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """``(sum w, sum w (y - p)(1 - 2p), sum w (1 - 2p)^2 p (1 - p))`` of a batch: the test's whole state."""
    a = 1.0 - 2.0 * z
    num = (y - z) * a
    var = a * a * z * (1.0 - z)
    if w is None:
        return np.array([float(len(z)), num.sum(), var.sum()])
    return np.array([w.sum(), w @ num, w @ var])


def spiegelhalter_from_sums(sums: np.ndarray, *, n: int, alpha: float = 0.05) -> SpiegelhalterTest:
    """The test from :func:`spiegelhalter_sums` added over every batch."""
    W, num, var = (float(v) for v in sums)
    if not var > 0:
        raise CalibcliError(
            "Spiegelhalter's Z is undefined: every prediction is 0, 1/2 or 1, so its variance "
            "sum w (1 - 2p)^2 p (1 - p) is 0"
        )
    z = num / math.sqrt(var)
    p = _two_sided_p(z)
    return SpiegelhalterTest(float(z), p, bool(p <= alpha), float(alpha), num, var, int(n), W)


def spiegelhalter_z(y_true, y_prob, *, sample_weight=None, alpha: float = 0.05) -> SpiegelhalterTest:
    """Spiegelhalter's (1986) Z test of perfect calibration.

    >>> from calibcli.clinical.classical_tests import spiegelhalter_z
    >>> r = spiegelhalter_z([0, 0, 1, 1, 0, 1, 1, 0], [0.1, 0.3, 0.35, 0.8, 0.6, 0.9, 0.45, 0.2])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (-0.2754, 0.783)
    """
    check_options({}, alpha=alpha)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    return spiegelhalter_from_sums(spiegelhalter_sums(z, y, w), n=len(y), alpha=alpha)


# ---------------------------------------------------------------------------------------------
# Hosmer-Lemeshow


@dataclass(frozen=True)
class HosmerLemeshowTest:
    """The Hosmer-Lemeshow C-hat test of one binary problem (see the module docstring for its caveats).

    ``groups``: per non-empty group its bounds, rows, weight ``n_g``, observed ``O_g`` and expected ``E_g``
    positives and its term of the statistic; ``df = G - 2``.
    """

    statistic: float
    df: int
    p_value: float
    reject: bool
    alpha: float
    n_bins: int
    n_groups: int
    groups: list[dict] = field(repr=False)
    n: int = 0
    weight_total: float = 0.0
    caveats: str = HL_CAVEATS
    method: str = (
        "Hosmer-Lemeshow C-hat: sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g)) over deciles of risk "
        "(quantile bins, docs: How it is computed §2.1), chi-square with G - 2 df"
    )


def hosmer_lemeshow_from_bins(
    count, weight, sum_z, sum_y, bounds, *, n_bins: int, alpha: float = 0.05
) -> HosmerLemeshowTest:
    """The test from per-bin sums (rows, ``sum w``, ``sum w p``, ``sum w y``) and the bins' bounds."""
    from scipy.special import chdtrc  # the chi-square survival function

    count, weight, sum_z, sum_y = (np.asarray(a) for a in (count, weight, sum_z, sum_y))
    used = (count > 0) & (weight > 0)
    G = int(used.sum())
    if G < 3:
        raise CalibcliError(
            f"the Hosmer-Lemeshow test needs at least 3 non-empty groups for its G - 2 degrees of "
            f"freedom, but the predictions fall into {G} (tied predictions merge groups): "
            f"use more {{opt:n_bins}} or more distinct predictions"
        )
    groups, total = [], 0.0
    for j in np.flatnonzero(used):
        n_g, O_g, E_g = float(weight[j]), float(sum_y[j]), float(sum_z[j])
        denom = E_g * (1.0 - E_g / n_g)
        term = 0.0 if O_g == E_g else (math.inf if denom <= 0 else (O_g - E_g) ** 2 / denom)
        total += term
        groups.append(
            {
                "lower": float(bounds[j]),
                "upper": float(bounds[j + 1]),
                "rows": int(count[j]),
                "n": n_g,
                "observed": O_g,
                "expected": E_g,
                "term": term,
            }
        )
    df = G - 2
    p = float(chdtrc(df, total)) if math.isfinite(total) else 0.0
    return HosmerLemeshowTest(
        float(total),
        df,
        p,
        bool(p <= alpha),
        float(alpha),
        int(n_bins),
        G,
        groups,
        int(count.sum()),
        float(weight.sum()),
    )


def hosmer_lemeshow(y_true, y_prob, *, n_bins: int = 10, sample_weight=None, alpha: float = 0.05) -> HosmerLemeshowTest:
    """The Hosmer-Lemeshow test on ``n_bins`` groups by quantiles of the predictions (deciles by default).

    >>> import numpy as np
    >>> from calibcli.clinical.classical_tests import hosmer_lemeshow
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(500)
    >>> r = hosmer_lemeshow(rng.random(500) < p, p)
    >>> r.df, round(r.statistic, 3), round(r.p_value, 3)
    (8, 6.098, 0.636)
    """
    check_options({}, alpha=alpha, n_bins=n_bins)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    r = binned_calibration(
        y,
        z,
        sample_weight=None if sample_weight is None else w,
        n_bins=n_bins,
        strategy="quantile",
        row_index=np.arange(len(y), dtype=np.int64),
    )
    s = r.bin_stats
    return hosmer_lemeshow_from_bins(s.count, s.weight, s.sum_z, s.sum_y, r.bin_bounds, n_bins=n_bins, alpha=alpha)


# ---------------------------------------------------------------------------------------------
# ICI, E50, E90, Emax on the SmoothECE calibration curve


#: Predictions below ``TAIL`` or at least ``1 - TAIL`` are also summed on a log-odds grid (Cox calibration).
TAIL = 2.0**-6
#: Tail cells: the exponent and the top ``TAIL_MANTISSA_BITS`` mantissa bits of ``q = min(p, 1 - p)``.
TAIL_MANTISSA_BITS = 10
_TAIL_SHIFT = 52 - TAIL_MANTISSA_BITS


#: The clip of Platt scaling (``calibcli.calibrators._common.DEFAULT_CLIP``, which a test checks), written here so
#: that importing this module does not import the calibrators.
CLIP = 1e-12


def _tail_cell(q: np.ndarray) -> np.ndarray:
    return (q.view(np.int64) >> _TAIL_SHIFT) - (np.array(CLIP).view(np.int64) >> _TAIL_SHIFT)


#: Tail cells per side, from the clip (1e-12) up to and including ``q = TAIL``.
TAIL_CELLS = int(_tail_cell(np.array([TAIL]))[0]) + 1


class _Cells(ArrayState):
    """Per-cell sums over ``size`` cells: the rows' count, weight (None while every weight is 1) and ``value``
    (a weighted sum). A state with few rows keeps them as they came (so that thousands of small groups stay
    small); once they are an eighth of the cells, they are summed into dense arrays, which batches then add to
    with bincount."""

    def __init__(self, size: int):
        self.size = int(size)
        self.count: np.ndarray | None = None
        self.weight: np.ndarray | None = None
        self.value: np.ndarray | None = None
        # the low parts of the weight and value sums (calibcli.core.compensated): the same floats on any engine
        self.weight_lo: np.ndarray | None = None
        self.value_lo: np.ndarray | None = None
        self._parts: list[tuple] = []  # (key, count or None for one row each, weight or None, value)
        self._held = 0

    def add(self, key, count, w, v) -> None:
        if self.count is None and self._held + len(key) <= self.size // 8:
            self._parts.append((key, count, w, v))
            self._held += len(key)
            return
        self._bincount(key, count, w, v)

    def _bincount(self, key, count, w, v) -> None:
        size = self.size
        dense_count, dense_value, value_lo = self._densify()
        c = np.bincount(key, minlength=size) if count is None else np.bincount(key, weights=count, minlength=size)
        c = c.astype(np.int64) if c.dtype != np.int64 else c
        entries = c if count is None else np.bincount(key, minlength=size)
        # the batch's sums exact (bincount_exact): the state's pairs hold the same floats however the rows were
        # batched, split and ordered (Emax, read where the curve's density is thin, and Cox's p-values far in the
        # tail amplify a last-bit difference of a cell's sum a thousandfold)
        added = None if w is None else bincount_exact(key, w, entries)
        # the cells a batch's sums can change, when they are few (the tail grid's, a small batch's): an exact
        # addition costs a dozen passes over the cells it is made on (measured: 2.6x less on 2^15 cells for 8,192
        # rows than the dense one)
        touched = np.unique(key) if 64 * len(key) < size else np.flatnonzero(c != 0) if 2 * len(key) < size else None
        self._add_weights(dense_count, c, added, touched)
        dense_count += c  # in place: the arrays are self.count and self.value
        batch, batch_lo = bincount_exact(key, v, entries)
        add_exact_at(dense_value, value_lo, batch, touched, batch_lo)

    def _densify(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The dense ``count``, ``value`` and ``value_lo`` arrays, summed from the rows held so far on first use."""
        if self.count is None or self.value is None or self.value_lo is None:
            self.count, self.value = np.zeros(self.size, dtype=np.int64), np.zeros(self.size)
            self.value_lo = np.zeros(self.size)
            parts, self._parts, self._held = self._parts, [], 0
            for part in parts:
                self._bincount(*part)
        return self.count, self.value, self.value_lo

    def merge(self, other: _Cells) -> None:
        if self.count is None and other.count is None and self._held + other._held <= self.size // 8:
            self._parts.extend(other._parts)
            self._held += other._held
            return
        dense_count, dense_value, value_lo = self._densify()
        if other.count is None or other.value is None:
            for part in other._parts:
                self._bincount(*part)
            return
        added = None if other.weight is None or other.weight_lo is None else (other.weight, other.weight_lo)
        self._add_weights(dense_count, other.count, added)
        dense_count += other.count
        add_exact(dense_value, value_lo, other.value, other.value_lo)

    def _add_weights(self, count_before, count, added, touched=None) -> None:
        """Weight sums after adding a part with row counts ``count`` and weight sums ``added`` (pairs ``(hi,
        lo)``; None: unit weights) to this state's ``count_before`` rows (``weight`` None while every row had
        unit weight)."""
        if self.weight is None and added is None:
            return
        weight, weight_lo = self.weight, self.weight_lo
        if weight is None or weight_lo is None:
            weight, weight_lo = count_before.astype(np.float64), np.zeros(self.size)
            self.weight, self.weight_lo = weight, weight_lo
        x, x_lo = (count, None) if added is None else added
        add_exact_at(weight, weight_lo, x, touched, x_lo)

    def sparse(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """``(cells, count, weight or None, value)`` of the non-empty cells, in increasing cell order."""
        if self.count is not None and self.value is not None:
            cells = np.flatnonzero(self.count)
            return cells, self.count[cells], None if self.weight is None else self.weight[cells], self.value[cells]
        if not self._parts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), None, np.empty(0)
        key = np.concatenate([p[0] for p in self._parts])
        cells, inverse = np.unique(key, return_inverse=True)
        n = len(cells)
        count = np.concatenate([np.ones(len(p[0])) if p[1] is None else p[1] for p in self._parts])
        count = np.rint(np.bincount(inverse, weights=count, minlength=n)).astype(np.int64)
        entries = np.bincount(inverse, minlength=n)  # (the sums exact, as the dense cells': bincount_exact)
        weight = None
        if any(p[2] is not None for p in self._parts):
            w = np.concatenate(
                [
                    (np.ones(len(p[0])) if p[1] is None else np.asarray(p[1], dtype=np.float64))
                    if p[2] is None
                    else p[2]
                    for p in self._parts
                ]
            )
            weight = bincount_exact(inverse, w, entries)[0]
        value = bincount_exact(inverse, np.concatenate([p[3] for p in self._parts]), entries)[0]
        return cells, count, weight, value


class GridSums(ArrayState):
    """Per-cell sums of one binary problem's rows: the whole state of its ICI and Cox calibration.

    - per (label, cell) of a uniform grid of ``n_cells`` cells (``2 n_cells`` cells, negatives first): the
      rows, their weight and ``sum w p`` (``cells``);
    - likewise for the predictions with ``q = min(p, 1 - p)`` below ``TAIL`` (``p < TAIL`` or ``p >= 1 -
      TAIL``), per (label, side of 1/2, cell of q on a log scale: relative width 2^-10), q clipped below at
      1e-12 as Cox's logit clips p, with ``sum w q`` (``tail``).

    Cox calibration stands each cell's rows at their weighted mean: middle cells of the uniform grid
    (width h = 2^-14 inside ``[TAIL, 1 - TAIL)``) move a logit by about ``h^2 / 24 |logit''|`` on average,
    at most 6e-7 at p = 2^-6 and far less inside; tail cells by about ``(2^-10)^2 / 24``. The ICI uses the
    uniform cells, each cell's rows at their mean. Integer counts and sums that add in any order.
    """

    def __init__(self, n_cells: int = ICI_GRID):
        self.n_cells = int(n_cells)
        self.n = 0
        self.cells = _Cells(2 * self.n_cells)
        self.tail = _Cells(4 * TAIL_CELLS)

    def add_rows(self, z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> GridSums:
        """Add a batch: predictions in [0, 1], labels 0/1, weights or None."""
        m = self.n_cells
        self.n += len(z)
        y = np.asarray(y, dtype=np.int64)
        cell = (z * m).astype(np.int64)  # z >= 0: truncation is the floor
        np.minimum(cell, m - 1, out=cell)
        cell += y * m
        self.cells.add(cell, None, w, z if w is None else w * z)
        tail = z < TAIL
        tail |= z >= 1.0 - TAIL
        if tail.any():
            at = np.flatnonzero(tail)
            zt, yt = z[at], y[at]
            wt = None if w is None else w[at]
            q = np.minimum(zt, 1.0 - zt)
            np.maximum(q, CLIP, out=q)
            key = _tail_cell(q) + (zt > 0.5) * TAIL_CELLS + yt * (2 * TAIL_CELLS)
            self.tail.add(key, None, wt, q if wt is None else wt * q)
        return self

    def merge(self, other: GridSums) -> GridSums:
        if other.n_cells != self.n_cells:
            raise ValueError("grid sums on different grids cannot be added")
        self.n += other.n
        self.cells.merge(other.cells)
        self.tail.merge(other.tail)
        return self

    @staticmethod
    def _positive(cells, count, weight, value):
        W = count.astype(np.float64) if weight is None else weight
        keep = W > 0
        return cells[keep], count[keep], W[keep], value[keep]

    def cox_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(label, p, weight)``: one weighted row per non-empty cell at its mean prediction (middle cells of
        the uniform grid, then the tail cells)."""
        m = self.n_cells
        lo, hi = int(TAIL * m), m - int(TAIL * m)  # uniform cells [lo, hi) cover [TAIL, 1 - TAIL) exactly
        cells, _, W, wz = self._positive(*self.cells.sparse())
        label, cell = np.divmod(cells, m)
        middle = (cell >= lo) & (cell < hi)
        label, W, p_mid = label[middle], W[middle], wz[middle] / W[middle]
        tail, _, Wt, wq = self._positive(*self.tail.sparse())
        label_t, rest = np.divmod(tail, 2 * TAIL_CELLS)
        q = wq / Wt
        p_tail = np.where(rest >= TAIL_CELLS, 1.0 - q, q)
        return (
            np.concatenate([label, label_t]).astype(np.int64),
            np.concatenate([p_mid, p_tail]),
            np.concatenate([W, Wt]),
        )

    def uniform_cells(self):
        """``(key, count, weight or None, mass, mean p)`` of the non-empty (label, cell)s of the uniform grid."""
        cells, count, weight, value = self.cells.sparse()
        key, count_pos, mass, wz = self._positive(cells, count, weight, value)
        return key, count_pos, None if weight is None else mass, mass, wz / mass


def ici_from_grid(grid: GridSums) -> SmoothCalibrationIndex:
    """ICI, E50, E90 and Emax from the :class:`GridSums` of every row: the one-group case of :func:`ici_groups`."""
    (out,) = ici_groups(UniformCells.of_grids([grid]))
    if isinstance(out, CalibcliError):
        raise out
    return out


def integrated_calibration_index(y_true, y_prob, *, sample_weight=None) -> SmoothCalibrationIndex:
    """ICI, E50, E90, Emax (Austin & Steyerberg 2019) on the SmoothECE curve (see the module docstring).

    >>> from calibcli.clinical.classical_tests import integrated_calibration_index
    >>> r = integrated_calibration_index([0, 0, 1, 1, 0, 1, 1, 0], [0.1, 0.3, 0.35, 0.8, 0.6, 0.9, 0.45, 0.2])
    >>> round(r.ici, 4), round(r.e50, 4), round(r.e90, 4)
    (0.1082, 0.0958, 0.1759)
    """
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    return ici_from_grid(GridSums().add_rows(z, y, None if sample_weight is None else w))


def brier_skill_score(y_true, y_prob, *, sample_weight=None) -> float:
    """Brier skill score against climatology, ``1 - Brier / (ybar (1 - ybar))`` (Murphy 1973; Wilks).

    >>> from calibcli.clinical.classical_tests import brier_skill_score
    >>> round(brier_skill_score([0, 1, 1, 0], [0.2, 0.7, 0.9, 0.4]), 4)
    0.7
    """
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    W = float(w.sum())
    ybar = float(w @ y) / W
    if ybar in (0.0, 1.0):
        raise CalibcliError("the Brier skill score is undefined when every label is the same (ybar (1 - ybar) = 0)")
    return 1.0 - float(w @ (z - y) ** 2) / W / (ybar * (1.0 - ybar))
