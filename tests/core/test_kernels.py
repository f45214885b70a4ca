"""calibcli.core.compiled: a function compiled on its first call (Numba), not at import; the GIL released, so two
threads run one kernel side by side; the same numbers as the function run by Python."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from calibcli.core.compiled import compiled, inlined
from calibcli.smooth.kernels import _pairwise_sum


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
    assert np.array_equal(got, expected)  # the same additions in the same order: bit for bit


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


@inlined
def _doubled(x):
    return x + x


def _sum_doubled(values):
    total = 0.0
    for i in range(values.shape[0]):
        total += _doubled(values[i])
    return total


_compiled_sum_doubled = compiled(_sum_doubled)


def test_an_inlined_helper_of_the_kernels_file_is_compiled_into_them():
    values = np.random.default_rng(2).random(100)
    assert _compiled_sum_doubled(values) == _sum_doubled(values)


def _uses_a_helper_from_another_file(values, stack_start, stack_n, stack_phase, partial):
    return _pairwise_sum(values, 0, values.shape[0], stack_start, stack_n, stack_phase, partial)


def test_a_helper_from_another_file_is_refused():
    # Numba's disk cache checks only the kernel's own file: a helper elsewhere could run stale machine code
    kernel = compiled(_uses_a_helper_from_another_file)
    scratch = [np.zeros(64, dtype=np.int64) for _ in range(3)] + [np.zeros(64)]
    with pytest.raises(RuntimeError, match="must sit in its file"):
        kernel(np.ones(10), *scratch)
