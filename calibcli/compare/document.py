"""The work of ``calibcli compare``: both inputs resolved and opened, compared on an engine
(:func:`calibcli.compare.run.compare_streams`: paired by ID or row order when possible), the report document
with the difference entry, and the ``--fail-if-worse`` gates' verdicts. The command
(:mod:`calibcli.cli.commands.compare`) parses, renders and exits 1 on a failed gate.
"""

from __future__ import annotations

import re

import numpy as np

from calibcli.compare.paired_bootstrap import worse_by
from calibcli.compare.run import ID_PAIRING_LIMIT, compare_streams
from calibcli.core.binning import EDGE_CONVENTION
from calibcli.core.documents import fmt_interval, fmt_number, new_document
from calibcli.core.errors import CalibcliError, warn
from calibcli.core.modes import default_mode
from calibcli.core.registry import REGISTRY, describe
from calibcli.core.resampling import percentile_interval
from calibcli.ece_family import options as ece_options
from calibcli.engines.pipeline import engine_runner
from calibcli.io.formats import detect_format, read_schema, read_table, unreadable
from calibcli.io.resolve import resolve_datasets
from calibcli.llm import paired as llm_paired
from calibcli.llm.accumulator import SelectiveOptions
from calibcli.llm.family import Options as SelectiveFamilyOptions
from calibcli.llm.items import ITEM_KEY
from calibcli.smooth import options as smece_options

#: The entry of the differences in the report's ``files`` (so the tidy renderers show them as rows).
DIFFERENCE_PATH = "candidate - baseline"


def compare_document(baseline: str, candidate: str, chosen, *, spec, engine, gated: tuple[list, list], reading: dict):
    """Compare CANDIDATE with BASELINE (paths as given) under ``chosen`` (the checked
    :class:`calibcli.compare.family.Options`): the report document and the gates' failures (empty: passed).
    ``gated``: (``--fail-if-worse`` names, ``--fail-if-worse-by`` (name, threshold) pairs); ``reading``: the
    input format, drop_invalid and batch_rows of both inputs."""
    id_col, pairing, mode, class_weights = chosen.id_col, chosen.pairing, chosen.mode, chosen.class_weights
    n_bins, strategy, smece = chosen.n_bins, chosen.strategy, chosen.smece
    n_boot, alpha, seed = chosen.n_boot, chosen.alpha, chosen.seed
    gates, by = list(gated[0]), list(gated[1])
    input_format, batch_rows = reading["input_format"], reading["batch_rows"]
    datasets = [resolve_datasets([path])[0] for path in (baseline, candidate)]  # both resolved before any reading
    group_by = (id_col,) if id_col else ()
    if id_col:
        for d in datasets:
            _check_id_column(d, id_col, input_format)
    streams = [
        d.open(
            spec,
            input_format=input_format,
            drop_invalid=reading["drop_invalid"],
            batch_rows=batch_rows,
            group_by=group_by,
        )
        for d in datasets
    ]
    used_mode = mode or default_mode(streams[0].n_classes)
    shared = ("n_boot", "alpha", "seed", "class_weights")  # (checked when chosen was made: not again)
    binned = ece_options.Options.from_checked(chosen, "n_bins", "strategy", *shared)
    smooth = smece_options.Options.from_checked(chosen, *shared) if smece else None
    with engine_runner(engine.name, engine.scheduler, engine.workers) as runner:  # a cluster lives for the run
        try:
            run = compare_streams(
                streams[0],
                streams[1],
                binned,
                mode_a=used_mode,
                smooth_options=smooth,
                id_column=id_col,
                pairing=pairing,
                engine=runner,
            )
        except CalibcliError as exc:
            raise _as_id_problem(exc, id_col) from None
    for entry in run.entries:  # the input section names the ID column it read beside the data
        entry["input"]["group_by"] = []
    selective = _selective_comparison(datasets, run, chosen) if id_col == ITEM_KEY else None
    if selective is not None:
        run.comparison.update(selective)
    for name in gates + [name for name, _ in by]:
        _check_gate_metric(name, run.comparison)
    doc = new_document(
        "compare",
        {
            "baseline": baseline,
            "candidate": candidate,
            "n_bins": n_bins,
            "strategy": strategy,
            "edges_convention": EDGE_CONVENTION,
            "mode": used_mode,
            "class_weights": class_weights,
            "smece": smece,
            "n_boot": n_boot,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "seeds": run.seeds,
            "pairing": {
                **run.pairing.to_dict(),
                "asked": pairing,
                "id_pairing_limit": ID_PAIRING_LIMIT if id_col else None,
            },
            "bootstrap": "Poisson, keyed by (seed, global row index): paired replicates per row while the rows are "
            "kept, from joint per-bin sufficient statistics beyond; unpaired inputs use independent seeds",
            "estimators": {**describe("binned"), **({} if selective is None else _SELECTIVE_ESTIMATORS)},
            "selective": None
            if selective is None
            else {
                "coverages": list(_SELECTIVE.coverages),
                "risks": list(_SELECTIVE.risks),
                "paired_by": "item key (the dumps' item column): the same bootstrap multiplicity for an item in "
                "both, keyed by its position among the sorted keys, so neither input's row order changes a number",
            },
            "weights": "frequency weights" if spec.weight_col else None,
            "batch_rows": batch_rows,
            "gates": {"fail_if_worse": gates, "fail_if_worse_by": dict(by)} if gates or by else None,
            "engine": engine.name,
            "workers": runner.workers,
        },
    )
    doc["files"] = run.entries + [_difference_entry(run.comparison, used_mode)]
    doc["comparison"] = run.comparison
    if not run.pairing.paired:
        warn(
            f"{baseline} and {candidate} are compared unpaired ({run.pairing.reason}): the intervals of the "
            f"differences treat them as independent samples"
        )
    failures = _gate_failures(run.comparison, gates, by, baseline, candidate, alpha)
    if gates or by:
        doc["gate"] = {
            "fail_if_worse": gates,
            "fail_if_worse_by": dict(by),
            "passed": not failures,
            "failures": failures,
        }
    return doc, failures


