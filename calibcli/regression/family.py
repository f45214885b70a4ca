"""The regression family (``calibcli regression``; SPEC 10): calibration of predictive distributions, quantiles
and intervals, streamed, per group, with seeded bootstrap intervals and gates.

:class:`Columns` declares which columns hold the target and the prediction (the input layer's second kind of
target, :mod:`calibcli.io.regression`); :class:`Options` what is computed. ``plan`` returns the document
(every effective option echoed) and ``new(stream)``, the input accumulator of a stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as reworded

from calibcli.core.declarations import GATE_METRIC, WEIGHT_COL
from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError, shown, warn
from calibcli.core.family import Family, GatedMetrics, Plan, sources_block
from calibcli.core.registry import REGISTRY
from calibcli.core.validation import Declared, declared, option
from calibcli.io.regression import RegressionSources, RegressionSpec, check_level
from calibcli.io.sources import DEFAULT_BATCH_ROWS
from calibcli.regression import scores
from calibcli.regression.accumulator import RegressionAccumulator
from calibcli.regression.kinds import BINNINGS, FORMS, Prediction, RegressionOptions


@dataclass(frozen=True)
class Columns(Declared):
    """Which columns hold the target and the prediction (default: recognised by name)."""

    target: str | None = option(None, "--target", help="Column with the observed value (default: y or target).")
    mean: str | None = option(None, "--mean", help="Column with the predicted mean (Gaussian prediction).")
    std: str | None = option(None, "--std", help="Column with the predicted standard deviation (with --mean).")
    var: str | None = option(None, "--var", help="Column with the predicted variance (with --mean, instead of --std).")
    quantile_cols: list[str] | None = option(
        None,
        "--quantile-cols",
        help="Quantile columns: a comma-separated list or a pattern such as 'q*'; their levels are read from names "
        "such as q0.05 or quantile_0.05, or given with --quantile-levels.",
    )
    quantile_levels: list[str] | None = option(
        None, "--quantile-levels", help="The levels of the --quantile-cols, in their order (comma-separated)."
    )
    lower: list[str] | None = option(None, "--lower", help="Lower ends of central intervals (one or more columns).")
    upper: list[str] | None = option(None, "--upper", help="Upper ends of the intervals, one per --lower column.")
    level: list[str] | None = option(
        None,
        "--level",
        help="Nominal level of each interval (e.g. 0.9); for a Gaussian, samples or quantiles: the central "
        "intervals to evaluate (default 0.9; quantiles: every symmetric pair of levels).",
    )
    sample_cols: list[str] | None = option(
        None, "--sample-cols", help="Columns with samples of the predictive distribution (a list or a pattern 's*')."
    )
    weight_col: str | None = declared(None, WEIGHT_COL)
    id_col: str | None = option(
        None,
        "--id-col",
        help="Quantiles in long form (columns quantile_level, value; one row per id and level): the id column "
        "(default: id).",
    )

    def spec(self) -> RegressionSpec:
        """The input layer's :class:`~calibcli.io.regression.RegressionSpec` of these options."""
        return RegressionSpec(
            target=self.target,
            mean=self.mean,
            std=self.std,
            var=self.var,
            quantile_cols=tuple(self.quantile_cols or ()),
            quantile_levels=levels_of(self.quantile_levels, "{opt:quantile_levels}"),
            lower=tuple(self.lower or ()),
            upper=tuple(self.upper or ()),
            level=levels_of(self.level, "{opt:level}"),
            sample_cols=tuple(self.sample_cols or ()),
            weight_col=self.weight_col,
            id_col=self.id_col,
        )


def levels_of(items, what: str) -> tuple[float, ...]:
    """``["0.5,0.9", "0.95"]`` -> ``(0.5, 0.9, 0.95)``; each a number strictly between 0 and 1."""
    out: list[float] = []
    for item in items or ():
        for part in (p.strip() for p in str(item).split(",")):
            if not part:
                continue
            try:
                value = float(part)
            except ValueError:
                raise CalibcliError(f"{what} {shown(part)} is not a number: expected a level such as 0.9") from None
            out.append(check_level(value, what))
    if len(set(out)) < len(out):
        raise CalibcliError(f"{what} gives a level twice: give each level once")
    return tuple(out)


def _gate_metric_help() -> str:
    return (
        "The metric the gates read: mace (default), rmsce, miscalibration_area, ence, crps, nll, pinball, "
        "picp_0.9, ... (any metric of the report)."
    )


