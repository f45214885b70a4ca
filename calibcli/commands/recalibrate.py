"""``calibcli recalibrate``: fit, save, apply and evaluate recalibration maps (SPEC 5).

- ``recalibrate fit --method M TRAIN -o calibrator.json`` fits a calibrator (:mod:`calibcli.calibrators`)
  and writes it as a versioned JSON document (:func:`calibrator_document`): the method and its parameters,
  the column mapping, mode and classes it expects, the rows it was fitted on, the tool version. Never a pickle.
- ``recalibrate apply calibrator.json FILE [-o OUT]`` writes FILE with its probability columns replaced by
  the recalibrated probabilities, batch by batch, to OUT (its format follows its extension, else the input's)
  or to stdout (CSV, or ``--output-format``), so that ``... | calibcli ece -`` reads it; Venn-Abers adds
  its interval columns (``prob_p0``, ``prob_p1``) beside the probability.
- ``recalibrate evaluate --method M [--method M2 ...] FILE --holdout F`` (or ``--fit TRAIN FILE``) fits on
  one part and reports, on the other, before/after: l1 and debiased l2 ECE, SmoothECE, Brier, log-loss and
  the T-Cal decision (the exact binomial test per value for predictors with few distinct outputs), one row
  per method: the layout of the T-Cal paper's Tables 1 to 3.

The command layer only reads files, calls the core and renders; every number comes from
:mod:`calibcli.calibrators`, :mod:`calibcli.evaluation`, :mod:`calibcli.smooth` and :mod:`calibcli.tcal`.
"""

from __future__ import annotations

from dataclasses import dataclass

import io as _stdio
import json
import os
from typing import Annotated, Any, Optional

import numpy as np
import typer

from calibcli import cli_common as cc
from calibcli._version import __version__
from calibcli.binning import EDGE_CONVENTION, STRATEGIES
from calibcli.errors import CalibcliError
from calibcli.modes import MODES, default_mode
from calibcli.report import emit, jsonable, new_document, write_atomic
from calibcli.validation import check_option

#: Version of the calibrator document; ``apply`` refuses any other.
CALIBRATOR_SCHEMA_VERSION = 1
CALIBRATOR_KIND = "calibcli calibrator"

METHOD_NAMES = ("platt", "temperature", "histogram", "isotonic", "scaling-binning", "polynomial", "beta", "venn-abers")

# ---------------------------------------------------------------------------------------------
# Options

Method = Annotated[str, typer.Option("--method", help=f"Recalibration method: {', '.join(METHOD_NAMES)}.", show_default=False,
                                     metavar=cc.choices(*METHOD_NAMES))]
Methods = Annotated[
    list[str],
    typer.Option("--method", help=f"Recalibration method; repeat it to compare several: {', '.join(METHOD_NAMES)}.",
                 show_default=False, metavar=cc.choices(*METHOD_NAMES)),
]
CalibratorBins = Annotated[
    Optional[int], typer.Option("--n-bins", help="histogram, scaling-binning: number of bins of the calibrator (default 15).")
]
CalibratorStrategy = Annotated[
    Optional[str], typer.Option("--strategy", help="histogram: uniform (equal width) or quantile (equal mass) bins (default uniform).",
                                metavar=cc.choices("uniform", "quantile"))
]
Degree = Annotated[Optional[int], typer.Option("--degree", help="polynomial: degree of the least-squares polynomial (default 3).")]
Interpolation = Annotated[
    Optional[str],
    typer.Option("--interpolation", help="isotonic: step (the fitted step function) or linear (between calibration scores) (default step).",
                 metavar=cc.choices("step", "linear")),
]
Clip = Annotated[
    Optional[float],
    typer.Option("--clip", help="platt, beta, scaling-binning, temperature: clip predictions to the interval from clip to 1 - clip before logits or logs (default 1e-12)."),
]
Monotone = Annotated[
    Optional[bool],
    typer.Option("--monotone/--no-monotone", help="beta: keep the map non-decreasing by fixing a negative coefficient at 0 (betacal) (default no)."),
]
CalibratorOutput = Annotated[
    str, typer.Option("--output", "-o", help="Calibrator file to write (JSON, atomically).", show_default=False)
]
ReportOutput = Annotated[Optional[str], typer.Option("--report", help="Also write the JSON report to this file (atomically).")]
CalibratorFile = Annotated[str, typer.Argument(help="Calibrator written by `calibcli recalibrate fit`.", show_default=False,
                                               metavar="CALIBRATOR")]
DataFile = Annotated[str, typer.Argument(help="Prediction file (CSV, TSV, Parquet, Arrow IPC/Feather, JSON Lines; '-' reads stdin).",
                                         show_default=False, metavar="FILE")]
TrainFile = Annotated[str, typer.Argument(help="File to fit on (CSV, TSV, Parquet, Arrow IPC/Feather, JSON Lines; '-' reads stdin).",
                                          show_default=False, metavar="FILE")]
DataOutput = Annotated[
    str,
    typer.Option("--output", "-o", help="Where to write the input with recalibrated probability columns: a file "
                 "(written atomically; format from the extension .csv, .tsv, .parquet, .feather, .jsonl, optionally .gz "
                 "for text, else the input's), or '-' for stdout (the default).",
                 show_default=False),
]
OutputFormat = Annotated[
    Optional[str],
    typer.Option("--output-format", help="Format of the rows written: csv, tsv, parquet, feather (Arrow IPC; the "
                 "stream format on stdout) or jsonl. Default: from --output's extension, else the input's format; "
                 "csv on stdout.", metavar=cc.choices("csv", "tsv", "parquet", "feather", "jsonl"), show_default=False),
]
Holdout = Annotated[
    Optional[float],
    typer.Option("--holdout", help="Fit on this random fraction of FILE's rows (seeded by --seed), evaluate on the rest."),
]
FitFile = Annotated[Optional[str], typer.Option("--fit", help="Fit on this file and evaluate on FILE (instead of --holdout).")]
EceBins = Annotated[int, typer.Option("--ece-n-bins", help="Bins of the binned calibration errors reported.")]
EceStrategy = Annotated[str, typer.Option("--ece-strategy", help="Binning of the reported errors: uniform or quantile.",
                                          metavar=cc.choices("uniform", "quantile"))]
