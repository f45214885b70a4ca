"""Every file the tool writes, in one place: outputs never destroy what they should not.

- :func:`check_output`, before any work: the output is not a directory, its folder exists and is
  writable, and it is not the same file (``st_dev`` and ``st_ino``, through links) as an input or a
  calibrator the command reads.
- :func:`write_output`: ``-`` is standard output (bytes as they are); a regular file or a new path is
  written through a temporary file beside it and renamed over it (a reader never sees half a file, a
  failure or an interrupt leaves no file); a symbolic link is followed, and its target replaced that
  way (the link stays a link); anything else (a device such as ``/dev/full``, a FIFO, ``/dev/stdout``)
  is written straight to, every write and the close checked, so a full disk is an error, not exit 0.

Messages name the option as ``{opt:name}`` (the command line shows the flag).
"""

from __future__ import annotations

import errno
import glob
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterable, Iterator

from calibcli.errors import CalibcliError

#: The output name that means standard output.
STDOUT = "-"

#: Prefix of the temporary files of atomic writes (removed on any failure or interrupt).
TEMP_PREFIX = ".calibcli-"

_stdout = {"claimed": False}

#: The option that named each output path checked in this run (``report`` for ``--report r.json``), so a
#: failed write names the option the user typed, whichever code writes the file.
_named: dict[str, str] = {}


def stdout_claimed() -> bool:
    """Whether a file output went to standard output in this run (then nothing else may be printed there)."""
    return _stdout["claimed"]


def reset() -> None:
    """A new command starts: standard output is free again, no output is named yet."""
    _stdout["claimed"] = False
    _named.clear()


def is_stream(path: str) -> bool:
    """Whether ``path`` is standard output or something that is not a file (a device, a FIFO such as
    ``>(cmd)``): written straight to, and with no extension to say a format."""
    if path == STDOUT:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _where(path: str, option: str | None) -> str:
    shown = "- (standard output)" if path == STDOUT else path
    return f"{{opt:{option}}} {shown}" if option else f"cannot write {shown}"


