"""The regression family's state for one input or group (SPEC 8, 10), and the report it finishes to.

The state is sums over rows, so that it streams and merges (``merge_rules``): the weight, the weighted sums of
every per-row column of :class:`calibcli.regression.kinds.Prediction` (scores, coverage, widths, spreads), the
calibration curve's bin weights, a fine and a coarse PIT histogram, the count of rows with crossed quantiles;
and two bounded samples of rows (:class:`calibcli.core.rows.RowSample`: every row up to their ``k``, else the
seeded bottom-k, the same however the rows were split) for what needs rows at once. The sample of ``max_rows``
rows keeps only the columns that its uses read (:attr:`~calibcli.regression.kinds.Prediction.sample_columns`:
5 floats a row for a Gaussian, not 12); the bootstrap's sample of ``boot_rows`` rows, kept only when ``n_boot``
is above 0, keeps them all. Both are bottom-k by the same hash, so the bootstrap's rows are the bottom
``boot_rows`` of the larger sample's:

- ENCE and UCE's equal-mass bins over the predicted std, and the size-stratified coverage's bins over widths:
  exact on all rows up to ``max_rows``; beyond, on the bottom-k sample (the report says so);
- the KS statistic of the PIT: exact on all rows up to ``max_rows``; beyond, at the edges of the fine PIT
  histogram (2^16 cells), with its error bound (SPEC 10 "Streams");
- the bootstrap: the Poisson bootstrap keyed by ``(seed, global row index)`` (SPEC 8) of the rows, up to
  ``boot_rows`` of them; beyond, of the bottom-k sample of ``boot_rows`` rows, each replicate's deviation from
  the sample's estimate scaled by ``sqrt(k / n)`` around the full estimate (the spread of a mean of k rows is
  sqrt(n / k) times that of n rows). ENCE's and the coverage's bins are fixed across replicates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibcli.core.accumulator import Accumulator
from calibcli.core.compensated import add_exact, bincount_exact, run_sums
from calibcli.core.errors import CalibcliError
from calibcli.core.resampling import Multiplicities, percentile_interval, percentile_intervals
from calibcli.core.results import Metric
from calibcli.core.rows import RowSample
from calibcli.regression import curves, scores
from calibcli.regression.kinds import Prediction, level_name

#: Cells of the fine PIT histogram (the KS statistic beyond ``max_rows``).
PIT_CELLS = 1 << 16
#: The calibration curve's band among the bootstrap's replicates (the observed proportion at every level).
CURVE = "calibration_curve"
#: Replicates drawn at a time (memory: this many times the bootstrap rows, in float64).
BLOCK = 16


class RegressionAccumulator(Accumulator):
    """One input's (or group's) regression state: sums over rows and a bounded row sample (module docstring)."""

    kind = "regression_input"
    state_name = "regression input state"
    merge_rules = {
        "n_rows": "sum",
        "weighted": "max",
        "sums": "exact",
        "curve": "exact",
        "pit_fine": "exact",
        "pit_coarse": "exact",
        "crossed": "sum",
        "sample": "merge",
        "boot_sample": "merge",
    }
    same = ("prediction",)
    same_message = "regression states of different kinds or options cannot be merged"

    def __init__(self, prediction: Prediction):
        o = prediction.options
        self.prediction = prediction
        self.n_rows = 0
        self.weighted = False
        # the weighted sums of every column, then the weight, as exact pairs (calibcli.core.compensated): the same
        # floats however the rows were batched, split among workers and merged (a spread across groups, a small
        # difference of two means, showed the plain sums' last bits)
        self.sums = np.zeros(len(prediction.columns) + 1)
        self.sums_lo = np.zeros_like(self.sums)
        # the bins' weights, exact pairs too (with unit weights their counts, exact in any case)
        self.curve = np.zeros(prediction.n_bins_curve)
        self.pit_fine = np.zeros(PIT_CELLS if prediction.has_pit else 0)
        self.pit_coarse = np.zeros(o.pit_bins if prediction.has_pit else 0)
        self.curve_lo = np.zeros_like(self.curve)
        self.pit_fine_lo = np.zeros_like(self.pit_fine)
        self.pit_coarse_lo = np.zeros_like(self.pit_coarse)
        self.crossed = 0
        self.sample = RowSample(o.max_rows, o.seed)
        # the bootstrap's rows, every column (the bottom boot_rows of all rows: those of the sample's bottom-k)
        self.boot_sample = RowSample(min(o.boot_rows, o.max_rows), o.seed) if o.n_boot else None

    @property
    def totals(self) -> np.ndarray:
        """The weighted sum of every per-row column (:attr:`Prediction.columns`) over the rows."""
        return self.sums[:-1]

    @property
    def weight(self) -> float:
        """The total weight of the rows (their number, unweighted)."""
        return float(self.sums[-1])

    @property
    def problems(self) -> list:
        """One problem per input (what the pipeline's progress bar counts)."""
        return [self.prediction.kind]

    def update(self, row_index, preds, y, w=None) -> RegressionAccumulator:
        n = len(y)
        if n == 0:
            return self
        p = self.prediction
        preds = np.asarray(preds, dtype=np.float64).reshape(n, -1)
        y = np.asarray(y, dtype=np.float64)
        d = p.derive(preds, y, np.asarray(row_index, dtype=np.int64))
        ww = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
        self.weighted |= w is not None
        self.n_rows += n
        values = d.values if w is None else ww[:, None] * d.values
        # (copies: run_sums uses its columns as scratch, and the row samples below read d.values)
        columns = [values[:, j].copy() for j in range(values.shape[1])] + [ww.copy()]
        with np.errstate(invalid="ignore"):  # (a column with inf or NaN is summed plainly, its bound not finite)
            top = np.array([np.max(np.abs(c)) for c in columns])
        hi, lo = run_sums(columns, np.zeros(1, dtype=np.int64), top)
        add_exact(self.sums, self.sums_lo, hi[0], lo[0])
        if d.curve_bin is not None:
            self._add_weights("curve", d.curve_bin, w)
        if d.pit is not None:
            self._add_weights("pit_fine", _cells(d.pit, PIT_CELLS), w)
            self._add_weights("pit_coarse", _cells(d.pit, len(self.pit_coarse)), w)
        if d.crossed is not None:
            self.crossed += int(d.crossed.sum())
        # (RowSample keeps integer labels beside its rows; a regression row's values are all in z)
        labels = np.zeros(n, dtype=np.int64)
        self.sample.update(row_index, _kept(p, d, p.sample_columns), labels, w)
        if self.boot_sample is not None:
            self.boot_sample.update(row_index, _kept(p, d, p.boot_columns), labels, w)
        return self

    def _add_weights(self, name: str, cell: np.ndarray, w) -> None:
        """Add the rows' weights (their counts, unweighted) into the bins ``cell`` of state ``name``, exactly."""
        total = getattr(self, name)
        count = np.bincount(cell, minlength=len(total))
        if w is None:
            hi, lo = count.astype(np.float64), None
        else:
            hi, lo = bincount_exact(cell, np.asarray(w, dtype=np.float64), count)
        add_exact(total, getattr(self, name + "_lo"), hi, lo)

    def needs_second_pass(self) -> bool:
        """One pass gives everything (SPEC 10 "Streams": sums, and the bounded sample)."""
        return False

    def result(self, progress=None) -> RegressionReport:
        if self.n_rows == 0:
            raise CalibcliError("no rows to evaluate")
        return finish(self, progress)


def _kept(p: Prediction, d, names: tuple[str, ...]) -> np.ndarray:
    """The ``(n, len(names))`` columns of a batch that a row sample keeps (:attr:`Prediction.sample_columns`)."""
    index = {c: j for j, c in enumerate(p.columns)}
    extra = {"sigma": d.sigma, "pit": d.pit, "curve_bin": d.curve_bin}
    return np.column_stack([d.values[:, index[c]] if c in index else extra[c] for c in names]).astype(np.float64)


def _cells(u: np.ndarray, cells: int) -> np.ndarray:
    return np.minimum((u * cells).astype(np.int64), cells - 1)


# ---------------------------------------------------------------------------------------------
# Finishing


@dataclass(frozen=True)
class RegressionReport:
    """The finished report of one input or group: one problem (the prediction's kind)."""

    problem: dict
    metrics: dict[str, Metric]
    #: Each bootstrapped summary's ``(n_boot,)`` replicates (keyed by ``(seed, global row index)``, so two
    #: predictions of the same rows are resampled alike: ``recalibrate evaluate``'s paired differences).
    replicates: dict[str, np.ndarray] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        return {
            "mode": "regression",
            "problems": [{**self.problem, "metrics": {k: m.to_dict() for k, m in self.metrics.items()}}],
        }

    def headline(self) -> dict[str, Metric]:
        return dict(self.metrics)


@dataclass
class _Rows:
    """A row sample's rows as the finish reads them: ``z`` ``(n, len(names))``, its columns named."""

    row_index: np.ndarray
    z: np.ndarray
    names: tuple[str, ...]
    w: np.ndarray

    def __getitem__(self, name: str) -> np.ndarray:
        if name == "sigma2" and name not in self.names:  # (sigma * sigma: how kinds.Prediction.derive makes it)
            sigma = self["sigma"]
            return sigma * sigma
        column = self.z[:, self.names.index(name)]
        return column.astype(np.int64) if name == "curve_bin" else column

    def values(self, columns: tuple[str, ...]) -> np.ndarray:
        """The prediction's per-row columns (the boot sample holds them first, in order)."""
        assert self.names[: len(columns)] == columns
        return self.z[:, : len(columns)]


def _rows(sample: RowSample, names: tuple[str, ...]) -> _Rows:
    row, z, _, w = sample.arrays()
    return _Rows(row, z.reshape(len(row), len(names)), names, np.ones(len(row)) if w is None else w)


@dataclass
class _Bins:
    """Bins fixed from a set of rows: ENCE's over the std, each interval's over its width."""

    ence: np.ndarray | None
    widths: dict[str, np.ndarray]


def _bins_of(p: Prediction, rows: _Rows) -> _Bins:
    o = p.options
    ence = curves.bins_of(rows["sigma"], o.n_bins, o.binning) if p.has_spread else None
    widths = {
        level_name(lv): curves.bins_of(rows[f"width_{level_name(lv)}"], o.n_bins, o.binning) for lv in p.interval_levels
    }
    return _Bins(ence, widths)


def _row_sums(p: Prediction, rows: _Rows, bins: _Bins, mw: np.ndarray, *, totals: bool = True) -> dict:
    """The sums the summaries read, over ``rows`` weighted by ``mw`` (``(R, n)``: replicates, or ``(n,)``);
    without ``totals`` only the binned ones (the totals and the curve are the state's exact sums)."""
    o = p.options
    out = {"W": mw.sum(axis=-1)}
    if totals:
        out["T"] = mw @ rows.values(p.columns)
        if p.kind != "intervals":
            out["curve"] = curves.binned_sums(rows["curve_bin"], p.n_bins_curve, np.ones(len(rows.w)), mw)
    if bins.ence is not None:
        out["ence"] = tuple(
            curves.binned_sums(bins.ence, o.n_bins, v, mw) for v in (np.ones(len(rows.w)), rows["sigma2"], rows["r2"])
        )
    out["ssc"] = {
        s: (
            curves.binned_sums(b, o.n_bins, rows[f"cov_{s}"], mw),
            curves.binned_sums(b, o.n_bins, np.ones(len(rows.w)), mw),
        )
        for s, b in bins.widths.items()
    }
    return out


def summaries(p: Prediction, sums: dict) -> dict[str, np.ndarray]:
    """Every metric with an interval from the sums (leading axes broadcast: replicates)."""
    W, T = sums["W"], sums["T"]
    col = {c: T[..., j] / W for j, c in enumerate(p.columns)}
    expected = np.asarray(p.expected)
    observed = observed_curve(p, sums)
    out = {
        "mace": curves.mace(expected, observed),
        "rmsce": curves.rmsce(expected, observed),
        "miscalibration_area": curves.miscalibration_area(expected, observed),
    }
    if "ence" in sums:
        out["ence"], out["uce"] = curves.ence_uce(*sums["ence"])
    if p.has_spread:
        out["sharpness"] = np.sqrt(col["sigma2"])
    for name in ("crps", "nll", "pinball", "interval_score_avg99"):
        if name in col:
            out[name] = col[name]
    for lv in p.interval_levels:
        s = level_name(lv)
        out[f"picp_{s}"] = col[f"cov_{s}"]
        out[f"mpiw_{s}"] = col[f"width_{s}"]
        out[f"interval_score_{s}"] = col[f"isc_{s}"]
        out[f"ssc_{s}"] = curves.size_stratified_coverage(*sums["ssc"][s])
    return out


def finish(acc: RegressionAccumulator, progress=None) -> RegressionReport:
    p, o = acc.prediction, acc.prediction.options
    rows = _rows(acc.sample, p.sample_columns)
    complete = acc.sample.complete
    bins = _bins_of(p, rows)
    # (the binned sums of the sample's rows: all rows up to max_rows)
    full = _row_sums(p, rows, bins, rows.w, totals=False)
    full["W"], full["T"] = np.asarray(acc.weight), acc.totals  # (the exact sums of every row)
    if p.kind != "intervals":
        full["curve"] = acc.curve
    estimates = summaries(p, full)
    sampled = {"ence", "uce"} | {f"ssc_{level_name(lv)}" for lv in p.interval_levels}
    replicates = _replicates(p, acc, {**estimates, CURVE: observed_curve(p, full)}, progress) if o.n_boot else {}
    curve_replicates = replicates.pop(CURVE, None)
    intervals = {name: percentile_interval(r, o.alpha) for name, r in replicates.items()}
    band = None if curve_replicates is None else percentile_intervals(curve_replicates.T, o.alpha)
    how = "Poisson bootstrap over rows, keyed by (seed, global row index)"
    if acc.n_rows > o.boot_rows:
        how += f", of a bottom-k sample of {o.boot_rows} rows, spread scaled by sqrt(k/n)"
    metrics: dict[str, Metric] = {}
    ks = _ks(acc, rows)
    if ks is not None:
        metrics["pit_ks"] = Metric("pit_ks", ks["statistic"], note=ks["method"])
        metrics["pit_ks_pvalue"] = Metric("pit_ks_pvalue", ks["p_value"], note=ks["method"])
    for name, value in estimates.items():
        low, high = intervals.get(name, (None, None))
        note = None
        if name in sampled and not complete:
            note = f"on a bottom-k sample of {o.max_rows} of {acc.n_rows} rows"
        metrics[name] = Metric(name, float(value), low, high, how if name in intervals else None, note=note)
    observed = observed_curve(p, full)
    problem = {
        "name": p.kind,
        "kind": p.kind,
        "n": acc.n_rows,
        "weight_total": acc.weight,
        "calibration_curve": {
            "form": p.form,
            "definition": _form_text(p),
            "expected": list(p.expected),
            "observed": observed.tolist(),
            "band": None
            if band is None
            else {
                "low": band[0].tolist(),
                "high": band[1].tolist(),
                "method": how,
                "confidence_level": 1.0 - o.alpha,
                "n_boot": o.n_boot,
            },
        },
        "binning": {
            "over": "predicted std" if p.has_spread else None,
            "intervals_over": "interval width" if p.interval_levels else None,
            "scheme": o.binning,
            "n_bins": o.n_bins,
            "rows": "all rows" if complete else f"bottom-k sample of {o.max_rows} rows",
        },
    }
    if p.has_pit:
        counts = acc.pit_coarse
        edges = np.linspace(0.0, 1.0, len(counts) + 1)
        n = acc.n_rows if not acc.weighted else int(round(acc.weight))
        problem["pit_histogram"] = {
            "edges": edges.tolist(),
            "counts": counts.tolist(),
            "density": (counts / acc.weight * len(counts)).tolist(),
            "uniform_band": uniform_band(n, len(counts), o.alpha),
        }
        assert ks is not None
        problem["pit_ks"] = ks
    if p.kind == "quantiles":
        problem["crossed_quantiles"] = {"rows": acc.crossed, "rate": acc.crossed / acc.n_rows, "handling": "sorted"}
    return RegressionReport(problem, metrics, replicates)


def uniform_band(n: int, bins: int, alpha: float) -> dict:
    """Where a PIT histogram's bars fall under uniformity: each bin's count is Binomial(n, 1/bins), and its
    central ``1 - alpha`` interval (the binomial's ``alpha/2`` and ``1 - alpha/2`` quantiles, the smallest count
    whose CDF reaches each) in density units (count over ``n / bins``), the same for every bin (pointwise)."""
    from scipy.special import bdtr

    def quantile(q: float) -> int:
        lo, hi = 0, n  # bdtr(hi) = 1 >= q; find the smallest k with bdtr(k, n, 1/bins) >= q
        while lo < hi:
            mid = (lo + hi) // 2
            if bdtr(mid, n, 1.0 / bins) >= q:
                hi = mid
            else:
                lo = mid + 1
        return lo

    return {
        "low": quantile(alpha / 2.0) * bins / n,
        "high": quantile(1.0 - alpha / 2.0) * bins / n,
        "confidence_level": 1.0 - alpha,
        "method": f"pointwise central interval of Binomial({n}, 1/{bins}) counts under a uniform PIT, as density",
    }


def observed_curve(p: Prediction, sums: dict) -> np.ndarray:
    """The calibration curve's observed proportions, ``(..., K)`` (leading axes: replicates)."""
    W = np.asarray(sums["W"])
    if p.kind == "intervals":
        j = {c: i for i, c in enumerate(p.columns)}
        return np.stack([sums["T"][..., j[f"cov_{level_name(lv)}"]] / W for lv in p.expected], axis=-1)
    return curves.observed_proportions(sums["curve"], W)


def _form_text(p: Prediction) -> str:
    if p.kind == "quantiles":
        return (
            "mean 1{y <= q_k} at each quantile level"
            if p.form == "quantile"
            else "mean 1{q_tau <= y <= q_(1-tau)}: coverage of each central interval the quantiles form"
        )
    if p.kind == "intervals":
        return "mean 1{lower <= y <= upper}: coverage of each interval at its level"
    head = "mean 1{u <= p_k}" if p.form == "quantile" else "mean 1{|u - 1/2| <= p_k / 2} (central intervals)"
    return f"{head} at p_k = linspace(0, 1, {p.options.n_levels}), u the PIT"


def _ks(acc: RegressionAccumulator, rows: _Rows) -> dict | None:
    p = acc.prediction
    if not p.has_pit:
        return None
    n = acc.n_rows if not acc.weighted else int(round(acc.weight))
    if acc.sample.complete:
        d = scores.ks_uniform(rows["pit"], rows.w if acc.weighted else None)
        return {
            "statistic": d,
            "p_value": scores.ks_pvalue(d, n),
            "n": n,
            "method": "exact, on all rows",
            "error_bound": 0.0,
        }
    d, bound = scores.ks_from_histogram(acc.pit_fine)
    return {
        "statistic": d,
        "p_value": scores.ks_pvalue(d, n),
        "n": n,
        "method": f"at the edges of a {PIT_CELLS}-cell PIT histogram (beyond {p.options.max_rows} rows)",
        "error_bound": bound,
    }


def _replicates(p: Prediction, acc: RegressionAccumulator, estimates: dict, progress) -> dict:
    """The bootstrap replicates of every summary (module docstring: the rows, their bins, the scaling)."""
    o = p.options
    assert acc.boot_sample is not None
    rows = _rows(acc.boot_sample, p.boot_columns)
    scaled = len(rows.row_index) < acc.n_rows
    bins = _bins_of(p, rows)
    if scaled:
        sample_sums = _row_sums(p, rows, bins, rows.w)
        centre = {**summaries(p, sample_sums), CURVE: observed_curve(p, sample_sums)}
    else:
        centre = estimates
    factor = np.sqrt(rows.w.sum() / acc.weight) if scaled else 1.0
    draws = Multiplicities(o.seed, rows.row_index)
    reps: dict[str, list] = {name: [] for name in estimates}
    for start in range(0, o.n_boot, BLOCK):
        block = np.arange(start, min(start + BLOCK, o.n_boot))
        mw = draws.block(block) * rows.w[None, :]
        sums = _row_sums(p, rows, bins, mw)
        for name, values in summaries(p, sums).items():
            reps[name].append(values)
        if CURVE in reps:
            reps[CURVE].append(observed_curve(p, sums))
        if progress is not None:
            progress(len(block))
    out = {}
    for name, parts in reps.items():
        r = np.concatenate(parts)
        out[name] = estimates[name] + (r - centre[name]) * factor if scaled else r
    return out
