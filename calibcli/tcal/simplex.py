"""Equal-volume partition of the probability simplex (SPEC 4.3; seed 004, appendix 8.2.3): canonical mode's bins."""

from __future__ import annotations

import numpy as np

from calibcli.core.validation import check_option

# Contraction towards a fixed interior point before simplex binning (see simplex_bin_keys).
_SIMPLEX_EPS = 2.0**-40


def _interior_point(K: int) -> np.ndarray:
    weights = 1.0 + ((np.arange(1, K + 1) * 0.6180339887498949) % 1.0)
    return weights / weights.sum()


def simplex_bin_keys(P, n_bins: int) -> np.ndarray:
    """Cell of every row of ``P`` in the equal-volume partition of the simplex (SPEC 4.3).

    ``x = m z``; cube cell ``i_k = min(floor(x_k), m - 1)``; fractional part ``w = x - i``; the
    permutation sorting the partial sums ``v_j = (w_1 + ... + w_j) mod 1`` (j = 1..K-1) names the
    unit simplex of Stanley's triangulation of the hypersimplex slice. These cells are the alcoves
    ``floor(m (z_1 + ... + z_j))``-type regions: ``m^(K-1)`` simplices of equal volume and diameter
    O(1/m) (seed 004, appendix 8.2.3), nested when ``m`` doubles.

    Rows are first moved by ``2^-40`` towards a fixed interior point with irrational-looking
    coordinates, so that rows lying on a cell face (hard 0/1 probabilities, values such as 1/2)
    land in one well-defined cell inside the simplex; rows are also renormalised to sum to 1.

    Returns an int64 array of shape ``(n, 2 (K-1))``: the cube cell of the first ``K - 1``
    coordinates and the permutation. Two rows share a cell exactly when their keys are equal.
    """
    P = np.asarray(P, dtype=np.float64)
    check_option(
        P.ndim == 2 and P.shape[1] >= 2, f"simplex binning needs an (n, K) array with K >= 2, got shape {P.shape}"
    )
    check_option(n_bins >= 1, f"simplex binning needs m >= 1 bins per axis, got {n_bins}")
    K = P.shape[1]
    Z = P / P.sum(axis=1, keepdims=True)
    Z = (1.0 - _SIMPLEX_EPS) * Z + _SIMPLEX_EPS * _interior_point(K)
    x = Z[:, : K - 1] * n_bins
    cell = np.minimum(np.floor(x), n_bins - 1)
    w = x - cell
    v = np.cumsum(w, axis=1) % 1.0
    perm = np.argsort(v, axis=1, kind="stable")
    return np.concatenate([cell.astype(np.int64), perm.astype(np.int64)], axis=1)


def simplex_bin_index(P, n_bins: int) -> np.ndarray:
    """Dense cell ids ``0..G-1`` of the rows of ``P`` (G = non-empty cells), from :func:`simplex_bin_keys`."""
    keys = simplex_bin_keys(P, n_bins)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)
