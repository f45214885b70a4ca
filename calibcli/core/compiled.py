"""Compiled loops, for the few computations whose NumPy form costs a pass over memory per operation.

A bootstrap over groups or a T-Cal null distribution makes 10^9 draws at 10^6 rows and 1000 replicates. Each
draw takes a dozen integer operations and feeds a handful of sums; as NumPy array operations every one of those
is a pass over a block of draws, and the passes, not the arithmetic, set the time. Written as one loop and
compiled (Numba, https://numba.pydata.org), a draw is made, used and forgotten in registers.

A compiled loop is one backend of a computation whose NumPy form is the reference: where the size of the work
chooses between them, the two are tested against each other within 1e-12 relative (SPEC 8.1, "How it is
computed" in docs/computed.md). A loop sums in its own plain order; it does not reproduce NumPy's.

:func:`compiled` compiles a function on its first call (not at import: start-up does not pay for Numba), with
the GIL released (the bootstrap's threads run side by side) and the machine code cached on disk beside the
source, so a later process loads it rather than compiling it again. A kernel may call the pieces of loop marked
:func:`inlined` (compiled into it), and they each other: Numba's disk cache checks only the kernel's own source
file, so the kernel's cache is keyed by the helpers' files too. A cache file that cannot be read (truncated,
corrupted) is removed and the kernel compiled again, said once on stderr.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from calibcli.core import cancel
from calibcli.core.environment import check_numba
from calibcli.core.errors import warn

F = TypeVar("F", bound=Callable[..., Any])

_LOCK = threading.Lock()
_SAID = {"recompiled": False}  # the note on an unreadable cache, said once per process


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
        try:
            return kernel(*args)  # (the first call with a signature compiles it, or loads it from the cache)
        except Exception as error:
            if not _raised_by_the_cache(error):
                raise
            with _LOCK:
                if state["kernel"] is kernel:
                    state["kernel"] = _without_unreadable_cache(function, kernel, error)
                kernel = state["kernel"]
        return kernel(*args)

    return call  # type: ignore[return-value]


def inlined(function: F) -> F:
    """Mark ``function`` as a piece of loop that :func:`compiled` kernels call (of any module): Numba compiles it
    into each of them (inlined) when the kernel is compiled; it is plain Python until then, and where Numba is off.
    The kernel's disk cache is keyed by the helper's source file as well as its own, so an edit to the helper
    compiles its callers again (Numba alone would go on loading their old machine code)."""
    function._calibcli_inlined = True  # type: ignore[attr-defined]
    return function


def _helpers(function: Callable[..., Any], numba: Any) -> list[str]:
    """The :func:`inlined` helpers ``function`` names, and those they name in turn, compiled in place in their
    modules' globals (once each); returns their source files."""
    names = function.__globals__
    files = []
    for name in function.__code__.co_names:
        value = names.get(name)
        helper: Any = getattr(value, "_calibcli_python", value)
        if not getattr(helper, "_calibcli_inlined", False) or helper is function:
            continue
        files.append(helper.__code__.co_filename)
        files.extend(_helpers(helper, numba))
        if value is helper:
            jitted = numba.njit(helper, inline="always", nogil=True, boundscheck=False, error_model="numpy")
            jitted._calibcli_python = helper
            names[name] = jitted
    return files


def _keyed_by(kernel: Any, files: list[str]) -> None:
    """Key ``kernel``'s disk cache by ``files`` (their modification times and sizes) beside its own source."""
    cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
    if cache_file is None or not files:
        return
    stamps = []
    for path in sorted(set(files)):
        st = os.stat(path)
        stamps.append((path, st.st_mtime, st.st_size))
    cache_file._source_stamp = (cache_file._source_stamp, tuple(stamps))


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


def _jit(function: Callable[..., Any], cache: bool = True) -> Any:
    """Numba's dispatcher of ``function``, caching its machine code on disk when a cache directory can be
    written (beside the source, or the user's cache directory) and ``cache``; compiled in every process otherwise.
    The ``NUMBA_*`` variables are checked first (:func:`calibcli.core.environment.check_numba`); with
    ``NUMBA_DISABLE_JIT=1`` the kernel is the Python function, run so that a signal stops it (:func:`_stoppable`)."""
    check_numba()
    numba = _import_numba()
    if getattr(numba.config, "DISABLE_JIT", 0):  # set from the environment when Numba is imported
        return _stoppable(function)
    files = _helpers(function, numba)
    if cache:
        try:
            kernel = numba.njit(function, cache=True, nogil=True, boundscheck=False, error_model="numpy")
        except RuntimeError:  # no cache directory can be written: compile in each process instead
            pass
        else:
            _keyed_by(kernel, files)
            return kernel
    return numba.njit(function, nogil=True, boundscheck=False, error_model="numpy")


def _import_numba() -> Any:
    """Numba, with its array functions loaded without their import-time probe for a BLAS.

    ``numba.np.arraymath`` (which the first kernel call loads) imports ``scipy.linalg.cython_blas`` once at import
    to learn whether ``np.dot`` and ``np.linalg`` can be compiled, and scipy.linalg's import is about a fifth of a
    second of CPU, more than any kernel here takes on a small input (none of them calls a BLAS). scipy is one of
    calibcli's requirements, so the answer is known: the probe is skipped (Numba records that a BLAS is there),
    and Numba's own check still runs, importing scipy.linalg, when some kernel that does call a BLAS is compiled."""
    import numba

    if "numba.np.arraymath" in sys.modules or importlib.util.find_spec("scipy") is None:
        return numba
    try:
        import numba.np.linalg as linalg

        probe = linalg.ensure_blas
    except (ImportError, AttributeError):  # (another Numba than the one this was written against)
        return numba

    def known() -> None:
        return None

    linalg.ensure_blas = known
    try:
        import numba.np.arraymath as arraymath
    finally:
        linalg.ensure_blas = probe
    if getattr(arraymath, "ensure_blas", None) is known:  # (the module took the name at its import)
        arraymath.ensure_blas = probe
    return numba


def _raised_by_the_cache(error: BaseException) -> bool:
    """Whether ``error`` came out of Numba's on-disk cache (reading an index or a data file), not the kernel."""
    tail = os.path.join("numba", "core", "caching.py")
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(tail):
            return True
        tb = tb.tb_next
    return False


def _without_unreadable_cache(function: Callable[..., Any], kernel: Any, error: Exception) -> Any:
    """A new dispatcher of ``function`` after its cache files failed to load (``error``): the function's index
    and data files removed, so that it compiles again and caches afresh (or, when they cannot be removed, compiles
    without the cache). Said once per process on stderr."""
    files = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
    index = getattr(files, "_index_path", None)
    removed = index is not None
    if index is not None:
        folder, prefix = os.path.split(index)
        prefix = prefix[: -len(".nbi")]
        try:
            for name in os.listdir(folder):
                if name == prefix + ".nbi" or (name.startswith(prefix + ".") and name.endswith(".nbc")):
                    os.remove(os.path.join(folder, name))
        except OSError:
            removed = False
    if not _SAID["recompiled"]:
        _SAID["recompiled"] = True
        where = os.path.dirname(index) if index else "Numba's cache"
        warn(
            f"the compiled code cached in {where} could not be read ({type(error).__name__}): compiling it again"
            + ("" if removed else " in this process (the unreadable files could not be removed)")
        )
    return _jit(function, cache=removed)