#: The selective metrics' levels in a comparison: ``calibcli selective``'s defaults.
_SELECTIVE = SelectiveFamilyOptions()
_SELECTIVE_ESTIMATORS = {
    "aurc": "(1/n) sum_k r_k over the answers ordered by confidence, tie blocks (SPEC 11)",
    "e_aurc": "aurc - aurc of the order ranking every correct answer first",
    "augrc": "(1/n) sum_k (k/n) r_k (Traub et al. 2024)",
    "auroc": "P(conf of a correct answer > conf of a wrong one) + P(tie)/2",
    "accuracy": "1 - errors / n (the top answer's)",
}


def _selective_comparison(datasets, run, chosen) -> dict | None:
    """Two LLM dumps paired by item key: every selective metric (``calibcli selective``'s) of both and
    candidate - baseline, with the paired bootstrap of :func:`calibcli.llm.paired.paired_sides`. None unless both
    inputs are LLM dumps (their input sections carry ``llm``)."""
    if not all("llm" in entry["input"] for entry in run.entries[:2]):
        return None
    answers = []
    for dataset in datasets:
        location = dataset.locations()[0]
        table = read_table(location, dataset.fixed_format or detect_format(dataset.files[0], None))
        answers.append(llm_paired.answers_of(table, dataset.files[0]))
    options = SelectiveOptions(_SELECTIVE.coverages, _SELECTIVE.risks, chosen.n_boot, chosen.alpha, chosen.seed)
    both = llm_paired.paired_sides(answers[0], answers[1], options)
    how = f"paired Poisson bootstrap over items (by item key, {both.n} items)"
    out = {}
    for name, a in both.baseline.items():
        b, better = both.candidate[name], llm_paired.better(name, "lower")
        if not (np.isfinite(a) and np.isfinite(b)):
            continue  # (AUROC with no wrong or no right answer on one side: undefined)
        lo = hi = None
        if both.baseline_replicates is not None and both.candidate_replicates is not None:
            diff = both.candidate_replicates[name] - both.baseline_replicates[name]
            lo, hi = percentile_interval(np.where(np.isfinite(diff), diff, np.nan), chosen.alpha)
            if not (np.isfinite(lo) and np.isfinite(hi)):
                lo = hi = None
        worse = (b > a) if better == "lower" else (b < a) if better == "higher" else False
        out[name] = {
            "baseline": a,
            "candidate": b,
            "difference": b - a,
            "ci_low": lo,
            "ci_high": hi,
            "ci_method": how if lo is not None else None,
            "paired": lo is not None,
            "better": better,
            "worse": bool(worse),
            "significant": bool(lo is not None and hi is not None and (lo > 0 or hi < 0)),
        }
    return out


def threshold(item: str) -> tuple[str, float]:
    """``METRIC=X`` of --fail-if-worse-by."""
    name, sep, value = item.partition("=")
    try:
        x = float(value) if sep else None
    except ValueError:
        x = None
    if not name.strip() or x is None or not (x >= 0.0) or x == float("inf"):
        raise CalibcliError(
            f"--fail-if-worse-by is {item!r}: expected METRIC=X with X a number >= 0, for example ece_l1_plugin=0.01"
        )
    return name.strip(), x


