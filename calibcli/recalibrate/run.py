"""Recalibration as the library runs it (SPEC 5): which options each method takes, the training rows of a
fit read from a stream, and the held-out comparison of methods (``recalibrate evaluate``, and the
"what recalibration would do" section of ``calibcli report``).

:func:`evaluation` is the library function behind ``calibcli recalibrate evaluate``: the same options, the
same document. The command and the report call it; it never renders.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.calibrators import METHOD_OPTIONS
from calibcli.calibrators.binned import HistogramCalibrator
from calibcli.calibrators.document import METHOD_NAMES, fit_arrays
from calibcli.calibrators.isotonic import INTERPOLATIONS
from calibcli.calibrators.multiclass import MulticlassCalibrator
from calibcli.core.binning import EDGE_CONVENTION, STRATEGIES
from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError, OptionError, check_choice, warn
from calibcli.core.modes import MODES, default_mode
from calibcli.core.validation import check_option, check_options
from calibcli.ece_family import options as ece_options
from calibcli.engines.pipeline import check_engine, engine_runner, progress_bar
from calibcli.io.columns import ColumnSpec
from calibcli.io.sources import DEFAULT_BATCH_ROWS
from calibcli.io.streams import Sources
from calibcli.recalibrate import regression
from calibcli.recalibrate.evaluate import SPLIT_RULE, EvaluateAccumulator, HoldoutSplit
from calibcli.recalibrate.fit import FitAccumulator
from calibcli.regression.recalibration import REGRESSION_METHODS
from calibcli.smooth import options as smece_options
from calibcli.tcal.options import DISCRETE_CHOICES
from calibcli.tcal.options import Options as TcalOptions

#: CLI flag of each calibrator option, and the methods that take it.
_FLAGS = {
    "n_bins": "--n-bins",
    "strategy": "--strategy",
    "degree": "--degree",
    "interpolation": "--interpolation",
    "clip": "--clip",
    "monotone": "--monotone",
}


def method_options(methods: list[str], **given) -> dict[str, dict[str, Any]]:
    """The keyword options of each method from the CLI flags that were given (None: not given).

    A flag that applies to none of the methods is a usage error; ``--clip`` is temperature's ``eps``.
    """
    given = {k: v for k, v in given.items() if v is not None}
    per_method: dict[str, dict[str, Any]] = {}
    for m in methods:
        takes = set(METHOD_OPTIONS[m]) | ({"clip"} if m == "temperature" else set())
        opts = {k: v for k, v in given.items() if k in takes}
        if m == "temperature" and "clip" in opts:
            opts["eps"] = opts.pop("clip")
        per_method[m] = opts
    for k in given:
        if not any(k in per_method[m] or (k == "clip" and "eps" in per_method[m]) for m in methods):
            users = [m for m in METHOD_NAMES if k in METHOD_OPTIONS[m] or (k == "clip" and m == "temperature")]
            raise CalibcliError(
                f"{_FLAGS[k]} does not apply to --method {', '.join(methods)}: it is an option of {', '.join(users)}"
            )
    if "strategy" in given:
        check_choice(given["strategy"], STRATEGIES, "--strategy")
    if "interpolation" in given:
        check_choice(given["interpolation"], INTERPOLATIONS, "--interpolation")
    return per_method


def _check_methods(methods: list[str]) -> list[str]:
    check_option(bool(methods), f"--method is missing: expected one of {', '.join(METHOD_NAMES)}")
    for m in methods:
        check_choice(m, METHOD_NAMES, "--method")
    check_option(len(set(methods)) == len(methods), f"--method lists a method twice ({', '.join(methods)})")
    return methods


# ---------------------------------------------------------------------------------------------
# Fitting on loaded arrays


def _summary_params(d: dict) -> dict:
    """A calibrator dict's parameters for a report: scalars as they are, long lists by their length."""
    if "calibrators" in d:
        return {"per_class" if d["mode"] == "marginal" else d["mode"]: [_summary_params(c) for c in d["calibrators"]]}
    out = {}
    for k, v in d.get("params", {}).items():
        out[k] = v if not isinstance(v, list) or len(v) <= 16 else f"{len(v)} values"
    return out


