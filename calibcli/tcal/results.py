"""What the T-Cal test returns (SPEC 4.2): the per-level table and the decision, and the names of its options."""

from __future__ import annotations

from dataclasses import dataclass

NULLS = ("y-bootstrap", "consistency", "chebyshev")
COMBINES = ("bonferroni", "min-p")

STATISTIC_NAME = "T_m: debiased plug-in estimate of the squared l2-ECE (T-Cal DPE, docs: How it is computed §4.1)"


@dataclass(frozen=True)
class TcalLevel:
    """One scale of the test.

    ``level`` is ``b`` (``m = 2^b`` in the adaptive test; 1 for the single-scale test), ``n_bins``
    the bins per axis ``m``, ``n_cells`` the number of cells of the partition (``m^(K-1)``),
    ``n_nonempty`` the cells holding data, ``statistic`` ``T_m``, ``critical_value`` the value of
    ``T_m`` beyond which this level rejects at ``per_level_alpha`` (``None`` when the level cannot
    reject with this many resamples), ``p_value`` the per-level p-value, ``reject`` the per-level
    decision at ``per_level_alpha``.
    """

    level: int
    n_bins: int
    n_cells: int
    n_nonempty: int
    statistic: float
    critical_value: float | None
    p_value: float
    reject: bool


@dataclass(frozen=True)
class TcalResult:
    """Outcome of :func:`tcal_test`.

    ``reject`` is the decision at ``alpha``; ``p_value`` the combined p-value (``bonferroni``:
    ``min(1, L min_b p_b)``; ``min-p``: the Monte Carlo p-value of ``min_b p_b``); both are also
    given as ``p_value_bonferroni`` and ``p_value_min_p`` (from the same resamples; the latter is
    ``None`` for ``chebyshev``). ``levels`` holds
    the per-level table. ``per_level_alpha`` is the level each scale was tested at (``alpha / L``
    for ``bonferroni``, the calibrated threshold for ``min-p``). ``exact`` says whether the
    p-value is exact in finite samples (``y-bootstrap``) rather than approximate (``consistency``)
    or conservative (``chebyshev``). ``warnings`` are sentences for the user.
    """

    reject: bool
    p_value: float
    p_value_bonferroni: float
    p_value_min_p: float | None
    alpha: float
    null: str
    combine: str
    adaptive: bool
    smoothness: float | None
    mode: str
    n_classes: int
    n: int
    n_boot: int
    n_levels: int
    per_level_alpha: float
    exact: bool
    weighted: bool
    statistic_name: str
    levels: tuple[TcalLevel, ...]
    warnings: tuple[str, ...]
    #: False when no p-value these resamples can give is at most the level (too few resamples for alpha): the test
    #: cannot reject, so not rejecting says nothing (the report's verdict is "unknown", a gate refuses to pass).
    can_reject: bool = True
