"""What every command shares: option declarations, input loading, errors, progress and gates.

A command module declares its parameters with the ``Annotated`` aliases below (so the flags are
spelled and documented once), wraps its function in :func:`command` (one place that turns
exceptions into ``Error: ...`` and exit codes), loads files with :func:`load_inputs`, and hands its
document to :func:`calibcli.report.emit`.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from contextlib import contextmanager
from typing import Annotated, Iterator, Optional

import typer

from calibcli.errors import CalibcliError, GateFailed
from calibcli.io import DEFAULT_BATCH_ROWS  # noqa: F401  (BatchRows' default, for the commands)
from calibcli.io import ColumnSpec, LoadedInput, read_dataset, resolve_datasets

# ---------------------------------------------------------------------------------------------
# Options shared by the commands (one declaration each)


def choices(*values: str) -> str:
    """The metavar of an option that takes one of ``values``: ``[a|b|c]``, so that ``--help`` lists them.

    The parser takes any word; the command checks it (:func:`check_choice`,
    :func:`calibcli.validation.check_options`), so a bad value is the project's one ``Error:`` line
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
ProbCol = Annotated[Optional[str], typer.Option("--prob-col", help="Column with the positive-class probability (binary).")]
ProbCols = Annotated[
    Optional[list[str]],
    typer.Option("--prob-cols", help="Columns with one probability per class: a comma-separated list or a pattern such as 'p_*'."),
]
LabelCol = Annotated[Optional[str], typer.Option("--label-col", help="Column with the labels (integers, booleans or class names).")]
WeightCol = Annotated[Optional[str], typer.Option("--weight-col", help="Column with sample (frequency) weights.")]
Logits = Annotated[bool, typer.Option("--logits", help="The probability columns hold logits: apply sigmoid (one column) or softmax.")]
InputFormat = Annotated[
    Optional[str], typer.Option("--input-format", help="csv, tsv, parquet, feather or jsonl; default: from the extension "
                                "(stdin: from its first bytes: Parquet, Arrow IPC, JSON Lines, TSV, else CSV).",
                                metavar=choices("csv", "tsv", "parquet", "feather", "jsonl"))
]
DropInvalid = Annotated[
    bool, typer.Option("--drop-invalid", help="Drop invalid rows (NaN, out-of-range, unknown labels) instead of failing; the report counts them.")
]
Mode = Annotated[
    Optional[str],
    typer.Option("--mode", help="binary, top-label or marginal. Default: binary for one or two probability columns, top-label for K > 2.",
                 metavar=choices("binary", "top-label", "marginal")),
]
ClassWeights = Annotated[
    str, typer.Option("--class-weights", help="Marginal aggregate weights: uniform (1/K) or prior (class frequencies).",
                      metavar=choices("uniform", "prior"))
]
NBins = Annotated[int, typer.Option("--n-bins", help="Number of bins.")]
Strategy = Annotated[str, typer.Option("--strategy", help="Binning: uniform (equal width) or quantile (equal mass).",
                                       metavar=choices("uniform", "quantile"))]
NBoot = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples for the confidence intervals (0: none).")]
Alpha = Annotated[float, typer.Option("--alpha", help="1 - confidence level of the intervals and bounds.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of every random draw; the same seed prints the same numbers.")]
Json = Annotated[bool, typer.Option("--json", help="Print the JSON report on stdout instead of the table (--format json).")]
Format = Annotated[
    str,
    typer.Option("--format", help="What stdout carries: table, json, markdown (pull requests, $GITHUB_STEP_SUMMARY) or csv "
                 "(tidy: file, group, problem, metric, estimate, ci_low, ci_high, bound).",
                 metavar=choices("table", "json", "markdown", "csv")),
]
Output = Annotated[Optional[str], typer.Option("--output", "-o", help="Also write the JSON report to this file (atomically; "
                                               "'-': stdout, instead of the table).")]