@dataclass(frozen=True)
class _FitInput:
    """What the calibrator document and the report need of the training data, from a stream."""

    path: str
    described: dict
    n_classes: int
    class_names: tuple[str, ...]
    prob_columns: tuple[str, ...]
    logits: bool
    label_column: str
    weight_column: str | None
    labels: np.ndarray
    probs: np.ndarray
    sample_weight: np.ndarray | None

    @property
    def n_rows(self) -> int:
        return self.described["rows_used"]

    @property
    def n_rows_dropped(self) -> int:
        return self.described["rows_dropped"]

    def describe(self) -> dict:
        return self.described


def _open_one(path: str, spec, *, max_rows: int, input_format, drop_invalid: bool, batch_rows: int):
    """The stream of one dataset (a file, a directory of shards, a glob, '-'); ``max_rows`` checked first."""
    if max_rows < 2:
        raise OptionError("max_rows", f"{{name}} is {max_rows}: expected at least 2 rows to fit on")
    (stream,) = _ungrouped([path], spec, input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows)
    return stream


def _ungrouped(paths: list[str], spec, *, input_format, drop_invalid: bool, batch_rows: int) -> list:
    """One stream per dataset of ``paths``, each read whole: not pooled, not grouped (a map is fitted on, and
    measured over, one input at a time)."""
    return list(Sources(tuple(paths), spec, input_format, drop_invalid, batch_rows=batch_rows).open())


def _single(entries, empty):
    """The one accumulator of an ungrouped run (an empty one when the stream had no rows)."""
    return entries[0][1] if entries else empty


def stream_fit_accumulator(runner, stream, *, max_rows: int, seed: int):
    """Run ``stream`` into a :class:`FitAccumulator` on the engine of ``runner`` (states built where the
    rows are read, merged here); the accumulator and what the calibrator document needs of the input."""
    entries, described = runner.run(stream, lambda: FitAccumulator(max_rows=max_rows, seed=seed))
    return _single(entries, FitAccumulator(max_rows=max_rows, seed=seed)), (stream, described)


def fit_input(source, acc, *, method: str, mode, options: dict) -> tuple[_FitInput, dict]:
    """The rows to fit ``method`` on, from a :class:`FitAccumulator`, and how they were chosen (for the report)."""
    stream, described = source
    labels, probs, w, how = acc.data(method, mode=mode, options=options)
    loaded = _FitInput(
        described["path"],
        described,
        stream.n_classes,
        tuple(stream.class_names),
        tuple(stream.prob_columns),
        bool(stream.logits),
        stream.label_column,
        stream.weight_column,
        labels,
        probs,
        w,
    )
    return loaded, how


def _fit_info(d: dict) -> Any:
    if "calibrators" in d:
        return [c.get("info", {}) for c in d["calibrators"]]
    return d.get("info", {})


def _certificate(cal, alpha: float) -> dict | None:
    """Seed 002 Thm 12.6 for histogram binning (per class in marginal mode)."""
    cals = cal.calibrators if isinstance(cal, MulticlassCalibrator) else (cal,)
    if not all(isinstance(c, HistogramCalibrator) for c in cals):
        return None
    certs = [c.certificate(delta=alpha) for c in cals if isinstance(c, HistogramCalibrator)]  # (all of them)
    return {
        "theorem": "seed 002 Thm 12.6: E[ECE] <= sqrt(B/(2n)); ECE <= sqrt(B/n)/sqrt(2 delta) w.p. 1 - delta",
        "delta": alpha,
        "n_bins": certs[0].n_bins,
        "n": [c.n for c in certs] if len(certs) > 1 else certs[0].n,
        "expected_ece_bound": [c.expected_ece_bound for c in certs] if len(certs) > 1 else certs[0].expected_ece_bound,
        "ece_bound": [c.ece_bound for c in certs] if len(certs) > 1 else certs[0].ece_bound,
        "fixed_partition": certs[0].fixed_partition,
        "note": None
        if certs[0].fixed_partition
        else "quantile bins are cut on the same data: the theorem assumes a fixed partition, so the bounds are "
        "indicative",
    }


