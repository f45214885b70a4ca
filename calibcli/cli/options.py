"""What every command shares: option declarations, input loading, errors, progress and gates.

A command module declares its parameters with the ``Annotated`` aliases below (so the flags are
spelled and documented once), wraps its function in :func:`command` (one place that turns
exceptions into ``Error: ...`` and exit codes), loads files with :func:`load_inputs`, and hands its
document to :func:`calibcli.report.emit.emit`.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Annotated, Any

import numpy as np
import typer

from calibcli.cli.exits import command_failure
from calibcli.core import cancel, environment, outputs
from calibcli.core import family as fam
from calibcli.core.declarations import CLASS_WEIGHTS_PARAM, GROUP_BY, MODE, N_BINS, STRATEGY, WEIGHT_COL
from calibcli.core.errors import (
    CalibcliError,
    cli_text,
    flag_of,
)
from calibcli.core.malloc import tune_allocator
from calibcli.core.outputs import STDOUT
from calibcli.core.validation import (
    COMMAND_SIZES,
    Declared,
    Param,
    check_options,
    check_size,
    declared,
    memory_culprit,
    option,
    params_of,
    short_value,
)
from calibcli.engines.base import ENGINES, EngineChoice, engines_help
from calibcli.engines.pipeline import run
from calibcli.io.columns import ColumnSpec
from calibcli.io.loaded import LoadedInput, read_dataset
from calibcli.io.resolve import resolve_datasets
from calibcli.io.sources import DEFAULT_BATCH_ROWS
from calibcli.io.streams import Sources
from calibcli.io.targets import check_output_target
from calibcli.llm.convert import ITEM_KEY, converted_inputs
from calibcli.llm.options import DumpOptions
from calibcli.report.emit import FORMATS, Layout, emit_with_gates

# ---------------------------------------------------------------------------------------------
# Options shared by the commands (one declaration each)


def choices(*values: str) -> str:
    """The metavar of an option that takes one of ``values``: ``[a|b|c]``, so that ``--help`` lists them.

    The parser takes any word; the command checks it (:func:`check_choice`,
    :func:`calibcli.core.validation.check_options`), so a bad value is the project's one ``Error:`` line
    naming the option and the choices, exit 2, rather than a usage box.
    """
    return "[" + "|".join(values) + "]"


def files_argument(several: str):
    """The FILES argument; ``several`` says what the command does with more than one file."""
    return Annotated[
        list[str],
        typer.Argument(
            help=(
                "Prediction files (CSV, TSV (.gz too), Parquet, Arrow IPC/Feather, JSON Lines); directories of them "
                "(read recursively, key=value subdirectories as partition columns); quoted glob patterns such as "
                f"'shards/*.parquet'; URIs (s3://, gs://, file://); '-' reads stdin. {several}"
            ),
            show_default=False,
            metavar="FILES",
        ),
    ]


Files = files_argument("Several files are evaluated one by one.")


def _count(value) -> int:
    """An integer option that also takes a whole number written in scientific notation (``1e6``), so that
    ``--n-bins 1e20`` reaches the option's rule and the memory budget (one message saying how many fit)
    instead of the parser's "not a valid integer"; ``2.5`` or ``abc`` are still refused here."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if math.isfinite(number) and number.is_integer():
        return int(number)
    raise typer.BadParameter(f"{text!r} is not a whole number")


def alias_of(annotation, param: Param):
    """The ``Annotated`` Typer option of a declared option (:class:`calibcli.core.validation.Param`): its flags, help,
    choices (the metavar ``[a|b]``), the whole-number parser of a count."""
    kwargs: dict = {"help": param.help}
    if param.metavar is not None:
        kwargs["metavar"] = param.metavar
    elif param.choices is not None:
        kwargs["metavar"] = choices(*param.choices)
    if param.count:
        kwargs["parser"] = _count
    if not param.show_default:
        kwargs["show_default"] = False
    return Annotated[annotation, typer.Option(*param.flags, **kwargs)]


def alias(options_class, name: str):
    """The Typer option of field ``name`` of an options dataclass, from its declaration."""
    return alias_of(typing.get_type_hints(options_class)[name], params_of(options_class)[name][0])


