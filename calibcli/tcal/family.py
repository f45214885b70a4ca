"""The tcal family (``calibcli tcal``; SPEC 4): is the miscalibration statistically real? T-Cal, or exact
binomial tests for discrete predictors; the ``--fail-on-reject`` gate."""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.core.accumulator import per_input
from calibcli.core.declarations import CLINICAL_TEST_NAMES, auto
from calibcli.core.documents import entry_label, new_document
from calibcli.core.errors import CalibcliError, cli_text, flag_of, warn
from calibcli.core.family import Bootstrap, Family, Plan, sources_block
from calibcli.core.gates import GateSpec
from calibcli.core.validation import option
from calibcli.tcal.accumulator import DISCRETE_CHOICES, MAX_ROWS, TCAL_MODES, TcalInputAccumulator, TcalOptions
from calibcli.tcal.binomial import DISCRETE_RULE
from calibcli.tcal.results import COMBINES, NULLS, STATISTIC_NAME

#: What T-Cal's entries carry as their gate metric (the --fail-on-reject gate is T-Cal's own).
GATE = GateSpec("tcal_p_value")

#: ``--test`` choices: T-Cal or the binomial test as --discrete decides (auto), one of them, or a classical test.
TESTS = ("auto", "tcal", "binomial", *CLINICAL_TEST_NAMES)


@dataclass(frozen=True)
class Options(Bootstrap):
    """``tcal``'s options, declared once: the command's flags, the checks, the report's ``parameters``
    (the T-Cal family's, and the classical tests' of :mod:`calibcli.clinical.family`)."""

    mode: str | None = option(
        None,
        "--mode",
        help="binary, top-label or canonical (the whole probability vector, equal-volume simplex "
        "bins). Default: binary for one or two probability columns, top-label for K > 2.",
        choices=TCAL_MODES,
        shown=auto,
    )
    smoothness: float | None = option(
        None,
        "--smoothness",
        help="Holder smoothness s of the miscalibration, if known: single-scale test with "
        "m* = floor(n^(2/(4s+K-1))) bins. Default: the adaptive test over the dyadic levels m = 2, 4, ..., 2^L.",
    )
    null: str = option(
        "y-bootstrap",
        "--null",
        help="Null distribution: y-bootstrap (keep z, redraw y ~ Bernoulli(z); exact "
        "p-values), consistency (also resample z; approximate) or chebyshev (no resampling; conservative critical "
        "values of Theorem 3.1).",
        choices=NULLS,
    )
    combine: str = option(
        "bonferroni",
        "--combine",
        help="Combining the levels: bonferroni (reject if some level has p <= alpha/L) or "
        "min-p (min_b p_b calibrated over the same resamples; exact and more powerful).",
        choices=COMBINES,
    )
    discrete: str = option(
        "auto",
        "--discrete",
        help="Exact binomial test per distinct prediction value instead of T-Cal: auto (when "
        "the predictor takes at most sqrt(n) distinct values), yes or no.",
        choices=DISCRETE_CHOICES,
    )
    max_rows: int = option(
        MAX_ROWS,
        "--max-rows",
        help="T-Cal runs on every row up to this many, else on the bottom-k sample of this "
        "many rows (smallest hash of (seed, row index); the same however the data are split). The binomial test "
        "counts every row. --test ecce is exact up to this many rows and uses every row on a fine score grid beyond.",
    )
    test: str = option(
        "auto",
        "--test",
        help="Which test: auto (T-Cal, or the exact binomial test when --discrete says so), tcal, "
        "binomial, spiegelhalter (Spiegelhalter's Z, 1986) or hosmer-lemeshow (C-hat over --n-bins deciles of risk, "
        "G - 2 df; depends on the grouping, weak at small n, rejects nearly every model at large n) or ecce "
        "(ECCE-R/sigma against the range of Brownian motion, docs: How it is computed §9; no bins, O(n log n); "
        "exact up to --max-rows "
        "rows, a 2^16-cell score grid with its error bound beyond).",
        choices=TESTS,
    )
    n_bins: int | None = option(
        None, "--n-bins", help="Groups of the Hosmer-Lemeshow test (quantile bins of the predictions). Default: 10."
    )
    fail_on_reject: bool = option(False, "--fail-on-reject", help="Exit 1 when the test rejects perfect calibration.")
    n_boot: int = option(1000, "--n-boot", help="Resamples for the null distribution; one set serves every level.")
    alpha: float = option(0.05, "--alpha", help="Level of the test: reject when the p-value is at most alpha.")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_bins is not None and self.test != "hosmer-lemeshow":
            raise CalibcliError(
                f"--n-bins sets the groups of --test hosmer-lemeshow, and --test is {self.test}: drop --n-bins"
            )
        if self.test in ("tcal", "binomial") and self.discrete not in ("auto", self.wanted_discrete):
            raise CalibcliError(
                f"--test {self.test} and --discrete {self.discrete} disagree: --test {self.test} is "
                f"--discrete {self.wanted_discrete}"
            )
        if self.test not in CLINICAL_TEST_NAMES and self.null == "chebyshev" and self.combine == "min-p":
            raise CalibcliError(
                "--combine min-p calibrates the minimum p-value over resamples, and --null chebyshev draws none: "
                "use --combine bonferroni with chebyshev, or a resampling null"
            )

    @property
    def wanted_discrete(self) -> str:
        """``--discrete`` as ``--test`` reconciles it: ``tcal`` is ``no``, ``binomial`` is ``yes``."""
        return {"tcal": "no", "binomial": "yes"}.get(self.test, self.discrete)


