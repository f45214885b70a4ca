"""A grouped run whose size selects the compiled loops, run end to end with the compiler off (NUMBA_DISABLE_JIT=1:
the kernels run as Python, a debugging run): the same report as the compiled run, and as NumPy's backends, within
the tolerance rule (1e-12 relative, SPEC 8.1; issue 33)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _tolerance import ATOL, RTOL

ROOT = Path(__file__).resolve().parents[2]

#: The run, as `calibcli ece FILE --group-by g ...` in a fresh process. ``lowered``: the size thresholds of the
#: compiled loops (the grouped bootstrap's draws, the batched estimators' values) brought down to this small file,
#: so both are chosen as a file of about 10^8 draws would choose them, in seconds even as Python; the modules the run
#: loaded are written to ``modules`` (whether Numba ran it).
PROBE = """
import json, sys
modules, lowered, *args = sys.argv[1:]
if lowered == "1":
    import calibcli.binned.bootstrap, calibcli.binned.estimators
    calibcli.binned.bootstrap._COMPILED_DRAWS = 1
    calibcli.binned.estimators.COMPILED_MIN_VALUES = 1
sys.argv = ["calibcli", *args]
from calibcli.cli.entry import main
try:
    main()
except SystemExit as stop:
    code = stop.code
json.dump(sorted(sys.modules), open(modules, "w"))
sys.exit(code)
"""


def _run(tmp_path, path, *, lowered: bool, jit: bool) -> tuple[dict, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    if not jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    modules = tmp_path / f"modules-{lowered}-{jit}.json"
    args = ["ece", str(path), "--group-by", "g", "--n-boot", "200", "--seed", "3", "--json"]
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(modules), "1" if lowered else "0", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout), json.loads(modules.read_text())


def _assert_same(got, want, where="$"):
    """The two reports equal, their floats within the rule (NaN where NaN), everything else exactly."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), where
        for key in want:
            _assert_same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_same(a, b, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, (int, float)), where
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=where)
    else:
        assert got == want, where


@pytest.mark.slow
def test_a_grouped_run_without_the_compiler_gives_the_compiled_runs_numbers(tmp_path):
    rng = np.random.default_rng(21)
    groups, per_group = 60, 40  # many groups of few rows: every group's bins resampled by the grouped bootstrap
    p = rng.uniform(size=groups * per_group)
    y = (rng.uniform(size=p.size) < p**1.2).astype(int)
    path = tmp_path / "groups.csv"
    with open(path, "w") as fh:
        fh.write("prob,label,g\n")
        np.savetxt(fh, np.column_stack([p, y, np.repeat(np.arange(groups), per_group)]), fmt=["%.6f", "%d", "g%d"],
                   delimiter=",")  # fmt: skip
    compiled, loaded = _run(tmp_path, path, lowered=True, jit=True)
    assert "numba" in loaded  # the compiled loops ran
    python, _ = _run(tmp_path, path, lowered=True, jit=False)
    numpy_backends, loaded = _run(tmp_path, path, lowered=False, jit=True)
    assert "numba" not in loaded  # (a run this small stays on NumPy's forms)
    assert len(compiled["files"]) == groups  # one entry per group
    _assert_same(python, compiled)
    _assert_same(numpy_backends, compiled)
