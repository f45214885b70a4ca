"""Start-up: ``calibcli --help`` (issue 13's 0.15 s bar) and a command's help, beside a bare interpreter's start,
and issue 37's first run after a fresh install (the compiled loops' one-time compilation).

Ported from ``bench_startup.py`` (its ``--before DIR`` is ``asv continuous main HEAD``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

from . import _common


def _quiet(*argv: str) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Help:
    """Fresh processes of the installed console script (what a user types), stdout to /dev/null. On a busy machine
    every figure grows by the same factor: compare ``calibcli --help`` with ``python -c pass`` too."""

    number = 1
    repeat = (5, 10, 20.0)
    warmup_time = 0

    def time_python_floor(self):
        _quiet(sys.executable, "-c", "pass")

    def time_import_typer(self):
        _quiet(sys.executable, "-c", "import typer")

    def time_import_cli_app(self):
        _quiet(sys.executable, "-c", "import calibcli.cli.app")

    def time_help(self):
        """``calibcli --help``. Bar (issue 13): under 0.15 s."""
        _quiet(_common.calibcli(), "--help")

    def time_ece_help(self):
        _quiet(_common.calibcli(), "ece", "--help")


def clear_installed_cache() -> int:
    """Remove the Numba cache files (``*.nbi``, ``*.nbc``) beside the installed calibcli's modules, when calibcli is
    installed in an environment's site-packages (asv's), never in a checkout; returns how many went."""
    spec = importlib.util.find_spec("calibcli")
    if spec is None or spec.origin is None or "site-packages" not in spec.origin:
        return 0
    removed = 0
    for pattern in ("*.nbi", "*.nbc"):
        for path in Path(spec.origin).parent.rglob(pattern):
            path.unlink()
            removed += 1
    return removed


class FirstRun:
    """Issue 37's bar: the first grouped run after a fresh install against the second. The installed package's
    Numba cache is cleared and ``NUMBA_CACHE_DIR`` points at a fresh folder, so the first ``ece --group-by g``
    (1,000 groups, 1e6 rows) compiles every loop it calls and the second, the same command, loads them."""

    timeout = 1200

    def setup_cache(self):
        path = str(_common.rows(1e6))
        clear_installed_cache()
        with tempfile.TemporaryDirectory() as cache:
            env = {"NUMBA_CACHE_DIR": cache}
            first = _common.run("ece", path, "--group-by", "g", env=env)
            second = _common.run("ece", path, "--group-by", "g", env=env)
        return {**_common.record("first run", {"first": first, "second": second}), "load": _common.load()}

    track_bar_first_run_wall, track_bar_first_run_cpu = _common.ratio_bars(
        "first_run",
        "first",
        "second",
        what="the first grouped run after a fresh install / the second",
        unit="x second run",
        bar=1.5,
    )