Summary = Annotated[
    Optional[bool],
    typer.Option("--summary/--no-summary", help="One row per file or group with the metrics as columns (the default beyond "
                 "3 rows), or the full table of every metric.", show_default=False),
]
Metrics = Annotated[
    Optional[str],
    typer.Option("--metrics", help="Summary columns: comma-separated metric names from the report, e.g. "
                 "ece_l1_plugin,brier_score (default: the command's headline metrics)."),
]
Sort = Annotated[Optional[str], typer.Option("--sort", help="Order summary rows by this metric, best first (default: as given).")]
FailAbove = Annotated[Optional[float], typer.Option("--fail-above", help="Exit 1 when the gated metric's estimate exceeds this value.")]
FailAboveUpper = Annotated[
    Optional[float], typer.Option("--fail-above-upper", help="Exit 1 when the upper end of the gated metric's interval exceeds this value.")
]
BatchRows = Annotated[
    int,
    typer.Option("--batch-rows", help="Rows read and reduced at a time (memory stays flat in the number of rows; results do not depend on it)."),
]
Pool = Annotated[bool, typer.Option("--pool", help="Treat all FILES as one dataset (one report entry), rows in sorted-path order.")]
GroupBy = Annotated[
    Optional[str],
    typer.Option("--group-by", help="Report one entry per value of these columns (comma-separated; hive partition columns of a directory too), with the worst group and the spread."),
]

Engine = Annotated[
    str,
    typer.Option("--engine", help="local (this process) or dask (a Dask cluster: --scheduler, or a local one of --workers processes); the same report either way.",
                 metavar=choices("local", "dask")),
]
Scheduler = Annotated[
    Optional[str],
    typer.Option(
        "--scheduler",
        help="With --engine dask: the address of a running Dask scheduler (tcp://HOST:PORT) or its scheduler file. "
        "Default: DASK_SCHEDULER_ADDRESS, else a local cluster.",
    ),
]
Workers = Annotated[
    Optional[int],
    typer.Option("--workers", help="With --engine dask and no scheduler: start a local cluster of this many worker processes for the run (default: one per CPU)."),
]


def split_columns(value: str | None) -> tuple[str, ...]:
    """``a,b`` -> ``("a", "b")``; None -> ``()``."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def layout(fmt: str = "table", as_json: bool = False, summary: bool | None = None, metrics: str | None = None,
           sort: str | None = None):
    """The report's layout on stdout from ``--format``, ``--json``, ``--summary``, ``--metrics`` and ``--sort``."""
    from calibcli.report import FORMATS, Layout
    from calibcli.validation import check_options

    check_options({"fmt": FORMATS}, fmt=fmt)
    return Layout.of(fmt, as_json, summary, split_columns(metrics) or None, sort)


def column_spec(prob_col, prob_cols, label_col, weight_col, logits) -> ColumnSpec:
    return ColumnSpec(
        prob_col=prob_col,
        prob_cols=tuple(prob_cols) if prob_cols else None,
        label_col=label_col,
        weight_col=weight_col,
        logits=logits,
    )


def load_inputs(files: list[str], spec: ColumnSpec, *, input_format: str | None, drop_invalid: bool) -> Iterator[LoadedInput]:
    """Read the inputs one by one into memory (a bad one stops the run before anything is written).

    Every argument is resolved first (a file, a directory, a glob, a URI, '-'), so a missing path fails
    before any reading.
    """
    for dataset in resolve_datasets(files):
        yield read_dataset(dataset, spec, input_format=input_format, drop_invalid=drop_invalid)


def check_choice(value: str, choices: tuple[str, ...], flag: str) -> str:
    if value not in choices:
        raise CalibcliError(f"{flag} is {value!r}: expected one of {', '.join(choices)}")
    return value


def warn(message: str) -> None:
    """A warning or hint on stderr (never on stdout)."""
    from calibcli.errors import cli_text

    sys.stderr.write(f"Warning: {cli_text(message, flag_of)}\n")


# ---------------------------------------------------------------------------------------------
# Errors and exit codes, in one place


def debugging() -> bool:
    return os.environ.get("CALIBCLI_DEBUG", "") not in ("", "0")


def flag_of(parameter: str) -> str:
    """The command-line flag of a library parameter name (``n_bins`` -> ``--n-bins``)."""
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


#: Parameters whose flag is not ``--`` plus the name with dashes.
FLAGS = {"class_weights_scheme": "--class-weights", "fmt": "--format"}

#: Parameters that name a file a command writes (every command uses these names), and their flags.
FILE_OPTIONS = {"output": "--output", "report": "--report", "json_output": "--json-output"}

