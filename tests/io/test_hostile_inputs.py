"""Hostile inputs through every command (issue 12, "Bars"): generated, not stored.

Each case writes a damaged or odd input (truncated, corrupt, empty, header only, wrong types, nested or
string lists, out-of-range values, non-UTF-8 bytes, a JSON document nested 100,000 deep, a 100,000-character
column name), or passes an extreme option value, or names a path that is not a readable file (a symbolic
link loop, a dangling link, a directory of files without extensions), and runs a command on it in process.
Whatever the case, the run must end the same way: exit code 2, exactly one ``Error: ...`` line on stderr that
names the file or the option, no traceback, no "internal error", and no output file (nor a temporary one)
left behind.

The fast group covers every corruption of every format through ``ece`` plus a spread of cases through
every other command; the full cross product (every corruption x format x command) is marked slow.
"""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from _cli import BINARY, run

N_ROWS = 60
_rng = np.random.default_rng(12)
PROBS = np.round(_rng.uniform(0.02, 0.98, N_ROWS), 4)
LABELS = (_rng.uniform(size=N_ROWS) < PROBS).astype(np.int64)

# ---------------------------------------------------------------------------------------------
# Writers: a table of columns to a file of each format


FORMATS = ("csv", "tsv", "csv.gz", "parquet", "feather", "jsonl", "jsonl.gz")
TEXT = ("csv", "tsv", "csv.gz")
JSON = ("jsonl", "jsonl.gz")
BINARY_FORMATS = ("parquet", "feather")


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer() is False:
        return repr(v)
    return str(v)


