"""Recalibration's options (``recalibrate fit``, ``apply``, ``evaluate``; ``report``'s comparison; SPEC 5), declared
once: each a :class:`~calibcli.core.validation.Param` (flags, help, choices) that the commands' signatures are built
from
(:func:`calibcli.cli.options.with_groups`, :func:`calibcli.cli.options.signature_from`).

The calibrator's own options (``--n-bins``, ``--strategy``, ``--degree``, ``--interpolation``, ``--clip``,
``--monotone``) are shared by ``fit`` and ``evaluate``; which methods take which is checked by
:func:`calibcli.recalibrate.run.method_options`, where the given values meet the chosen methods.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.calibrators.document import METHOD_NAMES
from calibcli.calibrators.isotonic import INTERPOLATIONS
from calibcli.core.binning import STRATEGIES
from calibcli.core.declarations import CLASS_WEIGHTS_PARAM, MODE, N_BINS, STRATEGY
from calibcli.core.family import mode_field
from calibcli.core.validation import Declared, Param, declared, option
from calibcli.regression.recalibration import REGRESSION_METHODS
from calibcli.tcal.options import DISCRETE_CHOICES

#: Methods ``calibcli report`` compares by default (each works in every mode).
DEFAULT_METHODS = ("temperature", "platt", "isotonic", "histogram", "beta")

# ---------------------------------------------------------------------------------------------
# Shared declarations

METHOD = Param(
    ("--method",),
    f"Recalibration method: {', '.join(METHOD_NAMES)}; for regression predictions (docs/commands/regression.md): "
    f"{', '.join(REGRESSION_METHODS)}.",
    choices=METHOD_NAMES + REGRESSION_METHODS,
    show_default=False,
)
CALIBRATOR_N_BINS = Param(("--n-bins",), "histogram, scaling-binning: number of bins of the calibrator (default 15).")
CALIBRATOR_STRATEGY = Param(
    ("--strategy",),
    "histogram: uniform (equal width) or quantile (equal mass) bins (default uniform).",
    choices=STRATEGIES,
)
DEGREE = Param(("--degree",), "polynomial: degree of the least-squares polynomial (default 3).")
INTERPOLATION = Param(
    ("--interpolation",),
    "isotonic: step (the fitted step function) or linear (between calibration scores) (default step).",
    choices=INTERPOLATIONS,
)
CLIP = Param(
    ("--clip",),
    "platt, beta, scaling-binning, temperature: clip predictions to the interval from clip to "
    "1 - clip before logits or logs (default 1e-12).",
)
MONOTONE = Param(
    ("--monotone/--no-monotone",),
    "beta: keep the map non-decreasing by fixing a negative coefficient at 0 (betacal) (default no).",
)
REPORT_OUTPUT = Param(("--report",), "Also write the JSON report to this file (atomically).")
HOLDOUT = Param(("--holdout",), "Fit on this random fraction of FILE's rows (seeded by --seed), evaluate on the rest.")


@dataclass(frozen=True)
class FitOptions(Declared):
    """``recalibrate fit``'s own options (the columns, reading, seed, batch, engine and output groups are shared)."""

    method: str = declared(..., METHOD)
    output: str = option(..., "--output", "-o", help="Calibrator file to write (JSON, atomically).", show_default=False)
    mode: str | None = mode_field(MODE)
    n_bins: int | None = declared(None, CALIBRATOR_N_BINS)
    strategy: str | None = declared(None, CALIBRATOR_STRATEGY)
    degree: int | None = declared(None, DEGREE)
    interpolation: str | None = declared(None, INTERPOLATION)
    clip: float | None = declared(None, CLIP)
    monotone: bool | None = declared(None, MONOTONE)
    alpha: float = option(0.05, "--alpha", help="histogram: the delta of the distribution-free ECE bound.")
    max_rows: int = option(
        1_000_000,
        "--max-rows",
        help="Fit on all rows up to this many; beyond, on the seeded bottom-k sample of this "
        "many rows, except methods whose fit is a weighted sum over rows (platt, beta, polynomial, isotonic, uniform "
        "histogram), which use exact per-value sums of every row while there are at most 2^20 distinct predictions.",
    )
    report: str | None = declared(None, REPORT_OUTPUT)