Mode = alias_of(str | None, MODE)
ClassWeights = alias_of(str, CLASS_WEIGHTS_PARAM)
NBins = alias_of(int, N_BINS)
Strategy = alias_of(str, STRATEGY)
NBoot = alias(fam.Bootstrap, "n_boot")
Alpha = alias(fam.Bootstrap, "alpha")
Seed = alias(fam.Bootstrap, "seed")
FailAbove = alias(fam.Gates, "fail_above")
FailAboveUpper = alias(fam.Gates, "fail_above_upper")
# ---------------------------------------------------------------------------------------------
# The command line's own option groups, declared once (as the families declare theirs)


@dataclass(frozen=True)
class ColumnOptions(Declared):
    """Which columns hold the probabilities, the labels and the weights."""

    prob_col: str | None = option(None, "--prob-col", help="Column with the positive-class probability (binary).")
    prob_cols: list[str] | None = option(
        None,
        "--prob-cols",
        help="Columns with one probability per class: a comma-separated list or a pattern such as 'p_*'.",
    )
    label_col: str | None = option(
        None, "--label-col", help="Column with the labels (integers, booleans or class names)."
    )
    weight_col: str | None = declared(None, WEIGHT_COL)
    logits: bool = option(
        False, "--logits", help="The probability columns hold logits: apply sigmoid (one column) or softmax."
    )


@dataclass(frozen=True)
class ReadingOptions(Declared):
    """How the inputs are read."""

    input_format: str | None = option(
        None,
        "--input-format",
        help="csv, tsv, parquet, feather or jsonl; default: from the extension (stdin: from "
        "its first bytes: Parquet, Arrow IPC, JSON Lines, TSV, else CSV).",
        metavar=choices("csv", "tsv", "parquet", "feather", "jsonl"),
    )
    drop_invalid: bool = option(
        False,
        "--drop-invalid",
        help="Drop invalid rows (NaN, out-of-range, unknown labels) instead of failing; the report counts them.",
    )


@dataclass(frozen=True)
class DatasetOptions(Declared):
    """What a dataset is (pooled files, groups) and the batches it is read in."""

    pool: bool = option(
        False, "--pool", help="Treat all FILES as one dataset (one report entry), rows in sorted-path order."
    )
    group_by: str | None = declared(None, GROUP_BY)
    batch_rows: int = option(
        DEFAULT_BATCH_ROWS,
        "--batch-rows",
        help="Rows read and reduced at a time (memory stays flat in the number of rows; results do not depend on it).",
    )


@dataclass(frozen=True)
class EngineOptions(Declared):
    """Where the accumulators run (:data:`calibcli.engines.ENGINES`)."""

    engine: str = option("local", "--engine", help=engines_help(), metavar=choices(*ENGINES))
    scheduler: str | None = option(
        None,
        "--scheduler",
        help="With --engine dask: the address of a running Dask scheduler (tcp://HOST:PORT) or "
        "its scheduler file. Default: DASK_SCHEDULER_ADDRESS, else a local cluster.",
    )
    workers: int | None = option(
        None,
        "--workers",
        help="With --engine dask and no scheduler: start a local "
        "cluster of this many worker processes for the run (default: one per CPU).",
    )


@dataclass(frozen=True)
class OutputOptions(Declared):
    """What stdout carries, and the JSON report's file."""

    as_json: bool = option(
        False, "--json", help="Print the JSON report on stdout instead of the table (--format json)."
    )
    fmt: str = option(
        "table",
        "--format",
        help="What stdout carries: table, json, markdown (pull requests, "
        "$GITHUB_STEP_SUMMARY) or csv (tidy: file, group, problem, metric, estimate, ci_low, ci_high, "
        "bound).",
        metavar=choices("table", "json", "markdown", "csv"),
    )
    summary: bool | None = option(
        None,
        "--summary/--no-summary",
        help="One row per file or group with the metrics "
        "as columns (the default beyond 3 rows), or the full table of every metric.",
        show_default=False,
    )
    metrics: str | None = option(
        None,
        "--metrics",
        help="Summary columns: comma-separated metric names from the "
        "report, e.g. ece_l1_plugin,brier_score (default: the command's headline metrics).",
    )
    sort: str | None = option(None, "--sort", help="Order summary rows by this metric, best first (default: as given).")
    output: str | None = option(
        None,
        "--output",
        "-o",
        help="Also write the JSON report to this file (atomically; '-': stdout, instead of the table).",
    )


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# Option groups: options several commands share, declared once


@dataclass(frozen=True)
class Opt:
    """One option of a group: its parameter name, its ``Annotated`` alias (flag, help, metavar) and default."""

    name: str
    annotation: object
    default: object = None


