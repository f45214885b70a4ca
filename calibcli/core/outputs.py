"""Every file the tool writes, in one place: outputs never destroy what they should not.

- :func:`check_output`, before any work: the output is not a directory, its folder exists and is
  writable, and it is not the same file (``st_dev`` and ``st_ino``, through links) as an input or a
  calibrator the command reads.
- :func:`write_output`: ``-`` is standard output (bytes as they are); a path that names one of this
  process's open descriptors (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``, a link
  to one of them, or any path that is the very file standard output or error points to) is written to that
  descriptor, at its offset (so ``-o /dev/stdout >> run.log`` appends to ``run.log`` and keeps what was
  there; :func:`descriptor_of`); a regular file or a new path is written through a temporary file beside it
  and renamed over it (a reader never sees half a file, a failure or an interrupt leaves no file); a
  symbolic link is followed, and its target replaced that way (the link stays a link); anything else (a
  device such as ``/dev/full``, a FIFO) is written straight to, every write and the close checked, so a
  full disk is an error, not exit 0.

Messages name the option as ``{opt:name}`` (the command line shows the flag).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from calibcli.core.errors import CalibcliError

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


#: The names of this process's descriptors: ``/dev/stdout`` and the like, and ``N`` in the folders below.
_STD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_FOLDER = re.compile(r"^/proc/(?:self|thread-self|(\d+)(?:/task/\d+)?)/fd$|^/dev/fd$")
_MAX_LINKS = 40


def named_descriptor(path: str) -> int | None:
    """The descriptor that ``path`` names by its name (``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``,
    ``/proc/<this pid>/fd/1``, or a chain of symbolic links leading to one of these), else None.

    The links are followed one at a time, never past a descriptor's own entry: ``/proc/self/fd/1`` is a link
    to the file behind the descriptor, and following it would lose the descriptor (and its offset)."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        if current in _STD_NAMES and not os.path.islink(current):  # a /dev/stdout that is a device of its own
            return _STD_NAMES[current]
        folder, name = os.path.split(current)
        try:
            real_folder = os.path.realpath(folder)
        except (OSError, ValueError):
            return None
        m = _FD_FOLDER.match(real_folder)
        if m and name.isdigit() and (m.group(1) is None or int(m.group(1)) == os.getpid()):
            return int(name)
        if os.path.join(real_folder, name) in _STD_NAMES and not os.path.islink(os.path.join(real_folder, name)):
            return _STD_NAMES[os.path.join(real_folder, name)]
        try:
            target = os.readlink(os.path.join(real_folder, name))
        except OSError:  # not a link (or not there): the name names no descriptor
            return None
        current = os.path.normpath(os.path.join(real_folder, target))
    return None


def descriptor_of(path: str) -> int | None:
    """The open descriptor of this process that an output path stands for, or None for an ordinary path.

    A path naming a descriptor (:func:`named_descriptor`) that is open gives that descriptor; any other path
    that is the same file as standard output or standard error (same device and inode: ``-o run.log >>
    run.log``, or ``/dev/pts/3`` when that terminal is stdout) gives 1 or 2. Writing to the descriptor, at its
    offset and with its flags (``>>`` appends), is what the shell's redirection asked for; renaming a new file
    over the one behind it would destroy what the descriptor's file held (issue 24)."""
    if path == STDOUT:
        return 1
    fd = named_descriptor(path)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError:  # /dev/fd/7 with no descriptor 7 open: nothing to write to
            return None
        return fd
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    for fd in (1, 2):
        try:
            std = os.fstat(fd)
        except OSError:
            continue
        if (found.st_dev, found.st_ino) == (std.st_dev, std.st_ino):
            return fd
    return None