#: What each reported number is (the estimators of the ece, smece and tcal commands).
EVALUATE_ESTIMATORS = {
    "ece_l1_plugin": "sum_b (n_b/n) |acc_b - conf_b| (Guo et al. 2017)",
    "ece_l2_sq_debiased_dpe": "T-Cal debiased plug-in estimate of the squared l2-ECE (can be < 0)",
    "ece_l2_debiased_dpe": "sqrt(max(0, ece_l2_sq_debiased_dpe))",
    "ece_l2_sq_debiased_kumar": "Kumar et al. 2019 debiased squared l2-ECE (can be < 0)",
    "smece": "SmoothECE at its fixed-point bandwidth (Blasiok and Nakkiran 2023)",
    "brier_score": "mean (z - y)^2 (binary problem) or mean ||P - e_c||^2 (multiclass)",
    "log_loss": "mean -log p of the true class, clipped",
    "test": "the tcal command's test: T-Cal adaptive test (y-bootstrap null, Bonferroni over levels) or, for "
    "unweighted predictions with at most sqrt(n) distinct values, the exact binomial test per value "
    "(docs: How it is computed §4.4); T-Cal on at most --max-rows rows (the bottom-k sample beyond)",
}


def evaluation(
    file: str,
    method: list[str],
    holdout: float | None = None,
    fit_file: str | None = None,
    prob_col: str | None = None,
    prob_cols: list[str] | None = None,
    label_col: str | None = None,
    weight_col: str | None = None,
    logits: bool = False,
    input_format: str | None = None,
    drop_invalid: bool = False,
    mode: str | None = None,
    n_bins: int | None = None,
    strategy: str | None = None,
    degree: int | None = None,
    interpolation: str | None = None,
    clip: float | None = None,
    monotone: bool | None = None,
    ece_n_bins: int = 15,
    ece_strategy: str = "uniform",
    n_boot: int = 1000,
    discrete: str = "auto",
    alpha: float = 0.05,
    seed: int = 0,
    max_rows: int = 1_000_000,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    engine: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    held=None,
    skip_unfittable: bool = False,
) -> dict:
    """``recalibrate evaluate``'s document for these options (the command prints it). ``held``: the input's
    :class:`~calibcli.recalibrate.evaluate.HoldoutSplit` after both its passes, when they already ran
    (``calibcli report`` runs the counting pass beside its other families); else they run here.
    ``skip_unfittable``: a method that has no fit on these rows (temperature scaling on predictions no better
    than uniform) is left out, its reason in the file's ``not_fitted``, instead of ending the run (``report``'s
    default methods; a method asked for by ``recalibrate evaluate`` still fails with its Error line).

    A regression method (``std-scaling``, ``isotonic-pit``, ``conformal``) evaluates a regression dump instead
    (:func:`calibcli.recalibrate.regression.regression_evaluation`; the classifier's options do not apply)."""
    if any(m in REGRESSION_METHODS for m in method):
        given = dict(locals())
        defaults = {k: p.default for k, p in inspect.signature(evaluation).parameters.items()}
        return regression.evaluation_of(given, defaults)
    methods = _check_methods(list(method))
    if mode is not None:
        check_choice(mode, MODES, "--mode")
    check_choice(ece_strategy, STRATEGIES, "--ece-strategy")
    check_choice(discrete, DISCRETE_CHOICES, "--discrete")
    if isinstance(max_rows, int) and max_rows < 2:  # (the fit's reason first; T-Cal's rule says the same)
        raise OptionError("max_rows", f"{{name}} is {max_rows}: expected at least 2 rows to fit on")
    # The test's options object checks n_boot (at least 1 resample), alpha, seed and max_rows, once: the command
    # leaves them to it.
    tcal_options = TcalOptions(n_boot=n_boot, alpha=alpha, seed=seed, discrete=discrete, max_rows=max_rows)
    check_options(ece_n_bins=ece_n_bins, holdout=holdout)  # the rules by name (validation._RULES)
    if (holdout is None) == (fit_file is None):
        raise CalibcliError(
            "pass either --holdout FRACTION (split FILE) or --fit TRAIN (fit on TRAIN, evaluate on FILE)"
        )
    options = method_options(
        methods,
        n_bins=n_bins,
        strategy=strategy,
        degree=degree,
        interpolation=interpolation,
        clip=clip,
        monotone=monotone,
    )
    check_engine(engine, scheduler, workers)
    spec = ColumnSpec.of(prob_col, prob_cols, label_col, weight_col, logits)
    paths = [fit_file, file] if fit_file else [file]
    streams = _ungrouped(paths, spec, input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows)
    test_stream = streams[-1]
    with engine_runner(engine, scheduler, workers) as runner:
        n_workers = runner.workers
        fit_acc, binary, fit_described, split_rows, split, held = _fit_part(
            runner, streams, fit_file=fit_file, holdout=holdout, held=held, seed=seed, max_rows=max_rows
        )
        if binary and mode not in (None, "binary"):
            raise CalibcliError(
                f"--mode {mode} needs one probability column per class, but the input has a single "
                f"probability column: use --mode binary, or pass --prob-cols for every class"
            )
        K = test_stream.n_classes
        eval_mode = mode or default_mode(K)

        fitted, not_fitted = _fit_methods(fit_acc, methods, mode=mode, options=options, seed=seed, skip=skip_unfittable)

        binned = ece_options.Options.from_checked(  # (checked above: not again for each accumulator)
            tcal_options, "alpha", "seed", n_bins=ece_n_bins, strategy=ece_strategy, n_boot=0
        )
        smooth = smece_options.Options.from_checked(tcal_options, "alpha", "seed", n_boot=0)

        def new() -> EvaluateAccumulator:
            return EvaluateAccumulator(
                calibrators=[(m, d) for m, _, d, _ in fitted],
                split=split_rows,
                mode=eval_mode,
                n_classes=K,
                class_names=tuple(test_stream.class_names),
                binned=binned,
                smooth=smooth,
                tcal=tcal_options,
            )

        entries, described = runner.run(test_stream, new)
        measured = _single(entries, new())
    if fit_file:
        split["n_test"] = measured.n_rows
    results, warnings = measured.rows()
    rows = _method_rows(results, fitted, options)
    doc = new_document(
        "recalibrate evaluate",
        {
            "methods": methods,
            "options": options,
            "mode": mode or "auto",
            "ece_n_bins": ece_n_bins,
            "ece_strategy": ece_strategy,
            "edges_convention": EDGE_CONVENTION,
            "n_boot": n_boot,
            "alpha": alpha,
            "seed": seed,
            "discrete": discrete,
            "max_rows": max_rows,
            "batch_rows": batch_rows,
            "engine": engine,
            "workers": n_workers,
            "split": split,
            "split_rule": SPLIT_RULE if holdout is not None else None,
            "estimators": EVALUATE_ESTIMATORS,
        },
    )
    for warning in warnings:
        warn(warning)
    entry = {"input": described, "fit_input": fit_described, "split": split, "mode": eval_mode, "rows": rows}
    if skip_unfittable:
        entry["not_fitted"] = not_fitted
    doc["files"].append(entry)
    return doc


