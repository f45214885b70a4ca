"""The work of ``calibcli report``: ONE JSON document for the page (SPEC 7), assembled from the documents
the other commands print for the same options.

Each input is read once for all the measuring families (:func:`_measure`): the commands' own input
accumulators (each family's ``plan``, :data:`calibcli.report.families.FAMILIES`), the diagram accumulator
and the holdout split's counter are the members of one :class:`~calibcli.core.composite.Composite` that the
engine runs; each family's entries are then finished by its command's own code, so every number on the page
is the number ``calibcli ece --json`` (etc.) prints. The recalibration comparison then reads the input twice
more, as ``recalibrate evaluate`` does (:func:`calibcli.recalibrate.run.evaluation`). The command
(:mod:`calibcli.cli.commands.report`) checks the options, renders the page and writes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from calibcli._version import __version__
from calibcli.core.composite import Composite
from calibcli.core.declarations import GROUP_BY
from calibcli.core.documents import entry_label, new_document, to_json
from calibcli.core.errors import CalibcliError
from calibcli.core.family import Bootstrap, split_columns
from calibcli.core.modes import default_mode
from calibcli.core.validation import declared, params_of
from calibcli.diagram import plot as dg
from calibcli.diagram.accumulator import DiagramInputAccumulator
from calibcli.diagram.data import DiagramPanel
from calibcli.diagram.family import Options as DiagramOptions
from calibcli.engines.pipeline import add_entries, engine_runner, summarise_groups
from calibcli.recalibrate.family import DEFAULT_METHODS, ReportOptions
from calibcli.recalibrate.run import evaluation, holdout_split
from calibcli.report.families import FAMILIES
from calibcli.report.html import svg_fragment
from calibcli.report.html import verdict as verdicts
from calibcli.tcal.options import TCAL_MODES

#: Classes drawn at most in marginal mode (one panel each), so the page stays small.
MAX_CLASSES = 10
#: Entries (inputs or groups) whose diagrams are drawn, the first ones in report order: a figure pair is
#: 0.1 to 0.2 MB of SVG, so the page stays within a few MB however many groups there are.
MAX_DIAGRAMS = 20
#: ``recalibrate evaluate``'s --max-rows (its default): rows each fit and each T-Cal test of the comparison use at most.
EVALUATE_MAX_ROWS = 1_000_000


def _key(entry: dict) -> tuple:
    return entry["input"]["path"], json.dumps(entry.get("group"), sort_keys=True)


@dataclass(frozen=True)
class PageOptions(ReportOptions, Bootstrap):
    """The options of a classifier's page, made once by the command from those it parsed (``PageOptions.of``):
    the report's own (:class:`~calibcli.recalibrate.family.ReportOptions`: the mode, class weights, bins and
    strategy of the measures, the methods compared on held-out rows, the holdout, the title), the bootstrap's
    (:class:`~calibcli.core.family.Bootstrap`: resamples, level, seed) and the ``--group-by`` columns; what
    :func:`build_document` and :func:`_measure` read."""

    group_by: str | None = declared(None, GROUP_BY)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_boot < 1:
            raise CalibcliError(
                f"--n-boot is {self.n_boot}: the report's T-Cal test draws its null distribution from "
                f"resamples: expected at least 1 (1000 or more for p-values below alpha/levels)"
            )

    @property
    def methods(self) -> tuple[str, ...]:
        """The recalibration methods compared, in order, each once: ``--method``'s, else :data:`DEFAULT_METHODS`."""
        return tuple(dict.fromkeys(self.method)) if self.method else DEFAULT_METHODS

    @property
    def bootstrap(self) -> dict:
        """The bootstrap's options by name (:class:`~calibcli.core.family.Bootstrap`'s fields: resamples, level,
        seed), as ``recalibrate evaluate`` takes them."""
        return {name: getattr(self, name) for name in params_of(Bootstrap)}

    @property
    def tcal_mode(self) -> str | None:
        """T-Cal's mode: the page's, but T-Cal has no marginal mode (its default then)."""
        return self.mode if self.mode in TCAL_MODES else None


