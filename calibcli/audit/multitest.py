"""Multiple testing for the segment audit: Holm and Benjamini-Hochberg adjusted p-values, and the p-value of
the multicalibration error MCE (SPEC section 9).

Conventions, for every function here:

- p-values are taken along the last axis; leading axes are independent families (broadcast, no loop).
- NaN marks a hypothesis that was not tested (a segment under the minimum size): it is not counted in the
  family size ``m`` and its adjusted p-value stays NaN. A family of NaNs only stays NaN.
- Ties: equal p-values get equal adjusted p-values, whatever their order (both procedures' step-wise
  maximum/minimum make this so), so the result does not depend on how a sort orders ties.
- Adjusted p-values are capped at 1.

Holm (1979), "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6: with the
p-values sorted ``p_(1) <= ... <= p_(m)``, ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``. It controls
the family-wise error rate under any dependence between the tests (overlapping segments included).

Benjamini and Hochberg (1995), "Controlling the false discovery rate", JRSS B 57:
``adj_(i) = min_{j >= i} min(1, m p_(j) / j)``. It controls the false discovery rate for independent or
positively dependent (PRDS) tests; for arbitrary dependence, Benjamini and Yekutieli (2001) multiply by
``sum_{k<=m} 1/k`` (``method="by"``).

Both equal statsmodels' ``multipletests(..., method="holm" | "fdr_bh" | "fdr_by")`` to rounding.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.cumulative.brownian import range_brownian_sf

__all__ = ["adjust_pvalues", "holm", "benjamini_hochberg", "mce_pvalue", "MCE_METHODS", "ADJUST_METHODS"]

#: Methods of :func:`adjust_pvalues`.
ADJUST_METHODS = ("holm", "bh", "by", "bonferroni", "none")
#: Methods of :func:`mce_pvalue`.
MCE_METHODS = ("bonferroni", "sidak", "none")


def _prepare(pvalues) -> np.ndarray:
    p = np.asarray(pvalues, dtype=np.float64)
    bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        raise CalibcliError(
            f"a p-value is {float(p[bad].reshape(-1)[0]):g}: expected values in [0, 1] (NaN: not tested)"
        )
    return p


def _step(p: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values along the last axis of a float array (NaN: not tested)."""
    if p.shape[-1] == 0:
        return p.copy()
    nan = np.isnan(p)
    m = (~nan).sum(axis=-1, keepdims=True)  # tested per family
    order = np.argsort(np.where(nan, np.inf, p), axis=-1, kind="stable")  # NaNs last
    ps = np.take_along_axis(p, order, axis=-1)
    rank = np.arange(1, p.shape[-1] + 1)  # 1-based position in the sorted family
    tested = rank <= m
    with np.errstate(invalid="ignore"):
        if method == "holm":
            adj = np.minimum(1.0, (m - rank + 1) * ps)
            adj = np.where(tested, adj, 0.0)
            adj = np.maximum.accumulate(adj, axis=-1)
        elif method in ("bh", "by"):
            scale = m / rank
            if method == "by":
                scale = scale * np.cumsum(1.0 / rank)[np.maximum(m, 1) - 1]  # times sum_{k<=m} 1/k
            adj = np.minimum(1.0, scale * ps)
            adj = np.where(tested, adj, 1.0)
            adj = np.flip(np.minimum.accumulate(np.flip(adj, axis=-1), axis=-1), axis=-1)
        elif method == "bonferroni":
            adj = np.minimum(1.0, m * ps)
        else:  # none
            adj = ps.copy()
    adj = np.where(tested, adj, np.nan)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def adjust_pvalues(pvalues, *, method: str = "holm") -> np.ndarray:
    """Adjusted p-values along the last axis: ``holm`` (family-wise error rate, any dependence), ``bh``
    (Benjamini-Hochberg false discovery rate), ``by`` (Benjamini-Yekutieli, any dependence), ``bonferroni``,
    or ``none`` (a copy). NaN: not tested, not counted, stays NaN. A hypothesis is rejected at level ``alpha``
    when its adjusted p-value is ``<= alpha``. See the module docstring for formulas and sources.
    """
    if method not in ADJUST_METHODS:
        raise CalibcliError(f"adjust method is {method!r}: expected one of {', '.join(ADJUST_METHODS)}")
    return _step(_prepare(pvalues), method)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (:func:`adjust_pvalues` with ``method="holm"``)."""
    return adjust_pvalues(pvalues, method="holm")


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (:func:`adjust_pvalues` with ``method="bh"``)."""
    return adjust_pvalues(pvalues, method="bh")


def mce_pvalue(mce_sigma, n_tested, *, method: str = "bonferroni"):
    """p-value of MCE = the largest ECCE-R/sigma over ``n_tested`` segments, accounting for how many were tested.

    With ``p1 = range_brownian_sf(mce_sigma)``, the p-value of the worst segment alone:

    - ``bonferroni`` (default): ``min(1, m p1)``. By the union bound, ``P(max_i T_i >= x) <= sum_i P(T_i >= x)``
      under perfect calibration in every segment, whatever the dependence between segments (they overlap:
      a row is in one segment per column and per pair of columns), so the test "MCE p <= alpha" has size
      at most alpha (asymptotically in each segment's size). It equals Holm's smallest adjusted p-value, so
      the MCE gate and Holm's "any segment" gate reject together.
    - ``sidak``: ``1 - (1 - p1)^m``, exact when the segments' statistics are independent (disjoint segments
      of one partition, asymptotically); between Bonferroni and the truth when they are positively
      dependent in the sense of Sidak's inequality, which overlapping segments do not guarantee, so use it
      only for segments of a single partition.
    - ``none``: ``p1``, MCGrad's ``MulticalibrationError.mce_pvalue`` (the smallest per-segment p-value, not
      adjusted; MCGrad's docstring says so and argues the overlap makes the needed adjustment small). Its
      false alarm rate grows with the number of segments; kept for comparison with MCGrad.

    Guy et al., "Measuring multi-calibration", arXiv:2506.11251 (2025), define MCE as the maximum of the
    segments' ECCE-R/sigma (their signal-to-noise weighting); the adjustment for the number of segments is
    ours, as the SPEC (section 9) asks: Bonferroni where the segments overlap. Vectorised: ``mce_sigma`` and
    ``n_tested`` broadcast. ``n_tested = 0`` gives NaN.
    """
    if method not in MCE_METHODS:
        raise CalibcliError(f"MCE p-value method is {method!r}: expected one of {', '.join(MCE_METHODS)}")
    x = np.asarray(mce_sigma, dtype=np.float64)
    m = np.asarray(n_tested)
    if m.dtype.kind not in "iu" or np.any(m < 0):
        raise CalibcliError(f"n_tested is {m.tolist()!r}: expected a count of tested segments (an integer >= 0)")
    p1 = np.asarray(range_brownian_sf(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "bonferroni":
            p = np.minimum(1.0, m * p1)
        elif method == "sidak":
            p = -np.expm1(m * np.log1p(-p1))  # 1 - (1 - p1)^m without cancellation for tiny p1
        else:
            p = p1 * np.ones_like(m, dtype=np.float64)
    p = np.where(m > 0, p, np.nan)
    return float(p) if np.ndim(p) == 0 else p
