"""Issue 24, through real runs of the installed ``calibcli`` console script: outputs that resolve to this
process's own descriptors are written to them (never renamed over), outputs that would become part of an input
dataset are refused, a dataset's members are checked by type before they are opened, and blocking opens and
reads of standard input or a named pipe end with ``Error: interrupted`` on SIGINT and SIGTERM.

Every error case checks the exit code 2, stderr as one exact ``Error:`` line, and that nothing was written or
changed. The signal tests wait on events (the process blocked in the kernel's FIFO open, a temporary file
growing), never on fixed sleeps or wall-clock bounds; the subprocess timeouts only stop a hung run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._cli import BINARY

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="descriptors, FIFOs and /proc as on Linux")


def _console_script() -> str:
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


def calibcli(*args, cwd=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([_console_script(), *map(str, args)], capture_output=True, cwd=cwd, timeout=120, **kwargs)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` through bash, with ``calibcli`` the installed console script."""
    return subprocess.run(command.replace("calibcli ", f"'{_console_script()}' "), shell=True, executable="/bin/bash",
                          capture_output=True, cwd=cwd, timeout=120)


def one_error_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert text.count("\n") == 1 and text.startswith("Error: "), text
    return text.rstrip("\n")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (links as their targets' text), to check that nothing changed."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = b"-> " + os.readlink(p).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
        elif not p.is_dir():
            out[rel] = b"special"
    return out


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "in.csv"
    path.write_bytes(Path(BINARY).read_bytes())
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fit") / "cal.json"
    r = calibcli("recalibrate", "fit", BINARY, "--method", "platt", "-o", path)
    assert r.returncode == 0, r.stderr
    return path


# ---------------------------------------------------------------------------------------------
# Outputs that are this process's stdout, stderr or another descriptor


EARLIER = "an earlier line of the log\n"


@pytest.mark.parametrize("output, redirect", [
    ("/dev/stdout", ">> run.log"),
    ("/proc/self/fd/1", ">> run.log"),
    ("/dev/fd/1", ">> run.log"),
    ("run.log", ">> run.log"),  # the same file as stdout, by its own name
    ("link.json", ">> run.log"),  # a link of the user's own to /dev/stdout
    ("/dev/stderr", "2>> run.log >/dev/null"),
    ("/dev/fd/3", "3>> run.log >/dev/null"),
    ("/proc/self/fd/3", "3>> run.log >/dev/null"),
])
def test_an_output_that_is_a_descriptor_is_appended_to_not_replaced(tmp_path, data, output, redirect):
    """``calibcli ece f -o /dev/stdout >> run.log`` keeps the log's earlier lines: the report is written to the
    descriptor at its offset (append mode), not renamed over the file the descriptor points to."""
    (tmp_path / "run.log").write_text(EARLIER)
    (tmp_path / "link.json").symlink_to("/dev/stdout")
    r = shell(f"calibcli ece in.csv --n-boot 0 -o {output} {redirect}", tmp_path)
    assert r.returncode == 0, r.stderr
    log = (tmp_path / "run.log").read_text()
    assert log.startswith(EARLIER)
    report = json.JSONDecoder().raw_decode(log[len(EARLIER):])[0]
    assert report["command"] == "ece" and report["files"][0]["input"]["rows_used"] == 569
    assert stat.S_ISREG(os.lstat(tmp_path / "run.log").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "link.json", "run.log"]  # no temporary file left


def test_every_output_of_a_command_goes_to_the_descriptor(tmp_path, data):
    """``recalibrate fit`` writes a calibrator and a report; both to descriptors, the files kept."""
    (tmp_path / "cal.log").write_text(EARLIER)
    (tmp_path / "report.log").write_text(EARLIER)
    r = shell("calibcli recalibrate fit in.csv --method platt -o /dev/fd/3 --report /dev/fd/4 3>>cal.log 4>>report.log",
              tmp_path)
    assert r.returncode == 0, r.stderr
    for name, key in (("cal.log", "calibrator"), ("report.log", "command")):
        text = (tmp_path / name).read_text()
        assert text.startswith(EARLIER)
        assert key in json.loads(text[len(EARLIER):])


def test_recalibrated_rows_and_a_diagram_go_to_the_descriptor(tmp_path, data, fitted):
    (tmp_path / "rows.log").write_text(EARLIER)
    r = shell(f"calibcli recalibrate apply '{fitted}' in.csv --output-format csv -o /dev/stdout >> rows.log", tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "rows.log").read_text().splitlines()
    assert lines[0] == EARLIER.strip() and lines[1].startswith("prob,label")
    assert all(len(line.split(",")) == 2 for line in lines[2:2 + 569])  # (the command's summary line follows)
    (tmp_path / "plot.log").write_bytes(b"earlier bytes\n")
    r = shell("calibcli diagram in.csv --n-boot 0 --kind binned -o /dev/stdout >> plot.log", tmp_path)
    assert r.returncode == 0, r.stderr
    got = (tmp_path / "plot.log").read_bytes()
    assert got.startswith(b"earlier bytes\n\x89PNG\r\n\x1a\n") and b"IEND\xaeB`\x82" in got  # (the table follows)


def test_a_descriptor_open_for_reading_only_is_refused(tmp_path, data):
    (tmp_path / "run.log").write_text(EARLIER)
    r = shell("calibcli ece in.csv --n-boot 0 -o /dev/fd/3 3< run.log", tmp_path)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == "Error: --output /dev/fd/3: descriptor 3 is open for reading only: name another file"
    assert (tmp_path / "run.log").read_text() == EARLIER


# ---------------------------------------------------------------------------------------------
# Outputs that would become part of an input dataset


@pytest.fixture
def preds(tmp_path, data) -> Path:
    folder = tmp_path / "preds"
    (folder / "day=1").mkdir(parents=True)
    for name in ("a.csv", "b.csv"):
        (folder / name).write_bytes(data.read_bytes())
    (folder / "day=1" / "c.csv").write_bytes(data.read_bytes())
    return folder


@pytest.mark.parametrize("args, message", [
    (["recalibrate", "apply", "{cal}", "preds/*.csv", "-o", "preds/out.csv"],
     "--output preds/out.csv is matched by the input pattern 'preds/*.csv': it would become one of its files "
     "(read by the next run): write it elsewhere, or narrow the pattern"),
    (["recalibrate", "apply", "{cal}", "preds/**/*.csv", "-o", "preds/day=1/out.csv"],
     "--output preds/day=1/out.csv is matched by the input pattern 'preds/**/*.csv': it would become one of its "
     "files (read by the next run): write it elsewhere, or narrow the pattern"),
    (["ece", "preds", "--n-boot", "0", "-o", "preds/x.csv"],
     "--output preds/x.csv is inside the input directory preds: it would become one of its files (read by the "
     "next run): write it outside preds"),
    (["ece", "preds", "--n-boot", "0", "-o", "preds/day=2/x.parquet"],
     "--output preds/day=2/x.parquet is inside the input directory preds: it would become one of its files (read "
     "by the next run): write it outside preds"),
    (["ece", "alias", "--n-boot", "0", "-o", "preds/x.jsonl"],  # the directory through a link to it
     "--output preds/x.jsonl is inside the input directory alias: it would become one of its files (read by the "
     "next run): write it outside alias"),
    (["ece", "in.csv", "preds", "--n-boot", "0", "--json", "-o", "out.json", "--format", "csv"], None),
    (["recalibrate", "fit", "preds", "--method", "platt", "-o", "c.json", "--report", "preds/r.tsv"],
     "--report preds/r.tsv is inside the input directory preds: it would become one of its files (read by the "
     "next run): write it outside preds"),
    (["diagram", "preds/*.csv", "--n-boot", "0", "--kind", "binned", "-o", "preds/d.png"], None),
])
def test_an_output_inside_an_input_dataset_is_refused(tmp_path, preds, fitted, args, message):
    (tmp_path / "alias").symlink_to("preds")
    before = snapshot(tmp_path)
    r = calibcli(*[a.format(cal=fitted) for a in args], cwd=tmp_path)
    if message is None:  # not part of the dataset: an ordinary run (a .png is not a format read as data)
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2, r.stderr
    assert one_error_line(r.stderr) == f"Error: {message}"
    assert r.stdout == b""
    assert snapshot(tmp_path) == before


def test_outputs_beside_a_dataset_or_hidden_in_it_are_written(tmp_path, preds):
    """Hidden and ``_``-prefixed names are never part of a dataset; a sibling folder is not the folder."""
    (tmp_path / "preds2").mkdir()
    for output in ("preds/.report.csv", "preds/_out/x.csv", "preds2/x.csv"):
        (tmp_path / output).parent.mkdir(exist_ok=True)
        r = calibcli("ece", "preds", "--n-boot", "0", "-o", output, cwd=tmp_path)
        assert r.returncode == 0, (output, r.stderr)
        assert json.loads((tmp_path / output).read_text())["command"] == "ece"


def test_a_directory_read_whole_refuses_any_file_in_it(tmp_path, data):
    """A directory of files without a known extension is read whole with --input-format: any name joins it."""
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-00000").write_bytes(data.read_bytes())
    r = calibcli("ece", "parts", "--input-format", "csv", "--n-boot", "0", "-o", "parts/report", cwd=tmp_path)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == ("Error: --output parts/report is inside the input directory parts: it would "
                                        "become one of its files (read by the next run): write it outside parts")
    assert sorted(p.name for p in parts.iterdir()) == ["part-00000"]


# ---------------------------------------------------------------------------------------------
# A dataset's members are regular files, checked before any is opened


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


@pytest.mark.parametrize("make, kind", [
    (_fifo, "a named pipe (FIFO)"),
    (_socket, "a socket"),
    (lambda p: p.symlink_to("/dev/zero") or p, "a character device (a link to /dev/zero)"),
    (lambda p: p.symlink_to("missing.csv") or p, None),
])
@pytest.mark.parametrize("how", ["directory", "glob"])
def test_a_member_that_is_not_a_regular_file_is_refused_by_type(tmp_path, data, make, kind, how):
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "a.csv").write_bytes(data.read_bytes())
    make(folder / "b.csv")
    arg = "shards" if how == "directory" else "shards/*.csv"
    before = snapshot(tmp_path)
    for command in (["ece", arg, "--n-boot", "0"], ["recalibrate", "fit", arg, "--method", "platt", "-o", "c.json"]):
        r = calibcli(*command, cwd=tmp_path)  # a run that opened the member would block, or read for ever
        assert r.returncode == 2, r.stderr
        if kind is None:
            expected = (f"Error: shards/b.csv (in {arg}): is a symbolic link to 'missing.csv', which does not exist: "
                        f"fix or remove the link")
        else:
            expected = (f"Error: shards/b.csv (in {arg}): is {kind}, not a regular file: the files of a directory or "
                        f"a pattern are read as data; move it out of {arg}")
        assert one_error_line(r.stderr) == expected
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_a_device_named_as_the_input_is_refused(tmp_path, path, kind):
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    r = calibcli("ece", path, "--n-boot", "0", cwd=tmp_path)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == (f"Error: {path}: is {kind}, not a file of predictions: name a regular file, "
                                        f"a directory of them, a pipe, or '-' for standard input")


