"""The clinical statistics of :mod:`calibcli.clinical.classical_tests`, streamed (SPEC 8).

- :class:`ClinicalAccumulator` (one binary problem of ``ece``): Cox calibration and the ICI family, both
  from one :class:`calibcli.clinical.classical_tests.GridSums`: per (label, cell) of a uniform 2^14-cell grid the rows,
  their weight and ``sum w p`` (two bincounts per batch), plus the same on a log-odds grid for the
  predictions below 2^-6 or above 1 - 2^-6.

  * Cox calibration is a logistic regression. While the binned family keeps every row (at most
    ``ROW_LIMIT`` = 2^17, :class:`~calibcli.binned.accumulator.BinnedAccumulator`) it is fitted on them,
    exactly. Beyond, on the cells, each cell's rows at their mean prediction: the log-likelihood, its
    gradient and its information are sums over rows, so this is exact for predictors whose values each
    fill a cell (discrete ones), and within about 1e-7 (relative) of the row-wise fit otherwise (the
    tests check 1e-6). This replaces SPEC 8's bottom-k sample for what needs every row: it uses every
    row, and keeping and thinning a 10^6-row sample plus a Newton fit on it cost more than the rest of
    ``ece`` together (measured with the earlier ``bench_stream.py``: 4.5x the bare pass at 1e7 rows).
  * ICI, E50, E90 and Emax: the SmoothECE kernel regression on the same cells.

  Integer counts, and float sums exact per batch (:func:`calibcli.core.compensated.bincount_exact`) and added
  as exact pairs: the results do not depend on batch sizes, on which worker saw which rows or on their order
  (within the tolerance rule; almost always to the last bit).

- :class:`ClinicalTestAccumulator` (``tcal --test spiegelhalter|hosmer-lemeshow|ecce``): Spiegelhalter's three
  sums over every row, or the Hosmer-Lemeshow groups, which are the binned family's quantile bins
  (:class:`~calibcli.binned.accumulator.BinnedAccumulator`: exact edges, or a first pass with exact
  quantiles up to 2^24 predictions and a KLL sketch beyond, then a second pass with the edges fixed), or
  the ECCE-R test (SPEC 9): :class:`~calibcli.cumulative.accumulator.EcceAccumulator`, exact on every row up
  to T-Cal's row limit (``--max-rows``, the rows T-Cal keeps), from a fine grid of score cells with its
  stated error bound beyond.

Both follow the accumulator contract (``update``, ``merge``, ``to_dict``/``from_dict``, ``result``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from calibcli.binned.accumulator import BinnedAccumulator
from calibcli.clinical.classical_tests import (
    GridSums,
    HosmerLemeshowTest,
    SpiegelhalterTest,
    hosmer_lemeshow_from_bins,
    spiegelhalter_from_sums,
    spiegelhalter_sums,
)
from calibcli.clinical.cox import WaldEstimate, cox_groups, row_chunks
from calibcli.clinical.ici import ICI_GRID, UniformCells, ici_groups
from calibcli.core.accumulator import Accumulator, InputState
from calibcli.core.declarations import CLINICAL_TEST_NAMES
from calibcli.core.errors import CalibcliError, OptionError
from calibcli.core.modes import binary_problems
from calibcli.core.registry import REGISTRY, aggregate_over_classes
from calibcli.core.results import Metric
from calibcli.core.rows import describe_sample
from calibcli.cumulative.accumulator import EcceAccumulator
from calibcli.cumulative.ecce import EcceResult

STATE_VERSION = 1

#: Rows of the groups whose clinical statistics are computed together (:meth:`ClinicalAccumulator.results`): their
#: stacks take about 100 bytes a row.
CLINICAL_CHUNK_ROWS = 1 << 20

#: ``tcal --test`` choices this module runs (declared in :mod:`calibcli.core.declarations`).
CLINICAL_TESTS = CLINICAL_TEST_NAMES


class ClinicalAccumulator(Accumulator):
    """Cox calibration and the ICI family of one binary problem, streamed (see the module docstring)."""

    kind = "clinical"
    state_name = "clinical state"
    merge_rules = {"grid": "merge"}

    def __init__(self, *, n_cells: int = ICI_GRID):
        self.grid = GridSums(n_cells)

    def update(self, row_index, z, y, w=None) -> ClinicalAccumulator:
        if len(z):
            self.grid.add_rows(z, y, w)
        return self

    @property
    def n_rows(self) -> int:
        return self.grid.n

    def result(self, *, alpha: float = 0.05, rows=None) -> tuple[dict, dict]:
        """``({name: Metric}, details)``: the Cox and ICI metrics of the report, and what they were made of
        (standard errors, Wald tests, which rows Cox was fitted on, the bandwidth and grids of the ICI).

        ``rows``: ``(row_index, z, y, w)`` of every row when they were kept (the binned family's sample),
        else None (Cox from the cells). A statistic that cannot be computed (one label only, separated
        data) is left out and said why in the details. The one-group case of :meth:`results`.
        """
        return self.results([self], alpha=alpha, rows=[rows])[0]

    @staticmethod
    def results(accs: list[ClinicalAccumulator], *, alpha: float = 0.05, rows: list) -> list[tuple[dict, dict]]:
        """:meth:`result` of many groups' accumulators at once (``rows[g]`` group g's kept rows, or None): the
        Cox fits of every group are one Newton iteration over a stack (:func:`calibcli.clinical.cox.cox_groups`), the
        ICI
        of every group one lockstep fixed point (:func:`calibcli.clinical.ici.ici_groups`). Groups with kept rows
        are taken in chunks of about :data:`CLINICAL_CHUNK_ROWS` rows (whole groups), which bounds the memory of
        the stacks: the solvers' calls grow with the rows, never with the number of groups."""
        cox: list = [None] * len(accs)
        ici: list = [None] * len(accs)
        kept = [j for j, r in enumerate(rows) if r is not None]
        sizes = np.array([len(rows[j][1]) for j in kept], dtype=np.intp)
        for c0, c1 in row_chunks(sizes, CLINICAL_CHUNK_ROWS):
            chunk = kept[c0:c1]
            problems = [rows[j] for j in chunk]  # (row_index, z, y, w), in row order
            fits = cox_groups(
                [(y, z, np.ones(len(y)) if w is None else w, None) for _, z, y, w in problems], alpha=alpha
            )
            # the kept rows in row order: the same sums, bit for bit, however they were batched
            cells = UniformCells.of_rows([(z, y, w) for _, z, y, w in problems], accs[chunk[0]].grid.n_cells)
            for j, c, i in zip(chunk, fits, ici_groups(cells), strict=True):
                cox[j], ici[j] = c, i
        beyond = [j for j, r in enumerate(rows) if r is None]
        if beyond:  # groups of more rows than are kept: from their cells (2^17 rows or more each, so few)
            grids = [accs[j].grid for j in beyond]
            fits = cox_groups([(*g.cox_rows(), g.n) for g in grids], alpha=alpha)
            for j, c, i in zip(beyond, fits, ici_groups(UniformCells.of_grids(grids)), strict=True):
                cox[j], ici[j] = c, i
        return [
            _clinical_metrics(acc.grid.n, c, i, alpha=alpha, from_rows=r is not None)
            for acc, c, i, r in zip(accs, cox, ici, rows, strict=True)
        ]