TestBoot = Annotated[int, typer.Option("--n-boot", help="Resamples of the T-Cal y-bootstrap null.")]
Discrete = Annotated[
    str,
    typer.Option("--discrete", help="Binomial test per value instead of T-Cal: auto (when the predictions take at most "
                 "sqrt(n) distinct values), yes or no.", metavar=cc.choices("auto", "yes", "no")),
]
DISCRETE_CHOICES = ("auto", "yes", "no")
INTERPOLATIONS = ("step", "linear")

#: CLI flag of each calibrator option, and the methods that take it.
_FLAGS = {"n_bins": "--n-bins", "strategy": "--strategy", "degree": "--degree", "interpolation": "--interpolation",
          "clip": "--clip", "monotone": "--monotone"}


def method_options(methods: list[str], **given) -> dict[str, dict[str, Any]]:
    """The keyword options of each method from the CLI flags that were given (None: not given).

    A flag that applies to none of the methods is a usage error; ``--clip`` is temperature's ``eps``.
    """
    from calibcli.calibrators import METHOD_OPTIONS

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
            raise CalibcliError(f"{_FLAGS[k]} does not apply to --method {', '.join(methods)}: it is an option of "
                                f"{', '.join(users)}")
    if "strategy" in given:
        cc.check_choice(given["strategy"], STRATEGIES, "--strategy")
    if "interpolation" in given:
        cc.check_choice(given["interpolation"], INTERPOLATIONS, "--interpolation")
    return per_method


def _check_methods(methods: list[str]) -> list[str]:
    check_option(bool(methods), f"--method is missing: expected one of {', '.join(METHOD_NAMES)}")
    for m in methods:
        cc.check_choice(m, METHOD_NAMES, "--method")
    check_option(len(set(methods)) == len(methods), f"--method lists a method twice ({', '.join(methods)})")
    return methods


# ---------------------------------------------------------------------------------------------
# Fitting on loaded arrays


def fit_arrays(method: str, labels: np.ndarray, probs: np.ndarray, sample_weight, *, mode: str | None,
               options: dict[str, Any], seed: int):
    """Fit ``method`` on validated arrays in ``mode``; returns ``(calibrator, effective mode)``."""
    from calibcli.calibrators import fit_calibrator, fit_multiclass

    rng = np.random.default_rng(seed)
    if probs.ndim == 1:
        if mode not in (None, "binary"):
            raise CalibcliError(
                f"--mode {mode} needs one probability column per class, but the input has a single probability "
                f"column: use --mode binary, or pass --prob-cols for every class")
        return fit_calibrator(method, labels, probs, sample_weight=sample_weight, rng=rng, **options), "binary"
    file_mode = mode or default_mode(probs.shape[1])
    cal = fit_multiclass(method, labels, probs, mode=file_mode, sample_weight=sample_weight, rng=rng, **options)
    return cal, ("multiclass" if method == "temperature" else file_mode)


def _layout(loaded) -> str:
    if loaded.probs.ndim == 1:
        return "single"
    return "vector" if len(loaded.prob_columns) == 1 else "columns"


def calibrator_document(cal, loaded, *, method: str, mode: str, options: dict, seed: int) -> dict:
    """The versioned calibrator file: what ``apply`` needs, and where it came from."""
    return {
        "kind": CALIBRATOR_KIND,
        "schema_version": CALIBRATOR_SCHEMA_VERSION,
        "tool": "calibcli",
        "version": __version__,
        "method": method,
        "mode": mode,
        "n_classes": loaded.n_classes,
        "class_names": list(loaded.class_names),
        "columns": {
            "probabilities": list(loaded.prob_columns),
            "layout": _layout(loaded),
            "logits": bool(loaded.logits),
            "label": loaded.label_column,
            "weight": loaded.weight_column,
        },
        "fitted_on": {"path": loaded.path, "rows_used": loaded.n_rows, "rows_dropped": loaded.n_rows_dropped},
        "n": loaded.n_rows,
        "options": options,
        "seed": seed,
        "calibrator": cal.to_dict(),
    }


def calibrator_json(doc: dict) -> str:
    """The calibrator document as text: the header indented for people, the parameters on one line."""
    head = jsonable(dict(doc))
    body = head.pop("calibrator")
    text = json.dumps(head, indent=1, allow_nan=False)
    return text[: -len("\n}")] + ',\n "calibrator": ' + json.dumps(body, allow_nan=False) + "\n}"


def _summary_params(d: dict) -> dict:
    """A calibrator dict's parameters for a report: scalars as they are, long lists by their length."""
    if "calibrators" in d:
        return {"per_class" if d["mode"] == "marginal" else d["mode"]: [_summary_params(c) for c in d["calibrators"]]}
    out = {}
    for k, v in d.get("params", {}).items():
        out[k] = v if not isinstance(v, list) or len(v) <= 16 else f"{len(v)} values"
    return out


# ---------------------------------------------------------------------------------------------
# recalibrate fit