def is_stream(path: str) -> bool:
    """Whether ``path`` is standard output, one of this process's descriptors (:func:`descriptor_of`), or
    something that is not a file (a device, a FIFO such as ``>(cmd)``): written straight to, and with no
    extension to say a format."""
    if path == STDOUT or descriptor_of(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def describe_output(path: str, option: str | None) -> str:
    shown = "- (standard output)" if path == STDOUT else path
    return f"{{opt:{option}}} {shown}" if option else f"cannot write {shown}"


def stat_output(path: str, option: str | None) -> os.stat_result | None:
    """``os.stat`` through links; None when nothing is there (a new file, or a link to a new file)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink loop, a component that is a file, no permission to look
        raise CalibcliError(
            f"{describe_output(path, option)}: {exc.strerror.lower() if exc.strerror else exc}: name another file"
        ) from None


def claim(path: str, option: str | None) -> None:
    """Remember that ``path`` is the output of ``option`` (messages about it name the flag)."""
    if option:
        _named[path] = option


def check_output(path: str, option: str | None = "output") -> None:
    """Refuse, before any work, an output that cannot be written: a directory, a descriptor not open for
    writing, a device without write permission, a missing or read-only folder. Against the inputs (the same
    file as one, or a file one would read next time): :func:`calibcli.io.targets.check_output_target`."""
    claim(path, option)
    if path == STDOUT:
        return
    where = describe_output(path, option)
    found = stat_output(path, option)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise CalibcliError(f"{where}: it is a directory: name a file (one inside it, for example)")
    fd = descriptor_of(path)
    if fd is not None:  # written to the descriptor (its file is never replaced): it must be open for writing
        _check_writable_descriptor(fd, path, option)
        return
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
def open_output(path: str, option: str | None = "output") -> Iterator[CheckedSink]:
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
    fd = descriptor_of(path)
    if fd is not None:  # this process's stdout, stderr or another descriptor: written to it, never renamed over
        yield from _descriptor_sink(fd, path, option)
        return
    found = stat_output(path, option)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise CalibcliError(
            f"{describe_output(path, option)}: it is a directory: name a file (one inside it, for example)"
        )
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
    # The temporary's name is known before the file exists, and the file is made inside the block that removes
    # it: an interrupt that lands just after the file is created (mkstemp returning, before a ``try``) would
    # otherwise leave it behind. 128 random bits make a name taken already a failure, not a retry.
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{secrets.token_hex(16)}")
    temporary: CheckedSink | None = None  # (the sink of the temporary file, once it exists)
    try:
        temporary = CheckedSink(
            os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb"), path, option
        )
        yield temporary
        temporary.close()
        mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666 & ~_umask()
        os.chmod(tmp, mode)  # the temporary is made 0600: the file keeps its permissions, a new one gets the usual
        os.replace(tmp, target)
    except BaseException as exc:
        if temporary is not None:
            temporary.discard()
        if not isinstance(exc, FileExistsError) or temporary is not None:  # (a name taken is not ours to remove)
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            raise _failed(path, option, exc) from None
        raise


def _check_writable_descriptor(fd: int, path: str, option: str | None) -> None:
    """Refuse a descriptor opened for reading only (``-o /dev/stdin`` with stdin a file)."""
    import fcntl

    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError as exc:
        raise _failed(path, option, exc) from None
    if flags & os.O_ACCMODE == os.O_RDONLY:
        raise CalibcliError(
            f"{describe_output(path, option)}: descriptor {fd} is open for reading only: name another file"
        )


def _descriptor_sink(fd: int, path: str, option: str | None) -> Iterator[CheckedSink]:
    """A sink writing to a duplicate of descriptor ``fd`` (which stays open): what is buffered for stdout
    and stderr goes out first, so the file's content keeps the order of the run's output."""
    _check_writable_descriptor(fd, path, option)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        handle = os.fdopen(os.dup(fd), "wb")
    except OSError as exc:
        raise _failed(path, option, exc) from None
    sink = CheckedSink(handle, path, option, quiet_pipe=fd == 1)
    try:
        yield sink
    except BaseException:
        sink.discard()
        raise
    sink.close()


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _failed(path: str, option: str | None, exc: OSError) -> CalibcliError:
    reason = exc.strerror or str(exc)
    return CalibcliError(f"{describe_output(path, option)}: {reason}")


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

    def __init__(self, handle, path: str, option: str | None, *, stdout: bool = False, quiet_pipe: bool = False):
        self._handle = handle
        self._path = path
        self._option = option
        self._stdout = stdout
        self._quiet_pipe = stdout or quiet_pipe  # a closed stdout ends the run quietly (141), as for '-'

    def _call(self, method: str, *args):
        try:
            return getattr(self._handle, method)(*args)
        except BrokenPipeError:
            if self._quiet_pipe:
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


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)