#: The fields of a Wald estimate, in order (``dataclasses.fields`` looked up once, not per group and estimate).
_WALD_FIELDS = tuple(f.name for f in fields(WaldEstimate))


def _fields_of(estimate: WaldEstimate) -> dict:
    """``dataclasses.asdict`` of a Wald estimate (flat floats), without its deep copy: a tenth of the time."""
    return {name: getattr(estimate, name) for name in _WALD_FIELDS}


def _clinical_metrics(n: int, cox, ici, *, alpha: float, from_rows: bool) -> tuple[dict, dict]:
    """One group's clinical metrics and details (:meth:`ClinicalAccumulator.result`) from its Cox calibration and
    its ICI, each a :class:`~calibcli.core.errors.CalibcliError` when it could not be computed."""
    metrics: dict[str, Metric] = {}
    details: dict[str, dict] = {}
    if isinstance(cox, CalibcliError):
        details["cox"] = {"error": str(cox)}
    else:
        how = (
            f"fitted on all {n} rows"
            if from_rows
            else (
                f"fitted on all {n} rows through per-cell sums (each cell's rows at their mean prediction: "
                f"cells of width 2^-14, and of relative width 2^-10 in min(p, 1 - p) below 2^-6)"
            )
        )
        level = f"{100 * (1 - alpha):g}%"
        method = f"Wald, observed Fisher information, {level}"
        for name, est, test in (
            ("cox_slope", cox.slope, "slope = 1"),
            ("cox_intercept", cox.intercept, "intercept = 0"),
            ("calibration_in_the_large", cox.calibration_in_the_large, "intercept = 0"),
        ):
            metrics[name] = Metric(
                name,
                est.estimate,
                est.ci_low,
                est.ci_high,
                method,
                note=f"se {est.se:.4g}; Wald test of {test}: z {est.z:.4g}, p {est.p_value:.4g}",
            )
        details["cox"] = {
            "rows": how,
            "n_clipped": cox.n_clipped if from_rows else None,
            "clip": cox.clip,
            "cov_intercept_slope": cox.cov_intercept_slope,
            **{k: _fields_of(getattr(cox, k)) for k in ("slope", "intercept", "calibration_in_the_large")},
        }
    if isinstance(ici, CalibcliError):
        details["ici"] = {"error": str(ici)}
    else:
        note = f"|f(p) - p|, f the SmoothECE kernel regression at s* = {ici.sigma:.4g}; no interval"
        if ici.under_resolved:
            note += "; s* is below 8 cells of the grid: the curve is smoothed by at least the cell width"
        for name in ("ici", "e50", "e90", "emax"):
            metrics[name] = Metric(name, getattr(ici, name), note=note)
        details["ici"] = {
            "sigma": ici.sigma,
            "grid_cells": ici.grid_cells,
            "curve_cells": ici.curve_cells,
            "under_resolved": ici.under_resolved,
            "method": ici.method,
        }
    return metrics, details