def fit(
    train: TrainFile,
    method: Method,
    output: CalibratorOutput,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: cc.Mode = None,
    n_bins: CalibratorBins = None,
    strategy: CalibratorStrategy = None,
    degree: Degree = None,
    interpolation: Interpolation = None,
    clip: Clip = None,
    monotone: Monotone = None,
    seed: cc.Seed = 0,
    alpha: Annotated[float, typer.Option("--alpha", help="histogram: the delta of the distribution-free ECE bound.")] = 0.05,
    max_rows: MaxRows = 1_000_000,
    batch_rows: cc.BatchRows = cc.DEFAULT_BATCH_ROWS,
    engine: cc.Engine = "local",
    scheduler: cc.Scheduler = None,
    workers: cc.Workers = None,
    as_json: cc.Json = False,
    fmt: cc.Format = "table",
    report: ReportOutput = None,
) -> None:
    """Fit a recalibration map on TRAIN (a file, a directory of shards, a quoted glob or '-') and save it as a
    versioned JSON calibrator (never a pickle).

    Example: calibcli recalibrate fit sample_data/breast_cancer_nb.csv --method isotonic -o cal.json"""
    _check_methods([method])
    layout = cc.layout(fmt, as_json)
    if mode is not None:
        cc.check_choice(mode, MODES, "--mode")
    check_option(0.0 < alpha < 1.0, f"--alpha is {alpha}: expected a number strictly between 0 and 1")
    options = method_options([method], n_bins=n_bins, strategy=strategy, degree=degree, interpolation=interpolation,
                             clip=clip, monotone=monotone)[method]
    cc.check_engine(engine, scheduler, workers)
    spec = cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits)
    stream = _open_one(train, spec, max_rows=max_rows, input_format=input_format, drop_invalid=drop_invalid,
                       batch_rows=batch_rows)
    with cc.engine_runner(engine, scheduler, workers) as runner:
        acc, loaded = stream_fit_accumulator(runner, stream, max_rows=max_rows, seed=seed)
        n_workers = runner.workers
    loaded, fit_rows = fit_input(loaded, acc, method=method, mode=mode, options=options)
    cal, file_mode = fit_arrays(method, loaded.labels, loaded.probs, loaded.sample_weight, mode=mode,
                                options=options, seed=seed)
    calibrator = calibrator_document(cal, loaded, method=method, mode=file_mode, options=options, seed=seed)
    text = calibrator_json(calibrator)

    doc = new_document("recalibrate fit", {"method": method, "mode": mode or "auto", "options": options, "seed": seed,
                                           "alpha": alpha, "max_rows": max_rows, "batch_rows": batch_rows,
                                           "engine": engine, "workers": n_workers})
    entry = {
        "input": loaded.describe(),
        "fit_rows": fit_rows,
        "mode": file_mode,
        "calibrator_file": output,
        "method": method,
        "params": _summary_params(calibrator["calibrator"]),
        "fit_info": _fit_info(calibrator["calibrator"]),
    }
    certificate = _certificate(cal, alpha)
    if certificate is not None:
        entry["certificate"] = certificate
    if "calibrators" in calibrator["calibrator"] and file_mode == "marginal":
        entry["renormalised"] = "rows of the per-class outputs are divided by their sum"
    doc["files"].append(entry)
    write_atomic(output, text + "\n", "output")
    clipped = [i.get("n_clipped", 0) for i in (entry["fit_info"] if isinstance(entry["fit_info"], list)
                                               else [entry["fit_info"]])]
    if any(clipped):
        cc.warn(f"{max(clipped)} of {loaded.n_rows} predictions lay outside [clip, 1 - clip] and were clipped before "
                f"taking logits (clip {options.get('clip', options.get('eps', 1e-12)):g}); the fit depends on --clip")
    emit(doc, output=report, layout=layout)


MaxRows = Annotated[int, typer.Option(
    "--max-rows", help="Fit on all rows up to this many; beyond, on the seeded bottom-k sample of this many rows, "
    "except methods whose fit is a weighted sum over rows (platt, beta, polynomial, isotonic, uniform histogram), "
    "which use exact per-value sums of every row while there are at most 2^20 distinct predictions.")]


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
    from calibcli.engines.local import open_streams
    from calibcli.errors import OptionError

    if max_rows < 2:
        raise OptionError("max_rows", f"{{name}} is {max_rows}: expected at least 2 rows to fit on")
    (stream,) = open_streams([path], spec, input_format=input_format, drop_invalid=drop_invalid, pool=False,
                             batch_rows=batch_rows, group_by=())
    return stream


def _single(entries, empty):
    """The one accumulator of an ungrouped run (an empty one when the stream had no rows)."""
    return entries[0][1] if entries else empty


def stream_fit_accumulator(runner, stream, *, max_rows: int, seed: int):
    """Run ``stream`` into a :class:`FitAccumulator` on the engine of ``runner`` (states built where the
    rows are read, merged here); the accumulator and what the calibrator document needs of the input."""
    from calibcli.accumulators.fit import FitAccumulator

    entries, described = runner.run(stream, lambda: FitAccumulator(max_rows=max_rows, seed=seed))
    return _single(entries, FitAccumulator(max_rows=max_rows, seed=seed)), (stream, described)


def fit_input(source, acc, *, method: str, mode, options: dict) -> tuple[_FitInput, dict]:
    """The rows to fit ``method`` on, from a :class:`FitAccumulator`, and how they were chosen (for the report)."""
    stream, described = source
    labels, probs, w, how = acc.data(method, mode=mode, options=options)
    loaded = _FitInput(described["path"], described, stream.n_classes, tuple(stream.class_names),
                       tuple(stream.prob_columns), bool(stream.logits), stream.label_column, stream.weight_column,
                       labels, probs, w)
    return loaded, how


def _fit_info(d: dict) -> Any:
    if "calibrators" in d:
        return [c.get("info", {}) for c in d["calibrators"]]
    return d.get("info", {})


def _certificate(cal, alpha: float) -> dict | None:
    """Seed 002 Thm 12.6 for histogram binning (per class in marginal mode)."""
    from calibcli.calibrators import HistogramCalibrator, MulticlassCalibrator

    cals = cal.calibrators if isinstance(cal, MulticlassCalibrator) else (cal,)
    if not all(isinstance(c, HistogramCalibrator) for c in cals):
        return None
    certs = [c.certificate(delta=alpha) for c in cals]
    return {
        "theorem": "seed 002 Thm 12.6: E[ECE] <= sqrt(B/(2n)); ECE <= sqrt(B/n)/sqrt(2 delta) w.p. 1 - delta",
        "delta": alpha,
        "n_bins": certs[0].n_bins,
        "n": [c.n for c in certs] if len(certs) > 1 else certs[0].n,
        "expected_ece_bound": [c.expected_ece_bound for c in certs] if len(certs) > 1 else certs[0].expected_ece_bound,
        "ece_bound": [c.ece_bound for c in certs] if len(certs) > 1 else certs[0].ece_bound,
        "fixed_partition": certs[0].fixed_partition,
        "note": None if certs[0].fixed_partition else
        "quantile bins are cut on the same data: the theorem assumes a fixed partition, so the bounds are indicative",
    }


# ---------------------------------------------------------------------------------------------
# Loading a calibrator file


