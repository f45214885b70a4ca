"""Seeded property-based fuzz of every command (issue 12, "Bars"), with Hypothesis.

Small CSV and Parquet inputs (probabilities as numbers, NaN, infinities, out-of-range values, empty cells,
text; labels as classes, out-of-range integers, empty cells, text, booleans) and option values drawn for
each command. Whatever is drawn, a run ends in one of two ways: a result (exit 0; exit 1 only when a CI
gate was given and failed), or exactly one ``Error: ...`` line on stderr with exit 2 — never a traceback,
an "internal error" or any other exit code. With ``--drop-invalid`` every row is accounted for in the
report: rows read == rows used + rows dropped == the rows of the file.

``derandomize=True``: the same examples every run (a CI failure reproduces locally). The last test runs
the installed command as real subprocesses over stdin, many times, to catch crashes (a negative exit
code: SIGABRT, SIGSEGV), which an in-process run would not survive to report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import BINARY, run

SETTINGS = settings(derandomize=True, max_examples=12, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Failures the fuzz found in code other work owns (not the input layer), by a signature of their message:
#: the fuzz lets them pass and the test named here pins each one as an expected failure until it is fixed.
KNOWN_ELSEWHERE: dict[str, str] = {}

# ---------------------------------------------------------------------------------------------
# Inputs

PROB_TEXT = ("nan", "inf", "-inf", "-0.5", "1.5", "", " ", "abc", "1e-300", "0", "1", "NA", "0.5 ")
LABEL_TEXT = ("", "2", "-1", "x", "true", "false", "1.0", "0.5", "nan", " 1")

prob_cells = st.one_of(st.floats(0, 1).map(lambda v: f"{v:.6g}"), st.sampled_from(PROB_TEXT))
label_cells = st.one_of(st.sampled_from(("0", "1")), st.sampled_from(LABEL_TEXT))
rows = st.lists(st.tuples(prob_cells, label_cells), min_size=1, max_size=12)

prob_values = st.one_of(st.floats(0, 1), st.sampled_from((float("nan"), float("inf"), -0.5, 1.5, None)))
label_values = st.one_of(st.sampled_from((0, 1)), st.sampled_from((None, 2, -1, 7)))


@st.composite
def inputs(draw):
    """``(format, rows as text cells or typed values, as_text)``: a CSV of text cells, or a Parquet file
    whose columns are numbers (with NaN, inf, out-of-range, empty) or, sometimes, text."""
    fmt = draw(st.sampled_from(("csv", "parquet")))
    if fmt == "csv":
        return fmt, draw(rows), True
    if draw(st.booleans()):
        return fmt, draw(rows), True  # text columns in a Parquet file
    n = draw(st.integers(1, 12))
    probs = draw(st.lists(prob_values, min_size=n, max_size=n))
    labels = draw(st.lists(label_values, min_size=n, max_size=n))
    return fmt, list(zip(probs, labels)), False


def write_input(directory, index: int, spec) -> tuple[str, int]:
    """The input file and its number of data rows."""
    fmt, data, as_text = spec
    path = os.path.join(directory, f"fuzz{index}.{fmt}")
    if fmt == "csv":
        with open(path, "w", newline="") as fh:
            fh.write("prob,label\n" + "".join(f"{p},{y}\n" for p, y in data))
    else:
        probs, labels = zip(*data)
        if as_text:
            table = pa.table({"prob": pa.array(probs, pa.string()), "label": pa.array(labels, pa.string())})
        else:
            table = pa.table({"prob": pa.array(probs, pa.float64()), "label": pa.array(labels, pa.int64())})
        pq.write_table(table, path)
    return path, len(data)


# ---------------------------------------------------------------------------------------------
# Options of each command

common = st.fixed_dictionaries({"drop": st.booleans(), "mode": st.sampled_from((None, "binary", "top-label", "marginal"))})
OPTIONS = {
    "ece": st.fixed_dictionaries({
        "--n-bins": st.sampled_from(("1", "2", "15", "1000")), "--strategy": st.sampled_from(("uniform", "quantile")),
        "--n-boot": st.sampled_from(("0", "3")), "--alpha": st.sampled_from(("0.05", "0.5", "0.999")),
        "--batch-rows": st.sampled_from(("1", "3", "131072")),
    }),
    "smece": st.fixed_dictionaries({"--n-boot": st.sampled_from(("0", "3")), "--alpha": st.sampled_from(("0.05", "0.9")),
                                    "--batch-rows": st.sampled_from(("2", "131072"))}),
    "tcal": st.fixed_dictionaries({"--n-boot": st.sampled_from(("5", "20")), "--discrete": st.sampled_from(("auto", "yes", "no")),
                                   "--alpha": st.sampled_from(("0.05", "0.5"))}),
    "diagram": st.fixed_dictionaries({"--kind": st.sampled_from(("binned", "smooth", "both")),
                                      "--n-bins": st.sampled_from(("1", "5", "15")), "--n-boot": st.just("0")}),
    "fit": st.fixed_dictionaries({"--method": st.sampled_from(("platt", "temperature", "histogram", "isotonic", "beta",
                                                               "scaling-binning"))}),
    "evaluate": st.fixed_dictionaries({"--method": st.sampled_from(("platt", "isotonic", "histogram")),
                                       "--holdout": st.sampled_from(("0.3", "0.5")), "--n-boot": st.just("5")}),
    "apply": st.fixed_dictionaries({"--batch-rows": st.sampled_from(("1", "4", "131072"))}),
}
GATE = st.sampled_from((None, "0.0", "0.5"))


def command_line(command: str, path: str, out: str, options: dict, common_opts: dict, calibrator: str,
                 gate: str | None) -> list[str]:
    flat = [item for kv in options.items() for item in kv]
    extra = (["--drop-invalid"] if common_opts["drop"] else [])
    if common_opts["mode"] and command in ("ece", "smece", "tcal", "diagram"):
        extra += ["--mode", common_opts["mode"]]
    if command in ("ece", "smece", "tcal"):
        gated = ["--fail-above", gate] if gate is not None and command != "tcal" else []
        return [command, path, *flat, *extra, *gated, "--json", "-o", out]
    if command == "diagram":
        return ["diagram", path, *flat, *extra, "-o", out]
    if command == "fit":
        return ["recalibrate", "fit", path, *flat, *extra, "-o", out]
    if command == "evaluate":
        return ["recalibrate", "evaluate", path, *flat, *extra, "-o", out]
    return ["recalibrate", "apply", calibrator, path, *flat, *extra, "-o", out]


def known_elsewhere(result) -> bool:
    return result.exit_code == 2 and any(f"internal error ({sig}" in result.stderr for sig in KNOWN_ELSEWHERE)


def check_outcome(result, *, gated: bool, out: str) -> None:
    err = result.stderr
    detail = f"exit {result.exit_code}, stderr {err[:500]!r}, exception {result.exception!r}"
    if known_elsewhere(result):
        return
    assert "Traceback" not in err and "internal error" not in err, detail
    if result.exit_code == 0:
        return
    if result.exit_code == 1:
        assert gated, f"exit 1 without a gate: {detail}"
        return
    assert result.exit_code == 2, detail
    assert err.startswith("Error: ") and err.count("\n") == 1 and err.endswith("\n"), detail
    assert not os.path.exists(out), f"an output was written by a failed run: {detail}"


def check_accounting(result, n_rows: int) -> None:
    """Every row is read, and either used or dropped (by one reason)."""
    for entry in json.loads(result.stdout)["files"]:
        described = entry["input"]
        assert described["rows_read"] == n_rows, described
        assert described["rows_used"] + described["rows_dropped"] == described["rows_read"], described
        assert sum(described["dropped_reasons"].values()) == described["rows_dropped"], described


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def calibrator(workdir) -> str:
    path = os.path.join(workdir, "platt.json")
    r = run("recalibrate", "fit", BINARY, "--method", "platt", "-o", path)
    assert r.exit_code == 0, r.stderr
    return path


_counter = iter(range(10**9))


def fuzz_one(command, workdir, calibrator, spec, options, common_opts, gate) -> None:
    index = next(_counter)
    path, n_rows = write_input(workdir, index, spec)
    out = os.path.join(workdir, f"out{index}.{'png' if command == 'diagram' else 'csv' if command == 'apply' else 'json'}")
    args = command_line(command, path, out, options, common_opts, calibrator, gate)
    result = run(*args)
    gated = "--fail-above" in args
    check_outcome(result, gated=gated, out=out)
    if result.exit_code in (0, 1) and "--json" in args:
        check_accounting(result, n_rows)
    os.remove(path)


@pytest.mark.parametrize("command", ["ece", "smece", "tcal", "diagram", "fit", "evaluate", "apply"])
def test_fuzz_every_command(command, workdir, calibrator):
    @SETTINGS
    @given(spec=inputs(), options=OPTIONS[command], common_opts=common, gate=GATE)
    def prop(spec, options, common_opts, gate):
        fuzz_one(command, workdir, calibrator, spec, options, common_opts, gate)

    prop()


@SETTINGS
@given(data=rows)
def test_drop_invalid_accounts_for_every_csv_row(data, workdir):
    """The accounting alone, on more CSVs (a NUL byte, a stray quote, spaces in cells)."""
    index = next(_counter)
    path = os.path.join(workdir, f"rows{index}.csv")
    cells = list(data)
    cells[0] = (cells[0][0] + "\x00", cells[0][1])  # one cell with a NUL byte
    with open(path, "w", newline="") as fh:
        fh.write("prob,label\n" + "".join(f"{p},{y}\n" for p, y in cells))
    result = run("ece", path, "--n-boot", "0", "--drop-invalid", "--json")
    check_outcome(result, gated=False, out=path + ".none")
    if result.exit_code == 0:
        check_accounting(result, len(cells))


def test_cox_fit_on_constant_predictions(tmp_path):
    """Every prediction the same: the Cox slope is not identified, so the report leaves it out and says why
    (it once inverted a singular matrix: internal error); the other metrics are reported."""
    path = tmp_path / "constant.csv"
    path.write_text("prob,label\n0,0\n0,1\n")
    result = run("ece", path, "--n-boot", "0", "--json")
    assert result.exit_code == 0, result.stderr
    problem = json.loads(result.stdout)["files"][0]["problems"][0]
    assert "cox_slope" not in problem["metrics"] and "ece_l1_plugin" in problem["metrics"]
    assert "two distinct predictions" in json.dumps(problem)


def test_bootstrap_of_one_row(tmp_path):
    """A Poisson resample of one row draws no row with probability 1/e: it has no metric values and the
    interval comes from the other resamples (it once failed on the max of an empty array)."""
    path = tmp_path / "one.csv"
    path.write_text("prob,label\n0.1,0\n")
    for command in ("ece", "smece"):
        result = run(command, path, "--n-boot", "5", "--json")
        assert result.exit_code == 0, result.stderr
    metric = json.loads(run("ece", path, "--n-boot", "5", "--json").stdout)["files"][0]["problems"][0]["metrics"]
    # every resample that draws the row (m copies) gives |m 0.1 - 0| / m: 0.1 up to one rounding
    assert metric["ece_l1_plugin"]["ci_low"] == pytest.approx(0.1, rel=1e-15, abs=0)
    assert metric["ece_l1_plugin"]["ci_high"] == pytest.approx(0.1, rel=1e-15, abs=0)


# ---------------------------------------------------------------------------------------------
# The read-ahead thread ends with its pass


def test_reader_thread_ends_when_the_consumer_fails(tmp_path):
    """A consumer that raises at its first batch (a bad option found there) must not leave the read-ahead
    thread reading: a thread still inside pyarrow when the interpreter exits can crash it (the SIGABRT
    of one stdin run in 500). The traceback is kept alive, as the CLI's exception chain keeps it."""
    import threading

    from calibcli.engines.fragments import _stream_into
    from calibcli.io.resolve import resolve_datasets

    path = tmp_path / "many.csv"
    path.write_text("prob,label\n" + "".join(f"{(i % 97) / 97:.4f},{i % 2}\n" for i in range(20_000)))
    (dataset,) = resolve_datasets([str(path)])
    stream = dataset.open(batch_rows=500)

    class Failing:
        def update(self, *args):
            raise RuntimeError("the consumer failed")

    with pytest.raises(RuntimeError) as failure:
        _stream_into(stream.batches(), (), {}, lambda key: Failing())
    assert failure.traceback  # still referenced here
    readers = [t for t in threading.enumerate() if t.name == "calibcli-reader"]
    assert readers == [], "the read-ahead thread outlived the failed pass"


