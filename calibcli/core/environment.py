"""The environment variables a run reads, checked in one place before anything uses them.

- ``CALIBCLI_DEBUG``: tracebacks instead of ``Error:`` lines. ``1``, ``yes``, ``true``, ``on`` (any case) and
  any other word turn it on; unset, empty, ``0``, ``no``, ``false``, ``off``, ``n`` and ``f`` leave it off (the
  words :data:`calibcli.cli.options.FLAG_WORDS` takes for a flag).
- ``NUMBA_*``: Numba reads them when it is imported, and a value it cannot parse is a traceback
  (``NUMBA_NUM_THREADS=abc``) or a warning and its default (``NUMBA_OPT=abc``). :func:`check_numba` reads the
  ones whose values Numba parses before the import, so a bad one is one ``Error:`` line naming it.
- ``MPLCONFIGDIR``: matplotlib's configuration and font cache. With a home directory that cannot be written
  (a read-only container, ``HOME=/nonexistent``) matplotlib prints two lines on every import;
  :func:`prepare_matplotlib` points it at a private directory under the system's temporary directory instead,
  kept between runs so that the font cache is built once.
"""

from __future__ import annotations

import os

from calibcli.core.errors import CalibcliError, shown

#: ``CALIBCLI_DEBUG`` values that mean off (compared lower-cased and stripped).
OFF_WORDS = frozenset({"", "0", "no", "false", "off", "n", "f"})


def debugging() -> bool:
    """Whether ``CALIBCLI_DEBUG`` asks for tracebacks (see the module docstring for the words)."""
    return os.environ.get("CALIBCLI_DEBUG", "").strip().lower() not in OFF_WORDS


#: Numba's variables whose values it parses as integers (``numba/core/config.py``), and what each must be.
_NUMBA_INTEGERS = {
    "NUMBA_NUM_THREADS": (lambda v: v >= 1, "a positive number of threads, e.g. NUMBA_NUM_THREADS=2"),
    "NUMBA_DISABLE_JIT": (lambda v: v in (0, 1), "0 or 1"),
    "NUMBA_BOUNDSCHECK": (lambda v: v in (0, 1), "0 or 1"),
    "NUMBA_DEBUG_CACHE": (lambda v: v in (0, 1), "0 or 1"),
    "NUMBA_DISABLE_PERFORMANCE_WARNINGS": (lambda v: v in (0, 1), "0 or 1"),
    "NUMBA_DEVELOPER_MODE": (lambda v: v in (0, 1), "0 or 1"),
    "NUMBA_FULL_TRACEBACKS": (lambda v: v in (0, 1), "0 or 1"),
}
_THREADING_LAYERS = ("default", "safe", "forksafe", "threadsafe", "tbb", "omp", "workqueue")


def check_numba() -> None:
    """Refuse a ``NUMBA_*`` variable whose value Numba would not parse, naming it (before Numba is imported)."""
    for name, (ok, expected) in _NUMBA_INTEGERS.items():
        text = os.environ.get(name)
        if text is None or (not text.strip() and name != "NUMBA_NUM_THREADS"):
            continue
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise CalibcliError(f"the environment variable {name} is {shown(text)}: expected {expected} (or unset it)")
    opt = os.environ.get("NUMBA_OPT")
    if opt is not None and opt.strip() and opt.strip() not in ("0", "1", "2", "3", "max"):
        raise CalibcliError(
            f"the environment variable NUMBA_OPT is {shown(opt)}: expected 0, 1, 2, 3 or max (or unset it)"
        )
    layer = os.environ.get("NUMBA_THREADING_LAYER")
    if layer is not None and layer.strip() and layer.strip() not in _THREADING_LAYERS:
        raise CalibcliError(
            f"the environment variable NUMBA_THREADING_LAYER is {shown(layer)}: expected one of "
            f"{', '.join(_THREADING_LAYERS)} (or unset it)"
        )


def _writable_dir(path: str) -> bool:
    """Whether ``path`` is a directory that can be written, or could be made in the nearest existing directory
    above it that can (nothing is created here)."""
    while True:
        if os.path.exists(path):
            return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def _matplotlib_default_dir() -> str:
    """Where matplotlib keeps its configuration without ``MPLCONFIGDIR`` (Linux and macOS: the XDG directory)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "matplotlib")


def prepare_matplotlib() -> None:
    """Set ``MPLCONFIGDIR`` to a private directory of this user under the temporary directory when matplotlib's
    default one cannot be written (and the user has not set it), so that importing matplotlib prints nothing."""
    import tempfile

    if os.environ.get("MPLCONFIGDIR") or _writable_dir(_matplotlib_default_dir()):
        return
    uid = os.getuid() if hasattr(os, "getuid") else 0
    private = os.path.join(tempfile.gettempdir(), f"calibcli-matplotlib-{uid}")
    try:
        os.makedirs(private, mode=0o700, exist_ok=True)
        info = os.stat(private)
        ours = info.st_uid == uid and not info.st_mode & 0o022 and os.path.isdir(private)
    except OSError:
        ours = False
    if not ours:  # someone else's, or not a directory: a fresh one for this run
        private = tempfile.mkdtemp(prefix="calibcli-matplotlib-")
    os.environ["MPLCONFIGDIR"] = private


def check() -> None:
    """Every check of the environment a command makes before its work (cheap: no import)."""
    check_numba()
    prepare_matplotlib()