def load_calibrator(path: str):
    """Read and validate a calibrator file; returns ``(document, calibrator)``.

    Every problem (missing file, not JSON, truncated, another kind of JSON, an unsupported schema version,
    a malformed field) is a :class:`CalibcliError` naming the file.
    """
    from calibcli.calibrators import calibrator_from_dict

    if not os.path.isfile(path):
        raise CalibcliError(f"{path}: no such calibrator file: check the path")
    with open(path, "rb") as fh:
        raw = fh.read()
    hint = "expected the JSON document written by `calibcli recalibrate fit`"
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise CalibcliError(f"{path}: not a calibrator (not UTF-8 text): {hint}") from None
    except json.JSONDecodeError as exc:
        ends_early = exc.pos >= len(raw.rstrip()) or exc.msg.startswith("Unterminated")
        truncated = " (the file looks truncated)" if ends_early else ""
        raise CalibcliError(f"{path}: not a calibrator: invalid JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
                            f"{truncated}: {hint}") from None
    if not isinstance(doc, dict) or doc.get("kind") != CALIBRATOR_KIND:
        raise CalibcliError(f"{path}: not a calibrator: the JSON has no \"kind\": \"{CALIBRATOR_KIND}\": {hint}")
    version = doc.get("schema_version")
    if version != CALIBRATOR_SCHEMA_VERSION:
        raise CalibcliError(f"{path}: calibrator schema version {version!r} is not supported by calibcli {__version__} "
                            f"(it reads version {CALIBRATOR_SCHEMA_VERSION}): refit it with this version, or use the "
                            f"calibcli version that wrote it ({doc.get('version', 'unknown')})")
    try:
        cal = calibrator_from_dict(doc.get("calibrator"))
        _check_document(doc, cal)
    except CalibcliError as exc:
        raise CalibcliError(f"{path}: {exc.template}") from None
    _warn_if_newer(path, doc.get("version"))
    return doc, cal


def _check_document(doc: dict, cal) -> None:
    from calibcli.calibrators._common import Fields

    f = Fields(doc, "")
    method = f.choice("method", METHOD_NAMES)
    if cal.method != method:
        raise CalibcliError(f"calibrator: field 'method' is {method!r} but the parameters are those of {cal.method!r}")
    f.choice("mode", ("binary", "multiclass", "top-label", "marginal"))
    K = f.integer("n_classes", low=2)
    names = f.get("class_names")
    if not isinstance(names, list) or len(names) != K or not all(isinstance(x, str) for x in names):
        raise CalibcliError(f"calibrator: field 'class_names' must list {K} class names")
    cols = f.sub("columns")
    layout = cols.choice("layout", ("single", "columns", "vector"))
    probs = cols.get("probabilities")
    if not isinstance(probs, list) or not probs or not all(isinstance(x, str) for x in probs):
        raise CalibcliError("calibrator: field 'columns.probabilities' must be a list of column names")
    expected = K if layout == "columns" else 1
    if len(probs) != expected:
        raise CalibcliError(f"calibrator: field 'columns.probabilities' has {len(probs)} names: expected {expected}")
    cols.boolean("logits")
    n_cal = getattr(cal, "n_classes", 2)
    if n_cal != K:
        raise CalibcliError(f"calibrator: n_classes is {K} but the parameters are for {n_cal} classes")
    # checked by load_calibrator, read by apply, or facts about the fit: every other field is unknown, and refused
    f.read.update(("kind", "schema_version", "tool", "version", "calibrator", "fitted_on", "n", "options", "seed"))
    cols.read.update(("label", "weight"))
    f.check_all_read()


def _warn_if_newer(path: str, written_by) -> None:
    """A calibrator of this schema written by a newer calibcli is read (its fields are all known), with a
    warning that names both versions."""
    def parts(text):
        try:
            return tuple(int(p) for p in str(text).split("+")[0].split("."))
        except ValueError:
            return None

    theirs, ours = parts(written_by), parts(__version__)
    if theirs is None or ours is None or theirs > ours:
        cc.warn(f"{path} was written by calibcli {str(written_by)[:40]}, newer than this calibcli {__version__} "
                f"(or not a version it knows); its schema version {CALIBRATOR_SCHEMA_VERSION} is one this version "
                f"reads, and every field was recognised")


# ---------------------------------------------------------------------------------------------
# recalibrate apply


def _invalid_probability_rows(probs: np.ndarray) -> np.ndarray:
    """Rows that are not probabilities: non-finite, outside [0, 1], or (K columns) not summing to 1."""
    from calibcli.validation import ROW_SUM_TOLERANCE

    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)
        if probs.ndim == 1:
            return bad
        return bad.any(axis=1) | (np.abs(probs.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE)


def _fmt_row(v) -> str:
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    body = ", ".join(f"{x:.6g}" for x in a[:6])
    return body if a.size == 1 else f"[{body}{', ...' if a.size > 6 else ''}]"


def _apply_columns(schema, doc: dict, *, prob_col, prob_cols, display: str) -> tuple[str, list[str]]:
    """The layout (``single``, ``columns``, ``vector``) and the probability columns of the file to recalibrate.

    The columns are the calibrator's unless --prob-col / --prob-cols name others (names, comma-separated
    lists or patterns such as 'p_*'). One list column or K numeric columns give an (n, K) array, one numeric
    column a 1-D array; the form must be the one the calibrator was fitted on.
    """
    import fnmatch

    import pyarrow as pa

    from calibcli.io import natural_suffix_order

    K = doc["n_classes"]
    expected = list(doc["columns"]["probabilities"])
    if prob_col and prob_cols:
        raise CalibcliError("pass either --prob-col (one binary column) or --prob-cols (one column per class), not both")
    names = list(schema.names)
    columns = expected
    if prob_col:
        columns = [prob_col]
    elif prob_cols:
        columns = []
        for item in (c.strip() for entry in prob_cols for c in entry.split(",") if c.strip()):
            if any(ch in item for ch in "*?["):
                matched = [n for n in names if fnmatch.fnmatchcase(n, item)]
                if not matched:
                    raise CalibcliError(f"{display}: --prob-cols pattern {item!r} matches no column; the file has "
                                        f"columns {names}")
                columns.extend(natural_suffix_order(matched))
            else:
                columns.append(item)
    missing = [c for c in columns if c not in names]
    if missing:
        raise CalibcliError(
            f"{display}: no column {missing[0]!r}, which the calibrator expects (fitted on columns {', '.join(expected)}, "
            f"classes {doc['class_names']}); the file has columns {names}: pass --prob-col/--prob-cols to map them")
    one_d = doc["columns"]["layout"] == "single"
    if len(columns) == 1:
        t = schema.field(columns[0]).type
        layout = "vector" if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) else "single"
    else:
        layout = "columns"
    if (layout == "single") != one_d or (layout == "columns" and len(columns) != K):
        fitted = "one probability column" if one_d else f"{K} class probabilities"
        given = {"single": "one probability column", "vector": f"the vector column {columns[0]!r}",
                 "columns": f"{len(columns)} columns"}[layout]
        raise CalibcliError(f"{display}: the calibrator was fitted on {fitted} ({', '.join(expected)}) but {given} "
                            f"were given: pass --prob-col/--prob-cols naming {fitted}")
    if layout != "vector":
        for c in columns:
            t = schema.field(c).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)):
                raise CalibcliError(f"{display}: probability column {c!r} has type {t}: expected numbers")
    return layout, columns