@dataclass(frozen=True)
class OptionGroup:
    """Options that go together on every command that takes them (the columns, how to read, the
    datasets, the engine, the output, the bootstrap, the gates). A command lists the groups it takes in
    :func:`with_groups`; its signature (what Typer reads, through ``__signature__``) is built from them,
    so a new shared option is one field of the group's dataclass (:class:`ColumnOptions`, ...,
    :class:`calibcli.core.family.Bootstrap`), and the command body reads the group's values from its
    ``**options`` (:func:`spec_of`, :func:`sources_of`, :func:`engine_of`, :func:`layout_of`). A family narrows
    a shared option's choices with :meth:`calibcli.core.validation.Param.narrowed`."""

    name: str
    options: tuple[Opt, ...]

    def only(self, *names: str) -> OptionGroup:
        """The group with these options only (a command that takes part of it)."""
        return replace(self, options=tuple(o for o in self.options if o.name in names))

    def but(self, **changes) -> OptionGroup:
        """The group with some options changed: ``name=alias``, or ``name=(alias, default)``."""
        out = []
        for o in self.options:
            if o.name in changes:
                change = changes[o.name]
                o = Opt(o.name, *change) if isinstance(change, tuple) else Opt(o.name, change, o.default)
            out.append(o)
        return replace(self, options=tuple(out))


def group_of(options_class, *names: str, name: str = "own") -> OptionGroup:
    """The options of a declared dataclass (these fields, or all) as an option group; a field declared with the
    default ``...`` is a required option."""
    declared = params_of(options_class)
    return OptionGroup(
        name,
        tuple(
            Opt(n, alias(options_class, n), inspect.Parameter.empty if declared[n][1] is ... else declared[n][1])
            for n in (names or declared)
        ),
    )


COLUMNS = group_of(ColumnOptions, name="columns")
READING = group_of(ReadingOptions, name="reading")
#: LLM evaluation dumps (calibcli.llm): every command that takes READING takes these after it (with_groups).
DUMPS = group_of(DumpOptions, name="dumps")
DATASETS = group_of(DatasetOptions, name="datasets")
ENGINE = group_of(EngineOptions, name="engine")
BOOTSTRAP = group_of(fam.Bootstrap, name="bootstrap")
OUTPUT = group_of(OutputOptions, name="output")
GATES = group_of(fam.Gates, name="gates")


@dataclass(frozen=True)
class Own:
    """Where a command's own options go among its groups in :func:`with_groups`: these (by name, in the
    function's order), or every own option not placed yet."""

    names: tuple[str, ...] = ()


def own(*names: str) -> Own:
    return Own(names)


#: Every own option not placed by an :func:`own` before it.
OWN = Own()


#: The parameter of a command's function that receives its options object (:func:`with_groups`, :func:`command`).
CHOSEN = "chosen"


def with_groups(*layout, declared=None, checked_by=None):
    """Decorator: the command's signature is its arguments (parameters without a default: FILES...), then
    the groups and its own options in the order of ``layout`` (:func:`own` places some of its own options,
    :data:`OWN` the rest). The function takes the groups' values as ``**options``.

    ``declared``: the family's options dataclass (:class:`calibcli.core.validation.Declared`). Its fields are the
    command's own options (flags, help and defaults from their declarations), and where a group's option is
    one of its fields the field's declaration is taken (``tcal --alpha``: the test's level, not an interval's).
    A function that takes a parameter ``chosen`` receives the options object itself: :func:`command` makes it
    from the command's values, once, before any work, and its fields are checked there alone. ``checked_by``:
    the options class whose fields the function's own options object checks, when it makes it itself (the
    report's page, told from a regression dump's first); :func:`command` leaves them to it."""

    layout = tuple(g for item in layout for g in ((item, DUMPS) if item is READING else (item,)))

    def decorate(func):
        hints = typing.get_type_hints(func, include_extras=True)
        mine = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(func).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD and p.name != CHOSEN
        ]
        fields = group_of(declared).options if declared is not None else ()
        field = {o.name: o for o in fields}
        in_groups = {o.name for item in layout if isinstance(item, OptionGroup) for o in item.options}
        mine += [
            inspect.Parameter(
                o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.default, annotation=o.annotation
            )
            for o in fields
            if o.name not in in_groups
        ]
        params = [p for p in mine if p.default is inspect.Parameter.empty]
        for item in layout:
            if isinstance(item, Own):
                params += [
                    p
                    for p in mine
                    if p.default is not inspect.Parameter.empty
                    and p not in params
                    and (not item.names or p.name in item.names)
                ]
            else:
                params += [
                    inspect.Parameter(
                        o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.default, annotation=o.annotation
                    )
                    for o in (field.get(o.name, o) for o in item.options)
                ]
        if CHOSEN in inspect.signature(func).parameters:
            func.options_class = declared  # made by :func:`command` and given to the function as ``chosen``
        if CHOSEN in inspect.signature(func).parameters or checked_by is not None:
            func.checked_names = frozenset(params_of(checked_by or declared))  # checked where that object is made
        func.__signature__ = inspect.Signature(params, return_annotation=None)
        func.__annotations__ = {**{p.name: p.annotation for p in params}, "return": None}
        return func

    return decorate