# ---------------------------------------------------------------------------------------------
# Real processes over stdin: no crash, ever


def _stdin_cases(n: int):
    """``n`` small CSVs and option lists, drawn from a seeded generator (some valid, some not, some
    failing in the reducing thread while the reader thread reads ahead: --mode marginal on one column)."""
    import numpy as np

    rng = np.random.default_rng(500)
    cells = ["0.1", "0.9", "0.5", "nan", "2", "", "abc", "0"]
    labels = ["0", "1", "1", "0", "3", "", "x"]
    modes = [[], [], ["--mode", "marginal"], ["--drop-invalid"], ["--mode", "top-label", "--drop-invalid"]]
    for _ in range(n):
        k = int(rng.integers(1, 8))
        text = "prob,label\n" + "".join(f"{rng.choice(cells)},{rng.choice(labels)}\n" for _ in range(k))
        command = ["ece", "smece", "tcal"][int(rng.integers(0, 3))]
        yield command, modes[int(rng.integers(0, len(modes)))], text


@pytest.mark.slow
def test_stdin_runs_never_crash():
    """50 real runs of the installed command over stdin: exit 0 or 2, never a signal (SIGABRT was seen
    once in 500 such runs before the read-ahead thread was made to end with its pass)."""
    exe = [sys.executable, "-m", "calibcli"]
    codes = []
    for command, options, text in _stdin_cases(50):
        args = [*exe, command, "-", "--n-boot", "5", *options]
        proc = subprocess.run(args, input=text.encode(), capture_output=True, timeout=120)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {args} on {text!r}: {err}"
        assert proc.returncode in (0, 2), f"exit {proc.returncode}: {args} on {text!r}: {err}"
        if proc.returncode == 2 and any(f"internal error ({sig}" in err for sig in KNOWN_ELSEWHERE):
            continue  # pinned by its own xfail test above
        assert "Traceback" not in err and "internal error" not in err, err
        if proc.returncode == 2:
            assert err.startswith("Error: ") and err.count("\n") == 1, err
        codes.append(proc.returncode)
    assert 0 in codes and 2 in codes  # both outcomes were exercised