def _batch_probs(table, doc: dict, layout: str, columns: list[str], display: str, first_row: int) -> np.ndarray:
    """The probabilities of one batch: (n,) for one column, (n, K) otherwise; logits turned into probabilities."""
    from calibcli.io import column_to_numpy, vector_column

    if layout == "vector":
        probs = vector_column(table, columns[0], display, first_row=first_row)
        if probs.shape[1] != doc["n_classes"]:
            raise CalibcliError(f"{display}: column {columns[0]!r} holds vectors of length {probs.shape[1]}, but the "
                                f"calibrator was fitted on {doc['n_classes']} classes")
    else:
        arrays = [np.asarray(column_to_numpy(table, c), dtype=np.float64) for c in columns]
        probs = arrays[0] if layout == "single" else np.column_stack(arrays)
    if doc["columns"]["logits"]:
        from calibcli.modes import sigmoid, softmax

        with np.errstate(invalid="ignore", over="ignore"):
            probs = sigmoid(probs) if probs.ndim == 1 else softmax(probs)
    return probs


def venn_abers_columns(cal, layout: str, columns: list[str]) -> list[tuple[str, str]]:
    """The interval columns a Venn-Abers calibrator adds, as ``(after column, new name)``: ``{col}_p0`` and
    ``{col}_p1`` beside the probability column they bracket (Vovk & Petej 2014, the isotonic fits with the
    test label 0 and 1; the merged probability is ``p1 / (1 - p0 + p1)``).

    One column: ``prob_p0, prob_p1``. K columns: marginal gives every class column its pair (the interval of
    that class's one-vs-rest map, before the rows are renormalised), binary the second (positive) class column;
    a vector column gets ``{col}_p0, {col}_p1`` (per-class lists in marginal mode). Top-label brackets the
    recalibrated confidence of each row's top class: ``confidence_p0, confidence_p1`` after the last column.
    Empty for any other method.
    """
    if cal.method != "venn-abers":
        return []
    mode = getattr(cal, "mode", "binary")
    if layout == "single":
        return [(columns[0], f"{columns[0]}_{p}") for p in ("p0", "p1")]
    if mode == "top-label":
        return [(columns[-1], f"confidence_{p}") for p in ("p0", "p1")]
    if layout == "vector" or mode == "binary":
        col = columns[0] if layout == "vector" else columns[1]
        return [(col, f"{col}_{p}") for p in ("p0", "p1")]
    return [(c, f"{c}_{p}") for c in columns for p in ("p0", "p1")]


def _venn_abers_values(cal, probs: np.ndarray, layout: str) -> list[np.ndarray]:
    """The interval values in the order of :func:`venn_abers_columns` (1-D arrays, or (n, K) for lists)."""
    from calibcli.calibrators.multiclass import top_label_problem

    if probs.ndim == 1:
        return list(cal.predict_interval(probs))
    mode = cal.mode
    if mode == "binary":
        return list(cal.calibrators[0].predict_interval(probs[:, 1]))
    if mode == "top-label":
        _, conf = top_label_problem(np.zeros(len(probs), dtype=np.int64), probs)
        return list(cal.calibrators[0].predict_interval(conf))
    pairs = [c.predict_interval(probs[:, k]) for k, c in enumerate(cal.calibrators)]
    if layout == "vector":
        return [np.column_stack([p[0] for p in pairs]), np.column_stack([p[1] for p in pairs])]
    return [v for pair in pairs for v in pair]


def _apply_schema(schema, layout: str, columns: list[str], extra: list[tuple[str, str]], display: str, *,
                  list_extra: bool):
    """The output's schema: the probability columns as float64 (lists of float64 for a vector column), the
    Venn-Abers interval columns inserted after the column they bracket."""
    import pyarrow as pa

    prob_type = pa.list_(pa.float64()) if layout == "vector" else pa.float64()
    clash = [name for _, name in extra if name in schema.names]
    if clash:
        raise CalibcliError(f"{display}: already has a column {clash[0]!r}, where the Venn-Abers interval would go: "
                            f"rename it first")
    fields = []
    for f in schema:
        fields.append(pa.field(f.name, prob_type) if f.name in columns else f)
        for after, name in extra:
            if after == f.name:
                fields.append(pa.field(name, prob_type if list_extra else pa.float64()))
    return pa.schema(fields)


