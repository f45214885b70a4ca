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
:mod:`calibcli.calibrators`, :mod:`calibcli.evaluation`, :mod:`calibcli.smooth.estimator` and :mod:`calibcli.tcal`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from calibcli.calibrators.files import read_calibrator_document
from calibcli.cli import options as cc
from calibcli.core.documents import to_json
from calibcli.core.errors import CalibcliError, check_choice, warn
from calibcli.core.modes import MODES
from calibcli.core.outputs import stderr_console
from calibcli.engines.pipeline import check_engine
from calibcli.recalibrate import family as recalibrate_family
from calibcli.recalibrate.apply import apply_document
from calibcli.recalibrate.fitting import fit_document
from calibcli.recalibrate.run import (
    _check_methods,
    evaluation,
    method_options,
)
from calibcli.regression import recalibration as regression_recalibration
from calibcli.regression import recalibrators as regression_recalibrators
from calibcli.report.emit import emit, write_atomic
from calibcli.report.render import render_table

# ---------------------------------------------------------------------------------------------
# Arguments (the options are declared in calibcli.recalibrate.family)

CalibratorFile = Annotated[
    str,
    typer.Argument(help="Calibrator written by `calibcli recalibrate fit`.", show_default=False, metavar="CALIBRATOR"),
]
DataFile = Annotated[
    str,
    typer.Argument(
        help="Prediction file (CSV, TSV, Parquet, Arrow IPC/Feather, JSON Lines; '-' reads stdin).",
        show_default=False,
        metavar="FILE",
    ),
]
TrainFile = Annotated[
    str,
    typer.Argument(
        help="File to fit on (CSV, TSV, Parquet, Arrow IPC/Feather, JSON Lines; '-' reads stdin).",
        show_default=False,
        metavar="FILE",
    ),
]
# ---------------------------------------------------------------------------------------------
# recalibrate fit


@cc.with_groups(
    cc.COLUMNS,
    cc.READING,
    cc.own("mode", "n_bins", "strategy", "degree", "interpolation", "clip", "monotone"),
    cc.BOOTSTRAP.only("seed"),
    cc.own("alpha", "max_rows"),
    cc.DATASETS.only("batch_rows"),
    cc.ENGINE,
    cc.OUTPUT.only("as_json", "fmt"),
    cc.OWN,
    declared=recalibrate_family.FitOptions,
)
def fit(train: TrainFile, **shared) -> None:
    """Fit a recalibration map on TRAIN (a file, a directory of shards, a quoted glob or '-') and save it as a
    versioned JSON calibrator (never a pickle).

    Example: calibcli recalibrate fit sample_data/breast_cancer_nb.csv --method isotonic -o cal.json"""
    method, output, mode, alpha, max_rows, report = (
        shared[k] for k in ("method", "output", "mode", "alpha", "max_rows", "report")
    )
    if method in regression_recalibration.REGRESSION_METHODS:  # a regression dump (docs/commands/regression.md)
        _fit_regression(train, shared)
        return
    _check_methods([method])
    engine = cc.engine_of(shared)
    layout = cc.layout_of(shared)
    if mode is not None:
        check_choice(mode, MODES, "--mode")
    options = method_options(
        [method], **{k: shared[k] for k in ("n_bins", "strategy", "degree", "interpolation", "clip", "monotone")}
    )[method]
    check_engine(engine.name, engine.scheduler, engine.workers)
    doc, text, clipped = fit_document(
        train,
        cc.spec_of(shared),
        method=method,
        options=options,
        chosen={k: shared[k] for k in ("mode", "seed", "alpha", "max_rows", "batch_rows", "output")},
        reading={"input_format": shared["input_format"], "drop_invalid": shared["drop_invalid"]},
        engine=engine,
    )
    write_atomic(output, text + "\n", "output")
    if clipped:
        warn(clipped)
    emit(doc, output=report, layout=layout)


