"""Cancellation: SIGINT and SIGTERM stop any run within a fraction of a second.

One process-wide flag, set by the signal handler that :func:`handling_signals` installs around a
command. The main thread gets :class:`Interrupted` (a :class:`KeyboardInterrupt`) at once, from the
handler; worker threads (thread pools of the T-Cal resampler and of the diagrams, the batch reader)
cannot receive signals, so every long loop calls :func:`check` once per resample or chunk and stops
there. Pools are shut down with their queued work cancelled (:func:`shutdown_now`), so nothing keeps
the interpreter alive after the main thread has gone (Python joins pool threads at exit).

Python's own advice on signals and threads: https://docs.python.org/3/library/signal.html
("Python signal handlers are always executed in the main Python thread").
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypedDict

_requested = threading.Event()


class _State(TypedDict, total=False):
    signal: int  # the signal that asked the run to stop (0: none)
    at: float  # when (time.monotonic())
    reported: bool
    redeliver: bool  # an interrupt waits to be raised again (_unraisable)
    watchdog: int  # the generation whose redelivering thread is running (-1: none)
    generation: int  # bumped by reset(): a watchdog of an earlier generation stops at its next look
    in_hook: bool


_state: _State = {"signal": 0, "at": 0.0, "reported": False}

#: After the first signal, further ones are ignored for this long (the run is cleaning up: temporary
#: files are being removed); a signal after that ends the process at once.
GRACE_SECONDS = 1.0


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the shell's: 128 + the signal number."""

    def __init__(self, signum: int = signal.SIGINT):
        self.signum = int(signum)
        super().__init__(f"interrupted by {signal.Signals(self.signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def requested() -> bool:
    """Whether a signal asked the run to stop."""
    return _requested.is_set()


def signal_number() -> int:
    """The signal that asked the run to stop (SIGINT when none did)."""
    return _state["signal"] or int(signal.SIGINT)


def check() -> None:
    """Raise :class:`Interrupted` if a signal asked the run to stop (cheap: call it once per resample)."""
    if _requested.is_set():
        raise Interrupted(signal_number())


def request(signum: int = signal.SIGINT) -> None:
    """Ask every loop to stop (what the signal handler does, besides raising in the main thread)."""
    if not _requested.is_set():
        _state["signal"], _state["at"] = int(signum), time.monotonic()
        _requested.set()


def reset() -> None:
    """Forget an earlier request (a new command starts)."""
    _requested.clear()
    _state["signal"], _state["at"], _state["reported"] = 0, 0.0, False
    _state["redeliver"] = False
    _state["generation"] = _state.get("generation", 0) + 1  # an earlier run's watchdog stops, touching nothing


def report() -> None:
    """Say ``Error: interrupted`` on stderr, once however many layers see the interrupt."""
    import sys

    _state["redeliver"] = False  # the interrupt has arrived: nothing is left to deliver again
    if not _state["reported"]:
        _state["reported"] = True
        sys.stderr.write("Error: interrupted\n")


def exit_code(exc: BaseException) -> int:
    """The exit code of an interruption: 128 + its signal (130 for Ctrl-C, 143 for SIGTERM)."""
    return getattr(exc, "exit_code", 128 + signal.SIGINT)


def end(exc: BaseException) -> None:
    """End an interrupted run now: ``Error: interrupted`` (once) and the interruption's exit code."""
    report()
    exit_now(exit_code(exc))


def _handler(signum, frame) -> None:
    if _state.get("in_hook"):
        return  # inside _unraisable: its watchdog delivers the signal again once the hook has returned
    if _state.get("redeliver"):  # the first one landed where it could not propagate: raise it again here
        _state["redeliver"] = False
        raise Interrupted(signum)
    if _requested.is_set():
        if time.monotonic() - _state["at"] < GRACE_SECONDS:
            return  # cleaning up after the first signal: let it finish
        os._exit(128 + int(signum))  # asked again: stop now
    request(signum)
    raise Interrupted(signum)


def _unraisable(args, *, previous) -> None:
    """``sys.unraisablehook`` while signals are handled: an :class:`Interrupted` raised by the handler inside a
    garbage-collector callback or a ``__del__`` (Dask's GC diagnostics run such callbacks) cannot propagate
    there, and Python would print it with a traceback and carry on. Instead it is delivered to the main thread
    again, at its next instruction, with nothing printed."""
    if isinstance(args.exc_value, Interrupted):
        _state["in_hook"] = True
        try:
            _state["redeliver"] = True
            generation = _state.get("generation", 0)
            with _WATCHDOG:  # one watchdog per run: an earlier run's (still sleeping) never serves this one
                start = _state.get("watchdog", -1) != generation
                if start:
                    _state["watchdog"] = generation
            if start:
                threading.Thread(
                    target=_redeliver,
                    args=(args.exc_value.signum, generation),
                    daemon=True,
                    name="calibcli-interrupt",
                ).start()
        finally:
            _state["in_hook"] = False
        return
    previous(args)


_WATCHDOG = threading.Lock()


def _redeliver(signum: int, generation: int) -> None:
    """While an interrupt is waiting to be raised again (:func:`_unraisable`), signal the main thread every
    20 ms (it raises at its next instruction outside a finalizer) until the handler has raised it (or it was
    reported, or the request forgotten, or a new run began: :func:`reset`); give up after 60 s (a hung run's
    bound: a loaded machine may take long to schedule the main thread). The stop is this interrupt's own state,
    not whether an earlier run in the same process reported one."""
    import _thread

    try:
        for _ in range(3000):
            time.sleep(0.02)
            if _state.get("generation", 0) != generation or not _state.get("redeliver") or not _requested.is_set():
                return
            _thread.interrupt_main(signal.Signals(signum))
    finally:
        with _WATCHDOG:
            if _state.get("watchdog") == generation:
                _state["watchdog"] = -1


def _install() -> dict:
    """Point SIGINT and SIGTERM at :func:`_handler` (SIGINT first), except a signal the parent process set to
    be ignored (a background job), which stays ignored; return the handlers replaced, by signal."""
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is signal.SIG_IGN:
            continue
        previous[signum] = signal.signal(signum, _handler)
    return previous


def install_handlers() -> None:
    """For the rest of the process, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread, as within
    :func:`handling_signals`. The console script calls it first of all (:mod:`calibcli.cli.entry`), so that a
    signal while the CLI is still being imported is an interrupt too, not Python's traceback; this module
    imports nothing slow (os, signal, threading, time, contextlib), so ``calibcli --help`` does not wait for it."""
    if threading.current_thread() is threading.main_thread():
        _install()


@contextmanager
def handling_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM set the flag and raise :class:`Interrupted` in the main
    thread. Outside the main thread (where handlers cannot be installed) this does nothing, and a signal
    the parent process set to be ignored stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = _install()
    import functools
    import sys

    hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(_unraisable, previous=hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def exit_now(code: int) -> None:
    """End an interrupted process at once: flush stdout and stderr, run the ``atexit`` handlers (temporary
    copies of stdin and other finalizers registered there are removed), then ``os._exit`` without the
    interpreter's teardown, which can take a second after a run holding large arrays."""
    import atexit
    import logging
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    # The run has said its one line: the finalizers' log records (Dask's nanny warning that a worker it is
    # killing is still alive, on a loaded machine) would follow it on stderr, so logging ends here.
    logging.disable(logging.CRITICAL)
    try:
        atexit._run_exitfuncs()
    finally:
        os._exit(code)


def shutdown_now(pool) -> None:
    """Shut a ``concurrent.futures`` executor down without running its queued work; wait only for the
    tasks already running (which stop at their next :func:`check`)."""
    pool.shutdown(wait=True, cancel_futures=True)