def aggregate_clinical(per_class: list[dict], v: np.ndarray) -> dict:
    """The marginal aggregate of the clinical metrics that have a class rule (SPEC 1; ICI, E50, E90, Emax)."""
    out = {}
    for name, entry in REGISTRY.items():
        if entry.family != "clinical" or entry.combine is None or not all(name in m for m in per_class):
            continue
        est = aggregate_over_classes(entry.combine, np.array([m[name].estimate for m in per_class]), v)
        out[name] = Metric(name, float(est), note=f"marginal aggregate {entry.combine.describe()}")
    return out


# ---------------------------------------------------------------------------------------------
# tcal --test spiegelhalter | hosmer-lemeshow | ecce


#: How ``tcal --test ecce`` reads its statistic (SPEC 9).
ECCE_METHOD = (
    "ECCE-R = max_k C_k - min_k C_k, C_k = sum_{j<=k} w_j (y_j - s_j) in score order (weights normalised, "
    "tie blocks), on the scale sigma = sqrt(sum w_j^2 s_j (1 - s_j)); p-value from the law of the range of "
    "standard Brownian motion on [0, 1] (Arrieta-Ibarra et al., JMLR 2022)"
)


@dataclass(frozen=True)
class EcceTest:
    """The ECCE-R test of one binary problem (SPEC 9): ``statistic`` is ECCE-R/sigma, ``p_value`` its
    asymptotic p-value (range of Brownian motion); ``stats`` the :class:`~calibcli.cumulative.ecce.EcceResult`
    (ECCE-MAD too), ``how`` which rows it was computed from (exact, or the grid and its error bound)."""

    statistic: float
    p_value: float
    reject: bool
    alpha: float
    n: int
    weight_total: float
    stats: EcceResult
    how: dict
    method: str = ECCE_METHOD

    @classmethod
    def of(cls, stats: EcceResult, how: dict, *, alpha: float) -> EcceTest:
        p = float(stats.ecce_r_pvalue)
        return cls(
            float(stats.ecce_r_sigma),
            p,
            bool(p <= alpha),
            float(alpha),
            int(stats.rows),
            float(stats.weight),
            stats,
            how,
        )

    def numbers(self) -> dict:
        s = self.stats
        return {
            "ecce_r": s.ecce_r,
            "ecce_r_sigma": s.ecce_r_sigma,
            "ecce_r_pvalue": s.ecce_r_pvalue,
            "ecce_mad": s.ecce_mad,
            "ecce_mad_sigma": s.ecce_mad_sigma,
            "ecce_mad_pvalue": s.ecce_mad_pvalue,
            "sigma": s.sigma,
            "form": self.how["method"],
            "error_bound": self.how["error_bound"],
            "n_cells": self.how["n_cells"],
            "row_limit": self.how["row_limit"],
        }


