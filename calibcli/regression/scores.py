"""Per-row quantities of regression predictions (SPEC 10): PIT values, proper scores, interval scores.

Every function takes NumPy arrays of one batch (rows on axis 0) and returns one value per row, so that the
accumulator (:mod:`calibcli.regression.accumulator`) sums them over a stream and the library functions
(:mod:`calibcli.regression.library`) average them. Sources, per function:

- Gaussian PIT ``Phi((y - mu) / sigma)``; CRPS closed form ``sigma [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)]``
  (Gneiting and Raftery 2007, eq. 5; uncertainty-toolbox ``crps_gaussian``); NLL ``log sigma + z^2/2 +
  log(2 pi)/2`` (uncertainty-toolbox ``nll_gaussian``).
- Ensemble PIT, randomised for ties: ``(#{x_j < y} + V (#{x_j = y} + 1)) / (M + 1)`` with ``V ~ U(0, 1)``
  keyed by ``(seed, global row index)``; ensemble CRPS ``(1/M) sum_j |x_j - y| - (1 / (2 M^2)) sum_jk
  |x_j - x_k|`` ("nrg") or with ``2 M (M - 1)`` ("fair", Ferro 2014), the double sum as ``2 sum_j (2j - M - 1)
  x_(j)`` over the sorted members (scoringrules ``crps_ensemble``' estimators of the same names).
- Quantile PIT: linear interpolation of the levels between the bracketing quantiles; below the lowest one
  ``u = V tau_1``, above the highest ``u = tau_m + V (1 - tau_m)`` (uniform within the tail mass, seeded).
- Pinball (check) loss ``(1{y < q} - tau)(q - y)`` (Koenker; uncertainty-toolbox ``check_score``);
  interval (Winkler) score ``(u - l) + (2/a)(l - y) 1{y < l} + (2/a)(y - u) 1{y > u}`` at level ``1 - a``
  (Gneiting and Raftery 2007, eq. 43; MAPIE ``regression_mwi_score``, scoringrules ``interval_score``).
"""

from __future__ import annotations

import math

import numpy as np

from calibcli.core.resampling import row_hash

#: uncertainty-toolbox's levels of ``check_score`` and ``interval_score``: ``linspace(0.01, 0.99, 99)``.
UCT_LEVELS = np.linspace(0.01, 0.99, 99)
CRPS_ESTIMATORS = ("nrg", "fair")
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def uniforms(seed: int, row_index: np.ndarray) -> np.ndarray:
    """``V ~ U(0, 1)`` for each row, a function of ``(seed, global row index)`` only (the top 53 bits of
    :func:`calibcli.core.resampling.row_hash` of a seed of its own), so any split of the rows draws the same."""
    bits = row_hash(int(seed) ^ 0x5DEECE66D, np.asarray(row_index, dtype=np.int64)) >> np.uint64(11)
    return (bits.astype(np.float64) + 0.5) * 2.0**-53