def _method_rows(results: dict, fitted: list, options: dict) -> list[dict]:
    """The document's rows: the uncalibrated predictions', then each fitted method's (its fit, options and
    parameters beside its numbers)."""
    rows = [{"method": "uncalibrated", **results["uncalibrated"]}]
    for m, fit_mode, d, how in fitted:
        rows.append(
            {
                "method": m,
                "fit_mode": fit_mode,
                "options": options[m],
                **results[m],
                "params": _summary_params(d),
                "fit_rows": how,
            }
        )
    return rows


def _fit_part(runner, streams, *, fit_file, holdout, held, seed: int, max_rows: int):
    """The rows the maps are fitted on: the --fit file's (streamed into a fit accumulator), or the holdout
    split's fit part of FILE (its counting pass and fit pass, unless ``held`` ran them already). Returns the
    fit accumulator, whether the input has one probability column, the fit input's description, the
    split's row rule for the test pass, the split's report, and the holdout split."""
    test_stream = streams[-1]
    if fit_file:
        train_stream = streams[0]
        if train_stream.n_classes != test_stream.n_classes or train_stream.class_names != test_stream.class_names:
            raise CalibcliError(
                f"{train_stream.name} has classes {list(train_stream.class_names)} but "
                f"{test_stream.name} has {list(test_stream.class_names)}: fit and test files must "
                f"have the same classes"
            )
        fit_acc, source = stream_fit_accumulator(runner, train_stream, max_rows=max_rows, seed=seed)
        binary = fit_acc.binary
        fit_described = source[1]
        split_rows = None
        split = {"kind": "files", "fit_path": fit_described["path"], "n_fit": fit_acc.n_rows}
    else:
        assert holdout is not None  # (no --fit file: checked above)
        if held is None:  # the counting pass, then the fit part's (HoldoutSplit asks for a second pass)
            entries, _ = runner.run(test_stream, lambda: holdout_split(holdout, seed=seed, max_rows=max_rows))
            held = entries[0][1]
        fit_acc, threshold, totals = held.finish()
        n, n_fit, binary = totals["n"], totals["n_fit"], totals["binary"]
        fit_described = None
        split_rows = {"seed": seed, "threshold": threshold}
        split = {"kind": "holdout", "fit_fraction": holdout, "n_fit": n_fit, "n_test": n - n_fit, "seed": seed}
    return fit_acc, binary, fit_described, split_rows, split, held