#: Every shared group, for :func:`signature_from` (a parameter of a library function named as a group's option
#: takes that option's flag and help).
GROUPS = (COLUMNS, READING, DATASETS, ENGINE, BOOTSTRAP, OUTPUT, GATES)


def signature_from(
    library, aliases: dict, *extra, library_only: tuple[str, ...] = (), checked_by_library: tuple[str, ...] = ()
):
    """Decorator: the command takes the parameters of the library function ``library`` (their names, order and
    defaults: declared once, there), each with its command-line alias (``aliases`` by name: a declaration
    (:class:`~calibcli.core.validation.Param`) made an option of the parameter's type, or an ``Annotated`` alias; else
    the shared group's), then the options of the groups in ``extra`` (what only the command has: the output). The
    command function takes them all as ``**options``; ``library_only`` are parameters the command does not offer;
    ``checked_by_library`` are options the library function checks itself, before any work: :func:`command`
    leaves them to it, so each is checked once."""
    shared_alias = {o.name: o.annotation for group in GROUPS for o in group.options}
    hints = typing.get_type_hints(library)
    aliases = {name: alias_of(hints[name], a) if isinstance(a, Param) else a for name, a in aliases.items()}

    def decorate(func):
        params = [
            inspect.Parameter(
                p.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=p.default,
                annotation=aliases.get(p.name, shared_alias.get(p.name)),
            )
            for p in inspect.signature(library).parameters.values()
            if p.name not in library_only
        ]
        params += [
            inspect.Parameter(
                o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.default, annotation=o.annotation
            )
            for group in extra
            for o in group.options
        ]
        func.__signature__ = inspect.Signature(params, return_annotation=None)
        func.__annotations__ = {**{p.name: p.annotation for p in params}, "return": None}
        if checked_by_library:
            func.checked_names = frozenset(checked_by_library)
        return func

    return decorate


def spec_of(options: dict) -> ColumnSpec:
    """The columns group's values as a :class:`~calibcli.io.ColumnSpec`."""
    return ColumnSpec.of(
        options["prob_col"], options["prob_cols"], options["label_col"], options["weight_col"], options["logits"]
    )


def sources_of(files, options: dict) -> Sources:
    """The sources of a streaming command: FILES and the columns, reading and datasets groups' values."""
    return Sources(
        tuple(files),
        spec_of(options),
        input_format=options["input_format"],
        drop_invalid=options["drop_invalid"],
        pool=options.get("pool", False),
        batch_rows=options["batch_rows"],
        group_by=split_columns(options.get("group_by")),
    )


def run_gated(family, files, options: dict, chosen) -> None:
    """A gated streaming family's command once parsed: its options object (made and checked once, by
    :func:`command`), the pipeline over FILES, the document on stdout in the chosen layout and the gates' exit."""
    layout = layout_of(options)
    doc = run(family, sources_of(files, options), chosen, engine_of(options))
    emit_with_gates(doc, chosen.gate, output=options["output"], layout=layout)


def engine_of(options: dict) -> EngineChoice:
    """The engine group's values."""
    return EngineChoice(options["engine"], options["scheduler"], options["workers"])


def layout_of(options: dict):
    """The output group's values as the report's layout on stdout."""
    return layout(
        options["fmt"], options["as_json"], options.get("summary"), options.get("metrics"), options.get("sort")
    )


#: ``a,b`` -> ``("a", "b")`` (the columns of ``--group-by``, ``--metrics``, ``--segment-cols``).
split_columns = fam.split_columns