class _ApplyRun:
    """Recalibrates the batches of one input as they are read; counts rows and sums for the report."""

    def __init__(self, cal, doc: dict, layout: str, columns: list[str], extra, schema, display: str,
                 drop_invalid: bool):
        self.cal, self.doc, self.layout, self.columns, self.extra = cal, doc, layout, columns, extra
        self.schema, self.display, self.drop_invalid = schema, display, drop_invalid
        self.rows_in = self.rows_out = self.n_dropped = 0
        self.first_bad: tuple[int, np.ndarray] | None = None
        self.sum_before = self.sum_after = 0.0

    def batches(self, tables):
        """The recalibrated tables; invalid probabilities stop the run (after counting them all) unless dropped."""
        import pyarrow as pa

        for table in tables:
            first_row = self.rows_in
            self.rows_in += table.num_rows
            probs = _batch_probs(table, self.doc, self.layout, self.columns, self.display, first_row)
            bad = _invalid_probability_rows(probs)
            if bad.any():
                self.n_dropped += int(bad.sum())
                if self.first_bad is None:
                    row = int(np.flatnonzero(bad)[0])
                    self.first_bad = (first_row + row, probs[row])
                if not self.drop_invalid:
                    continue  # keep counting: the message says how many rows are invalid
                keep = ~bad
                table, probs = table.filter(pa.array(keep)), probs[keep]
            if (self.first_bad is not None and not self.drop_invalid) or len(probs) == 0:
                continue
            out = self.cal.predict(probs)
            self.sum_before = self.sum_before + probs.sum(axis=0)
            self.sum_after = self.sum_after + out.sum(axis=0)
            self.rows_out += len(out)
            yield self._table(table, probs, out)
        if self.rows_in == 0:
            from calibcli.io.formats import no_rows

            raise no_rows(self.display)
        if self.first_bad is not None and not self.drop_invalid:
            row, values = self.first_bad
            raise CalibcliError(
                f"{self.display}: row {row + 1}, column {', '.join(self.columns)}: probabilities {_fmt_row(values)} "
                f"are not valid (finite, within [0, 1], summing to 1 per row); {self.n_dropped} such row(s): fix the "
                f"file or pass --drop-invalid to leave them out of the output")
        if self.rows_out == 0:
            raise CalibcliError(f"{self.display}: every row has invalid probabilities: nothing to recalibrate")

    def _table(self, table, probs: np.ndarray, out: np.ndarray):
        import pyarrow as pa

        new = {}
        if self.layout == "vector":
            new[self.columns[0]] = _list_array(out)
        else:
            cols = out[:, None] if out.ndim == 1 else out
            for k, name in enumerate(self.columns):
                new[name] = pa.array(cols[:, k], type=pa.float64())
        values = _venn_abers_values(self.cal, probs, self.layout) if self.extra else []
        for (_, name), v in zip(self.extra, values):
            new[name] = _list_array(v) if v.ndim == 2 else pa.array(v, type=pa.float64())
        arrays = [new[f.name] if f.name in new else table.column(f.name) for f in self.schema]
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _list_array(values: np.ndarray):
    import pyarrow as pa

    K = values.shape[1]
    offsets = pa.array(np.arange(0, values.size + 1, K, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(values.ravel(), type=pa.float64()))


def _open_apply_input(path: str, input_format: str | None):
    """The one file to recalibrate: ``(dataset, location, format, display name, schema)``; standard input
    is spooled to a temporary file (kept while ``dataset`` lives) and its format sniffed."""
    from calibcli.io import formats, resolve_datasets
    from calibcli.io.sources import _guarded

    (dataset,) = resolve_datasets([path])
    if dataset.kind == "directory":
        raise CalibcliError(f"{path}: is a directory: expected a file of predictions")
    if len(dataset.files) != 1:
        raise CalibcliError(f"{path}: names {len(dataset.files)} files: expected one file")
    display = "<stdin>" if path == "-" else dataset.files[0]
    (fmt,) = dataset.file_formats(input_format)  # standard input and pipes (<(cmd)): by their first bytes
    (location,) = dataset.locations()
    schema = _guarded(display, fmt, formats.read_schema, location, fmt)
    return dataset, location, fmt, display, schema


def apply(
    calibrator: CalibratorFile,
    file: DataFile,
    output: DataOutput = "-",
    output_format: OutputFormat = None,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    input_format: cc.InputFormat = None,
    drop_invalid: Annotated[bool, typer.Option(
        "--drop-invalid", help="Drop rows whose probabilities are invalid (NaN, outside [0, 1], not summing to 1) "
        "from the output instead of failing; the report counts them.")] = False,
    batch_rows: cc.BatchRows = cc.DEFAULT_BATCH_ROWS,
    as_json: cc.Json = False,
    report: ReportOutput = None,
) -> None:
    """Apply a saved calibrator to FILE and write FILE with recalibrated probability columns to --output
    (default: stdout, as CSV), batch by batch: memory stays flat in the rows. Venn-Abers adds its interval
    columns (prob_p0, prob_p1) beside the probability. With the data on stdout, the summary goes to stderr.

    Example: calibcli recalibrate apply cal.json test.parquet | calibcli ece -
    """
    from calibcli.io import formats
    from calibcli.io.sources import _guarded_iter
    from calibcli.io.writers import output_format as pick_format, write_table_output
    from calibcli.validation import check_options

    to_stdout = output == "-"
    if to_stdout and as_json:
        raise CalibcliError("--json prints the report on stdout, which carries the recalibrated rows: write the rows "
                            "to a file with --output, or the report with --report")
    check_options(batch_rows=batch_rows)
    doc, cal = load_calibrator(calibrator)
    if output_format is not None:
        pick_format(output, output_format, "csv")  # a bad --output-format fails before the input is read
    dataset, location, in_fmt, display, schema = _open_apply_input(file, input_format)
    layout, columns = _apply_columns(schema, doc, prob_col=prob_col, prob_cols=prob_cols, display=display)
    out_fmt = pick_format(output, output_format, "csv" if to_stdout else in_fmt)
    if to_stdout and out_fmt in ("parquet", "feather") and _stdout_is_terminal():
        raise CalibcliError(f"stdout is a terminal: {out_fmt} is binary; pipe it to the next command or write a file "
                            f"with --output")
    extra = venn_abers_columns(cal, layout, columns)
    types = None
    if in_fmt in formats.TEXT_FORMATS:  # typed as the first lines say, the probability columns as float64
        schema = _apply_schema_text(schema, tuple(columns))
        types = {f.name: f.type for f in schema}
    out_schema = _apply_schema(schema, layout, columns, extra, display,
                               list_extra=layout == "vector" and getattr(cal, "mode", "binary") == "marginal")
    run = _ApplyRun(cal, doc, layout, columns, extra, out_schema, display, drop_invalid)
    tables = _guarded_iter(display, in_fmt, formats.iter_full_tables(location, in_fmt, batch_rows, types))
    write_table_output(output, out_fmt, run.batches(tables), schema=out_schema)
    del dataset  # the temporary copy of stdin can go

    mean = lambda s: (s / run.rows_out).tolist() if isinstance(s, np.ndarray) else float(s / run.rows_out)  # noqa: E731
    rep = new_document("recalibrate apply", {"calibrator": calibrator, "method": doc["method"], "mode": doc["mode"]})
    rep["files"].append({
        "input": {"path": display, "format": in_fmt, "rows": run.rows_in, "rows_dropped": run.n_dropped,
                  "columns": columns},
        "output": {"path": "<stdout>" if to_stdout else output, "format": out_fmt, "rows": run.rows_out,
                   "interval_columns": [name for _, name in extra]},
        "method": doc["method"],
        "mode": doc["mode"],
        "fitted_on": doc.get("fitted_on"),
        "mean_probability_before": mean(run.sum_before),
        "mean_probability_after": mean(run.sum_after),
    })
    if doc["columns"]["logits"]:
        where = "the output" if to_stdout else output
        cc.warn(f"the columns {', '.join(columns)} held logits; in {where} they hold recalibrated probabilities")
    if to_stdout:  # stdout carries the rows: the summary goes to stderr (and the JSON report to --report)
        from calibcli.render import render_table, stderr_console
        from calibcli.report import to_json

        if report:
            write_atomic(report, to_json(rep) + "\n", "report")
        render_table(rep, stderr_console())
        return
    emit(rep, as_json=as_json, output=report)


def _stdout_is_terminal() -> bool:
    import sys

    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stdout
        return False


def _apply_schema_text(schema, numeric: tuple[str, ...]):
    """A CSV file's schema as the apply reader types it: the probability columns float64, a column empty
    in the first lines as text (pyarrow's "null" type would reject a later value)."""
    import pyarrow as pa

    return pa.schema([pa.field(f.name, pa.float64()) if f.name in numeric
                      else pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f for f in schema])


# ---------------------------------------------------------------------------------------------
# recalibrate evaluate


EvalMaxRows = Annotated[int, typer.Option(
    "--max-rows", help="Rows each fit and each T-Cal test use at most: beyond, the seeded bottom-k sample of this many "
    "(fits whose objective is a weighted sum over rows use exact per-value sums of every fit row, as in `fit`); the "
    "report says which.")]

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
            "(SPEC 4.4); T-Cal on at most --max-rows rows (the bottom-k sample beyond)",
}

