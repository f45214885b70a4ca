"""Outputs that never destroy data, ``-o -``, closed pipes and interrupts (issue 12), through real
subprocesses of the installed command: ``python -m calibcli``.

What is checked per case: the exit code, stderr (one ``Error:`` line, or nothing for a closed pipe), and
that no file was created or changed that should not be (inputs byte-identical, no ``.calibcli-*``
temporary file, no output file after an interrupt).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests._cli import BINARY

CALIBCLI = [sys.executable, "-m", "calibcli"]


def calibcli(*args, cwd=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*CALIBCLI, *map(str, args)], capture_output=True, cwd=cwd, timeout=120, **kwargs)


def one_error_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert text.count("\n") == 1 and text.startswith("Error: "), text
    assert "Traceback" not in text
    return text.strip()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".calibcli-"))


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "in.csv"
    path.write_bytes(Path(BINARY).read_bytes())
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("fit") / "cal.json"
    r = calibcli("recalibrate", "fit", BINARY, "--method", "platt", "-o", path)
    assert r.returncode == 0, r.stderr
    return path.read_bytes()


@pytest.fixture
def calibrator(tmp_path, fitted) -> Path:
    path = tmp_path / "cal.json"
    path.write_bytes(fitted)
    return path


# ---------------------------------------------------------------------------------------------
# An output that is an input is refused before any work, and the input is left byte for byte


@pytest.mark.parametrize("args, target, what", [
    (["ece", "{in}", "--n-boot", "0", "-o", "{in}"], "{in}", "--output {in} is the input file {in}"),
    (["smece", "{in}", "--n-boot", "0", "-o", "{in}"], "{in}", "--output {in} is the input file {in}"),
    (["tcal", "{in}", "--n-boot", "10", "-o", "{in}"], "{in}", "--output {in} is the input file {in}"),
    (["diagram", "{in}", "-o", "{in}"], "{in}", "--output {in} is the input file {in}"),
    (["recalibrate", "fit", "{in}", "--method", "platt", "-o", "{in}"], "{in}", "--output {in} is the input file {in}"),
    (["recalibrate", "fit", "{in}", "--method", "platt", "-o", "{dir}/new.json", "--report", "{in}"], "{in}",
     "--report {in} is the input file {in}"),
    (["recalibrate", "apply", "{cal}", "{in}", "-o", "{cal}"], "{cal}", "--output {cal} is the calibrator {cal}"),
    (["recalibrate", "apply", "{cal}", "{in}", "-o", "{in}"], "{in}", "--output {in} is the input file {in}"),
    (["recalibrate", "evaluate", "{in}", "--method", "platt", "--holdout", "0.5", "-o", "{in}"], "{in}",
     "--output {in} is the input file {in}"),
    (["recalibrate", "evaluate", "{in}", "--method", "platt", "--fit", "{dir}/fit.csv", "-o", "{dir}/fit.csv"],
     "{dir}/fit.csv", "--output {dir}/fit.csv is the input file {dir}/fit.csv"),
    (["compare", "{in}", "fit.csv", "-o", "fit.csv"], "fit.csv", "--output fit.csv is the input file fit.csv"),
])
def test_output_naming_an_input_is_refused(tmp_path, data, calibrator, args, target, what):
    (tmp_path / "fit.csv").write_bytes(data.read_bytes())
    names = {"in": data.name, "cal": calibrator.name, "dir": "."}
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    r = calibcli(*[a.format(**names) for a in args], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert one_error_line(r.stderr) == f"Error: {what.format(**names)}: name another file"
    assert r.stdout == b""
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing written, nothing changed


def test_output_is_an_input_through_a_link_a_directory_or_a_glob(tmp_path, data):
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "a.csv").write_bytes(data.read_bytes())
    (tmp_path / "alias.csv").symlink_to(data)
    original = data.read_bytes()
    for inputs, output, shown in [
        ([data], tmp_path / "alias.csv", f"{data}"),
        ([shards], shards / "a.csv", f"{shards / 'a.csv'} (in {shards})"),
        ([str(shards / "*.csv")], shards / "a.csv", f"{shards / 'a.csv'} (in {shards / '*.csv'})"),
    ]:
        r = calibcli("ece", *inputs, "--n-boot", "0", "-o", output)
        assert r.returncode == 2, r.stderr
        assert one_error_line(r.stderr) == f"Error: --output {output} is the input file {shown}: name another file"
    assert data.read_bytes() == original and (shards / "a.csv").read_bytes() == original
    assert (tmp_path / "alias.csv").is_symlink()


def test_the_same_file_for_two_outputs_is_refused(tmp_path, data):
    r = calibcli("recalibrate", "fit", data, "--method", "platt", "-o", tmp_path / "c.json", "--report", tmp_path / "c.json")
    assert r.returncode == 2
    assert one_error_line(r.stderr) == f"Error: --report {tmp_path / 'c.json'} is the --output file too: name another file"
    assert not (tmp_path / "c.json").exists()


# ---------------------------------------------------------------------------------------------
# Links, devices and '-'


def test_a_symlink_stays_a_link_and_its_target_gets_the_report(tmp_path, data):
    target = tmp_path / "sub" / "report.json"
    target.parent.mkdir()
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "new.json")
    for output in (link, dangling):
        r = calibcli("ece", data, "--n-boot", "0", "--json", "-o", output)
        assert r.returncode == 0, r.stderr
        assert output.is_symlink()
        assert json.loads(output.read_text()) == json.loads(r.stdout)
    assert json.loads(target.read_text())["command"] == "ece"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file keeps its permissions
    assert (tmp_path / "new.json").is_file()
    assert leftovers(tmp_path) == [] and leftovers(target.parent) == []


def test_recalibrate_apply_writes_through_a_link(tmp_path, data, calibrator):
    target = tmp_path / "rows.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    r = calibcli("recalibrate", "apply", calibrator, data, "-o", link)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink()
    assert target.read_text().startswith("prob,label\n")
    assert len(target.read_text().splitlines()) == len(data.read_text().splitlines())


def test_dash_is_stdout_for_the_json_report_only(tmp_path, data):
    r = calibcli("ece", data, "--n-boot", "0", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # the whole of stdout is the report: no table after it
    assert doc["command"] == "ece" and doc["files"][0]["input"]["rows_used"] == 569
    assert not (tmp_path / "-").exists()
    r = calibcli("recalibrate", "fit", data, "--method", "platt", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["method"] == "platt"
    assert not (tmp_path / "-").exists()


def test_dash_is_stdout_for_a_diagram_png(tmp_path, data):
    r = calibcli("diagram", data, "-o", "-", "--n-boot", "10", "--kind", "binned", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    assert r.stdout.endswith(b"IEND\xaeB`\x82")  # the image and nothing after it
    assert not (tmp_path / "-").exists()


def test_dev_stdout_is_written_through_and_stays_a_link(data):
    was_link = os.path.islink("/dev/stdout")
    r = calibcli("ece", data, "--n-boot", "0", "-o", "/dev/stdout", "--format", "csv")
    assert r.returncode == 0, r.stderr
    report, _, table = r.stdout.decode().partition("\n}\n")
    assert json.loads(report + "\n}")["command"] == "ece"
    assert table.startswith("file,group,problem,metric")
    assert os.path.islink("/dev/stdout") == was_link


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [
    ["ece", "{in}", "--n-boot", "0", "-o", "/dev/full"],
    ["diagram", "{in}", "--n-boot", "0", "--kind", "binned", "-o", "/dev/full"],
    ["recalibrate", "apply", "{cal}", "{in}", "-o", "/dev/full", "--output-format", "csv"],
    ["recalibrate", "fit", "{in}", "--method", "platt", "-o", "/dev/full"],
])
def test_a_full_device_is_an_error(data, calibrator, args):
    r = calibcli(*[a.format(**{"in": data, "cal": calibrator}) for a in args])
    assert r.returncode == 2, r.stderr
    assert one_error_line(r.stderr) == "Error: --output /dev/full: No space left on device"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_write_names_the_option_that_named_the_file(tmp_path, data):
    r = calibcli("recalibrate", "fit", data, "--method", "isotonic", "-o", tmp_path / "cal.json", "--report", "/dev/full")
    assert r.returncode == 2
    assert one_error_line(r.stderr) == "Error: --report /dev/full: No space left on device"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args, message", [
    (["ece", "{in}", "--n-boot", "0", "--json"], "Error: cannot write: No space left on device"),
    (["ece", "{in}", "--n-boot", "0"], "Error: cannot write: No space left on device"),
    (["ece", "{in}", "--n-boot", "0", "-o", "-"], "Error: --output - (standard output): No space left on device"),
])
def test_a_full_stdout_is_an_error(data, args, message):
    with open("/dev/full", "wb") as full:
        r = subprocess.run([*CALIBCLI, *[a.format(**{"in": data}) for a in args]], stdout=full, stderr=subprocess.PIPE,
                           timeout=120)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == message


def test_a_fifo_is_written_straight_to(tmp_path, data):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    r = calibcli("ece", data, "--n-boot", "0", "--format", "csv", "-o", fifo)
    got, _ = reader.communicate(timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(got)["command"] == "ece"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# ---------------------------------------------------------------------------------------------
# A reader of stdout that goes away


@pytest.mark.parametrize("args", [
    ["ece", "{in}", "--n-boot", "0"],
    ["ece", "{in}", "--n-boot", "0", "--json"],
    ["ece", "{in}", "--n-boot", "0", "--format", "csv"],
    ["ece", "{in}", "--n-boot", "0", "-o", "-"],
    ["smece", "{in}", "--n-boot", "0", "--format", "markdown"],
    ["diagram", "{in}", "--n-boot", "0", "--kind", "binned", "-o", "-"],
    ["recalibrate", "apply", "{cal}", "{in}"],
    ["ece", "--help"],
    ["--help"],
    ["--version"],
])
def test_a_closed_pipe_ends_quietly(data, calibrator, args):
    proc = subprocess.Popen([*CALIBCLI, *[a.format(**{"in": data, "cal": calibrator}) for a in args]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before anything is written
    _, err = proc.communicate(timeout=120)
    assert err == b""
    assert proc.returncode == 141


def test_head_of_a_pipe(tmp_path, data):
    """``calibcli ece f | head -1`` through a shell: the first line, quietly, and not the gate's exit 1."""
    many = " ".join([str(data)] * 120)  # a report longer than the pipe's buffer
    r = subprocess.run(f"set -o pipefail; {sys.executable} -m calibcli ece {many} --n-boot 0 --format csv | head -1",
                       shell=True, executable="/bin/bash", capture_output=True, timeout=120)
    assert r.stdout == b"file,group,problem,metric,estimate,ci_low,ci_high,bound\n"
    assert r.stderr == b""
    # 141 when the closed pipe is noticed; 0 when the report went out in one write that the pipe cut
    # short (CPython's buffered writer then reports no error): never the gate's 1 or the error's 2
    assert r.returncode in (0, 141)