def gaussian_z(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return (y - mu) / sigma


def gaussian_pit(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``Phi((y - mu) / sigma)``."""
    from scipy.special import ndtr

    return ndtr(gaussian_z(y, mu, sigma))


def crps_gaussian(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The CRPS of ``N(mu, sigma^2)`` at ``y`` (closed form)."""
    from scipy.special import ndtr

    z = gaussian_z(y, mu, sigma)
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return sigma * (z * (2.0 * ndtr(z) - 1.0) + 2.0 * pdf - 1.0 / math.sqrt(math.pi))


def nll_gaussian(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``-log N(y; mu, sigma^2)``."""
    z = gaussian_z(y, mu, sigma)
    return np.log(sigma) + 0.5 * z * z + _HALF_LOG_2PI


def gaussian_quantiles(mu: np.ndarray, sigma: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``(n, L)`` quantiles ``mu + sigma Phi^-1(tau)`` of each row at ``levels``."""
    from scipy.special import ndtri

    return mu[:, None] + sigma[:, None] * ndtri(np.asarray(levels, dtype=np.float64))[None, :]


def pinball(y: np.ndarray, q: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Mean over levels of ``(1{y < q} - tau)(q - y)``, per row; ``q`` is ``(n, L)``."""
    diff = q - y[:, None]
    return np.mean(((diff > 0) - np.asarray(levels)[None, :]) * diff, axis=1)


def interval_score(y: np.ndarray, lower: np.ndarray, upper: np.ndarray, level: float | np.ndarray) -> np.ndarray:
    """The Winkler score of the central interval ``[lower, upper]`` at ``level`` (``a = 1 - level``)."""
    a = 1.0 - np.asarray(level, dtype=np.float64)
    below = np.maximum(lower - y, 0.0)
    above = np.maximum(y - upper, 0.0)
    return (upper - lower) + (2.0 / a) * below + (2.0 / a) * above


def gaussian_interval_score_mean(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """uncertainty-toolbox's ``interval_score``: the Winkler score averaged over the central intervals at
    ``linspace(0.01, 0.99, 99)``, per row, in closed form.

    At level ``L`` the interval is ``mu -/+ sigma c_L`` (``c_L = Phi^-1(1/2 + L/2)``, increasing in ``L``) and at
    most one end is missed, by ``|y - mu| - sigma c_L``, so with ``z = |y - mu| / sigma`` the score is
    ``sigma [2 c_L + (2 / a_L) max(z - c_L, 0)]``. The mean over the levels is ``sigma [2 mean(c) + (z A_k -
    B_k) / 99]``, where ``k`` levels have ``c_L < z`` and ``A_k``, ``B_k`` are the prefix sums of ``2 / a_L`` and
    ``2 c_L / a_L``: one search per row instead of 99 scores (the same number to rounding, ~1e-15 relative)."""
    c, a_sum, b_sum = _interval_tables()
    z = np.abs(y - mu) / sigma
    k = np.searchsorted(c, z, side="left")
    return sigma * (2.0 * c.mean() + (z * a_sum[k] - b_sum[k]) / len(c))


def gaussian_pinball(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """uncertainty-toolbox's ``check_score``: :func:`pinball` at the Gaussian's quantiles ``mu + sigma d_t``
    (``d_t = Phi^-1(t)``) at ``t`` in ``linspace(0.01, 0.99, 99)``, per row, in closed form.

    With ``z = (y - mu) / sigma``, ``rho_t = sigma (1{z < d_t} - t)(d_t - z)``; summed over the levels it is
    ``sigma [(D_k - z (m - k)) - (sum t d_t - z sum t)]``, where ``k`` levels have ``d_t <= z`` and ``D_k`` is
    the sum of ``d_t`` over the others: one search per row instead of 99 losses (the same number to rounding)."""
    d, upper_d, td, t_sum = _pinball_tables()
    z = (y - mu) / sigma
    k = np.searchsorted(d, z, side="right")
    m = len(d)
    return sigma * ((upper_d[k] - z * (m - k)) - (td - z * t_sum)) / m


def _interval_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``c_L`` and the prefix sums ``A_k = sum_{j<k} 2/a_j``, ``B_k = sum_{j<k} 2 c_j / a_j`` (``k = 0..99``)."""
    from scipy.special import ndtri

    c = ndtri(0.5 + UCT_LEVELS / 2.0)
    two_over_a = 2.0 / (1.0 - UCT_LEVELS)
    return c, np.r_[0.0, np.cumsum(two_over_a)], np.r_[0.0, np.cumsum(two_over_a * c)]


def _pinball_tables() -> tuple[np.ndarray, np.ndarray, float, float]:
    """``d_t``, the sums ``D_k = sum_{j>=k} d_j`` (``k = 0..99``), ``sum t d_t`` and ``sum t``."""
    from scipy.special import ndtri

    d = ndtri(UCT_LEVELS)
    upper = np.r_[np.cumsum(d[::-1])[::-1], 0.0]
    return d, upper, float(np.sum(UCT_LEVELS * d)), float(np.sum(UCT_LEVELS))


def sample_pit(y: np.ndarray, samples: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The randomised PIT of an ensemble: ``(#{x < y} + V (#{x = y} + 1)) / (M + 1)``."""
    below = np.count_nonzero(samples < y[:, None], axis=1)
    ties = np.count_nonzero(samples == y[:, None], axis=1)
    return (below + v * (ties + 1)) / (samples.shape[1] + 1)


def crps_ensemble(y: np.ndarray, samples: np.ndarray, estimator: str = "nrg") -> np.ndarray:
    """The CRPS of an ensemble of ``M`` members at ``y``: the energy form ("nrg") or the fair one ("fair")."""
    m = samples.shape[1]
    spread_to_y = np.mean(np.abs(samples - y[:, None]), axis=1)
    ordered = np.sort(samples, axis=1)
    coef = 2.0 * np.arange(1, m + 1) - m - 1.0
    pair_sum = 2.0 * (ordered @ coef)  # sum_jk |x_j - x_k|
    denominator = 2.0 * m * m if estimator == "nrg" else 2.0 * m * (m - 1)
    return spread_to_y - pair_sum / denominator


def sorted_quantiles(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantile rows sorted, and which rows were crossed (a higher level's value below a lower one's)."""
    crossed = np.any(np.diff(q, axis=1) < 0, axis=1)
    if crossed.any():
        q = q.copy()
        q[crossed] = np.sort(q[crossed], axis=1)
    return q, crossed


def quantile_pit(y: np.ndarray, q: np.ndarray, levels: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The PIT of sorted quantiles ``q`` (``(n, m)``) at ``levels``: interpolated between the bracketing
    quantiles, uniform (``V``) within the tail mass outside them."""
    levels = np.asarray(levels, dtype=np.float64)
    m = q.shape[1]
    j = np.count_nonzero(q < y[:, None], axis=1)  # quantiles strictly below y
    u = np.empty(len(y))
    low, high = j == 0, j == m
    u[low] = v[low] * levels[0]
    u[high] = levels[-1] + v[high] * (1.0 - levels[-1])
    mid = ~(low | high)
    if mid.any():
        jm = j[mid]
        rows = np.flatnonzero(mid)
        q0, q1 = q[rows, jm - 1], q[rows, jm]
        t0, t1 = levels[jm - 1], levels[jm]
        u[mid] = t0 + (t1 - t0) * (y[mid] - q0) / (q1 - q0)
    return u


def ks_uniform(u: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The Kolmogorov-Smirnov distance of the (weighted) empirical CDF of ``u`` from U(0, 1)."""
    order = np.argsort(u, kind="stable")
    x = u[order]
    w = np.ones(len(x)) if weights is None else weights[order]
    total = w.sum()
    after = np.cumsum(w) / total
    before = after - w / total
    # at tied values only the last of a run counts for F(x) and the first for F(x-)
    last = np.r_[x[1:] != x[:-1], True]
    first = np.r_[True, x[1:] != x[:-1]]
    d_plus = np.max(after[last] - x[last]) if len(x) else 0.0
    d_minus = np.max(x[first] - before[first]) if len(x) else 0.0
    return float(max(d_plus, d_minus, 0.0))


def ks_pvalue(d: float, n: int) -> float:
    """The exact two-sided p-value of a KS distance ``d`` on ``n`` values (``scipy.stats.kstwo``, as
    ``scipy.stats.kstest`` computes by default)."""
    if n < 1:
        return float("nan")
    t = n * d
    if n > 140 and 0.0 < d < 0.5 and 1.0 < t < n - 1 and t * d >= 2.2:
        # kstwo.sf's own branch here (Simard and L'Ecuyer 2011, as scipy.stats._ksstats._kolmogn takes it):
        # 0 beyond n d^2 = 370, else twice the one-sided exact tail; computed without importing scipy.stats
        # (about a second of a short run's start)
        if t * d >= 370.0:
            return 0.0
        from scipy.special import smirnov

        return float(np.clip(2.0 * smirnov(n, d), 0.0, 1.0))
    from scipy.stats import kstwo

    return float(np.clip(kstwo.sf(d, n), 0.0, 1.0))


def ks_from_histogram(counts: np.ndarray) -> tuple[float, float]:
    """The KS distance from U(0, 1) at the edges of a fine PIT histogram (equal-width cells on [0, 1]), and
    the bound on its error: within a cell the ECDF and the uniform CDF each move by at most the cell's mass
    and width, so the true distance is within ``max(cell mass) + cell width`` of the edges' one."""
    total = counts.sum()
    cells = len(counts)
    edges = np.arange(1, cells + 1) / cells
    ecdf = np.cumsum(counts) / total
    d = float(np.max(np.abs(ecdf - edges)))
    return d, float(counts.max() / total + 1.0 / cells)
