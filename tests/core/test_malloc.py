"""The allocator settings a command applies to its own process (calibcli/core/malloc.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from calibcli.core import malloc as _malloc


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_applied_once_and_never_over_the_users_choice(monkeypatch):
    for name in _malloc.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_malloc, "_done", False)
    assert _malloc.tune_allocator() is True
    assert _malloc.tune_allocator() is False  # once per process
    monkeypatch.setattr(_malloc, "_done", False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert _malloc.tune_allocator() is False  # the user's variable wins


def test_the_dask_workers_get_the_same_settings():
    from calibcli.engines.dask import WORKER_MALLOC

    assert WORKER_MALLOC == {name: str(value) for name, value in _malloc.SETTINGS.items()}


def test_help_does_not_load_ctypes():
    code = "import sys; from calibcli.cli.app import main; sys.argv = ['calibcli', '--help']\n" \
           "try:\n    main()\nexcept SystemExit:\n    pass\nprint('ctypes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip().splitlines()[-1] == "False"