@dataclass(frozen=True)
class ApplyOptions(Declared):
    """``recalibrate apply``'s own options; ``--drop-invalid`` is the reading group's, reworded for what apply drops."""

    output: str = option(
        "-",
        "--output",
        "-o",
        help="Where to write the input with recalibrated probability columns: a file (written "
        "atomically; format from the extension .csv, .tsv, .parquet, .feather, .jsonl, optionally .gz for text, else "
        "the input's), or '-' for stdout (the default).",
        show_default=False,
    )
    output_format: str | None = option(
        None,
        "--output-format",
        help="Format of the rows written: csv, tsv, parquet, feather (Arrow IPC; the stream "
        "format on stdout) or jsonl. Default: from --output's extension, else the input's format; csv on stdout.",
        choices=("csv", "tsv", "parquet", "feather", "jsonl"),
        show_default=False,
    )
    drop_invalid: bool = option(
        False,
        "--drop-invalid",
        help="Drop rows whose probabilities are invalid (NaN, outside "
        "[0, 1], not summing to 1) from the output instead of failing; the report counts them.",
    )
    report: str | None = declared(None, REPORT_OUTPUT)


#: ``recalibrate evaluate``'s options by parameter name: its parameters, their order and defaults are those of
#: :func:`calibcli.recalibrate.run.evaluation` (the library function); the shared ones' flags are their group's.
EVALUATE = {
    "method": Param(
        ("--method",),
        f"Recalibration method; repeat it to compare several: {', '.join(METHOD_NAMES)}; for regression "
        f"predictions (docs/commands/regression.md): {', '.join(REGRESSION_METHODS)}.",
        choices=METHOD_NAMES + REGRESSION_METHODS,
        show_default=False,
    ),
    "holdout": HOLDOUT,
    "fit_file": Param(("--fit",), "Fit on this file and evaluate on FILE (instead of --holdout)."),
    "n_bins": CALIBRATOR_N_BINS,
    "strategy": CALIBRATOR_STRATEGY,
    "degree": DEGREE,
    "interpolation": INTERPOLATION,
    "clip": CLIP,
    "monotone": MONOTONE,
    "ece_n_bins": Param(("--ece-n-bins",), "Bins of the binned calibration errors reported."),
    "ece_strategy": Param(
        ("--ece-strategy",), "Binning of the reported errors: uniform or quantile.", choices=STRATEGIES
    ),
    "n_boot": Param(
        ("--n-boot",),
        "Resamples of the T-Cal y-bootstrap null; for regression predictions, of the paired bootstrap of the "
        "metrics and their differences (0: none).",
    ),
    "discrete": Param(
        ("--discrete",),
        "Binomial test per value instead of T-Cal: auto (when the predictions take at "
        "most sqrt(n) distinct values), yes or no.",
        choices=DISCRETE_CHOICES,
    ),
    "alpha": Param(
        ("--alpha",),
        "Level of the calibration tests (T-Cal, binomial); for regression predictions, 1 - the intervals' "
        "confidence level, and conformal's Gaussian interval at 1 - alpha.",
    ),
    "mode": MODE,
    "max_rows": Param(
        ("--max-rows",),
        "Rows each fit and each T-Cal test use at most: beyond, the seeded bottom-k "
        "sample of this many (fits whose objective is a weighted sum over rows use exact per-value sums "
        "of every fit row, as in `fit`); the report says which.",
    ),
}


@dataclass(frozen=True)
class ReportOptions(Declared):
    """``calibcli report``'s own options (the columns, reading, datasets, engine and bootstrap groups are shared)."""

    output: str = option(
        ..., "--output", "-o", help="The HTML page to write (atomically; '-': stdout).", show_default=False
    )
    json_output: str | None = option(
        None, "--json-output", help="Also write the JSON document the page is rendered from (atomically)."
    )
    mode: str | None = mode_field(MODE)
    class_weights: str = declared("uniform", CLASS_WEIGHTS_PARAM)
    n_bins: int = declared(15, N_BINS)
    strategy: str = declared("uniform", STRATEGY)
    method: list[str] | None = option(
        None,
        "--method",
        help="Recalibration method compared on held-out rows; repeat it. Default: " + ", ".join(DEFAULT_METHODS) + ".",
        choices=METHOD_NAMES,
    )
    holdout: float = option(
        0.5,
        "--holdout",
        help="Fraction of each input's rows the recalibration methods are fitted "
        "on (seeded by --seed); they are compared on the other rows.",
    )
    title: str | None = option(None, "--title", help="Title of the page. Default: the input names.")