def _stat(path: str, option: str | None) -> os.stat_result | None:
    """``os.stat`` through links; None when nothing is there (a new file, or a link to a new file)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink loop, a component that is a file, no permission to look
        raise CalibcliError(f"{_where(path, option)}: {exc.strerror.lower() if exc.strerror else exc}: name another file") from None


def _input_files(arg: str) -> list[str]:
    """The local files an input argument reads (a file, the files of a directory or a glob); none for
    standard input or a remote URI."""
    from calibcli.io.filesystems import uri_scheme

    if arg == "-":
        return []
    scheme = uri_scheme(arg)
    if scheme == "file":
        arg = arg[len("file://"):]
    elif scheme is not None:
        return []
    if os.path.isdir(arg) or (not os.path.exists(arg) and glob.has_magic(arg)):
        from calibcli.io import resolve_datasets

        try:
            return resolve_datasets([arg])[0].files
        except CalibcliError:  # the command reports a bad input itself, once it reads it
            return []
    return [arg]


def _same(a: os.stat_result, path: str) -> bool:
    try:
        b = os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_output(path: str, option: str | None = "output", inputs: Iterable[tuple[str, str]] = ()) -> None:
    """Refuse, before any work, an output that cannot be written or would destroy an input.

    ``inputs`` are ``(what, argument)`` pairs such as ``("input file", "data.csv")`` or
    ``("calibrator", "cal.json")``; directories and globs are looked through.
    """
    if option:
        _named[path] = option
    if path == STDOUT:
        return
    where = _where(path, option)
    found = _stat(path, option)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise CalibcliError(f"{where}: it is a directory: name a file (one inside it, for example)")
    if found is not None:
        for what, arg in inputs:
            for candidate in _input_files(arg):
                if _same(found, candidate):
                    shown = arg if candidate == arg else f"{candidate} (in {arg})"
                    raise CalibcliError(f"{where} is the {what} {shown}: name another file")
    if found is not None and not stat.S_ISREG(found.st_mode):  # a device or a FIFO: written straight to
        if not os.access(path, os.W_OK):
            raise CalibcliError(f"{where}: no permission to write to it")
        return
    target = os.path.realpath(path) if os.path.islink(path) else path
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise CalibcliError(f"{where}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CalibcliError(f"{where}: no permission to create files in {folder}")


def write_output(path: str, data: bytes | str, option: str | None = "output") -> None:
    """Write ``data`` to ``path`` as the module docstring says: stdout, atomically, or straight through.

    A failed write is a :class:`CalibcliError` naming the output and the cause; a closed standard
    output raises :class:`BrokenPipeError` (the command line ends quietly on it).
    """
    with open_output(path, option) as sink:
        sink.write(data.encode("utf-8") if isinstance(data, str) else bytes(data))


@contextmanager
def open_output(path: str, option: str | None = "output") -> Iterator["CheckedSink"]:
    """A binary sink for ``path``, for outputs written piece by piece (tables batch by batch).

    ``-``: standard output. A regular file, a new path or a link to one: a temporary file beside the
    (link's) target, renamed over it when the block ends without an error; on any error or interrupt
    it is removed and the old file is left as it was. Anything else (a device, a FIFO): opened and
    written straight. Failed writes, flushes and closes are :class:`CalibcliError` naming the output.
    """
    option = _named.get(path, option) if path != STDOUT else option
    if path == STDOUT:
        _stdout["claimed"] = True
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        sink = CheckedSink(buffer if buffer is not None else _TextAsBinary(sys.stdout), "-", option, stdout=True)
        yield sink
        sink.flush()
        return
    found = _stat(path, option)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise CalibcliError(f"{_where(path, option)}: it is a directory: name a file (one inside it, for example)")
    if found is not None and not stat.S_ISREG(found.st_mode):  # a device or a FIFO: no temporary file, no rename
        try:
            handle = open(path, "wb")
        except OSError as exc:
            raise _failed(path, option, exc) from None
        sink = CheckedSink(handle, path, option)
        try:
            yield sink
        except BaseException:
            try:
                handle.close()
            except OSError:
                pass
            raise
        sink.close()
        return
    target = os.path.realpath(path) if os.path.islink(path) else path
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=folder)
    except OSError as exc:
        raise _failed(path, option, exc) from None
    sink = CheckedSink(os.fdopen(fd, "wb"), path, option)
    try:
        yield sink
        sink.close()
        mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666 & ~_umask()
        os.chmod(tmp, mode)  # mkstemp makes 0600: the file keeps its permissions, a new one gets the usual
        os.replace(tmp, target)
    except BaseException as exc:
        sink.discard()
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise _failed(path, option, exc) from None
        raise


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _failed(path: str, option: str | None, exc: OSError) -> CalibcliError:
    reason = exc.strerror or str(exc)
    return CalibcliError(f"{_where(path, option)}: {reason}")


class _TextAsBinary:
    """A text stream (stdout captured by a test runner) taking bytes."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, data) -> int:
        self.stream.write(bytes(data).decode("utf-8", errors="surrogateescape"))
        return len(data)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.flush()


class CheckedSink:
    """A binary file whose every failed write, flush or close is a :class:`CalibcliError` naming the
    output (a closed standard output stays a :class:`BrokenPipeError`). Other attributes pass through."""

    def __init__(self, handle, path: str, option: str | None, *, stdout: bool = False):
        self._handle = handle
        self._path = path
        self._option = option
        self._stdout = stdout

    def _call(self, method: str, *args):
        try:
            return getattr(self._handle, method)(*args)
        except BrokenPipeError:
            if self._stdout:
                raise
            raise _failed(self._path, self._option, OSError(errno.EPIPE, "the reader closed the pipe")) from None
        except OSError as exc:
            raise _failed("-" if self._stdout else self._path, self._option, exc) from None

    def write(self, data) -> int:
        return self._call("write", data)

    def flush(self) -> None:
        self._call("flush")

    def close(self) -> None:
        if not self._stdout:
            self._call("close")

    def discard(self) -> None:
        """Close without reporting errors (the output is being abandoned)."""
        try:
            self._handle.close()
        except OSError:
            pass

    @property
    def closed(self) -> bool:
        return getattr(self._handle, "closed", False)

    def writable(self) -> bool:
        return True

    def __getattr__(self, name):
        return getattr(self._handle, name)