@dataclass(frozen=True)
class Options(GatedMetrics):
    """``regression``'s options, declared once: the command's flags, the checks, the report's ``parameters``."""

    curve_form: str | None = option(
        None,
        "--curve-form",
        help="Calibration curve: interval (central intervals of the PIT, uncertainty-toolbox's default; the "
        "default for a Gaussian and samples) or quantile (1{u <= p}; the default for quantiles).",
        choices=FORMS,
    )
    n_levels: int = option(100, "--n-levels", help="Expected proportions of the curve: linspace(0, 1, N).", count=True)
    crps_estimator: str = option(
        "nrg",
        "--crps-estimator",
        help="CRPS of samples: nrg (energy form, 1/(2M^2)) or fair (1/(2M(M-1))).",
        choices=scores.CRPS_ESTIMATORS,
    )
    n_bins: int = option(
        10,
        "--n-bins",
        help="Bins of ENCE/UCE (over the predicted std) and of size-stratified coverage (over the interval width).",
        count=True,
    )
    binning: str = option(
        "equal-mass",
        "--binning",
        help="ENCE's bins: equal-mass (Levi et al.) or equal-width (netcal).",
        choices=BINNINGS,
    )
    pit_bins: int = option(10, "--pit-bins", help="Bins of the PIT histogram in the report.", count=True)
    max_rows: int = option(
        1 << 20,
        "--max-rows",
        help="Rows kept for ENCE's bins and the exact KS statistic; beyond, a seeded bottom-k sample (bins) and a "
        "fine PIT histogram (KS, with its error bound).",
        count=True,
    )
    metric: str = declared("mace", reworded(GATE_METRIC, help=_gate_metric_help()))

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, value, least in (
            ("n_levels", self.n_levels, 2),
            ("pit_bins", self.pit_bins, 1),
            ("max_rows", self.max_rows, 1),
        ):
            if not value >= least:
                raise CalibcliError(f"{{opt:{name}}} is {value}: expected at least {least}")

    @property
    def gate_metric(self) -> str:
        return self.metric

    def computed(self, levels: tuple[float, ...]) -> RegressionOptions:
        """What the family computes: these options under :class:`RegressionOptions`' names, with the central
        intervals to evaluate."""
        return RegressionOptions.of(self, levels=levels)


def regression_sources(
    files,
    columns: Columns,
    *,
    input_format: str | None = None,
    drop_invalid: bool = False,
    pool: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    group_by: tuple[str, ...] = (),
) -> RegressionSources:
    """The sources of a regression run (files, directories, globs, URIs, stdin)."""
    return RegressionSources(
        tuple(files),
        columns.spec(),
        input_format=input_format,
        drop_invalid=drop_invalid,
        pool=pool,
        batch_rows=batch_rows,
        group_by=tuple(group_by),
    )


def plan(o: Options, sources: RegressionSources, engine: str) -> Plan:
    """``regression``'s document (its parameters) and ``new(stream)``, the input accumulator of a stream."""
    spec = sources.spec
    computed_levels = () if spec.lower else spec.level
    gate = o.gate

    def new(stream):
        t = stream.plan.target
        return RegressionAccumulator(Prediction(t.kind, t.levels, o.computed(computed_levels)))

    doc = new_document(
        "regression",
        {
            "curve_form": o.curve_form or "interval (Gaussian, samples, intervals); quantile (quantiles)",
            "n_levels": o.n_levels,
            "levels": list(spec.level) or None,
            "crps_estimator": o.crps_estimator,
            "n_bins": o.n_bins,
            "binning": o.binning,
            "pit_bins": o.pit_bins,
            "max_rows": o.max_rows,
            "pit": "Gaussian Phi((y - mu)/sigma); samples (#{x < y} + V (#{x = y} + 1))/(M + 1); quantiles linear "
            "between levels, V tau_1 below the lowest and tau_m + V (1 - tau_m) above the highest; V ~ U(0, 1) keyed "
            "by (seed, global row index)",
            "pinball_levels": "Gaussian: linspace(0.01, 0.99, 99) (uncertainty-toolbox's check_score); quantiles: the "
            "file's levels; intervals: the ends' levels (1 -/+ level)/2",
            "interval_score": "interval_score_L: the Winkler score at level L (MAPIE, scoringrules); "
            "interval_score_avg99: averaged over linspace(0.01, 0.99, 99) (uncertainty-toolbox)",
            "n_boot": o.n_boot,
            "bootstrap": "Poisson, keyed by (seed, global row index); bins fixed across replicates",
            "alpha": o.alpha,
            "confidence_level": 1.0 - o.alpha,
            "seed": o.seed,
            "estimators": {n: REGISTRY[n].description for n in REGISTRY if REGISTRY[n].family == "regression"},
            **sources_block(sources, engine),
            "gate": gate.describe() if gate.active else None,
        },
    )
    return Plan(doc, new, gate, o.n_boot)


def finish(doc: dict, options: Options) -> list[str]:
    """Warn of crossed quantiles (sorted before use, SPEC 10), once per entry that has them."""
    for entry in doc["files"]:
        for problem in entry.get("problems", []):
            crossed = problem.get("crossed_quantiles")
            if crossed and crossed["rows"]:
                where = entry["input"]["path"] + (
                    f" [{', '.join(f'{k}={v}' for k, v in entry['group'].items())}]" if entry.get("group") else ""
                )
                warn(
                    f"{where}: {crossed['rows']} row(s) ({crossed['rate']:.3g} of them) have crossed quantiles "
                    "(a higher level's value below a lower one's): sorted before use"
                )
    return []


FAMILY = Family("regression", Options, plan, finish)
