"""Compiled loops, for the few computations whose NumPy form costs a pass over memory per operation.

A bootstrap over groups or a T-Cal null distribution makes 10^9 draws at 10^6 rows and 1000 replicates. Each
draw takes a dozen integer operations and feeds a handful of sums; as NumPy array operations every one of those
is a pass over a block of draws, and the passes, not the arithmetic, set the time. Written as one loop and
compiled (Numba, https://numba.pydata.org), a draw is made, used and forgotten in registers: the same
numbers, from the same operations in the same order, at a fraction of the passes.

:func:`compiled` compiles a function on its first call (not at import: start-up does not pay for Numba), with
the GIL released (the bootstrap's threads run side by side) and the machine code cached on disk beside the
source, so a later process loads it rather than compiling it again.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from calibcli.core import cancel
from calibcli.core.environment import check_numba

F = TypeVar("F", bound=Callable[..., Any])

_LOCK = threading.Lock()


def compiled(function: F) -> F:
    """``function`` compiled by Numba (``nopython``, GIL released, bounds unchecked, cached on disk) on its first
    call. The function must be written in the subset of Python and NumPy that Numba compiles, and whole: it
    cannot call another function wrapped here (that is a Python function until its first call), so a kernel's
    loop stays in one function."""
    state: dict[str, Any] = {}

    @functools.wraps(function)
    def call(*args: Any) -> Any:
        kernel = state.get("kernel")
        if kernel is None:
            with _LOCK:  # two threads' first calls compile once
                kernel = state.get("kernel")
                if kernel is None:
                    kernel = state["kernel"] = _jit(function)
        return kernel(*args)

    return call  # type: ignore[return-value]


def inlined(function: F) -> F:
    """Mark ``function`` as a piece of loop that the kernels of its own module call: compiled into each of them
    (Numba inlines it) when the first is compiled, plain Python until then.

    It must sit in the same file as the kernels calling it (checked when they compile): Numba's disk cache checks
    only a kernel's own file, so after an edit to a helper in another file a kernel would go on running the
    machine code of the helper's old version."""
    function._calibcli_inlined = True  # type: ignore[attr-defined]
    return function


def _stoppable(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` as plain Python (``NUMBA_DISABLE_JIT=1``: a debugging run) that stops at its next line once a
    signal has asked the run to stop (:func:`calibcli.core.cancel.check`, from a line trace of this thread): a
    compiled kernel's loop runs for minutes in Python, in threads that a signal does not reach."""
    import sys

    def trace(frame, event, arg):
        cancel.check()  # raises Interrupted in the traced frame
        return trace

    @functools.wraps(function)
    def run(*args: Any) -> Any:
        before = sys.gettrace()
        sys.settrace(trace)
        try:
            return function(*args)
        finally:
            sys.settrace(before)

    return run


def _jit(function: Callable[..., Any]) -> Any:
    """Numba's dispatcher of ``function``, caching its machine code on disk when a cache directory can be
    written (beside the source, or the user's cache directory); compiled in every process otherwise. The
    :func:`inlined` helpers it calls are compiled first, in their place in its module. The ``NUMBA_*`` variables
    are checked first (:func:`calibcli.core.environment.check_numba`); with ``NUMBA_DISABLE_JIT=1`` the kernel is
    the Python function, run so that a signal stops it (:func:`_stoppable`)."""
    check_numba()
    import numba

    if getattr(numba.config, "DISABLE_JIT", 0):  # set from the environment when Numba is imported
        return _stoppable(function)

    names = function.__globals__
    for name in function.__code__.co_names:  # the globals the kernel names
        value: Any = names.get(name)
        if not getattr(value, "_calibcli_inlined", False) or isinstance(value, numba.core.dispatcher.Dispatcher):
            continue
        if value.__code__.co_filename != function.__code__.co_filename:
            raise RuntimeError(
                f"{value.__qualname__} is inlined into {function.__qualname__}, so it must sit in its file"
            )
        names[name] = numba.njit(value, inline="always", nogil=True, boundscheck=False, error_model="numpy")

    try:
        return numba.njit(function, cache=True, nogil=True, boundscheck=False, error_model="numpy")
    except RuntimeError:  # no cache directory can be written: compile in each process instead
        return numba.njit(function, nogil=True, boundscheck=False, error_model="numpy")