@dataclass(frozen=True)
class ClinicalTestReport:
    """One entry of a ``tcal --test spiegelhalter|hosmer-lemeshow|ecce`` report (the shape of the T-Cal entries:
    mode, notes, test, sample, result with ``reject`` and ``p_value``)."""

    mode: str
    notes: tuple[str, ...]
    test: str
    sample: dict
    result: SpiegelhalterTest | HosmerLemeshowTest | EcceTest

    @property
    def reject(self) -> bool:
        return bool(self.result.reject)

    def to_dict(self) -> dict:
        r = self.result
        out = {"mode": self.mode, "notes": list(self.notes), "test": self.test, "sample": dict(self.sample)}
        common = {
            "reject": r.reject,
            "p_value": r.p_value,
            "alpha": r.alpha,
            "n": r.n,
            "weight_total": r.weight_total,
            "statistic": r.statistic,
            "method": r.method,
            "warnings": [],
        }
        if isinstance(r, SpiegelhalterTest):  # (self.test names the result's kind)
            out["result"] = {
                **common,
                "statistic_name": "Z",
                "distribution": "N(0, 1), two-sided",
                "numerator": r.numerator,
                "variance": r.variance,
            }
        elif isinstance(r, EcceTest):
            out["result"] = {
                **common,
                "statistic_name": "ECCE-R/sigma",
                "distribution": "range of standard Brownian motion on [0, 1]",
                **r.numbers(),
            }
        else:
            out["result"] = {
                **common,
                "statistic_name": "C-hat",
                "df": r.df,
                "distribution": f"chi-square, {r.df} df",
                "n_bins": r.n_bins,
                "n_groups": r.n_groups,
                "caveats": r.caveats,
                "groups": r.groups,
            }
        return out

    def headline(self) -> dict:
        r = self.result
        if isinstance(r, SpiegelhalterTest):
            return {
                "spiegelhalter_p_value": Metric("spiegelhalter_p_value", r.p_value, note="two-sided, N(0, 1)"),
                "spiegelhalter_z": Metric("spiegelhalter_z", r.statistic),
            }
        if isinstance(r, EcceTest):
            form = (
                "exact"
                if r.how["method"] == "exact"
                else f"{r.how['n_cells']}-cell grid, ECCE-R within [value, value + {2 * r.how['error_bound']:.3g}]"
            )
            return {
                "ecce_p_value": Metric("ecce_p_value", r.p_value, note="range of Brownian motion, asymptotic"),
                "ecce_statistic": Metric("ecce_statistic", r.statistic, note=f"ECCE-R/sigma ({form})"),
            }
        return {
            "hosmer_lemeshow_p_value": Metric(
                "hosmer_lemeshow_p_value", r.p_value, note=f"chi-square with {r.df} df ({r.n_groups} groups - 2)"
            ),
            "hosmer_lemeshow_statistic": Metric(
                "hosmer_lemeshow_statistic", r.statistic, note=f"{r.n_groups} non-empty groups of {r.n_bins}"
            ),
        }


