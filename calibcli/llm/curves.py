"""Selective prediction on tie blocks: the risk-coverage curve and its areas (SPEC 11).

Rows are ordered by confidence, descending; rows of equal confidence form one *block*, and within a block
the errors are spread evenly (the order inside a block changes no number). Every function here works on the
blocks' sums, ``s`` (weight) and ``e`` (weight of the wrong answers), with any leading axes (bootstrap
replicates): a row of weight 1 counts once, a bootstrap multiplicity multiplies its weight.

With ``A`` and ``B`` the weight and the errors of the blocks before a block, the cumulative errors after
``j`` of its ``s`` units are ``B + j e / s``, and ``r_k = E_k / k`` (SPEC 11). Sums over a block are closed
forms, so no loop runs over rows:

- AURC (Geifman, Uziel, El-Yaniv, "Bias-reduced uncertainty estimation for deep neural classifiers", ICLR 2019):
  ``(1/N) sum_k r_k``; a block adds ``sum_{j=1..s} (B + j e/s)/(A + j) = e + (B - e A / s) (H(A+s) - H(A))``,
  ``H`` the harmonic numbers (the digamma function for weights that are not whole).
- E-AURC: AURC minus AURC*, the exact AURC of the order that ranks every correct answer first (two blocks:
  all correct, then all wrong), not Geifman et al.'s closed-form approximation ``r + (1 - r) ln(1 - r)``.
- AUGRC (Traub, Bungert, Lüth, Baumgartner, Jaeger, "Overcoming common flaws in the evaluation of selective
  classification systems", NeurIPS 2024): the area under the generalized risk ``E_k / N`` against coverage
  ``k / N``, as the Riemann sum ``(1/N) sum_k (k/N) r_k = (1/N^2) sum_k E_k``; a block adds
  ``s B + e (s + 1) / 2``.
- Risk at coverage ``q``: ``r_k`` at ``k = ceil(q N)``; coverage at risk ``t``: ``max{k/N : r_k <= t}``
  (0 when no ``k`` qualifies; ``k`` whole when every block's weight is whole).
- AUROC of the confidence for correctness: ``P(conf of a correct answer > conf of a wrong one)``, ties
  counted one half (the Mann-Whitney statistic), undefined when every answer is right or every one wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Relative slack of the comparison ``r_k <= t`` (rounding of the cumulative sums).
RISK_SLACK = 1e-12


@dataclass(frozen=True)
class Blocks:
    """Rows grouped by equal confidence, most confident first: ``order`` sorts the rows, ``starts`` are the
    first sorted position of each block, ``inverse`` each row's block, ``confidence`` each block's value."""

    order: np.ndarray
    starts: np.ndarray
    inverse: np.ndarray
    confidence: np.ndarray

    @property
    def n_blocks(self) -> int:
        return len(self.starts)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per-block sums of ``values`` (``(..., n)`` in the rows' order) -> ``(..., n_blocks)``."""
        return np.add.reduceat(values[..., self.order], self.starts, axis=-1)

    def tie_counts(self) -> dict:
        """How many blocks hold more than one row, and how many rows they hold."""
        sizes = np.diff(np.append(self.starts, len(self.order)))
        tied = sizes > 1
        return {"tie_blocks": int(tied.sum()), "rows_in_ties": int(sizes[tied].sum())}


def tie_blocks(confidence: np.ndarray) -> Blocks:
    """The blocks of equal ``confidence`` (descending); rows in a block keep their given order (stable sort)."""
    confidence = np.asarray(confidence, dtype=np.float64)
    order = np.argsort(-confidence, kind="stable")
    ordered = confidence[order]
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(new)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return Blocks(order, starts, inverse, ordered[starts])


def harmonic_difference(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``H(a + s) - H(a) = psi(a + s + 1) - psi(a + 1)`` for ``a >= 0``, ``s >= 0``, without cancellation:
    ``1/(a+1)`` for ``s = 1``, the asymptotic series of the digamma difference for ``a + 1 >= 1000`` (its
    first omitted term below 1e-20 relative), scipy's digamma otherwise."""
    from scipy.special import digamma

    a, s = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(s, dtype=np.float64))
    x1 = a + 1.0
    x2 = x1 + s
    out = np.zeros(a.shape)
    one = s == 1.0
    out[one] = 1.0 / x1[one]
    large = ~one & (x1 >= 1000.0) & (s > 0)
    if large.any():
        u, v, d = x1[large], x2[large], s[large]
        # psi(x) = ln x - 1/(2x) - 1/(12x^2) + 1/(120x^4) - ...; each difference written without cancellation
        out[large] = (
            np.log1p(d / u)
            + d / (2 * u * v)
            + d * (u + v) / (12 * u**2 * v**2)
            - d * (u + v) * (u**2 + v**2) / (120 * u**4 * v**4)
        )
    small = ~one & ~large & (s > 0)
    if small.any():
        out[small] = digamma(x2[small]) - digamma(x1[small])
    return out