def build_document(sources, o: PageOptions, *, columns: dict, reading: dict, engine: dict, command_line: str) -> dict:
    """The report's JSON document: parameters, versions, the command line, and one entry per input or group
    with its ece, smece and tcal results, its diagrams (SVG text), its verdict and (without groups) the
    held-out comparison of recalibration methods, best first. ``columns``, ``reading`` and ``engine``: those
    groups' values, as ``recalibrate evaluate`` takes them."""
    docs, diagrams, splits = _measure(sources, o, engine)
    recalibration = {}
    for path, held in splits.items():  # fitted on the split found in the shared pass, measured in a pass of its own
        ev = evaluation(
            path,
            list(o.methods),
            holdout=o.holdout,
            **columns,
            **reading,
            **engine,
            **o.bootstrap,
            mode=o.mode,
            ece_n_bins=o.n_bins,
            ece_strategy=o.strategy,
            max_rows=EVALUATE_MAX_ROWS,
            held=held,
            skip_unfittable=True,
        )
        recalibration[path] = json.loads(to_json(ev))  # as `recalibrate evaluate --json` prints it

    by_key = {name: {_key(e): e for e in d["files"]} for name, d in docs.items()}
    entries = []
    for number, e in enumerate(docs["ece"]["files"], start=1):
        key = _key(e)
        smooth, test = by_key["smece"][key], by_key["tcal"][key]
        entry = {
            **entry_head(number, e),
            "mode": e["mode"],
            "ece": e,
            "smece": smooth,
            "tcal": test,
            "diagrams": diagrams.get(key),
        }
        measured = recalibration.get(e["input"]["path"])
        entry["recalibration"] = verdicts.recalibration_summary(measured) if measured is not None else None
        entry["verdict"] = verdicts.verdict(entry, alpha=o.alpha)
        entries.append(entry)

    doc = new_document(
        "report",
        {
            "mode": o.mode or "auto",
            "tcal_mode": o.tcal_mode or "auto",
            "class_weights": o.class_weights,
            "n_bins": o.n_bins,
            "strategy": o.strategy,
            "n_boot": o.n_boot,
            "alpha": o.alpha,
            "confidence_level": 1.0 - o.alpha,
            "seed": o.seed,
            "group_by": split_columns(o.group_by) or None,
            "methods": list(o.methods),
            "holdout": o.holdout,
            **{k: v for k, v in engine.items()},
            "batch_rows": reading["batch_rows"],
            "max_diagrams": MAX_DIAGRAMS,
            "max_classes_drawn": MAX_CLASSES,
            "verdict_rule": verdicts.RULE,
            "recalibration_rule": verdicts.BEST_RULE,
        },
    )
    doc["title"] = o.title or _default_title(entries)
    doc["command_line"] = command_line
    doc["versions"] = _versions()
    doc["documents"] = {
        name: {"command": d["command"], "parameters": d["parameters"], "groups": d.get("groups")}
        for name, d in docs.items()
    }
    doc["documents"]["recalibrate evaluate"] = [
        {"input": path, "parameters": ev["parameters"]} for path, ev in recalibration.items()
    ]
    doc["files"] = entries
    return doc


def entry_head(number: int, e: dict) -> dict:
    """The head of the page's entry ``number`` (from 1) made of a command's entry ``e``: its id, label, input,
    group and rows (every page's entry starts with these, the classifier's and the regression one's)."""
    return {
        "id": f"entry-{number}",
        "label": entry_label(e),
        "input": e["input"],
        "group": e.get("group"),
        "rows": e.get("rows_in_group", e["input"]["rows_used"]),
    }


def _default_title(entries: list[dict]) -> str:
    paths = list(dict.fromkeys(e["input"]["path"] for e in entries))
    if len(paths) == 1:
        return f"Calibration report: {paths[0]}"
    return f"Calibration report: {len(paths)} inputs"