def test_a_pipe_named_as_the_input_is_still_read(tmp_path, data):
    """Process substitution (``<(cmd)``, a pipe behind /dev/fd/N) and /dev/stdin stay inputs."""
    r = shell("calibcli ece <(cat in.csv) --n-boot 0 --json", tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_used"] == 569
    r = shell("cat in.csv | calibcli ece /dev/stdin --n-boot 0 --json", tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_used"] == 569


# ---------------------------------------------------------------------------------------------
# Blocking opens and endless reads end on SIGINT and SIGTERM


def _wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` holds (polling); fail if the process ends first. The timeout only stops a
    test whose event never comes: the assertion is on the event, not on the time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {what}: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no sign of {what} in {timeout:.0f} s")
        time.sleep(0.01)


def _blocked_opening_a_fifo(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "wait_for_partner"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", [
    ["ece", "{fifo}", "--n-boot", "0"],
    ["recalibrate", "apply", "{cal}", "{fifo}", "-o", "{out}"],
])
def test_a_signal_ends_a_run_blocked_opening_a_named_pipe(tmp_path, fitted, signum, command):
    """A named pipe given as the input with no writer blocks the open in the kernel: the signal ends it."""
    if not os.path.exists("/proc/self/wchan"):
        pytest.skip("needs /proc/<pid>/wchan to see the run blocked in the open")
    fifo = _fifo(tmp_path / "preds.csv")
    args = [a.format(fifo=fifo, cal=fitted, out=tmp_path / "out.csv") for a in command]
    proc = subprocess.Popen([_console_script(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _blocked_opening_a_fifo(proc.pid), proc, "the open of the named pipe")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, err.decode(), out) == (128 + signum, "Error: interrupted\n", b"")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.csv"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_an_endless_read_of_standard_input(tmp_path, signum):
    """``calibcli ece - < /dev/zero`` copies standard input as it comes: the copy grows until the signal, then
    the run ends and the copy is removed."""
    spool = tmp_path / "tmp"
    spool.mkdir()

    def copying() -> bool:
        for p in spool.iterdir():
            try:
                if p.stat().st_size > 1 << 22:
                    return True
            except FileNotFoundError:  # Python's tempfile probes TMPDIR with a file it removes at once
                continue
        return False

    with open("/dev/zero", "rb") as zero:
        proc = subprocess.Popen([_console_script(), "ece", "-", "--n-boot", "0"], stdin=zero, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(spool)})
        try:
            _wait_for(copying, proc, "the copy of standard input growing")
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert (proc.returncode, err.decode(), out) == (128 + signum, "Error: interrupted\n", b"")
    assert list(spool.iterdir()) == []