def _before(x: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sums along the last axis."""
    return np.cumsum(x, axis=-1) - x


def aurc(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """AURC of blocks with weights ``s`` and errors ``e`` (most confident first), over the last axis."""
    a, b = _before(s), _before(e)
    with np.errstate(invalid="ignore", divide="ignore"):
        term = e + (b - np.where(s > 0, e * a / np.where(s > 0, s, 1.0), 0.0)) * harmonic_difference(a, s)
    return term.sum(axis=-1) / s.sum(axis=-1)


def oracle_aurc(n: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """AURC* of ``n`` units of which ``errors`` wrong, correct answers first (two blocks)."""
    n, errors = np.asarray(n, dtype=np.float64), np.asarray(errors, dtype=np.float64)
    correct = n - errors
    with np.errstate(invalid="ignore", divide="ignore"):
        return (errors - correct * harmonic_difference(correct, errors)) / n


def augrc(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """AUGRC, ``(1/N^2) sum_k E_k``, over the last axis."""
    n = s.sum(axis=-1)
    return (s * _before(e) + e * (s + 1.0) / 2.0).sum(axis=-1) / n**2


def risk_at_coverage(s: np.ndarray, e: np.ndarray, q: float) -> np.ndarray:
    """``r_k`` at ``k = ceil(q N)`` (``0 < q <= 1``), over the last axis."""
    n = s.sum(axis=-1, keepdims=True)
    k = np.maximum(np.ceil(np.round(q * n, 9)), 1.0)
    cum = np.cumsum(s, axis=-1)
    block = np.minimum((cum < k).sum(axis=-1, keepdims=True), s.shape[-1] - 1)  # the first block reaching k
    a = np.take_along_axis(cum - s, block, axis=-1)
    sb, eb = np.take_along_axis(s, block, axis=-1), np.take_along_axis(e, block, axis=-1)
    b = np.take_along_axis(_before(e), block, axis=-1)
    return ((b + (k - a) * eb / sb) / k)[..., 0]


def coverage_parts(s: np.ndarray, e: np.ndarray) -> tuple:
    """What :func:`coverage_at_risk` needs of the blocks whatever the level: computed once for all levels."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(s > 0, e / np.where(s > 0, s, 1.0), 0.0)
    return s.sum(axis=-1), _before(s), _before(e), bool(np.all(s == np.floor(s))), ratio


def coverage_at_risk(s: np.ndarray, e: np.ndarray, t: float, parts: tuple | None = None) -> np.ndarray:
    """``max{k/N : r_k <= t}`` over the last axis (0 when none); ``k`` whole when every block weight is.
    ``parts``: :func:`coverage_parts` of ``s`` and ``e``, when several levels are asked of the same blocks."""
    n, a, b, whole, ratio = coverage_parts(s, e) if parts is None else parts
    slack = RISK_SLACK * max(1.0, t)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = ratio - t  # r(j) <= t  <=>  j c <= t A - B
        d = t * a - b + slack * (a + s)
        j = np.where(c > 0, np.minimum(s, d / np.where(c > 0, c, 1.0)), np.where(s * c <= d, s, 0.0))
    j = np.floor(j + 1e-9) if whole else j
    j = np.where((s > 0) & (j > 0), j, 0.0)
    reach = np.where(j > 0, a + j, 0.0)
    return reach.max(axis=-1) / n


def auroc(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """AUROC of the confidence for correctness over the last axis (NaN when a class is empty)."""
    c = s - e
    wrong_below = e.sum(axis=-1, keepdims=True) - np.cumsum(e, axis=-1)
    total = c.sum(axis=-1) * e.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (c * (wrong_below + 0.5 * e)).sum(axis=-1) / total


def risk_curve(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve at each block's end: coverage ``k/N`` and risk ``r_k`` (1-D blocks), for plots and reports."""
    cum_s, cum_e = np.cumsum(s), np.cumsum(e)
    keep = s > 0
    return cum_s[keep] / cum_s[-1], cum_e[keep] / cum_s[keep]