_EMPTY_GROUP_VALUE = re.compile(
    r"(?P<where>.*): row (?P<row>\d+), column (?P<column>.*): the group-by value is empty: "
)


def _as_id_problem(exc: CalibcliError, id_col: str | None) -> CalibcliError:
    """The ID column is read through the group-by machinery, whose message for an empty cell speaks of
    --group-by: said of the ID instead (as a NaN ID is, in :mod:`calibcli.compare.run`)."""
    found = _EMPTY_GROUP_VALUE.match(exc.template) if id_col else None
    if found is None or found["column"] != id_col:
        return exc
    return CalibcliError(
        f"{found['where']}: row {found['row']}, column {found['column']}: the ID is empty (missing): "
        f"every row needs an ID to pair examples by {{opt:id_col}}"
    )


def _check_id_column(dataset, id_col: str, input_format) -> None:
    """The ID column is in the first file of the dataset (the message names the option, not a group-by)."""
    location = dataset.locations()[0]
    path = dataset.files[0]
    fmt = dataset.fixed_format or detect_format("-" if location == "-" else path, input_format)  # (converted dumps)
    try:
        names = list(read_schema(location, fmt).names)
    except CalibcliError:
        raise
    except Exception as exc:  # a duplicated header name, unreadable bytes: worded as every reader words them
        raise unreadable(path, fmt, exc, location) from None
    if id_col not in names and id_col not in dataset.partition_kinds:
        raise CalibcliError(f"{path}: no column {id_col!r} (given by --id-col); the file has columns {names}")


def check_gate_names(names: list[str], smece: bool) -> None:
    """Gate metrics that no report of this command can have fail at once, before minutes of reading."""
    families = {"tcal", "clinical_test"} | (set() if smece else {"smooth"})
    known = [n for n, m in REGISTRY.items() if m.family not in families]
    for name in names:
        if name not in REGISTRY and _is_selective(name):
            continue  # (compared when both inputs are LLM dumps paired by item; checked on the report after)
        if not smece and name in REGISTRY and REGISTRY[name].family == "smooth":
            raise CalibcliError(f"{name} is compared with --smece: add --smece to gate on it")
        if name not in REGISTRY or REGISTRY[name].family in families:
            raise CalibcliError(f"no metric {name!r} to gate on: expected one of {', '.join(known)}")


def _is_selective(name: str) -> bool:
    return llm_paired.better(name) is not None


def _check_gate_metric(name: str, comparison: dict) -> None:
    if name not in comparison:
        raise CalibcliError(f"no metric {name!r} to gate on: expected one of {', '.join(comparison)}")
    if comparison[name]["better"] == "none":
        raise CalibcliError(f"{name} has no better direction (a part of a decomposition): gate on another metric")


def _gate_failures(
    comparison: dict, gates: list[str], by: list[tuple[str, float]], baseline: str, candidate: str, alpha: float
) -> list[str]:
    level = f"{100 * (1 - alpha):g}%"
    out = []

    def says(name: str, c: dict) -> str:
        return (
            f"{candidate} (candidate) is worse than {baseline} (baseline) on {name}: {fmt_number(c['candidate'])} vs "
            f"{fmt_number(c['baseline'])}, difference {c['difference']:+.4g} ({level} CI "
            f"{fmt_interval(c['ci_low'], c['ci_high'])}{', paired' if c['paired'] else ', unpaired'})"
        )

    for name in gates:
        c = comparison[name]
        if c["worse"] and c["significant"]:
            out.append(says(name, c) + " (--fail-if-worse: the interval excludes 0)")
    for name, x in by:
        c = comparison[name]
        by_how_much = worse_by(name, c["baseline"], c["candidate"])
        if by_how_much > x:
            out.append(says(name, c) + f" (--fail-if-worse-by: worse by {by_how_much:.4g} > {x:g})")
    return out


def _difference_entry(comparison: dict, mode: str) -> dict:
    """The differences as a report entry, so that the tidy renderers (CSV, markdown) list them as rows."""
    return {
        "input": {"path": DIFFERENCE_PATH},
        "role": "difference",
        "mode": mode,
        "headline": {
            name: {
                "estimate": c["difference"],
                "ci_low": c["ci_low"],
                "ci_high": c["ci_high"],
                "ci_method": c["ci_method"],
            }
            for name, c in comparison.items()
        },
    }
