"""The environment variables a run reads (calibcli.core.environment): bad values are one Error line, the debug switch
reads the usual words, matplotlib prints nothing with a home that cannot be written, and a run without Numba's
compiler (NUMBA_DISABLE_JIT=1) still stops on a signal."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from calibcli.core import cancel, compiled, environment
from calibcli.core.errors import CalibcliError
from tests._cli import BINARY, run


@pytest.mark.parametrize("word", ["", "0", "no", "No", "false", "FALSE", "off", " 0 ", "n", "f"])
def test_calibcli_debug_words_that_mean_off(monkeypatch, word):
    monkeypatch.setenv("CALIBCLI_DEBUG", word)
    assert not environment.debugging()


@pytest.mark.parametrize("word", ["1", "yes", "true", "on", "2"])
def test_calibcli_debug_words_that_mean_on(monkeypatch, word):
    monkeypatch.setenv("CALIBCLI_DEBUG", word)
    assert environment.debugging()


def test_calibcli_debug_no_gives_the_error_line_not_a_traceback(monkeypatch, tmp_path):
    monkeypatch.setenv("CALIBCLI_DEBUG", "no")
    r = run("ece", str(tmp_path / "missing.csv"))
    assert r.exit_code == 2
    assert r.stderr == f"Error: {tmp_path / 'missing.csv'}: no such file: check the path\n"


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("NUMBA_NUM_THREADS", "abc", "a positive number of threads, e.g. NUMBA_NUM_THREADS=2"),
        ("NUMBA_NUM_THREADS", "0", "a positive number of threads, e.g. NUMBA_NUM_THREADS=2"),
        ("NUMBA_NUM_THREADS", "", "a positive number of threads, e.g. NUMBA_NUM_THREADS=2"),
        ("NUMBA_DISABLE_JIT", "yes", "0 or 1"),
        ("NUMBA_OPT", "fast", "0, 1, 2, 3 or max"),
    ],
)
def test_a_numba_variable_numba_cannot_parse_is_one_error_line(monkeypatch, name, value, expected):
    monkeypatch.setenv(name, value)
    r = run("ece", BINARY, "--n-boot", "0")
    assert r.exit_code == 2
    assert r.stderr == f"Error: the environment variable {name} is {value!r}: expected {expected} (or unset it)\n"
    assert r.stdout == ""
    with pytest.raises(CalibcliError, match=name):
        compiled._jit(lambda: None)  # the library's first compile checks them too, before importing Numba


@pytest.mark.parametrize("value", ["1", "4", " 2 "])
def test_numba_variables_numba_parses_are_accepted(monkeypatch, value):
    monkeypatch.setenv("NUMBA_NUM_THREADS", value)
    environment.check_numba()


def test_a_home_that_cannot_be_written_prints_nothing_from_matplotlib(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env["HOME"] = "/dev/null"  # not a directory: matplotlib's default config directory cannot be made
    out = tmp_path / "d.png"
    r = subprocess.run(
        [sys.executable, "-m", "calibcli", "diagram", BINARY, "-o", str(out), "--kind", "binned", "--n-boot", "0"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert out.stat().st_size > 0


def test_matplotlib_directory_left_alone_when_writable_or_chosen(monkeypatch, tmp_path):
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    environment.prepare_matplotlib()
    assert "MPLCONFIGDIR" not in os.environ
    monkeypatch.setenv("XDG_CONFIG_HOME", "/dev/null")
    environment.prepare_matplotlib()
    chosen = os.environ["MPLCONFIGDIR"]
    assert os.path.isdir(chosen) and os.access(chosen, os.W_OK)
    environment.prepare_matplotlib()  # set: kept
    assert os.environ["MPLCONFIGDIR"] == chosen


def test_a_kernel_run_as_python_stops_at_its_next_line_after_a_signal():
    """NUMBA_DISABLE_JIT=1: the kernel's loop is Python in a worker thread, which no signal reaches; it stops once
    the run is asked to stop. The test waits on the loop's own event, never on a delay."""
    started = threading.Event()

    def endless(flag):
        i = 0
        while True:  # a kernel's loop, as slow as Python makes it
            i += 1
            if i == 1000:
                flag.set()

    kernel = compiled._stoppable(endless)
    raised: list[BaseException] = []

    def work():
        try:
            kernel(started)
        except BaseException as exc:  # noqa: BLE001 - what the worker ended with is the point
            raised.append(exc)

    cancel.reset()
    worker = threading.Thread(target=work)
    worker.start()
    try:
        started.wait()
        cancel.request()
        worker.join()
    finally:
        cancel.reset()
    assert len(raised) == 1 and isinstance(raised[0], cancel.Interrupted)


def test_without_the_compiler_the_kernel_is_the_stoppable_python_function(monkeypatch):
    import numba

    monkeypatch.setattr(numba.config, "DISABLE_JIT", 1)

    def add(a, b):
        return a + b

    kernel = compiled._jit(add)
    assert kernel(2, 3) == 5
    assert kernel.__wrapped__ is add