def layout(
    fmt: str = "table",
    as_json: bool = False,
    summary: bool | None = None,
    metrics: str | None = None,
    sort: str | None = None,
):
    """The report's layout on stdout from ``--format``, ``--json``, ``--summary``, ``--metrics`` and ``--sort``."""
    check_options({"fmt": FORMATS}, fmt=fmt)
    return Layout.of(fmt, as_json, summary, split_columns(metrics) or None, sort)


def load_inputs(
    files: list[str], spec: ColumnSpec, *, input_format: str | None, drop_invalid: bool
) -> Iterator[LoadedInput]:
    """Read the inputs one by one into memory (a bad one stops the run before anything is written).

    Every argument is resolved first (a file, a directory, a glob, a URI, '-'), so a missing path fails
    before any reading.
    """
    for dataset in resolve_datasets(files):
        yield read_dataset(dataset, spec, input_format=input_format, drop_invalid=drop_invalid)


# ---------------------------------------------------------------------------------------------
# Errors and exit codes, in one place


#: Parameters that name a file a command writes (every command uses these names), and their flags.
FILE_OPTIONS = {"output": "--output", "report": "--report", "json_output": "--json-output", "plot": "--plot"}

#: Parameters that name what a command reads (every command uses these names), and what each is called
#: when an output would overwrite it: outputs are checked against them before any work.
INPUT_ARGUMENTS = {
    "files": "input file",
    "train": "input file",
    "file": "input file",
    "fit_file": "input file",
    "baseline": "input file",
    "candidate": "input file",
    "calibrator": "calibrator",
    "against": "input file",
}


def _input_arguments(kwargs: dict) -> list[str]:
    """The paths a command reads (:data:`INPUT_ARGUMENTS` but the calibrator)."""
    out: list[str] = []
    for name in INPUT_ARGUMENTS:
        value = kwargs.get(name)
        if name != "calibrator" and value:
            out += [value] if isinstance(value, str) else list(value)
    return out


def check_file_options(kwargs: dict) -> None:
    """Every file option of a command's arguments (:data:`FILE_OPTIONS`), before any work: writable, not
    an input (:data:`INPUT_ARGUMENTS`) and not another output."""
    inputs = []
    for name, what in INPUT_ARGUMENTS.items():
        value = kwargs.get(name)
        for arg in [value] if isinstance(value, str) else value or []:
            inputs.append((what, arg))
    seen: list[tuple[str, str]] = []
    for name in FILE_OPTIONS:
        path = kwargs.get(name)
        if not path:
            continue
        for other, other_path in seen:
            if path == other_path or (
                path != STDOUT
                and other_path != STDOUT
                and os.path.exists(path)
                and os.path.exists(other_path)
                and os.path.samefile(path, other_path)
            ):
                raise CalibcliError(f"{{opt:{name}}} {path} is the {{opt:{other}}} file too: name another file")
        check_output_target(path, name, inputs)
        seen.append((name, path))


#: Words that a user may have meant as the value of a flag (``--logits false``).
FLAG_WORDS = ("true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n")


def check_command_options(
    params: dict,
    *,
    flags: dict[str, bool] | None = None,
    file_arguments: dict[str, str | list[str] | None] | None = None,
) -> None:
    """Every numeric option of a command, checked by :func:`check_options` (finite, within range, within the
    memory budget); and FILES arguments that are the word a flag would take (``--logits false``), refused.

    ``params``: the command's keyword values; ``flags``: its boolean options and their values;
    ``file_arguments``: its positional path arguments (a string or a list of strings each).
    """
    numeric: dict[str, Any] = {
        k: v
        for k, v in params.items()
        if not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
    }
    for name, value in numeric.items():
        if name in COMMAND_SIZES and value >= 1:
            check_size(name, value, COMMAND_SIZES)
    check_options(**numeric)
    for paths in (file_arguments or {}).values():
        for path in [paths] if isinstance(paths, str) else list(paths or []):
            if isinstance(path, str) and path.lower() in FLAG_WORDS and not os.path.lexists(path):
                on = [f for f, v in (flags or {}).items() if v]
                who = "{opt:" + on[0] + "} is a flag and takes" if len(on) == 1 else "flags take"
                raise CalibcliError(
                    f"{who} no value; {short_value(path)} was read as an input file: remove it "
                    f"(a flag is on when given, off when left out)"
                )