def plan(o: Options, sources, engine: str) -> Plan:
    """The T-Cal test's document (its parameters; entries come from :func:`calibcli.engines.pipeline.add_entries`,
    then :func:`finish_entries`) and ``new(stream)``, the input accumulator of a stream: the command apart from
    running it, so that ``calibcli report`` feeds it in one pass beside the other families."""
    discrete = o.wanted_discrete
    options = TcalOptions(
        smoothness=o.smoothness,
        null=o.null,
        n_boot=o.n_boot,
        combine=o.combine,
        alpha=o.alpha,
        seed=o.seed,
        discrete=discrete,
        max_rows=o.max_rows,
    )
    doc = new_document(
        "tcal",
        {
            **o.shown("mode"),
            "test": "adaptive" if o.smoothness is None else "single-scale",
            **o.shown("smoothness", "null"),
            "n_boot": options.resamples,
            **o.shown("combine", "alpha", "seed"),
            "discrete": discrete,
            "discrete_rule": DISCRETE_RULE,
            "discrete_counts": f"per distinct value over every row, up to {options.max_distinct} values "
            "(more: the predictor is continuous)",
            "max_rows": o.max_rows,
            "sample": f"T-Cal runs on every row up to {o.max_rows} rows, else on the bottom-k sample of {o.max_rows} "
            "rows with the smallest hash of (seed, global row index)",
            "statistic": STATISTIC_NAME,
            "binning": "equal-width bins [j/m, (j+1)/m), the last closed (binary, top-label); "
            "equal-volume simplex cells (canonical, docs: How it is computed §4.3)",
            "p_value": "(1 + #{T* >= T}) / (R + 1) per level"
            if o.null != "chebyshev"
            else "min(1, (C_m / T_m)^2): the smallest level at which Theorem 3.1's test rejects",
            "fail_on_reject": o.fail_on_reject,
            **sources_block(sources, engine),
        },
    )
    return Plan(doc, per_input(TcalInputAccumulator, o.mode, options), GATE, options.resamples)


def finish(doc: dict, o: Options) -> list[str]:
    """:func:`finish_entries` with the options' level and gate."""
    return finish_entries(doc, alpha=o.alpha, fail_on_reject=o.fail_on_reject)


def finish_entries(doc: dict, *, alpha: float, fail_on_reject: bool) -> list[str]:
    """After every entry is in: the tests' warnings in the command line's words (and on stderr), which
    groups reject, the ``--fail-on-reject`` gate; the gate's failures."""
    for entry in doc["files"]:
        warnings = entry["result"].get("warnings")
        if warnings:  # the report speaks the command line's language: options by their flags
            entry["result"]["warnings"] = [cli_text(w, flag_of) for w in warnings]
    failures = gates(doc, alpha=alpha, fail_on_reject=fail_on_reject)  # (a gate that cannot decide: its one line)
    for entry in doc["files"]:
        for message in entry["result"].get("warnings", []):
            warn(f"{entry_label(entry)}: {message}")
    return failures


def gates(doc: dict, *, alpha: float, fail_on_reject: bool) -> list[str]:
    """Which groups reject (the worst group and spread of each p-value come from the shared summary) and
    the ``--fail-on-reject`` gate; its failures."""
    if "groups" in doc:
        _summarise_groups(doc)
    failures = [f for entry in doc["files"] for f in _gate(entry, alpha, fail_on_reject)]
    if fail_on_reject:
        doc["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    return failures


def _gate(entry: dict, alpha: float, active: bool) -> list[str]:
    """The ``--fail-on-reject`` verdict of one entry (``entry["gate"]``); the failure messages."""
    if not active:
        return []
    r = entry["result"]
    failures = []
    p = r.get("p_value")
    if r.get("can_reject") is False or p is None or p != p:
        why = next((w for w in r.get("warnings", []) if "cannot reject" in w), "its p-value is undefined")
        raise CalibcliError(
            f"--fail-on-reject: {entry_label(entry)}: the test cannot decide, so the gate would pass whatever the "
            f"data ({why})"
        )
    if r["reject"]:
        failures.append(
            f"{entry_label(entry)}: {entry['test']} rejects perfect calibration "
            f"(p-value {r['p_value']:.4g} <= alpha {alpha:g})"
        )
    entry["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    return failures


def _summarise_groups(doc: dict) -> None:
    """Which groups reject (the worst group and spread of each p-value come from the shared summary)."""
    doc["groups"]["rejecting"] = [entry_label(e) for e in doc["files"] if e["result"]["reject"]]


FAMILY = Family("tcal", Options, plan, finish)
