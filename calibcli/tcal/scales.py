"""The scales of T-Cal (SPEC 4.2): the adaptive test's levels, the single-scale test's bins per axis, the
explicit critical value of Theorem 3.1, and the memory check of a single-scale test's cells."""

from __future__ import annotations

import math

from calibcli.core.errors import OptionError
from calibcli.core.validation import format_bytes, memory_budget


def n_levels(n: int, n_classes: int = 2) -> int:
    """``L = ceil((2/(K-1)) log2(n / sqrt(ln n)))`` levels of the adaptive test (SPEC 4.2), at least 1."""
    if n < 3:
        return 1
    value = (2.0 / (n_classes - 1)) * math.log2(n / math.sqrt(math.log(n)))
    return max(1, math.ceil(value - 1e-12))


#: Bytes per cell of a single-scale test: counts and sums of the observed statistic and of a resample.
BYTES_PER_CELL = 64


def check_cells(m: int, K: int, n: int, smoothness: float) -> None:
    """A small smoothness gives ``m* = floor(n^(2/(4s+K-1)))`` bins per axis and ``m*^(K-1)`` cells: refuse,
    naming ``smoothness`` and the smallest value that fits the memory budget, before any cell is allocated."""
    cells = float(m) ** (K - 1)
    budget = memory_budget()
    if cells * BYTES_PER_CELL <= budget:
        return
    # the smallest s whose cells fit: n^(2(K-1)/(4s+K-1)) <= budget / BYTES_PER_CELL
    least = (2.0 * (K - 1) * math.log(n) / math.log(budget / BYTES_PER_CELL) - (K - 1)) / 4.0
    raise OptionError(
        "smoothness",
        f"{{name}} {smoothness:g} gives m* = {m} bins per axis over {n} rows ({cells:.3g} cells), which would need "
        f"{format_bytes(cells * BYTES_PER_CELL)}; use {{name}} {math.ceil(least * 1000) / 1000:g} or more "
        f"(the memory budget is {format_bytes(budget)}), or the adaptive test (no {{name}})",
    )


def optimal_n_bins(n: int, smoothness: float, n_classes: int = 2) -> int:
    """``m* = floor(n^(2/(4s+K-1)))`` bins per axis for Holder smoothness ``s`` (Theorem 3.1), at least 1."""
    return max(1, math.floor(n ** (2.0 / (4.0 * smoothness + n_classes - 1)) + 1e-9))


def chebyshev_constant(n: int, n_bins: int, n_classes: int = 2, *, scalar: bool = True) -> float:
    """``C`` with critical value ``C / sqrt(alpha)`` of Theorem 3.1.

    The paper's critical value is ``sqrt(2 K^2 / alpha) min(m^((K-1)/2) / n, m^(-(K-1)/2))`` for its
    vector statistic; the scalar binary statistic is half of it, so ``scalar=True`` halves it
    (SPEC 4.1).
    """
    K = n_classes
    half = (K - 1) / 2.0
    scale = min(n_bins**half / n, n_bins ** (-half))
    c = math.sqrt(2.0 * K * K) * scale
    return 0.5 * c if scalar else c
