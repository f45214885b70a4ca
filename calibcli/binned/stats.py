"""Per-bin sufficient statistics of a binary problem (SPEC 2): the sums every binned estimator is a
formula of, and how they are taken from rows (:func:`bin_statistics`).

A :class:`BinStats` holds, per bin, the row count and the sums of ``w``, ``w z``, ``w y``, ``w u^2``
(``u = y - z``) and of the log-loss, with the bins on the last axis and any leading axes (replicates,
groups) before it. Statistics of disjoint chunks binned the same way add up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Probabilities are clipped to [LOG_LOSS_EPS, 1 - LOG_LOSS_EPS] inside the log-loss.
LOG_LOSS_EPS = 1e-15

# Columns of the per-row statistics matrix; per-bin sums of these are all any metric needs.
_W, _WZ, _WY, _WU2, _WLL = range(5)
_N_STATS = 5


@dataclass(frozen=True)
class BinStats:
    """Per-bin sums: ``count`` (rows), ``weight`` (sum w), ``sum_z``, ``sum_y``, ``sum_u2``, ``sum_log_loss``.

    All are weighted by the sample weights. Statistics of disjoint chunks binned the same way merge
    with :meth:`merge`. Every array has the bins on its last axis and may carry leading axes: ``(R, bins)``
    holds R bootstrap replicates (and ``(G, R, bins)`` groups of them); the estimators below broadcast
    over them.
    """

    count: np.ndarray
    weight: np.ndarray
    sum_z: np.ndarray
    sum_y: np.ndarray
    sum_u2: np.ndarray
    sum_log_loss: np.ndarray
    # The "diagonal" of the debiased estimators: the part of (sum w)^2, (sum w y)^2 and (sum w u)^2
    # that pairs an observation with itself. On data these equal weight, sum_y and sum_u2 (y^2 = y);
    # on a bootstrap resample they also hold the pairs of copies of one original row, so that the
    # U-statistics stay U-statistics on resamples (no upward bias from duplicated rows).
    self_weight: np.ndarray | None = None
    self_y: np.ndarray | None = None
    self_u2: np.ndarray | None = None

    def merge(self, other: BinStats) -> BinStats:
        """Statistics of the union of two disjoint samples binned with the same bins."""
        return BinStats(*(a + b for a, b in zip(self._arrays(), other._arrays(), strict=True)))

    def _arrays(self):
        return (
            self.count,
            self.weight,
            self.sum_z,
            self.sum_y,
            self.sum_u2,
            self.sum_log_loss,
            self.diag_weight,
            self.diag_y,
            self.diag_u2,
        )

    @property
    def diag_weight(self) -> np.ndarray:
        return self.weight if self.self_weight is None else self.self_weight

    @property
    def diag_y(self) -> np.ndarray:
        return self.sum_y if self.self_y is None else self.self_y

    @property
    def diag_u2(self) -> np.ndarray:
        return self.sum_u2 if self.self_u2 is None else self.self_u2

    @classmethod
    def stack(cls, stats: list[BinStats]) -> BinStats:
        """Statistics of equal bin counts stacked along a new leading axis (e.g. one row per replicate)."""
        return cls(*(np.stack(columns) for columns in zip(*(s._arrays() for s in stats), strict=True)))

    @classmethod
    def concat(cls, stats: list[BinStats]) -> BinStats:
        """Batched statistics joined along their leading (replicate) axis."""
        return cls(*(np.concatenate(columns) for columns in zip(*(s._arrays() for s in stats), strict=True)))

    @property
    def nonempty(self) -> np.ndarray:
        return self.count > 0

    @property
    def n_nonempty(self) -> int:
        return int(self.nonempty.sum())


# ---------------------------------------------------------------------------------------------
# Per-row and per-bin statistics


def _row_stats(y: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The (5, n) array of weighted per-row statistics: w, w z, w y, w u^2, w log-loss."""
    X = np.empty((_N_STATS, len(z)))
    X[_W] = w
    np.multiply(w, z, out=X[_WZ])
    np.multiply(w, y, out=X[_WY])
    u = np.subtract(y, z, out=X[_WU2])
    np.multiply(u, u, out=u)
    u *= w
    # log-loss: -log of the probability given to the observed label, clipped to [eps, 1 - eps]
    p_true = np.where(y == 1, z, 1.0 - z)
    np.clip(p_true, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS, out=p_true)
    np.log(p_true, out=X[_WLL])
    X[_WLL] *= -w
    return X


def bin_statistics(y_true, y_prob, bin_index, n_bins, sample_weight=None) -> BinStats:
    """Per-bin sufficient statistics of a binary problem for a given bin assignment."""
    z = np.asarray(y_prob, dtype=np.float64)
    if sample_weight is None:
        return _bin_statistics_unweighted(np.asarray(y_true).astype(np.int64, copy=False), z, bin_index, n_bins)
    y = np.asarray(y_true, dtype=np.float64)
    X = _row_stats(y, z, np.asarray(sample_weight, dtype=np.float64))
    sums = np.stack([np.bincount(bin_index, weights=X[j], minlength=n_bins) for j in range(_N_STATS)])
    count = np.bincount(bin_index, minlength=n_bins)
    return _stats_from_sums(count, sums)


def _bin_statistics_unweighted(y: np.ndarray, z: np.ndarray, bin_index: np.ndarray, n_bins: int) -> BinStats:
    """The same statistics in fewer passes over the data, for unit weights (large files).

    Counts and sums of z are taken per (bin, label) cell, so that ``sum y = count of y = 1`` and
    ``sum (y - z)^2 = count1 - 2 sum_{y=1} z + sum z^2``.
    """
    cell = bin_index * 2 + y
    count = np.bincount(cell, minlength=2 * n_bins).reshape(n_bins, 2)
    sum_z = np.bincount(cell, weights=z, minlength=2 * n_bins).reshape(n_bins, 2)
    sum_z2 = np.bincount(bin_index, weights=z * z, minlength=n_bins)
    p_true = np.where(y == 1, z, 1.0 - z)
    np.clip(p_true, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS, out=p_true)
    sum_ll = -np.bincount(bin_index, weights=np.log(p_true, out=p_true), minlength=n_bins)
    n_pos = count[:, 1].astype(np.float64)
    total = count.sum(axis=1)
    sum_u2 = np.maximum(n_pos - 2.0 * sum_z[:, 1] + sum_z2, 0.0)
    return BinStats(total, total.astype(np.float64), sum_z.sum(axis=1), n_pos, sum_u2, sum_ll)


def _stats_from_sums(count: np.ndarray, sums: np.ndarray) -> BinStats:
    return BinStats(count, sums[_W], sums[_WZ], sums[_WY], sums[_WU2], sums[_WLL])