SPLIT_RULE = ("the fit part is the round(F n) rows with the smallest hash of (seed, global row index), the test part "
              "every other row: the same rows whatever the batch size, file order or engine")


def evaluate(
    file: DataFile,
    method: Methods,
    holdout: Holdout = None,
    fit_file: FitFile = None,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: cc.Mode = None,
    n_bins: CalibratorBins = None,
    strategy: CalibratorStrategy = None,
    degree: Degree = None,
    interpolation: Interpolation = None,
    clip: Clip = None,
    monotone: Monotone = None,
    ece_n_bins: EceBins = 15,
    ece_strategy: EceStrategy = "uniform",
    n_boot: TestBoot = 1000,
    discrete: Discrete = "auto",
    alpha: Annotated[float, typer.Option("--alpha", help="Level of the calibration tests (T-Cal, binomial).")] = 0.05,
    seed: cc.Seed = 0,
    max_rows: EvalMaxRows = 1_000_000,
    batch_rows: cc.BatchRows = cc.DEFAULT_BATCH_ROWS,
    engine: cc.Engine = "local",
    scheduler: cc.Scheduler = None,
    workers: cc.Workers = None,
    as_json: cc.Json = False,
    fmt: cc.Format = "table",
    summary: cc.Summary = None,
    metrics: cc.Metrics = None,
    sort: cc.Sort = None,
    output: cc.Output = None,
) -> None:
    """Fit each --method on one part of the data and compare before/after calibration on the other part
    (FILE and TRAIN: a file, a directory of shards, a quoted glob or '-'; streamed, memory flat in the rows).

    Example: calibcli recalibrate evaluate sample_data/breast_cancer_nb.csv --method platt --method isotonic --holdout 0.5"""
    layout = cc.layout(fmt, as_json, summary, metrics, sort)
    doc = evaluation(file, method, holdout=holdout, fit_file=fit_file, prob_col=prob_col, prob_cols=prob_cols,
                     label_col=label_col, weight_col=weight_col, logits=logits, input_format=input_format,
                     drop_invalid=drop_invalid, mode=mode, n_bins=n_bins, strategy=strategy, degree=degree,
                     interpolation=interpolation, clip=clip, monotone=monotone, ece_n_bins=ece_n_bins,
                     ece_strategy=ece_strategy, n_boot=n_boot, discrete=discrete, alpha=alpha, seed=seed,
                     max_rows=max_rows, batch_rows=batch_rows, engine=engine, scheduler=scheduler, workers=workers)
    emit(doc, output=output, layout=layout)