def _text_bytes(columns: dict, sep: str) -> bytes:
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    lines = [sep.join(names)] + [sep.join(_cell(columns[c][i]) for c in names) for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def _jsonl_bytes(columns: dict) -> bytes:
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    rows = [
        json.dumps(
            {
                c: (None if isinstance(columns[c][i], float) and np.isnan(columns[c][i]) else columns[c][i])
                for c in names
            }
        )
        for i in range(n)
    ]
    return ("\n".join(rows) + "\n").encode() if rows else b""


def table_bytes(columns: dict, fmt: str, types: dict | None = None) -> bytes:
    """``columns`` (name -> list of Python values) as the bytes of a file of ``fmt``."""
    if fmt in ("csv", "csv.gz", "tsv"):
        data = _text_bytes(columns, "\t" if fmt == "tsv" else ",")
        return gzip.compress(data, mtime=0) if fmt.endswith(".gz") else data
    if fmt in JSON:
        data = _jsonl_bytes(columns)
        return gzip.compress(data, mtime=0) if fmt.endswith(".gz") else data
    arrays = {c: pa.array(v, type=(types or {}).get(c)) for c, v in columns.items()}
    table = pa.table(arrays)
    sink = pa.BufferOutputStream()
    if fmt == "parquet":
        pq.write_table(table, sink)
    else:
        feather.write_feather(table, sink)
    return sink.getvalue().to_pybytes()


def good_columns() -> dict:
    return {"prob": [float(p) for p in PROBS], "label": [int(y) for y in LABELS]}


# ---------------------------------------------------------------------------------------------
# Corruptions: name -> (formats it applies to, function(fmt) -> bytes, needs_labels)
# ``needs_labels``: the damage is in the labels, which ``recalibrate apply`` does not read.


def _truncated(fmt: str) -> bytes:
    data = table_bytes(good_columns(), fmt)
    if fmt in ("csv", "tsv"):  # cut inside a row, before its separator: a row of one cell
        sep = b"\t" if fmt == "tsv" else b","
        return data[: data.index(sep, len(data) // 2)]
    if fmt == "jsonl":  # cut inside a record
        return data[: data.index(b'"label"', len(data) // 2)]
    return data[: len(data) // 2]


def _garbage(fmt: str) -> bytes:
    noise = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    if fmt.endswith(".gz"):  # gzip magic, then noise: a corrupt compressed stream
        return b"\x1f\x8b\x08\x00" + noise
    if fmt == "parquet":  # the magic at both ends, noise between
        return b"PAR1" + noise + b"PAR1"
    if fmt == "feather":
        return b"ARROW1\x00\x00" + noise
    return noise


def _header_only(fmt: str) -> bytes:
    empty = {"prob": [], "label": []}
    return table_bytes(empty, fmt, {"prob": pa.float64(), "label": pa.int64()})


def _wrong_types(fmt: str) -> bytes:
    return table_bytes({"prob": ["high", "low"] * (N_ROWS // 2), "label": [int(y) for y in LABELS]}, fmt)


def _list_of_strings(fmt: str) -> bytes:
    return table_bytes({"prob": [["a", "b"]] * N_ROWS, "label": [int(y) for y in LABELS]}, fmt)


def _nested_lists(fmt: str) -> bytes:
    return table_bytes({"prob": [[[0.2, 0.8]]] * N_ROWS, "label": [int(y) for y in LABELS]}, fmt)


def _all_nan(fmt: str) -> bytes:
    return table_bytes({"prob": [float("nan")] * N_ROWS, "label": [int(y) for y in LABELS]}, fmt)


def _out_of_range(fmt: str) -> bytes:
    cols = good_columns()
    cols["prob"][N_ROWS // 2] = 1.5
    return table_bytes(cols, fmt)


def _bad_label(fmt: str) -> bytes:
    cols = good_columns()
    cols["label"][3] = 7
    return table_bytes(cols, fmt)


def _no_label_column(fmt: str) -> bytes:
    return table_bytes({"prob": [float(p) for p in PROBS], "truth": [int(y) for y in LABELS]}, fmt)


def _non_utf8_cell(fmt: str) -> bytes:
    data = table_bytes(good_columns(), fmt.replace(".gz", ""))
    at = data.index(b"\n", len(data) // 2) + 1  # the first cell of a row in the middle: a probability
    data = data[:at] + b"0.\xe95" + data[at + 1 :]
    return gzip.compress(data, mtime=0) if fmt.endswith(".gz") else data


def _deep_json(fmt: str) -> bytes:
    depth = 100_000
    data = b'{"prob": ' + b"[" * depth + b"]" * depth + b', "label": 1}\n'
    return gzip.compress(data, mtime=0) if fmt.endswith(".gz") else data


def _long_column_name(fmt: str) -> bytes:  # no recognisable column: the message lists the names
    return table_bytes({"x" * 100_000: [float(p) for p in PROBS], "truth": [int(y) for y in LABELS]}, fmt)


def _duplicate_columns(fmt: str) -> bytes:
    text = "prob,prob,label\n" + "".join(f"{p},{p},{y}\n" for p, y in zip(PROBS, LABELS))
    return text.replace(",", "\t").encode() if fmt == "tsv" else text.encode()


def _empty(fmt: str) -> bytes:
    return b""


CORRUPTIONS = {
    "empty": (FORMATS, _empty, False),
    "truncated": (FORMATS, _truncated, False),
    "garbage": (FORMATS, _garbage, False),
    "header-only": (TEXT + BINARY_FORMATS, _header_only, False),
    "wrong-types": (FORMATS, _wrong_types, False),
    "list-of-strings": (BINARY_FORMATS + JSON, _list_of_strings, False),
    "nested-lists": (("parquet",) + JSON, _nested_lists, False),
    "all-nan": (FORMATS, _all_nan, False),
    "out-of-range": (FORMATS, _out_of_range, False),
    "bad-label": (FORMATS, _bad_label, True),
    "no-label-column": (FORMATS, _no_label_column, True),
    "non-utf8-cell": (("csv", "csv.gz", "tsv"), _non_utf8_cell, False),
    "deep-json": (JSON, _deep_json, False),
    "long-column-name": (("csv", "parquet", "jsonl"), _long_column_name, True),
    "duplicate-columns": (("csv", "tsv"), _duplicate_columns, False),
}

ALL_CASES = [(name, fmt) for name, (fmts, _, _) in CORRUPTIONS.items() for fmt in fmts]

# ---------------------------------------------------------------------------------------------
# Commands: how each is called on one input, and where it writes


COMMANDS = ("ece", "smece", "tcal", "diagram", "fit", "evaluate", "apply")


def command_args(command: str, path: str, out: str, calibrator: str | None = None) -> list[str]:
    """The arguments of ``command`` on ``path`` writing to ``out`` (the report, the figure, the calibrator
    or the rows)."""
    if command in ("ece", "smece"):
        return [command, path, "--n-boot", "0", "-o", out]
    if command == "tcal":
        return ["tcal", path, "--n-boot", "20", "-o", out]
    if command == "diagram":
        return ["diagram", path, "--n-boot", "0", "-o", out]
    if command == "fit":
        return ["recalibrate", "fit", path, "--method", "platt", "-o", out]
    if command == "evaluate":
        return ["recalibrate", "evaluate", path, "--method", "platt", "--holdout", "0.5", "--n-boot", "20", "-o", out]
    assert command == "apply"
    return ["recalibrate", "apply", calibrator, path, "-o", out]


def out_name(command: str) -> str:
    return {"diagram": "out.png", "apply": "out.csv"}.get(command, "out.json")


@pytest.fixture(scope="module")
def calibrator(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("calibrator") / "platt.json"
    r = run("recalibrate", "fit", BINARY, "--method", "platt", "-o", path)
    assert r.exit_code == 0, r.stderr
    return str(path)


def assert_rejected(result, workdir, out: str, names: list[str]) -> None:
    """Exit 2; stderr exactly one line ``Error: ...`` naming one of ``names`` (the file or the option),
    no traceback, no internal error; no output file and no temporary file beside it."""
    err = result.stderr
    detail = f"exit {result.exit_code}, stderr {err[:600]!r}, exception {result.exception!r}"
    assert result.exit_code == 2, detail
    assert err.startswith("Error: ") and err.endswith("\n") and err.count("\n") == 1, detail
    assert "Traceback" not in err and "Traceback" not in result.stdout, detail
    assert "internal error" not in err, detail
    assert any(name in err for name in names), f"names none of {names}: {detail}"
    assert len(err) < 2000, f"a {len(err)}-character error line"
    assert not os.path.exists(out), detail
    leftovers = [
        p for p in os.listdir(workdir) if p.startswith(os.path.basename(out).split(".")[0] + ".") or ".tmp" in p
    ]
    assert leftovers == [], f"left behind: {leftovers}"


def write_case(tmp_path, name: str, fmt: str) -> str:
    _, make, _ = CORRUPTIONS[name]
    path = tmp_path / f"input.{fmt}"
    path.write_bytes(make(fmt))
    return str(path)


def check_case(tmp_path, command: str, name: str, fmt: str, calibrator: str) -> None:
    _, _, needs_labels = CORRUPTIONS[name]
    if command == "apply" and needs_labels:
        pytest.skip("recalibrate apply does not read labels")
    data = tmp_path / "data"
    data.mkdir()
    path = write_case(data, name, fmt)
    work = tmp_path / "work"
    work.mkdir()
    out = str(work / out_name(command))
    result = run(*command_args(command, path, out, calibrator))
    assert_rejected(result, work, out, [path])


# ---------------------------------------------------------------------------------------------
# Every corruption of every format, through ece (fast); through every command (slow)


@pytest.mark.parametrize(("name", "fmt"), ALL_CASES, ids=[f"{n}-{f}" for n, f in ALL_CASES])
def test_corrupt_input_through_ece(tmp_path, name, fmt, calibrator):
    check_case(tmp_path, "ece", name, fmt, calibrator)


#: A spread of cases for the other commands in the fast group: one per kind of damage, formats rotating.
SPREAD = [
    ("truncated", "parquet"),
    ("garbage", "csv.gz"),
    ("header-only", "feather"),
    ("wrong-types", "jsonl"),
    ("list-of-strings", "parquet"),
    ("nested-lists", "jsonl"),
    ("all-nan", "csv"),
    ("out-of-range", "tsv"),
    ("bad-label", "feather"),
    ("non-utf8-cell", "csv"),
    ("deep-json", "jsonl"),
    ("long-column-name", "csv"),
    ("empty", "parquet"),
]
OTHER = [c for c in COMMANDS if c != "ece"]


@pytest.mark.parametrize("command", OTHER)
@pytest.mark.parametrize(("name", "fmt"), SPREAD, ids=[f"{n}-{f}" for n, f in SPREAD])
def test_corrupt_input_through_every_command(tmp_path, command, name, fmt, calibrator):
    check_case(tmp_path, command, name, fmt, calibrator)


@pytest.mark.slow
@pytest.mark.parametrize("command", OTHER)
@pytest.mark.parametrize(("name", "fmt"), ALL_CASES, ids=[f"{n}-{f}" for n, f in ALL_CASES])
def test_every_corruption_through_every_command(tmp_path, command, name, fmt, calibrator):
    check_case(tmp_path, command, name, fmt, calibrator)


# ---------------------------------------------------------------------------------------------
# Paths that are not readable files


def _symlink_loop(d) -> str:
    os.symlink(d / "b.csv", d / "a.csv")
    os.symlink(d / "a.csv", d / "b.csv")
    return str(d / "a.csv")


def _dangling_link(d) -> str:
    os.symlink(d / "gone.csv", d / "link.csv")
    return str(d / "link.csv")


def _extensionless_directory(d) -> str:
    shards = d / "shards"
    shards.mkdir()
    (shards / "part-00000").write_bytes(table_bytes(good_columns(), "csv"))
    return str(shards)


def _empty_directory(d) -> str:
    (d / "nothing").mkdir()
    return str(d / "nothing")


def _missing(d) -> str:
    return str(d / "missing.csv")


def _unknown_extension(d) -> str:
    (d / "preds.xlsx").write_bytes(table_bytes(good_columns(), "csv"))
    return str(d / "preds.xlsx")


def _through_a_file(d) -> str:
    (d / "plain.csv").write_bytes(table_bytes(good_columns(), "csv"))
    return str(d / "plain.csv" / "inner.csv")


PATHS = {
    "symlink-loop": _symlink_loop,
    "dangling-link": _dangling_link,
    "extensionless-directory": _extensionless_directory,
    "empty-directory": _empty_directory,
    "missing": _missing,
    "unknown-extension": _unknown_extension,
    "through-a-file": _through_a_file,
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", list(PATHS))
def test_unreadable_path(tmp_path, command, case, calibrator):
    data = tmp_path / "data"
    data.mkdir()
    path = PATHS[case](data)
    work = tmp_path / "work"
    work.mkdir()
    out = str(work / out_name(command))
    result = run(*command_args(command, path, out, calibrator))
    assert_rejected(result, work, out, [path])


def test_messages_say_what_is_wrong(tmp_path):
    """The wording of the cases whose messages were misleading before (issue 12)."""
    data = tmp_path / "data"
    data.mkdir()
    expected = {
        (
            "list-of-strings",
            "parquet",
        ): "column 'prob' holds lists of strings; expected numbers (one probability per row)",
        ("nested-lists", "jsonl"): "column 'prob' holds lists of lists of numbers; expected numbers",
        ("deep-json", "jsonl"): "a JSON document nests deeper than 512 levels (line 1, byte 520)",
        ("non-utf8-cell", "csv"): "is not UTF-8 text",
        ("long-column-name", "csv"): "... (100000 characters)",
    }
    for (name, fmt), words in expected.items():
        path = write_case(data, name, fmt)
        result = run("ece", path, "--n-boot", "0")
        assert result.exit_code == 2 and result.stderr.startswith(f"Error: {path}: ") and words in result.stderr, (
            result.stderr
        )
    loop = _symlink_loop(data)
    assert (
        run("ece", loop).stderr
        == f"Error: {loop}: is a loop of symbolic links (they lead back to each other, not to a file): check them with ls -l\n"
    )
    shards = _extensionless_directory(data)
    err = run("ece", shards).stderr
    assert err.startswith(
        f"Error: {shards}: is a directory without prediction files (1 other file(s), such as 'part-00000')"
    )
    assert err.endswith("or pass --input-format to read all 1 file(s) in that format\n")


def test_the_cases_that_were_errors_now_read(tmp_path):
    """A non-UTF-8 byte in a header column the command does not use, and a directory of extensionless
    files with --input-format, are read (they were errors)."""
    data = tmp_path / "data"
    data.mkdir()
    text = "caf\xe9,prob,label\n" + "".join(f"{i},{p},{y}\n" for i, (p, y) in enumerate(zip(PROBS, LABELS)))
    (data / "latin1.csv").write_bytes(text.encode("latin-1"))
    r = run("ece", data / "latin1.csv", "--n-boot", "0", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_used"] == N_ROWS
    shards = _extensionless_directory(data)
    r = run("ece", shards, "--input-format", "csv", "--n-boot", "0", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_read"] == N_ROWS


# ---------------------------------------------------------------------------------------------
# Extreme option values: the message names the option


GOOD = {}


@pytest.fixture(scope="module")
def good_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("good") / "good.csv"
    path.write_bytes(table_bytes(good_columns(), "csv"))
    return str(path)


OPTION_CASES = {
    "ece": [
        ("--n-bins", "0"),
        ("--n-bins", "99999999999999999999"),
        ("--alpha", "nan"),
        ("--alpha", "2"),
        ("--n-boot", "-1"),
        ("--batch-rows", "0"),
        ("--fail-above", "nan"),
        ("--strategy", "best"),
    ],
    "smece": [("--alpha", "inf"), ("--n-boot", "-5"), ("--batch-rows", "-1"), ("--fail-above", "nan")],
    "tcal": [("--alpha", "0"), ("--n-boot", "-1"), ("--batch-rows", "0")],
    "diagram": [("--n-bins", "0"), ("--dpi", "-3"), ("--kind", "pie"), ("--batch-rows", "0")],
    "fit": [("--n-bins", "0"), ("--clip", "nan"), ("--max-rows", "0")],
    "evaluate": [("--holdout", "1.5"), ("--n-boot", "-1"), ("--alpha", "nan")],
    "apply": [("--batch-rows", "0"), ("--output-format", "xls")],
}
OPTION_PARAMS = [(c, flag, value) for c, cases in OPTION_CASES.items() for flag, value in cases]


@pytest.mark.parametrize(("command", "flag", "value"), OPTION_PARAMS, ids=[f"{c}{f}={v}" for c, f, v in OPTION_PARAMS])
def test_extreme_option_values(tmp_path, good_file, calibrator, command, flag, value):
    out = str(tmp_path / out_name(command))
    result = run(*command_args(command, good_file, out, calibrator), flag, value)
    assert_rejected(result, tmp_path, out, [flag])


# ---------------------------------------------------------------------------------------------
# Outputs that would destroy an input


@pytest.mark.parametrize("command", ["ece", "smece", "tcal", "fit"])
def test_output_naming_the_input_is_refused(tmp_path, command, calibrator):
    path = tmp_path / "in.csv"
    original = table_bytes(good_columns(), "csv")
    path.write_bytes(original)
    result = run(*command_args(command, str(path), str(path), calibrator))
    assert result.exit_code == 2 and result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, (
        result.stderr
    )
    assert str(path) in result.stderr
    assert path.read_bytes() == original


# ---------------------------------------------------------------------------------------------
# Pipes, one-row files and the first bad row


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="process substitution needs bash")
@pytest.mark.parametrize("fmt", ["csv", "parquet", "csv.gz"])
def test_process_substitution_is_read_as_a_stream(tmp_path, fmt, calibrator):
    """``calibcli ece <(cat f)`` names /dev/fd/N, a pipe without an extension: it is copied once and its
    format told by its first bytes, as for stdin; ``recalibrate apply`` too. Real shells, real pipes."""
    import shlex
    import subprocess
    import sys

    path = tmp_path / f"preds.{fmt}"
    path.write_bytes(table_bytes(good_columns(), fmt))
    exe = f"{shlex.quote(sys.executable)} -m calibcli"
    pipe = f"<(cat {shlex.quote(str(path))})"
    proc = subprocess.run(
        ["/bin/bash", "-c", f"{exe} ece {pipe} --n-boot 0 --json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    script = f"{exe} recalibrate apply {shlex.quote(calibrator)} {pipe} -o {shlex.quote(str(tmp_path / 'out.csv'))}"
    applied = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr
    assert doc["files"][0]["input"]["path"].startswith("/dev/fd/")
    assert doc["files"][0]["input"]["rows_used"] == N_ROWS
    assert (tmp_path / "out.csv").read_text().count("\n") == N_ROWS + 1


def test_tcal_on_one_row_names_the_file(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("prob,label\n0.3,1\n")
    result = run("tcal", path, "--discrete", "no", "-o", tmp_path / "out.json")
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}: T-Cal needs at least 2 predictions, got 1\n"
    assert not (tmp_path / "out.json").exists()


def test_first_bad_row_in_file_order_is_reported(tmp_path):
    """Row 2's label is bad, row 3's probability is out of range, row 4's is empty: without --drop-invalid
    the message is about row 2 (whichever check each row fails); with it, all three are dropped."""
    path = tmp_path / "bad.csv"
    path.write_text("prob,label\n0.1,0\n0.3,x\n1.5,1\n,1\n0.8,1\n")
    result = run("ece", path, "--n-boot", "0")
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {path}: row 2, column label: label in column 'label' is not one of the 2 classes "
        f"(found 'x'; classes: ['0', '1']); 1 such row(s): fix the file or pass --drop-invalid to drop them\n"
    )
    doc = json.loads(run("ece", path, "--n-boot", "0", "--drop-invalid", "--json").stdout)["files"][0]["input"]
    assert (doc["rows_read"], doc["rows_used"], doc["rows_dropped"]) == (5, 2, 3)
    assert doc["dropped_reasons"] == {
        "empty probability cell": 1,
        "probability outside [0, 1]": 1,
        "label outside the classes": 1,
    }


@pytest.mark.parametrize("flag", ["--label-col", "--prob-col", "--weight-col", "--group-by"])
def test_long_option_values_are_cut_in_messages(tmp_path, good_file, flag):
    """A 100,000-character value quoted in a message is cut to about 80 characters and its length."""
    out = tmp_path / "out.json"
    result = run("ece", good_file, "--n-boot", "0", flag, "z" * 100_000, "-o", out)
    assert_rejected(result, tmp_path, str(out), [good_file])
    assert "... (100000 characters)" in result.stderr and len(result.stderr) < 600, result.stderr


# ---------------------------------------------------------------------------------------------
# Columns whose values cannot name a group or a segment (issue 33): one Error line naming the column and its type

_NESTED = {
    "lst": (pa.array([[i % 3] for i in range(N_ROWS)]), "list<element: int64>"),
    "st": (pa.array([{"a": i % 3} for i in range(N_ROWS)]), "struct<a: int64>"),
    "raw": (pa.array([bytes([i % 3, 255]) for i in range(N_ROWS)]), "binary"),
}


@pytest.mark.parametrize("column", sorted(_NESTED))
@pytest.mark.parametrize(
    ("command", "option", "verb"),
    [("audit", "--segment-cols", "segment"), ("ece", "--group-by", "group"), ("diagram", "--group-by", "group")],
)
def test_a_nested_or_binary_column_cannot_group_or_segment(tmp_path, column, command, option, verb):
    values, type_name = _NESTED[column]
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"prob": PROBS, "label": LABELS, column: values}), path)
    out = ["-o", str(tmp_path / "d.png")] if command == "diagram" else ["--n-boot", "0"] if command == "ece" else []
    r = run(command, path, "--prob-col", "prob", "--label-col", "label", option, column, *out)
    assert r.exit_code == 2, r.stderr
    assert r.stderr == (
        f"Error: {path}: column {column!r} (given by {option}) holds {type_name} values, which cannot {verb} rows: "
        "name a column of text, numbers, booleans or dates (flatten or convert this one first)\n"
    )
    assert not (tmp_path / "d.png").exists()