# ---------------------------------------------------------------------------------------------
# Interrupts


def _rows_file(path: Path, n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=p.size) < p**1.2).astype(int)
    with open(path, "w") as fh:
        fh.write("prob,label\n")
        np.savetxt(fh, np.column_stack([p, y]), fmt=["%.6f", "%d"], delimiter=",")
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """200,000 rows: every command below runs for well over 5 s with its --n-boot."""
    return _rows_file(tmp_path_factory.mktemp("big") / "big.csv", 200_000, 12)


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> Path:
    """100,000 rows, under the 2^17 rows whose bootstrap resamples every row: ece and diagram resample them
    row by row, so their runs last minutes with the --n-boot below (beyond 2^17 rows the per-bin draws
    take 100,000 resamples in a second or two, and the run would end before the signal)."""
    return _rows_file(tmp_path_factory.mktemp("medium") / "medium.csv", 100_000, 13)


def _reading(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux /proc), i.e. the run has started its work."""
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


#: How long a signalled run may take to end before the test fails: a hung run's bound, not a speed claim (the
#: runs below last minutes without the signal; how fast they stop is measured by the benchmarks' cli.Interrupt).
STOPPED_WITHIN = 60


def interrupt(args: list, signum: int, *, input_path: Path, ready=None) -> tuple[int, bytes]:
    """Start the command, wait for an event that says its run has started, send ``signum``; return the exit code
    and stderr. The event: ``ready()`` when given (polled; a file the run writes); else the input itself, fed
    through the run's stdin (``-``): writing it returns only once the run has read all but a pipe's buffer of it,
    so the handlers are in place, the imports done and the run's reading under way, however loaded the machine.
    No fixed delay decides anything (the poll's bound is a hang's, not a timing)."""
    if ready is None:
        args = ["-" if str(a) == str(input_path) else a for a in args] + ["--input-format", input_path.suffix[1:]]
    proc = subprocess.Popen(
        [*CALIBCLI, *map(str, args)],
        stdin=subprocess.PIPE if ready is None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if ready is not None:
        started = time.monotonic()
        while not ready() and proc.poll() is None and time.monotonic() < started + STOPPED_WITHIN:
            time.sleep(0.002)
    else:
        try:
            proc.stdin.write(input_path.read_bytes())  # returns once the run has consumed (nearly) all of it
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the run ended early: said below
        proc.stdin = None  # (closed: communicate() below has nothing to send)
    assert proc.poll() is None, f"the run ended before the signal: {proc.stderr.read().decode()}"
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=STOPPED_WITHIN)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args[0]} did not stop within {STOPPED_WITHIN} s of the signal")
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


LONG_RUNS = {
    "tcal": ["tcal", "{big}", "--n-boot", "100000", "-o", "{out}"],
    "diagram": ["diagram", "{medium}", "--n-boot", "20000", "-o", "{out}.png"],
    "evaluate": ["recalibrate", "evaluate", "{big}", "--method", "platt", "--holdout", "0.5", "--n-boot", "100000",
                 "-o", "{out}"],
    "ece": ["ece", "{medium}", "--n-boot", "100000", "-o", "{out}"],
    "smece": ["smece", "{big}", "--n-boot", "100000", "-o", "{out}"],
}


@pytest.mark.slow  # about 25 s in all
@pytest.mark.parametrize("name, signum", [
    ("tcal", signal.SIGINT), ("tcal", signal.SIGTERM), ("diagram", signal.SIGINT), ("diagram", signal.SIGTERM),
    ("evaluate", signal.SIGINT), ("evaluate", signal.SIGTERM), ("ece", signal.SIGTERM), ("smece", signal.SIGINT),
])
def test_a_signal_stops_a_long_run(tmp_path, big, medium, name, signum):
    out = tmp_path / "out.json"
    args = [a.format(big=big, medium=medium, out=out) for a in LONG_RUNS[name]]
    code, err = interrupt(args, signum, input_path=medium if "{medium}" in LONG_RUNS[name] else big)
    assert err.decode() == "Error: interrupted\n"
    assert code == 128 + signum
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file


@pytest.fixture(scope="module")
def segmented(tmp_path_factory) -> Path:
    """300,000 rows with 8 segment columns of 5 values: ``audit --depth 4`` forms about 50,000 segments, a run of
    tens of seconds (and half a gigabyte) after its input is read."""
    rng = np.random.default_rng(14)
    n = 300_000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**1.2).astype(int)
    path = tmp_path_factory.mktemp("segmented") / "segmented.csv"
    with open(path, "w") as fh:
        fh.write("prob,label," + ",".join(f"c{i}" for i in range(8)) + "\n")
        np.savetxt(fh, np.column_stack([p, y, rng.integers(0, 5, (n, 8))]), fmt=["%.6f"] + ["%d"] * 9, delimiter=",")
    return path


@pytest.mark.slow
def test_ctrl_c_stops_a_long_audit_with_nothing_written(tmp_path, segmented):
    """Ctrl-C (SIGINT) during a long segment audit: the interrupt's exit code (130) and one line, no traceback, no
    report file nor temporary (the signal comes once the run has read its input through stdin: event-based)."""
    out = tmp_path / "audit.json"
    cols = ",".join(f"c{i}" for i in range(8))
    args = ["audit", segmented, "--segment-cols", cols, "--depth", "4", "-o", out]
    code, err = interrupt(args, signal.SIGINT, input_path=segmented)
    assert err.decode() == "Error: interrupted\n"
    assert code == 128 + signal.SIGINT
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_recalibrate_apply_writing_a_large_file(tmp_path_factory, tmp_path, signum):
    """The streaming writer's temporary file goes with the interrupt; the output never appears."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    data = tmp_path_factory.mktemp("apply") / "huge.csv"
    rng = np.random.default_rng(3)
    p = rng.uniform(size=3_000_000)
    pacsv.write_csv(pa.table({"prob": p, "label": (rng.uniform(size=p.size) < p).astype(np.int64)}), data)
    cal = tmp_path_factory.mktemp("apply-cal") / "cal.json"
    r = calibcli("recalibrate", "fit", BINARY, "--method", "isotonic", "-o", cal)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.parquet"
    # the signal comes while the output is being written: its temporary file is there, the output not yet
    writing = lambda: any(tmp_path.iterdir()) and not out.exists()  # noqa: E731
    code, err = interrupt(["recalibrate", "apply", cal, data, "-o", out], signum, input_path=data, ready=writing)
    assert err.decode() == "Error: interrupted\n"
    assert code == 128 + signum
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_signal_stops_a_dask_run_and_its_local_cluster(tmp_path, medium):
    pytest.importorskip("distributed")
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "out.json"
    # 100,000 rows are resampled row by row on the client after the workers' pass: the run lasts minutes, so the
    # signal, sent once both workers are up, always lands in it (the vectorised per-bin draws of a larger input
    # can finish within seconds)
    proc = subprocess.Popen([*CALIBCLI, "ece", str(medium), "--engine", "dask", "--workers", "2", "--n-boot", "100000",
                             "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    def workers() -> int:
        try:
            return sum("spawn_main" in " ".join(c.cmdline()) for c in psutil.Process(proc.pid).children(recursive=True))
        except psutil.Error:
            return 0

    deadline = time.monotonic() + 90
    while workers() < 2 and proc.poll() is None and time.monotonic() < deadline:  # the cluster's workers start
        time.sleep(0.1)
    assert proc.poll() is None
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=STOPPED_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the Dask run did not stop within {STOPPED_WITHIN} s of the signal")
    assert err.decode().splitlines()[-1] == "Error: interrupted"
    assert "Traceback" not in err.decode()
    assert proc.returncode == 130
    _, alive = psutil.wait_procs(children, timeout=STOPPED_WITHIN)  # a hang's bound: a loaded machine reaps slowly
    assert [c for c in alive if "resource_tracker" not in " ".join(c.cmdline())] == []
    assert list(tmp_path.iterdir()) == []


def _console_script() -> str:
    """The installed ``calibcli`` command (the console script of ``[project.scripts]``), next to this Python."""
    import shutil

    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (Linux /proc: the SigCgt mask). Python catches
    SIGINT from its start, SIGTERM only once calibcli installs its handlers (SIGINT's first)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            mask = next(int(line.split()[1], 16) for line in fh if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("offset", [0.0, 0.05, 0.08, 0.12, 0.2])
def test_a_signal_in_the_first_moments_is_an_interrupt(tmp_path, big, signum, offset):
    """A signal while the CLI is still importing itself and its libraries (typer, numpy, pyarrow: about
    0.1 to 0.3 s) ends the run as one during the work does: ``Error: interrupted``, 128 + the signal, no
    traceback, no output. ``offset`` is from the start of the process, but never before the console script's
    first lines have put the handlers in place (the interpreter's own start, about 0.04 s, is Python's)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs Linux /proc to see when the handlers are in place")
    out = tmp_path / "out.json"
    started = time.monotonic()
    proc = subprocess.Popen([_console_script(), "ece", str(big), "--n-boot", "100000", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while not _catches(proc.pid, signal.SIGTERM) and proc.poll() is None and time.monotonic() < started + 10:
            time.sleep(0.001)
        installed = time.monotonic() - started
        time.sleep(max(0.0, started + offset - time.monotonic()))
        assert proc.poll() is None, f"the run ended before the signal: {proc.stderr.read().decode()}"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    when = f"handlers after {installed:.3f} s, signal after {max(offset, installed):.3f} s"
    assert (proc.returncode, err.decode()) == (128 + signum, "Error: interrupted\n"), when
    assert list(tmp_path.iterdir()) == []


# Runs the console script's entry point with ``--help``, and records, when typer (the CLI's first library)
# is first imported, which handler SIGTERM has and whether numpy was imported.
EARLY_PROBE = """
import json, signal, sys

seen = {}

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "typer" and not seen:
            handler = signal.getsignal(signal.SIGTERM)
            seen.update(handler=getattr(handler, "__module__", "") + "." + getattr(handler, "__name__", str(handler)),
                        numpy="numpy" in sys.modules)
        return None

sys.meta_path.insert(0, Watch())
sys.argv = ["calibcli", "--help"]
from calibcli.cli.entry import main
try:
    main()
except SystemExit as exc:
    seen["code"] = exc.code
seen["numpy_after_help"] = "numpy" in sys.modules
print(json.dumps(seen))
"""


def test_the_console_script_handles_signals_before_importing_the_cli():
    """The entry point of ``[project.scripts]`` installs the handlers before anything heavy is imported (no
    numpy), and ``calibcli --help`` still does not import numpy."""
    import tomllib

    scripts = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["calibcli"] == "calibcli.cli.entry:main"
    r = subprocess.run([sys.executable, "-c", EARLY_PROBE], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {"handler": "calibcli.core.cancel._handler", "numpy": False, "code": 0, "numpy_after_help": False}


def test_an_interrupt_raised_where_it_cannot_propagate_is_delivered_again(capsys):
    """The signal handler's exception can land in a garbage-collector callback or a __del__ (Dask's GC
    diagnostics run one), where Python would print it with a traceback and go on: it is raised again in the
    main thread instead, with nothing printed."""
    from calibcli.core import cancel

    class Dies:
        def __del__(self):
            cancel.request(signal.SIGINT)
            raise cancel.Interrupted(signal.SIGINT)

    cancel.reset()  # a new run: what an earlier in-process run left (a reported interrupt) is forgotten
    cancel.report()  # ... even where it was not: the redelivery must not depend on it
    never = threading.Event()  # nothing sets it: the wait ends by the redelivered interrupt, whatever the load
    # A test run started as a background job (`nohup .ci/run &`) inherits SIGINT ignored, which
    # handling_signals rightly keeps ignored; this test is about the redelivery, so it asks for SIGINT itself.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with cancel.handling_signals():
            with pytest.raises(cancel.Interrupted) as caught:
                obj = Dies()
                del obj  # the exception in __del__ goes to sys.unraisablehook
                for _ in range(12_000):  # short waits (a simulated signal wakes no blocking wait) until the
                    never.wait(0.01)  # watchdog's redelivery is raised; 120 s at least: a hang's bound only
        assert caught.value.signum == signal.SIGINT
        assert "Exception ignored" not in capsys.readouterr().err
    finally:
        cancel.reset()
        signal.signal(signal.SIGINT, inherited)
