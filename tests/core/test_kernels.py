"""calibcli.core.compiled: a function compiled on its first call (Numba), not at import; the GIL released, so two
threads run one kernel side by side; the same numbers as the function run by Python; an unreadable cache file
(truncated or corrupted, index or data) compiled again and said once, not an internal error."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np

from _tolerance import assert_within_rule
from calibcli.core.compiled import compiled


def _running_sums(values, out):
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
        out[i] = total


_compiled_sums = compiled(_running_sums)


def test_a_kernel_gives_the_numbers_of_its_python_function():
    values = np.random.default_rng(0).random(1000)
    expected, got = np.empty(1000), np.empty(1000)
    _running_sums(values, expected)
    _compiled_sums(values, got)
    assert_within_rule(got, expected)  # (the same additions in the same order; SPEC 8.1 asks for 1e-12)


def test_two_threads_call_a_kernel_at_once():
    values = np.random.default_rng(1).random(10_000)
    outs = [np.empty(10_000) for _ in range(4)]
    threads = [threading.Thread(target=_compiled_sums, args=(values, out)) for out in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = np.cumsum(values)
    for out in outs:
        assert np.allclose(out, expected, rtol=1e-12)


def test_numba_is_imported_on_the_first_call_not_at_import():
    probe = (
        "import sys, numpy as np\n"
        "from calibcli.core.compiled import compiled\n"
        "def f(x):\n    return x.sum()\n"
        "g = compiled(f)\n"
        "before = 'numba' in sys.modules\n"
        "value = g(np.ones(3))\n"
        "print(before, 'numba' in sys.modules, value)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "3.0"]


def test_the_first_call_does_not_import_scipy_linalg_and_numba_still_compiles_blas_calls():
    # Numba's import-time probe for a BLAS (scipy.linalg's import) is skipped; a kernel that calls one still works
    probe = (
        "import sys, numpy as np\n"
        "from calibcli.core.compiled import compiled\n"
        "def f(x):\n    return x.sum()\n"
        "def g(x):\n    return np.dot(x, x)\n"
        "value = compiled(f)(np.ones(3))\n"
        "import numba.np.arraymath as am\n"
        "print('scipy.linalg' in sys.modules, am._HAVE_BLAS, value)\n"
        "print(compiled(g)(np.ones(3)), 'scipy.linalg' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "3.0", "3.0", "True"]


#: A real kernel (the binned estimators' loop) run in a fresh process whose Numba cache is a folder of the test's.
_PROBE = """
import numpy as np
from calibcli.binned.estimators import _point_metrics
from calibcli.binned.stats import BinStats
rng = np.random.default_rng(0)
w = rng.poisson(5.0, (50, 10)).astype(float)
s = BinStats(w, w, w * 0.4, w * 0.5, w * 0.3, w * 0.2, w * w, w * w * 0.25, w * 0.09)
print(repr(float(_point_metrics(s, s, compiled=True)["ece_l1_plugin"].sum())))
"""


def _probe(cache) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=600)


def test_an_unreadable_cache_file_is_compiled_again_and_said_once(tmp_path):
    cache = tmp_path / "numba-cache"
    first = _probe(cache)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    (index,) = cache.rglob("*binned_metrics*.nbi")
    (data,) = cache.rglob("*binned_metrics*.nbc")
    damages = {
        "truncated index": (index, index.read_bytes()[:30]),
        "empty index": (index, b""),
        "truncated data": (data, data.read_bytes()[:100]),
        "corrupted data": (data, np.random.default_rng(1).bytes(5000)),
    }
    for what, (path, damaged) in damages.items():
        path.write_bytes(damaged)
        again = _probe(cache)
        assert again.returncode == 0, (what, again.stderr)
        assert again.stdout == first.stdout, what
        lines = again.stderr.splitlines()
        assert len(lines) == 1, (what, again.stderr)
        assert lines[0].startswith("Warning: the compiled code cached in ") and "compiling it again" in lines[0], what
        assert "internal error" not in again.stderr and "Traceback" not in again.stderr
        # compiled again and cached afresh: the next process loads it without a word
        after = _probe(cache)
        assert after.returncode == 0 and after.stderr == "" and after.stdout == first.stdout, what


_HELPER = '''from calibcli.core.compiled import inlined


@inlined
def step(x):
    return x + {add}
'''

_KERNEL = '''from calibcli.core.compiled import compiled
from helpers import step


@compiled
def kernel(x):
    return step(x) * 10
'''


def _kernel_runner(tmp_path):
    """A function that runs ``kernels.kernel(1)`` of ``tmp_path`` in a new process (its own Numba disk cache
    there) and returns what it printed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])

    def run() -> str:
        r = subprocess.run(
            [sys.executable, "-c", "from kernels import kernel; print(kernel(1))"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    return run


def test_an_edit_to_a_helper_of_another_file_compiles_its_kernels_again(tmp_path):
    # a kernel calling an inlined helper of another module (calibcli.core.splitmix's draws, called from the
    # Poisson and T-Cal kernels): the kernel's disk cache is keyed by the helper's file, so after an edit to it a
    # new process runs the new helper, not the machine code cached with the old one
    (tmp_path / "kernels.py").write_text(_KERNEL)
    helper = tmp_path / "helpers.py"
    run = _kernel_runner(tmp_path)
    helper.write_text(_HELPER.format(add=1))
    assert run() == "20"
    assert run() == "20" and list((tmp_path / "numba-cache").rglob("*.nbi"))  # (cached, and loaded)
    helper.write_text(_HELPER.format(add=100))
    assert run() == "1010"


_INNER = '''from calibcli.core.compiled import inlined


@inlined
def inner(x):
    return x + {add}
'''

_OUTER = '''from calibcli.core.compiled import inlined
from inner import inner


@inlined
def step(x):
    return inner(x) * 2
'''


def test_a_helper_may_call_a_helper_and_an_edit_to_either_compiles_the_kernel_again(tmp_path):
    # calibcli.core.poisson.poisson_draws (called from the Poisson and the selective kernels) calls splitmix64:
    # the kernel is keyed by the files of the helpers its helpers call, too
    (tmp_path / "kernels.py").write_text(_KERNEL)
    (tmp_path / "helpers.py").write_text(_OUTER)
    inner = tmp_path / "inner.py"
    run = _kernel_runner(tmp_path)
    inner.write_text(_INNER.format(add=1))
    assert run() == "40"
    assert run() == "40" and list((tmp_path / "numba-cache").rglob("*.nbi"))  # (cached, and loaded)
    inner.write_text(_INNER.format(add=100))
    assert run() == "2020"