#: Parameters that name what a command reads (every command uses these names), and what each is called
#: when an output would overwrite it: outputs are checked against them before any work.
INPUT_ARGUMENTS = {"files": "input file", "train": "input file", "file": "input file", "fit_file": "input file",
                   "baseline": "input file", "candidate": "input file", "calibrator": "calibrator"}


def check_file_options(kwargs: dict) -> None:
    """Every file option of a command's arguments (:data:`FILE_OPTIONS`), before any work: writable, not
    an input (:data:`INPUT_ARGUMENTS`) and not another output."""
    from calibcli.outputs import STDOUT, check_output

    inputs = []
    for name, what in INPUT_ARGUMENTS.items():
        value = kwargs.get(name)
        for arg in ([value] if isinstance(value, str) else value or []):
            inputs.append((what, arg))
    seen: list[tuple[str, str]] = []
    for name in FILE_OPTIONS:
        path = kwargs.get(name)
        if not path:
            continue
        for other, other_path in seen:
            if path == other_path or (path != STDOUT and other_path != STDOUT and os.path.exists(path)
                                      and os.path.exists(other_path) and os.path.samefile(path, other_path)):
                raise CalibcliError(f"{{opt:{name}}} {path} is the {{opt:{other}}} file too: name another file")
        check_output(path, name, inputs)
        seen.append((name, path))


#: Errors only a write gives (ENOSPC, EDQUOT, EFBIG): an error line, not an "internal error".
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)

#: Exit code when the reader of stdout goes away: 128 + SIGPIPE, as the shell reports a tool killed by it.
PIPE_CLOSED = 141


def quiet_stdout() -> None:
    """Point stdout at /dev/null after a broken pipe, so that the flush at exit does not complain
    (Python docs, signal module, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in tests)
        pass


def check_parameters(func, kwargs: dict) -> None:
    """Before any work: every numeric option of the command through :func:`calibcli.validation.check_options`
    (finite, within range, within the memory budget), and no flag word (``--logits false``) read as a file."""
    import typing

    from calibcli.validation import check_command_options

    flags, file_arguments = {}, {}
    for name, annotation in typing.get_type_hints(func, include_extras=True).items():
        if name not in kwargs:
            continue
        infos = getattr(annotation, "__metadata__", ())
        if any(isinstance(i, typer.models.ArgumentInfo) for i in infos):
            file_arguments[name] = kwargs[name]
        elif isinstance(kwargs[name], bool):
            flags[name] = kwargs[name]
    check_command_options(kwargs, flags=flags, file_arguments=file_arguments)


def out_of_memory_message(kwargs: dict) -> str:
    """The ``MemoryError`` message: it names the size option that plans the largest allocation (never one
    that is 0 or not set), else the input's size."""
    from calibcli.errors import cli_text
    from calibcli.validation import memory_culprit

    culprit = memory_culprit(kwargs)
    if culprit:
        return cli_text(f"out of memory: the largest allocation asked for is {culprit}: try a smaller value, "
                        f"or a smaller input", flag_of)
    return "out of memory while reading and reducing the input: try a smaller input, or a machine with more memory"


def pure_flags(func) -> None:
    """Show every boolean option of ``func`` as the flag it is: no ``<bool>`` value in ``--help`` (Typer
    prints the type of every option, and a flag takes none). Applied to every command by :func:`command`."""
    import typing

    for name, annotation in typing.get_type_hints(func, include_extras=True).items():
        args = typing.get_args(annotation)
        if not args or not hasattr(annotation, "__metadata__"):
            continue
        base = args[0]
        if base is bool or (typing.get_origin(base) is typing.Union and set(typing.get_args(base)) == {bool, type(None)}):
            for info in annotation.__metadata__:
                if isinstance(info, typer.models.OptionInfo) and info.metavar is None:
                    info.metavar = ""
            func.__annotations__[name] = annotation  # the evaluated object (a string would be evaluated afresh)