def _versions() -> dict:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"calibcli": __version__, "python": platform.python_version()}
    for name in ("numpy", "pyarrow", "matplotlib", "scipy", "jinja2"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _measure(sources, o: PageOptions, engine: dict) -> tuple[dict, dict, dict]:
    """The ``ece``, ``smece`` and ``tcal`` documents (each as the command prints it with ``--json`` for the
    same options), the diagrams (:func:`_draw`, keyed as the entries are) and, without groups, each input's
    holdout split for ``recalibrate evaluate`` (by input path), from ONE pass over each input.

    Every family's input accumulator of a stream (made by the command's own ``plan``), the diagram
    accumulator and the holdout split's counter are the members of one
    :class:`~calibcli.core.composite.Composite`, which the engine runs once; a second pass feeds
    only the members that ask for one (the split's fit part always; quantile edges or a finer smoothing
    grid when needed). Each family's entries are then finished by the command's own code
    (:func:`calibcli.engines.pipeline.add_entries`, T-Cal's :func:`~calibcli.tcal.family.finish_entries`).

    The recalibration comparison cannot join the pass entirely: which rows are fit rows depends on the
    number of rows (known after a full pass), and the test rows are measured through calibrators fitted
    on the fit rows (known after a second); its measuring pass runs in :func:`~calibcli.
    recalibrate.evaluation`.
    """
    chosen: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {  # (the page's fields taken, those derived)
        "ece": (("mode", "class_weights", "n_bins", "strategy"), {}),
        "smece": (("mode", "class_weights"), {}),
        "tcal": ((), {"mode": o.tcal_mode}),
    }
    holdout = None if o.group_by else o.holdout  # (the comparison is not run with groups)
    docs, plans, family_options = {}, {}, {}
    for name, family in FAMILIES.items():  # each family's options as its command would take them (checked: o)
        taken, derived = chosen[name]
        family_options[name] = family.options.from_checked(o, *taken, "n_boot", "alpha", "seed", **derived)
        plans[name] = family.plan(family_options[name], sources, engine["engine"])
        docs[name] = plans[name].doc
    # both kinds of diagram, the bins and the bootstrap of the other families (their band: the command's default)
    diagram_options = DiagramOptions.from_checked(o, "n_bins", "strategy", "n_boot", "alpha", "seed", kind="both")
    streams = list(sources.open())
    headlines: dict = {name: {} for name in plans}
    drawn: dict = {}
    splits: dict = {}
    with engine_runner(engine["engine"], engine["scheduler"], engine["workers"]) as runner:
        for doc in docs.values():
            doc["parameters"]["engine"] = engine["engine"]
            doc["parameters"]["workers"] = runner.workers
        for stream in streams:
            fig_mode = o.mode or default_mode(stream.n_classes)
            max_problems = MAX_CLASSES if fig_mode == "marginal" else None

            def new(stream=stream, fig_mode=fig_mode, max_problems=max_problems):
                members = {name: plan.new(stream) for name, plan in plans.items()}
                members["diagrams"] = DiagramInputAccumulator(
                    mode=fig_mode,
                    n_classes=stream.n_classes,
                    class_names=stream.class_names,
                    options=diagram_options,
                    max_problems=max_problems,
                )
                if holdout is not None:
                    members["holdout"] = holdout_split(holdout, seed=o.seed, max_rows=EVALUATE_MAX_ROWS)
                return Composite(members)

            accumulators, described = runner.run(stream, new)
            # the drawn entries' diagrams finished first: their smooth bootstrap (the curve's band) is smece's too
            reports = [acc["diagrams"].result() for _, acc in accumulators[: max(MAX_DIAGRAMS - len(drawn), 0)]]
            for report, (_, acc) in zip(reports, accumulators, strict=False):
                _share_smooth(report, acc["diagrams"], acc["smece"], diagram_options)
            for name in plans:  # each family finished as its command finishes it, in the same order
                add_entries(
                    docs[name],
                    described,
                    [(group, acc[name]) for group, acc in accumulators],
                    gate=plans[name].gate,
                    resamples=plans[name].resamples,
                    headlines=headlines[name],
                )
            if holdout is not None:
                splits[described["path"]] = accumulators[0][1]["holdout"]
            for report, (group, _) in zip(reports, accumulators, strict=False):  # (MAX_DIAGRAMS at most)
                drawn[(described["path"], json.dumps(group, sort_keys=True))] = _draw(
                    report, marginal=fig_mode == "marginal", n_classes=stream.n_classes, number=2 * len(drawn)
                )
    for name in plans:
        summarise_groups(docs[name], headlines[name])
    for name, family in FAMILIES.items():
        if family.finish is not None:
            family.finish(docs[name], family_options[name])
    # each document as the command prints it (the JSON text, read back)
    return {name: json.loads(to_json(doc)) for name, doc in docs.items()}, drawn, splits


def _share_smooth(report, diagrams, smooth, diagram_options: DiagramOptions) -> None:
    """Give the smece family's accumulator of an entry (a
    :class:`~calibcli.smooth.inputs.SmoothInputAccumulator`) the SmoothECE results of its diagram's report (of the
    ``diagrams`` accumulator), so that
    the bootstrap both make (the same rows, grids, seed, resamples and level: the same replicates) is made once; the
    diagram's curve is not smece's. Left to smece when anything differs (a bandwidth given, classes not drawn)."""
    o = smooth.options
    mine = [p.smooth for p in report.problems]
    theirs = smooth.problems
    same = (
        smooth._results is None
        and o.sigma is None
        and (o.n_boot, o.alpha, o.seed) == (diagram_options.n_boot, diagram_options.alpha, diagram_options.seed)
        and len(mine) == len(theirs) == len(diagrams.smooth or ())
        and all(r is not None for r in mine)
        and all(
            (a.n_cells, a.row_limit, a.seed, a.n_rows, a.rows_kept)
            == (b.n_cells, b.row_limit, b.seed, b.n_rows, b.rows_kept)
            for a, b in zip(theirs, diagrams.smooth or (), strict=False)
        )
    )
    if same:
        smooth._results = [replace(r, curve=None) for r in mine]


def _draw(report, *, marginal: bool, n_classes: int, number: int) -> dict:
    """The binned and the smooth reliability diagram of one input (or group) as SVG text, from its
    :class:`calibcli.diagram.accumulator.DiagramReport`, drawn by :func:`calibcli.diagram.plot.plot_diagram`
    (fixed-size figures whatever the number of rows); ``number`` figures were drawn before (their ids)."""
    curves = report.curves("", legend="")
    panels = [
        DiagramPanel(title=(c.problem if marginal else ""), binned=(c.binned,), smooth=(c.smooth,)) for c in curves
    ]
    drawn: dict[str, Any] = {}
    for kind in ("binned", "smooth"):
        number += 1
        fig = dg.plot_diagram(panels, kind=kind)
        drawn[kind] = svg_fragment(dg.figure_bytes(fig, "svg").decode("utf-8"), prefix=f"d{number}-")
    drawn["panels"] = [c.problem for c in curves]
    drawn["classes_total"] = n_classes if marginal else None
    drawn["notes"] = list(report.notes)
    return drawn
