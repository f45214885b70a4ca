"""Binning schemes for binned calibration errors (SPEC section 2.1).

- ``uniform``: B equal-width bins ``[j/B, (j+1)/B)``, the last one closed: bin index
  ``min(floor(z * B), B - 1)``, so a prediction of exactly 1.0 lands in the last bin.
- ``quantile``: equal-mass bins. Sort the z, cut at ranks ``round(j * n / B)`` (j = 1..B-1); an
  edge is the midpoint of the two neighbouring sorted values. A point equal to an edge goes to the
  bin above it, so equal values never straddle an edge; ties merge bins (fewer than B may result).

Both schemes are described by their interior edges: a value ``z`` lies in bin
``searchsorted(edges, z, side="right")`` (for ``uniform`` the closed form above is used, which
agrees with that rule and is exact in floating point).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError

STRATEGIES = ("uniform", "quantile")

#: How bin edges are read, stated in every report.
EDGE_CONVENTION = (
    "bins are [lo, hi); the last bin includes 1.0; a value equal to an interior edge goes to the bin above"
)


@dataclass(frozen=True)
class Binning:
    """A fitted binning: ``strategy``, the requested ``n_bins`` and the interior ``edges``."""

    strategy: str
    n_bins: int
    edges: np.ndarray  # interior edges, increasing, length n_bins_effective - 1

    @property
    def n_bins_effective(self) -> int:
        """Bins that exist after quantile ties merged some (empty ones included)."""
        return len(self.edges) + 1

    def assign(self, z: np.ndarray) -> np.ndarray:
        """Bin index of every value of ``z`` (int64, in ``0..n_bins_effective-1``)."""
        z = np.asarray(z, dtype=np.float64)
        if self.strategy == "uniform":
            return uniform_bin_index(z, self.n_bins)
        return np.searchsorted(self.edges, z, side="right").astype(np.int64)

    def bounds(self) -> np.ndarray:
        """All bin boundaries including 0 and 1 (length ``n_bins_effective + 1``)."""
        return np.concatenate([[0.0], self.edges, [1.0]])


def uniform_bin_index(z: np.ndarray, n_bins: int) -> np.ndarray:
    """``min(floor(z * B), B - 1)`` for z in [0, 1] (truncation is the floor of a number >= 0)."""
    idx = (np.asarray(z, dtype=np.float64) * n_bins).astype(np.int64)
    np.minimum(idx, n_bins - 1, out=idx)
    np.maximum(idx, 0, out=idx)  # -0.0 and tiny negatives from upstream rounding
    return idx


def quantile_edges_sorted(z_sorted: np.ndarray, n_bins: int, counts: np.ndarray | None = None) -> np.ndarray:
    """Interior quantile edges of already sorted values (ties merged, so possibly fewer than B-1).

    ``counts``, if given, says how often each sorted value occurs (a bootstrap resample's row
    multiplicities): the edges are then those of the sample with the repeats, whose value of
    (1-based) rank r is ``z_sorted[first i with cumsum(counts)[i] >= r]``.
    """
    if counts is None:
        n = len(z_sorted)

        def value(rank: np.ndarray) -> np.ndarray:
            return z_sorted[rank - 1]
    else:
        cum = np.cumsum(counts)
        n = int(round(cum[-1]))

        def value(rank: np.ndarray) -> np.ndarray:
            return z_sorted[np.searchsorted(cum, rank, side="left")]

    ranks = np.round(np.arange(1, n_bins) * n / n_bins).astype(np.int64)
    ranks = ranks[(ranks > 0) & (ranks < n)]
    return np.unique(0.5 * (value(ranks) + value(ranks + 1)))


def quantile_starts_batched(z_sorted: np.ndarray, n_bins: int, counts: np.ndarray) -> np.ndarray:
    """First sorted row of every quantile bin of many resamples at once: ``(R, n_bins)`` int64.

    ``counts`` is ``(R, n)``: row r gives how often each sorted value occurs in resample r. Row r of
    the result holds ``0`` and ``searchsorted(z_sorted, edges, "left")`` of that resample's
    :func:`quantile_edges_sorted` edges (ties merged, so possibly fewer than ``n_bins`` bins),
    padded with ``n`` (empty bins at the end). The same arithmetic as :func:`quantile_edges_sorted`
    for each row, in a handful of array operations over the block.
    """
    counts = np.atleast_2d(counts)
    R, n = counts.shape
    out = np.full((R, n_bins), n, dtype=np.int64)
    out[:, 0] = 0
    if n_bins < 2 or n == 0:
        return out
    cum = np.cumsum(counts, axis=1)  # integers held exactly in float64
    total = np.rint(cum[:, -1]).astype(np.int64)
    ranks = np.round(np.arange(1, n_bins)[None, :] * total[:, None] / n_bins).astype(np.int64)
    valid = (ranks > 0) & (ranks < total[:, None])
    # searchsorted in every row at once: shift row r's cumulative counts (and its ranks) by r * span
    span = float(total.max(initial=0) + 2)
    shift = np.arange(R, dtype=np.float64)[:, None] * span
    flat = (cum + shift).ravel()
    safe = np.where(valid, ranks, 1)
    first = np.minimum(
        np.searchsorted(flat, (safe + shift).ravel(), side="left").reshape(R, -1) - np.arange(R)[:, None] * n, n - 1
    )
    second = np.minimum(
        np.searchsorted(flat, (safe + 1 + shift).ravel(), side="left").reshape(R, -1) - np.arange(R)[:, None] * n, n - 1
    )
    edges = 0.5 * (z_sorted[first] + z_sorted[second])
    # ranks rise, so a row's valid edges are a non-decreasing run: np.unique is dropping repeats
    repeat = np.zeros_like(valid)
    repeat[:, 1:] = valid[:, :-1] & (edges[:, 1:] == edges[:, :-1])
    keep = valid & ~repeat
    starts = np.searchsorted(z_sorted, edges, side="left")
    # move each row's kept starts to the front, after the 0
    order = np.argsort(~keep, axis=1, kind="stable")
    kept = np.take_along_axis(np.where(keep, starts, n), order, axis=1)
    out[:, 1:] = kept
    return out


def fit_binning(z: np.ndarray, *, n_bins: int = 15, strategy: str = "uniform") -> Binning:
    """Fit the bins of ``strategy`` with ``n_bins`` bins to predictions ``z`` (SPEC 2.1)."""
    if strategy not in STRATEGIES:
        raise CalibcliError(f"unknown binning strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if n_bins < 1:
        raise CalibcliError(f"{{opt:n_bins}} is {n_bins}: expected a positive number of bins")
    if strategy == "uniform":
        return Binning("uniform", n_bins, np.arange(1, n_bins) / n_bins)
    return Binning("quantile", n_bins, quantile_edges_sorted(np.sort(np.asarray(z, dtype=np.float64)), n_bins))