def check_parameters(func, kwargs: dict) -> None:
    """Before any work: every numeric option of the command through :func:`calibcli.core.validation.check_options`
    (finite, within range, within the memory budget), and no flag word (``--logits false``) read as a file.

    The numbers of the command's options object (:func:`with_groups`' ``chosen`` or ``checked_by``) are left to
    it: it checks them when it is made, so each option is checked once; so are the options a library function
    checks itself (:func:`signature_from`'s ``checked_by_library``)."""
    import typing

    mine: frozenset[str] = getattr(func, "checked_names", frozenset())
    flags, file_arguments = {}, {}
    for name, annotation in typing.get_type_hints(func, include_extras=True).items():
        if name not in kwargs:
            continue
        infos = getattr(annotation, "__metadata__", ())
        if any(isinstance(i, typer.models.ArgumentInfo) for i in infos):
            file_arguments[name] = kwargs[name]
        elif isinstance(kwargs[name], bool):
            flags[name] = kwargs[name]
    check_command_options(
        {k: v for k, v in kwargs.items() if k not in mine}, flags=flags, file_arguments=file_arguments
    )


def pure_flags(func) -> None:
    """Show every boolean option of ``func`` as the flag it is: no ``<bool>`` value in ``--help`` (Typer
    prints the type of every option, and a flag takes none). Applied to every command by :func:`command`."""
    import typing

    for name, annotation in typing.get_type_hints(func, include_extras=True).items():
        args = typing.get_args(annotation)
        if not args or not hasattr(annotation, "__metadata__"):
            continue
        base = args[0]
        if base is bool or (
            typing.get_origin(base) in (typing.Union, types.UnionType)
            and set(typing.get_args(base)) == {bool, type(None)}
        ):
            for info in annotation.__metadata__:
                if isinstance(info, typer.models.OptionInfo) and info.metavar is None:
                    info.metavar = ""
            func.__annotations__[name] = annotation  # the evaluated object (a string would be evaluated afresh)


def command(func):
    """Run a command body: its options checked first; an exception that ends it becomes its ``Error: ...``
    line and exit code in :func:`calibcli.cli.exits.command_failure` (bad input 2, a failed gate 1)."""
    pure_flags(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        cancel.reset()
        outputs.reset()
        tune_allocator()  # batch-sized arrays reused, not unmapped and faulted in again (calibcli/core/malloc.py)
        try:
            try:
                environment.check()  # NUMBA_* values, matplotlib's directory (calibcli.core.environment)
                check_file_options(kwargs)
                check_parameters(func, kwargs)
                chosen = {CHOSEN: func.options_class.of(kwargs)} if hasattr(func, "options_class") else {}
                with converted_inputs(_input_arguments(kwargs), DumpOptions.of(kwargs).request()) as dumps:
                    if dumps and "id_col" in kwargs and kwargs["id_col"] is None:
                        kwargs["id_col"] = ITEM_KEY  # compare: two models' answers paired by item
                        if hasattr(func, "options_class") and "id_col" in params_of(func.options_class):
                            chosen[CHOSEN] = chosen[CHOSEN].but(id_col=ITEM_KEY)
                    return func(*args, **chosen, **kwargs)
            except Exception:  # after a signal, any error is its consequence (a lock released twice
                if cancel.requested():  # where the interrupt landed): report the interrupt
                    raise cancel.Interrupted(cancel.signal_number()) from None
                raise
        except typer.Exit:
            raise
        except BaseException as exc:  # turned into its line and exit code in one place (calibcli.cli.exits)
            code = command_failure(exc, lambda: out_of_memory_message(kwargs))
            if code is None:
                raise
            raise typer.Exit(code) from None

    return wrapper


def out_of_memory_message(kwargs: dict) -> str:
    """The ``MemoryError`` message: it names the size option that plans the largest allocation (never one
    that is 0 or not set), else the input's size."""
    culprit = memory_culprit(kwargs)
    if culprit:
        return cli_text(
            f"out of memory: the largest allocation asked for is {culprit}: try a smaller value, or a smaller input",
            flag_of,
        )
    rows = kwargs.get("batch_rows")
    fewer = (
        f" (now {rows}), e.g. {{opt:batch_rows}} {max(rows // 4, 1024)}"
        if isinstance(rows, int) and not isinstance(rows, bool) and rows > 1024
        else ""
    )
    return cli_text(
        "out of memory while reading and reducing the input, with no option planning that much: hold fewer rows at "
        f"a time with {{opt:batch_rows}}{fewer}, or give the run more memory",
        flag_of,
    )