class ClinicalTestAccumulator(InputState):
    """Spiegelhalter's sums, the Hosmer-Lemeshow groups or the ECCE state of one input (or group), binary or
    top-label mode."""

    kind = "clinical_test"
    state_name = "clinical test state"
    same, same_message = ("mode", "options"), "test states of different modes or options cannot be merged"
    merge_rules = {"n": "sum", "sums": "sum", "bins": "merge", "ecce": "merge"}

    def __init__(
        self,
        *,
        edges: np.ndarray | None = None,
        edges_method: str | None = None,
        **head: Any,
    ):
        super().__init__(**head)
        mode, options = self.mode, self.options
        if mode not in ("binary", "top-label"):
            raise OptionError(
                "mode",
                f"{{name}} {mode}: the {options.test} test is of one probability per prediction: "
                f"use the binary or top-label mode",
            )
        self.edges_method = edges_method
        self.sums = np.zeros(3)
        self.n = 0
        self.bins = self.ecce = None
        if options.test == "hosmer-lemeshow":
            self.bins = BinnedAccumulator(n_bins=options.groups, strategy="quantile", edges=edges, moments=False)
        elif options.test == "ecce":
            self.ecce = EcceAccumulator(options.max_rows)

    def update(self, row_index, probs, labels, w=None) -> ClinicalTestAccumulator:
        (problem,) = binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=list(self.class_names))
        self.n += len(problem.z)
        if self.ecce is not None:
            self.ecce.update(row_index, problem.z, problem.y, problem.sample_weight)
        elif self.bins is None:
            self.sums += spiegelhalter_sums(problem.z, problem.y, problem.sample_weight)
        else:
            self.bins.update(row_index, problem.z, problem.y, problem.sample_weight)
        return self

    @property
    def n_rows(self) -> int:
        return self.n

    @property
    def problems(self) -> list:
        """Nothing is resampled (no progress bar)."""
        return []

    def needs_second_pass(self) -> bool:
        """Hosmer-Lemeshow over more rows than are kept: the deciles from this pass, the groups' sums from a second."""
        return self.bins is not None and self.bins.needs_edges

    def for_second_pass(self) -> ClinicalTestAccumulator:
        assert self.bins is not None  # (only Hosmer-Lemeshow's bins ask for a second pass)
        edges, how = self.bins.fitted_edges()
        return ClinicalTestAccumulator(**self.head(), edges=edges, edges_method=how)

    def result(self, progress=None) -> ClinicalTestReport:
        o = self.options
        if self.n == 0:
            raise CalibcliError("no rows to test: expected at least one prediction")
        notes = []
        sample = {**describe_sample(self.n, self.n, self.n, 0), "description": f"all {self.n} rows (exact sums)"}
        if self.ecce is not None:
            stats, how = self.ecce.result()
            ecce_test = EcceTest.of(stats, how, alpha=o.alpha)
            if how["method"] == "grid":
                notes.append(how["description"])
            if not np.isfinite(stats.ecce_r_sigma):
                notes.append(
                    "sigma = 0 (every prediction 0 or 1) but some label disagrees: certain miscalibration, p-value 0"
                )
            sample["description"] = how["description"]
            return ClinicalTestReport(self.mode, tuple(notes), o.test, sample, ecce_test)
        result: SpiegelhalterTest | HosmerLemeshowTest
        if self.bins is None:
            result = spiegelhalter_from_sums(self.sums, n=self.n, alpha=o.alpha)
        else:
            r = self.bins.result()
            s = r.bin_stats
            result = hosmer_lemeshow_from_bins(
                s.count, s.weight, s.sum_z, s.sum_y, r.bin_bounds, n_bins=o.groups, alpha=o.alpha
            )
            notes.append(
                f"deciles of risk: {o.groups} quantile bins, {result.n_groups} non-empty (ties merge bins)"
                + (f"; edges from {self.edges_method}" if self.edges_method else "")
            )
            empty = [g for g in result.groups if g["term"] == math.inf]
            if empty:
                notes.append(
                    f"{len(empty)} group(s) have E_g (1 - E_g / n_g) = 0 (every prediction 0 or 1) but "
                    f"O_g != E_g: C-hat is infinite and the p-value 0"
                )
            notes.append("caveats: " + result.caveats)
        return ClinicalTestReport(self.mode, tuple(notes), o.test, sample, result)