def evaluation(
    file: DataFile,
    method: Methods,
    holdout: Holdout = None,
    fit_file: FitFile = None,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: cc.Mode = None,
    n_bins: CalibratorBins = None,
    strategy: CalibratorStrategy = None,
    degree: Degree = None,
    interpolation: Interpolation = None,
    clip: Clip = None,
    monotone: Monotone = None,
    ece_n_bins: EceBins = 15,
    ece_strategy: EceStrategy = "uniform",
    n_boot: TestBoot = 1000,
    discrete: Discrete = "auto",
    alpha: Annotated[float, typer.Option("--alpha", help="Level of the calibration tests (T-Cal, binomial).")] = 0.05,
    seed: cc.Seed = 0,
    max_rows: EvalMaxRows = 1_000_000,
    batch_rows: cc.BatchRows = cc.DEFAULT_BATCH_ROWS,
    engine: cc.Engine = "local",
    scheduler: cc.Scheduler = None,
    workers: cc.Workers = None,
    held=None,
) -> dict:
    """``recalibrate evaluate``'s document for these options (the command prints it). ``held``: the input's
    :class:`~calibcli.accumulators.evaluate.HoldoutSplit` after both its passes, when they already ran
    (``calibcli report`` runs the counting pass beside its other families); else they run here."""
    from calibcli.accumulators.evaluate import EvaluateAccumulator
    from calibcli.accumulators.tcal import TcalOptions
    from calibcli.engines.local import open_streams
    from calibcli.errors import OptionError
    from calibcli.evaluation import BinnedOptions, SmoothOptions

    methods = _check_methods(list(method))
    if mode is not None:
        cc.check_choice(mode, MODES, "--mode")
    cc.check_choice(ece_strategy, STRATEGIES, "--ece-strategy")
    cc.check_choice(discrete, DISCRETE_CHOICES, "--discrete")
    check_option(ece_n_bins >= 1, f"--ece-n-bins is {ece_n_bins}: expected a positive number of bins")
    check_option(n_boot >= 1, f"--n-boot is {n_boot}: expected at least 1 resample")
    check_option(0.0 < alpha < 1.0, f"--alpha is {alpha}: expected a number strictly between 0 and 1")
    if (holdout is None) == (fit_file is None):
        raise CalibcliError("pass either --holdout FRACTION (split FILE) or --fit TRAIN (fit on TRAIN, evaluate on FILE)")
    if holdout is not None:
        check_option(0.0 < holdout < 1.0, f"--holdout is {holdout}: expected the fraction of rows to fit on, in (0, 1)")
    options = method_options(methods, n_bins=n_bins, strategy=strategy, degree=degree, interpolation=interpolation,
                             clip=clip, monotone=monotone)
    cc.check_engine(engine, scheduler, workers)
    if max_rows < 2:
        raise OptionError("max_rows", f"{{name}} is {max_rows}: expected at least 2 rows to fit on")
    tcal_options = TcalOptions(n_boot=n_boot, alpha=alpha, seed=seed, discrete=discrete, max_rows=max_rows)
    spec = cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits)
    paths = [fit_file, file] if fit_file else [file]
    streams = list(open_streams(paths, spec, input_format=input_format, drop_invalid=drop_invalid, pool=False,
                                batch_rows=batch_rows, group_by=()))
    test_stream = streams[-1]
    with cc.engine_runner(engine, scheduler, workers) as runner:
        n_workers = runner.workers
        if fit_file:
            train_stream = streams[0]
            if train_stream.n_classes != test_stream.n_classes or train_stream.class_names != test_stream.class_names:
                raise CalibcliError(f"{train_stream.name} has classes {list(train_stream.class_names)} but "
                                    f"{test_stream.name} has {list(test_stream.class_names)}: fit and test files must "
                                    f"have the same classes")
            fit_acc, source = stream_fit_accumulator(runner, train_stream, max_rows=max_rows, seed=seed)
            binary = fit_acc.binary
            fit_described = source[1]
            split_rows = None
            split = {"kind": "files", "fit_path": fit_described["path"], "n_fit": fit_acc.n_rows}
        else:
            if held is None:  # the counting pass, then the fit part's (HoldoutSplit asks for a second pass)
                entries, _ = runner.run(test_stream, lambda: holdout_split(holdout, seed=seed, max_rows=max_rows))
                held = entries[0][1]
            fit_acc, threshold, totals = held.finish()
            n, n_fit, binary = totals["n"], totals["n_fit"], totals["binary"]
            fit_described = None
            split_rows = {"seed": seed, "threshold": threshold}
            split = {"kind": "holdout", "fit_fraction": holdout, "n_fit": n_fit, "n_test": n - n_fit, "seed": seed}
        if binary and mode not in (None, "binary"):
            raise CalibcliError(f"--mode {mode} needs one probability column per class, but the input has a single "
                                f"probability column: use --mode binary, or pass --prob-cols for every class")
        K = test_stream.n_classes
        eval_mode = mode or default_mode(K)

        fitted = []
        with cc.progress_bar(len(methods), "fitting") as advance:
            for m in methods:
                labels, probs, w, how = fit_acc.data(m, mode=mode, options=options[m])
                cal, fit_mode = fit_arrays(m, labels, probs, w, mode=mode, options=options[m], seed=seed)
                fitted.append((m, fit_mode, cal.to_dict(), how))
                advance()

        def new() -> EvaluateAccumulator:
            return EvaluateAccumulator(
                calibrators=[(m, d) for m, _, d, _ in fitted], split=split_rows, mode=eval_mode, n_classes=K,
                class_names=tuple(test_stream.class_names),
                binned=BinnedOptions(n_bins=ece_n_bins, strategy=ece_strategy, n_boot=0, alpha=alpha, seed=seed),
                smooth=SmoothOptions(n_boot=0, alpha=alpha, seed=seed), tcal=tcal_options)

        entries, described = runner.run(test_stream, new)
        measured = _single(entries, new())
    if fit_file:
        split["n_test"] = measured.n_rows
    results, warnings = measured.rows()
    rows = [{"method": "uncalibrated", **results["uncalibrated"]}]
    for m, fit_mode, d, how in fitted:
        rows.append({"method": m, "fit_mode": fit_mode, "options": options[m], **results[m],
                     "params": _summary_params(d), "fit_rows": how})

    doc = new_document("recalibrate evaluate", {
        "methods": methods, "options": options, "mode": mode or "auto", "ece_n_bins": ece_n_bins,
        "ece_strategy": ece_strategy, "edges_convention": EDGE_CONVENTION, "n_boot": n_boot, "alpha": alpha,
        "seed": seed, "discrete": discrete, "max_rows": max_rows, "batch_rows": batch_rows, "engine": engine,
        "workers": n_workers, "split": split, "split_rule": SPLIT_RULE if holdout is not None else None,
        "estimators": EVALUATE_ESTIMATORS,
    })
    for warning in warnings:
        cc.warn(warning)
    doc["files"].append({"input": described, "fit_input": fit_described, "split": split, "mode": eval_mode,
                         "rows": rows})
    return doc


def holdout_split(holdout: float, *, seed: int, max_rows: int):
    """The accumulator of a holdout split's first two passes (:class:`~calibcli.accumulators.evaluate.HoldoutSplit`),
    as :func:`evaluation` makes it for ``--holdout``, ``--seed`` and ``--max-rows``."""
    from calibcli.accumulators.evaluate import HoldoutSplit

    return HoldoutSplit(seed=seed, holdout=holdout, max_rows=max_rows)


# ---------------------------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Fit, save, apply and evaluate recalibration maps (SPEC 5).\n\nExample: calibcli recalibrate "
                      "fit sample_data/breast_cancer_nb.csv --method platt -o cal.json", no_args_is_help=True,
                      add_completion=False, pretty_exceptions_enable=False)
    sub.command("fit")(cc.command(fit))
    sub.command("apply")(cc.command(apply))
    sub.command("evaluate")(cc.command(evaluate))
    app.add_typer(sub, name="recalibrate")