def command(func):
    """Run a command body: bad input -> ``Error: ...`` and exit 2; failed gate -> exit 1.

    A traceback is shown only when ``CALIBCLI_DEBUG=1``.
    """
    pure_flags(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from calibcli import cancel, outputs
        from calibcli._malloc import tune_allocator

        cancel.reset()
        outputs.reset()
        tune_allocator()  # batch-sized arrays reused, not unmapped and faulted in again (calibcli/_malloc.py)
        try:
            try:
                check_file_options(kwargs)
                check_parameters(func, kwargs)
                return func(*args, **kwargs)
            except Exception:  # after a signal, any error is its consequence (a lock released twice
                if cancel.requested():  # where the interrupt landed): report the interrupt
                    raise cancel.Interrupted(cancel.signal_number()) from None
                raise
        except CalibcliError as exc:
            if debugging():
                raise
            sys.stderr.write(f"Error: {exc.for_cli(flag_of)}\n")
            raise typer.Exit(2) from None
        except GateFailed as exc:
            sys.stderr.write(f"{exc}\n")
            raise typer.Exit(1) from None
        except typer.Exit:
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (calibcli.cancel): temporary files are gone by now
            cancel.request(getattr(exc, "signum", 2))  # worker threads still running stop at their next check
            cancel.report()
            raise typer.Exit(cancel.exit_code(exc)) from None
        except BrokenPipeError:  # the reader of stdout went away (`| head`): end quietly
            quiet_stdout()
            raise typer.Exit(PIPE_CLOSED) from None
        except SystemExit as exc:  # rich's console exits 1 on a broken pipe (Console.on_broken_pipe)
            if isinstance(exc.__context__, BrokenPipeError):
                quiet_stdout()
                raise typer.Exit(PIPE_CLOSED) from None
            raise
        except OSError as exc:  # a full disk or quota while writing stdout or a temporary file
            if exc.errno not in WRITE_ERRNOS or debugging():
                raise
            where = f" ({exc.filename})" if exc.filename else ""
            sys.stderr.write(f"Error: cannot write{where}: {exc.strerror}\n")
            raise typer.Exit(2) from None
        except MemoryError:
            sys.stderr.write(f"Error: {out_of_memory_message(kwargs)}\n")
            raise typer.Exit(2) from None
        except Exception as exc:  # a bug: say so in one line; CALIBCLI_DEBUG=1 shows the traceback
            if debugging():
                raise
            sys.stderr.write(
                f"Error: internal error ({type(exc).__name__}: {exc}); rerun with CALIBCLI_DEBUG=1 for the traceback "
                f"and report it\n"
            )
            raise typer.Exit(2) from None

    return wrapper


# ---------------------------------------------------------------------------------------------
# Progress on stderr, only for a terminal


@contextmanager
def progress_bar(total: int, description: str):
    """Yield an ``advance(steps=1)`` callable; draws a rich bar on stderr only when stderr is a terminal."""
    if total <= 0 or not sys.stderr.isatty():
        yield lambda steps=1: None
        return
    from rich.progress import BarColumn, Progress, TimeRemainingColumn, MofNCompleteColumn

    from calibcli.report import stderr_console

    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=stderr_console(), transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)


# ---------------------------------------------------------------------------------------------
# The pipeline, run for a command: streams -> accumulators -> entries of the report


def per_input(accumulator_class, mode: str | None, options):
    """How a command makes the input accumulator of a stream: ``accumulator_class`` in ``mode`` (default:
    binary for one or two probability columns, top-label for K > 2) with the stream's classes."""
    from calibcli.modes import default_mode

    def new(stream):
        return accumulator_class(mode=mode or default_mode(stream.n_classes), n_classes=stream.n_classes,
                                 class_names=stream.class_names, options=options)

    return new


def run_family(doc: dict, files: list[str], spec: ColumnSpec, new_accumulator, *, input_format, drop_invalid: bool,
               pool: bool, batch_rows: int, group_by: tuple[str, ...], gate, n_boot: int, engine: str,
               scheduler: str | None, workers: int | None) -> None:
    """Open the datasets named on the command line and run them through :func:`evaluate_streams`."""
    from calibcli.engines.local import open_streams

    streams = open_streams(files, spec, input_format=input_format, drop_invalid=drop_invalid, pool=pool,
                           batch_rows=batch_rows, group_by=group_by)
    evaluate_streams(doc, streams, new_accumulator, gate=gate, n_boot=n_boot, engine=engine, scheduler=scheduler,
                     workers=workers)


