"""``calibcli report``: the whole story of one model (or twenty) on one self-contained HTML page.

The command runs the pipeline the other commands run, in this process and on the same options:
``ece``, ``smece`` and ``tcal`` over every input (and ``--group-by`` group), ``recalibrate evaluate``
on each input (held-out comparison of the methods), and the diagram accumulators for the binned and
smooth reliability diagrams (drawn to SVG by :mod:`calibcli.diagram.plot`). It assembles ONE JSON document
from their documents (:func:`build_document`; ``--json-output`` writes it) and renders the page from
that document alone (:func:`calibcli.report.html.render_page`, Jinja2 templates).

Each input is read once for all the measuring families (:func:`_measure`): the commands' own input
accumulators (each command's ``plan``), the diagram accumulator and the holdout split's counter are the
members of one :class:`~calibcli.core.composite.Composite` that the engine runs; each family's
entries are then finished by its command's own code, so every number on the page is the number
``calibcli ece --json`` (etc.) prints for the same options. The recalibration comparison then reads the
input twice more, as ``recalibrate evaluate`` does (the fit part, the test part). Nothing is run in a
subprocess.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import typer

from calibcli.audit.options import Options as AuditOptions
from calibcli.cli import options as cc
from calibcli.cli import regression_input
from calibcli.core.declarations import CLASS_WEIGHTS_PARAM, MODE, STRATEGY
from calibcli.core.documents import to_json
from calibcli.core.errors import flag_of, warn
from calibcli.core.safe_text import for_terminal
from calibcli.core.validation import check_option, check_options, check_params, params_of
from calibcli.engines.pipeline import check_engine, run
from calibcli.llm import family as selective_family
from calibcli.monitor import family as monitor_family
from calibcli.recalibrate import family as recalibrate_family
from calibcli.regression import family as regression
from calibcli.regression.recalibration import REGRESSION_METHODS
from calibcli.report.document import PageOptions, build_document
from calibcli.report.emit import write_atomic
from calibcli.report.html import render_page, require_jinja2
from calibcli.report.html import verdict as verdicts
from calibcli.report.html.audit import AUDIT_MODES, audit_lines, audit_section
from calibcli.report.html.monitor import MONITOR_MODES, check_section, monitor_lines, monitor_section
from calibcli.report.html.regression import regression_document

ADJUST = params_of(AuditOptions)["adjust"][0]
#: The audit's options (``--segment-cols`` and how segments are formed, judged and shown), from the audit
#: family's declaration: the same flags and rules as ``calibcli audit``'s.
AUDIT = cc.group_of(
    AuditOptions,
    "segment_cols",
    "depth",
    "max_values",
    "segment_bins",
    "min_segment",
    "power",
    "adjust",
    "mce_method",
    "top",
    name="audit",
).but(  # one --adjust for both sections' p-values (the monitor takes all of its choices but by)
    adjust=cc.alias_of(
        str,
        ADJUST.narrowed(
            ADJUST.choices or (),
            help="Adjust the p-values for their number, the audit's segments' (--segment-cols) and the monitor's "
            "windows' (--time-col): holm (family-wise), bh (false discovery rate), by (the audit only), bonferroni "
            "or none.",
        ),
    )
)
#: The monitor's options (``--time-col`` or ``--chunk-rows`` and the reference), from the monitor family's
#: declaration: the same flags and rules as ``calibcli monitor``'s (``--adjust`` is shared with the audit).
MONITOR = cc.group_of(
    monitor_family.Options,
    "time_col",
    "every",
    "chunk_rows",
    "reference_windows",
    "reference_until",
    "reference",
    "metrics",
    "n_null",
    "reference_rows",
    "min_rows",
    name="monitor",
)
if TYPE_CHECKING:  # the FILES argument is a list of paths; Typer reads its declaration
    ReportFiles = list[str]
else:
    ReportFiles = cc.files_argument(
        "Several files (or --group-by groups) get a sortable summary table first, then one section each."
    )


@cc.with_groups(
    cc.own("json_output"),
    cc.COLUMNS,
    regression_input.COLUMNS,
    cc.READING,
    cc.DATASETS.only("group_by", "batch_rows"),
    cc.ENGINE,
    cc.own("mode", "class_weights", "n_bins", "strategy"),
    cc.BOOTSTRAP,
    cc.OWN,
    AUDIT,
    MONITOR,
    regression_input.CURVE,
    declared=recalibrate_family.ReportOptions,
    checked_by=PageOptions,
)
def report(files: ReportFiles, **options) -> None:
    """One self-contained HTML page: a verdict in plain words (is the model calibrated, how much, is it
    statistically real), the binned and smooth reliability diagrams, every metric with its interval, the
    T-Cal test, and what recalibration would do (held-out comparison, best first); with several files or
    groups, a sortable summary first; with --segment-cols, the segment audit of every input (calibcli audit's
    numbers, the worst segments' diagrams beside the whole population's). On a regression dump (as calibcli
    regression reads it): the calibration curve and PIT histogram, coverage against the nominal levels, and
    what std-scaling, isotonic-pit and conformal would do on held-out rows. No network needed to open it;
    printable; dark-mode aware.

    Example: calibcli report sample_data/breast_cancer_nb.csv -o calibration.html"""
    given = {"files": files, **options}  # as parsed, for the page's footer
    output, json_output, mode, class_weights, n_bins, strategy, method, holdout = (
        options[k]
        for k in ("output", "json_output", "mode", "class_weights", "n_bins", "strategy", "method", "holdout")
    )
    alpha, group_by = options["alpha"], options["group_by"]

    require_jinja2()  # (the output paths are checked before this, in cc.command)
    check_params(  # (a regression dump refuses them; told apart from a classifier's after these)
        {"mode": MODE, "strategy": STRATEGY, "class_weights": CLASS_WEIGHTS_PARAM},
        mode=mode,
        strategy=strategy,
        class_weights=class_weights,
    )
    if regression_input.is_regression(files, options):
        _regression_report(files, options, given)
        return
    page = PageOptions.of(options)  # the page's options, checked here, once: one object from here on
    check_option(
        "-" not in files,
        "the report reads every input more than once (the recalibration comparison's fit "
        "and test parts), and standard input ('-') can be read once: save it to a file first",
    )
    check_engine(options["engine"], options["scheduler"], options["workers"])
    if group_by and holdout != 0.5:
        warn("--holdout applies to the recalibration comparison, which is not run with --group-by")
    reading = {o.name: options[o.name] for o in (*cc.READING.options, *cc.DATASETS.only("batch_rows").options)}
    segments = bool(cc.split_columns(options["segment_cols"]))
    if segments:  # the audit's options checked, and the inputs opened with the segment columns, before any work
        audited = AuditOptions.of({**options, "alpha": alpha, "mode": mode if mode in AUDIT_MODES else None})
        audit_sources = replace(cc.sources_of(files, {**options, "group_by": None}), segment_by=audited.columns)
        audit_inputs = list(audit_sources.open())

    monitored = options["time_col"] is not None or options["chunk_rows"] is not None
    if monitored or any(options[o.name] != o.default for o in MONITOR.options):  # checked before any work
        check_option(
            options["adjust"] in monitor_family.ADJUSTMENTS,
            f"--adjust is {options['adjust']!r}, the audit's alone: the monitor's windows (--time-col) are adjusted "
            f"by {', '.join(monitor_family.ADJUSTMENTS)}: pass one of them",
        )
        watched = monitor_family.Options.of(  # (the report's --segment-cols is its audit's, of the whole input)
            {**options, "mode": mode if mode in MONITOR_MODES else None, "segment_cols": None}
        )
        reference = cc.sources_of([watched.reference], options) if watched.reference is not None else None

    sources = cc.sources_of(files, options)  # (no --pool: each input is its own dataset)
    if monitored:
        check_section(sources, watched, reference=reference)
    doc = build_document(
        sources,
        page,
        columns={o.name: options[o.name] for o in cc.COLUMNS.options},
        reading=reading,
        engine={o.name: options[o.name] for o in cc.ENGINE.options},
        command_line=command_line(given),
    )
    if (
        segments
    ):  # the audit section (calibcli.report.html.audit): its own pass over each input, with the segment columns
        doc["audit"] = audit_section(
            audit_inputs, audit_sources, audited, engine={o.name: options[o.name] for o in cc.ENGINE.options}
        )
        verdicts.add_audit(doc)  # a segment off by many sigma is not "Calibrated"
    if monitored:  # the monitoring section (calibcli.report.html.monitor): calibcli monitor's run on each input
        doc["monitor"] = monitor_section(sources, watched, engine=cc.engine_of(options), reference=reference)
    if any("llm" in e["input"] for e in doc["files"]):  # LLM dumps: what a confidence threshold buys (selective)
        chosen = selective_family.Options.from_checked(page, "n_boot", "alpha", "seed")
        doc["selective"] = run(selective_family.FAMILY, sources, chosen, cc.engine_of(options))
    page = render_page(doc)
    if json_output:
        write_atomic(json_output, to_json(doc) + "\n", "json_output")
    write_atomic(output, page, "output")  # '-': stdout
    n = len(doc["files"])
    lines = [f"wrote {for_terminal(output)}: {n} entr{'y' if n == 1 else 'ies'}"]
    lines += [f"  {for_terminal(e['label'])}: {for_terminal(e['verdict']['headline'])}" for e in doc["files"]]
    if segments:
        lines += [f"  {for_terminal(line)}" for line in audit_lines(doc["audit"])]
    if monitored:
        lines += [f"  {for_terminal(line)}" for line in monitor_lines(doc["monitor"])]
    sys.stderr.write("\n".join(lines) + "\n")  # what the page says, in one line per entry (stdout stays empty)


def _regression_report(files, options, given) -> None:
    """``report`` on regression dumps (:mod:`calibcli.report.html.regression`): the regression family's run, the
    verdict, the curve and PIT histogram, the held-out recalibration comparison, on one page."""
    for name, what in (("segment_cols", "audits a classifier's segments"), ("time_col", "monitors a classifier")):
        check_option(
            not options[name],
            f"{flag_of(name)} {what}: a regression dump's page has no such section (drop {flag_of(name)})",
        )
    regression_input.refuse_classifier_options(
        options,
        recalibrate_family.ReportOptions,
        ("mode", "class_weights", "n_bins", "strategy"),
        "pages (the reliability diagrams and the binned metrics)",
    )
    methods = tuple(dict.fromkeys(options["method"])) if options["method"] else REGRESSION_METHODS
    for m in methods:
        check_option(
            m in REGRESSION_METHODS,
            f"--method {m} is a classifier's method: a regression dump is recalibrated by "
            f"{', '.join(REGRESSION_METHODS)}",
        )
    check_options(holdout=options["holdout"])
    chosen = regression.Options.of(
        {k: options[k] for k in ("curve_form", "n_levels", "pit_bins", "n_boot", "alpha", "seed")}
    )
    columns = regression.Columns.of(options)
    sources = regression_input.regression_sources(files, options, group_by=cc.split_columns(options["group_by"]))
    doc = regression_document(
        sources,
        chosen,
        engine=cc.engine_of(options),
        methods=methods,
        holdout=options["holdout"],
        levels=columns.spec().level,
        title=options["title"],
        command_line=command_line(given),
    )
    page = render_page(doc, template="regression.html.j2")
    if options["json_output"]:
        write_atomic(options["json_output"], to_json(doc) + "\n", "json_output")
    write_atomic(options["output"], page, "output")
    output = options["output"]
    n = len(doc["files"])
    lines = [f"wrote {for_terminal(output)}: {n} entr{'y' if n == 1 else 'ies'}"]
    lines += [f"  {for_terminal(e['label'])}: {for_terminal(e['verdict']['headline'])}" for e in doc["files"]]
    sys.stderr.write("\n".join(lines) + "\n")


def command_line(given: dict) -> str:
    """The command that makes this report again: the files, then every option that is not at its default
    (rebuilt from the parsed values, so it is the same whether the command ran from a shell or in-process)."""
    import inspect

    words = ["calibcli", "report", *given["files"]]
    for name, parameter in inspect.signature(report).parameters.items():
        value = given.get(name)
        if name == "files" or value is None or value == parameter.default:
            continue
        flag = flag_of(name)
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return " ".join(shlex.quote(w) for w in words)


def register(app: typer.Typer) -> None:
    app.command("report")(cc.command(report))