def _fit_regression(train: str, shared: dict) -> None:
    """``recalibrate fit --method std-scaling|isotonic-pit|conformal`` on a regression dump."""
    doc = regression_recalibration.fit_regression(
        train,
        shared["method"],
        level=1.0 - shared["alpha"],
        seed=shared["seed"],
        input_format=shared["input_format"],
        drop_invalid=shared["drop_invalid"],
        batch_rows=shared["batch_rows"],
    )
    text = to_json(doc)
    write_atomic(shared["output"], text + "\n", "output")
    if shared["report"]:
        write_atomic(shared["report"], text + "\n", "report")
    params = {k: v for k, v in doc.items() if k in ("factor", "level", "margin")}
    shown = ", ".join(f"{k} {v:.6g}" for k, v in params.items()) or f"{len(doc.get('p', []))} knots"
    stderr_console().print(
        f"wrote {shared['output']}: {doc['method']} ({shown}), fitted on {doc['fitted_on']['rows']} rows of {train}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


# ---------------------------------------------------------------------------------------------
# recalibrate apply


@cc.with_groups(
    cc.own("output", "output_format"),
    cc.COLUMNS.only("prob_col", "prob_cols"),
    cc.READING,
    cc.DATASETS.only("batch_rows"),
    cc.OUTPUT.only("as_json"),
    cc.OWN,
    declared=recalibrate_family.ApplyOptions,
)
def apply(calibrator: CalibratorFile, file: DataFile, **shared) -> None:
    """Apply a saved calibrator to FILE and write FILE with recalibrated probability columns to --output
    (default: stdout, as CSV), batch by batch: memory stays flat in the rows. Venn-Abers adds its interval
    columns (prob_p0, prob_p1) beside the probability. With the data on stdout, the summary goes to stderr.

    Example: calibcli recalibrate apply cal.json test.parquet | calibcli ece -
    """
    output, output_format, report = shared["output"], shared["output_format"], shared["report"]
    prob_col, prob_cols, input_format = shared["prob_col"], shared["prob_cols"], shared["input_format"]
    drop_invalid, batch_rows, as_json = shared["drop_invalid"], shared["batch_rows"], shared["as_json"]
    to_stdout = output == "-"
    if to_stdout and as_json:
        raise CalibcliError(
            "--json prints the report on stdout, which carries the recalibrated rows: write the rows "
            "to a file with --output, or the report with --report"
        )
    found = read_calibrator_document(calibrator)
    if isinstance(found, dict) and found.get("kind") == regression_recalibrators.KIND:  # a regression calibrator
        done = regression_recalibration.apply_regression(
            found, file, output=output, fmt=output_format, input_format=input_format
        )
        where = "stdout" if to_stdout else output
        stderr_console().print(
            f"wrote {where}: {done['rows']} rows; {done['what']} ({done['method']})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return
    rep = apply_document(
        calibrator,
        file,
        output=output,
        output_format=output_format,
        given_columns=(prob_col, prob_cols),
        reading={"input_format": input_format, "drop_invalid": drop_invalid, "batch_rows": batch_rows},
    )
    if to_stdout:  # stdout carries the rows: the summary goes to stderr (and the JSON report to --report)
        if report:
            write_atomic(report, to_json(rep) + "\n", "report")
        render_table(rep, stderr_console())
        return
    emit(rep, as_json=as_json, output=report)


# ---------------------------------------------------------------------------------------------
# recalibrate evaluate


#: ``recalibrate evaluate``'s arguments and options by name: FILE, and the declarations of
#: :data:`calibcli.recalibrate.family.EVALUATE`; its parameters, their order and defaults are those of
#: :func:`calibcli.recalibrate.run.evaluation` (the library function), the shared ones' flags their group's.
EVALUATE_FLAGS = {"file": DataFile, **recalibrate_family.EVALUATE}


@cc.signature_from(
    evaluation,
    EVALUATE_FLAGS,
    cc.OUTPUT.only("as_json", "fmt", "summary", "metrics", "sort", "output"),
    library_only=("held", "skip_unfittable"),
    checked_by_library=("n_boot", "alpha", "seed", "max_rows"),
)
def evaluate(**options) -> None:
    """Fit each --method on one part of the data and compare before/after calibration on the other part
    (FILE and TRAIN: a file, a directory of shards, a quoted glob or '-'; streamed, memory flat in the rows).

    Example: calibcli recalibrate evaluate sample_data/breast_cancer_nb.csv --method platt --method isotonic --holdout 0.5"""  # noqa: E501 (an example command stays on one line, to copy)
    layout = cc.layout_of(options)
    output = options["output"]
    for o in cc.OUTPUT.options:
        options.pop(o.name)
    doc = evaluation(**options)
    emit(doc, output=output, layout=layout)


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        help="Fit, save, apply and evaluate recalibration maps (docs: How it is computed §5).\n\n"
        "Example: calibcli recalibrate "
        "fit sample_data/breast_cancer_nb.csv --method platt -o cal.json",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    sub.command("fit")(cc.command(fit))
    sub.command("apply")(cc.command(apply))
    sub.command("evaluate")(cc.command(evaluate))
    app.add_typer(sub, name="recalibrate")