def evaluate_streams(doc: dict, streams, new_accumulator, *, gate, n_boot: int, engine: str = "local",
                     scheduler: str | None = None, workers: int | None = None) -> None:
    """Run every stream through accumulators made by ``new_accumulator(stream)`` and add one report
    entry per input (or group) to ``doc``: input, group, results (``to_dict``), per-entry gate; with
    groups, ``doc["groups"]`` gets the worst group and the spread of every headline metric.

    ``engine`` runs the accumulators: ``local`` in this process, ``dask`` on a Dask cluster
    (``scheduler``, else a local cluster of ``workers`` processes), with the same report; it and the
    number of workers go into ``doc["parameters"]``. Options are checked before any work, and a cluster
    is started only once the first dataset has been opened (so a bad path fails at once).
    """
    check_engine(engine, scheduler, workers)

    streams = iter(streams)
    first = next(streams, None)  # every dataset resolved, the first opened, before a cluster starts
    headlines: dict = {}
    with engine_runner(engine, scheduler, workers) as runner:
        doc["parameters"]["engine"] = engine
        doc["parameters"]["workers"] = runner.workers
        for stream in _chain(first, streams):
            accumulators, described = runner.run(stream, lambda: new_accumulator(stream))
            add_entries(doc, described, accumulators, gate=gate, n_boot=n_boot, headlines=headlines)
    summarise_groups(doc, headlines)


def add_entries(doc: dict, described: dict, accumulators, *, gate, n_boot: int, headlines: dict) -> None:
    """Finish one stream's accumulators (``(group values or None, accumulator)`` pairs from an engine's
    ``run``; ``described`` its input section) into report entries of ``doc``: input, group, results
    (``to_dict``), per-entry gate; ``headlines`` gets every entry's headline metrics by label (for
    :func:`summarise_groups`). ``calibcli report`` finishes each family of its one pass with this too."""
    from calibcli.report import check_gate, entry_label

    for group, acc in accumulators:
        entry = {"input": described}
        if group is not None:
            entry["group"] = group
            entry["rows_in_group"] = acc.n_rows
        label = entry_label(entry)
        with progress_bar(n_boot * len(acc.problems), f"bootstrap {label}") as advance:
            try:
                report = acc.result(progress=advance)
            except CalibcliError as exc:  # what these rows cannot give (too few of them, ...): name the input
                raise exc.about(label) from None
        entry.update(report.to_dict())
        headline = {k: m.to_dict() for k, m in report.headline().items()}
        headlines[label] = headline
        if "problems" not in entry:  # a test's report: its headline numbers are its metrics
            entry["headline"] = headline
        if gate.active:
            entry["gate"] = check_gate(gate, label, headline.get(gate.metric))
        doc["files"].append(entry)


def summarise_groups(doc: dict, headlines: dict) -> None:
    """With groups, ``doc["groups"]``: the worst group and the spread of every headline metric."""
    from calibcli.report import group_summary

    if any("group" in entry for entry in doc["files"]):
        by = doc["parameters"].get("group_by") or []
        doc["groups"] = {"by": by, "n_groups": len(doc["files"]), "metrics": group_summary(doc["files"], headlines)}


def _chain(first, rest):
    if first is not None:
        yield first
    yield from rest


def check_engine(engine: str, scheduler: str | None, workers: int | None) -> None:
    """``--engine`` and its options, before any work; Dask is imported (or its absence reported) here."""
    from calibcli.engines import ENGINES

    check_choice(engine, ENGINES, "--engine")
    if engine == "local" and (scheduler is not None or workers is not None):
        raise CalibcliError(f"{'--scheduler' if scheduler is not None else '--workers'} is for --engine dask: add --engine dask, or drop it")
    if scheduler is not None and workers is not None:
        raise CalibcliError("--scheduler and --workers both say where to run: --scheduler uses a running cluster, "
                            "--workers starts a local one; give one of them")
    if workers is not None and workers < 1:
        raise CalibcliError(f"--workers is {workers}: expected at least 1 worker process")
    if engine == "dask":
        from calibcli.engines.dask import require_distributed

        require_distributed()


@contextmanager
def engine_runner(engine: str, scheduler: str | None, workers: int | None):
    """The engine of ``--engine``: local, or Dask on a cluster that lives as long as the context.
    ``runner.run(stream, new_accumulator)`` gives ``([(group, accumulator)], input description)``."""
    if engine == "local":
        from calibcli.engines.local import LocalEngine

        yield LocalEngine()
        return
    from calibcli.engines.dask import dask_engine

    with dask_engine(scheduler=scheduler, workers=workers, progress=progress_bar) as runner:
        yield runner