def _fit_methods(fit_acc, methods: list[str], *, mode, options: dict, seed: int, skip: bool = False):
    """Each method fitted on the fit part: ``(method, fit mode, calibrator dict, which rows)``, and (``skip``)
    the methods that have no fit on these rows, ``{"method", "reason"}`` each (else their error ends the run;
    all of them without a fit ends it too)."""
    fitted, not_fitted = [], []
    with progress_bar(len(methods), "fitting") as advance:
        for m in methods:
            labels, probs, w, how = fit_acc.data(m, mode=mode, options=options[m])
            try:
                cal, fit_mode = fit_arrays(m, labels, probs, w, mode=mode, options=options[m], seed=seed)
            except CalibcliError as exc:
                if not skip:
                    raise
                not_fitted.append({"method": m, "reason": str(exc)})
                warn(f"{m}: not fitted: {exc}")
                advance()
                continue
            fitted.append((m, fit_mode, cal.to_dict(), how))
            advance()
    if not fitted and not_fitted:
        reasons = "; ".join(f"{r['method']}: {r['reason']}" for r in not_fitted)
        raise CalibcliError(
            f"no recalibration method could be fitted ({reasons}): pass --method isotonic or --method histogram "
            f"(they fit any predictions)"
        )
    return fitted, not_fitted


def holdout_split(holdout: float, *, seed: int, max_rows: int):
    """The accumulator of a holdout split's first two passes (:class:`~calibcli.recalibrate.evaluate.HoldoutSplit`),
    as :func:`evaluation` makes it for ``--holdout``, ``--seed`` and ``--max-rows``."""
    return HoldoutSplit(seed=seed, holdout=holdout, max_rows=max_rows)
