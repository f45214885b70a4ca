"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

# A suite started as a background job (`nohup .ci/run &`, a CI runner's non-interactive shell) inherits SIGINT
# ignored, and every process it starts keeps ignoring it, as calibcli rightly does in a background job: the
# Ctrl-C tests would then see runs that cannot be interrupted. The suite runs as it would from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The tests are laid out like the package (tests/binned/, tests/io/, ...); their shared helpers (_cli, _browser,
# _console) sit here, importable as `_cli` from every folder as from this one.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The CLI's tables fit COLUMNS when it is set (calibcli.report.render.terminal_width). pytest-xdist's workers start
# with COLUMNS=80 and LINES=24 in their environment, a serial run in CI with neither; the in-process runs
# must not depend on the caller's terminal, so the suite starts without them (tests that need a width set
# their own).
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures a diagram command renders, caught on their way to ``figure_bytes``."""
    from calibcli.diagram import plot as dg

    caught = []
    render = dg.figure_bytes

    def spy(fig, fmt, **kwargs):
        caught.append(fig)
        return render(fig, fmt, **kwargs)

    monkeypatch.setattr(dg, "figure_bytes", spy)
    return caught
