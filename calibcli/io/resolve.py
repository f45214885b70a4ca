"""Command-line arguments resolved into :class:`~calibcli.io.sources.Dataset` objects: a file, ``-``, a directory
(every file of a known format below it, hidden and ``_``-prefixed names skipped, ``key=value`` directories as hive
partitions), a quoted glob pattern, or a URI (a file or a prefix of files). The datasets and their streams are
:mod:`calibcli.io.sources`; this module only finds what an argument names and refuses what names nothing.
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import os
import stat
from urllib.parse import unquote

from calibcli.core.errors import CalibcliError, shown
from calibcli.core.outputs import named_descriptor
from calibcli.io import converted
from calibcli.io.filesystems import list_files, uri_scheme
from calibcli.io.sources import _HIVE_NULL, STDIN, Dataset, _hidden, _known, _no_files, _Source


def resolve_datasets(paths: list[str], *, pool: bool = False) -> list[Dataset]:
    """One :class:`Dataset` per argument (one for all of them with ``pool``), in argument order.

    Missing paths, empty directories and globs matching nothing raise :class:`CalibcliError` before
    anything is read.
    """
    paths = list(paths)
    if paths.count("-") > 1:
        raise CalibcliError("'-' (stdin) is given more than once: standard input can be read only once")
    datasets = [d for p in paths for d in _converted(p) or [_resolve(p)]]
    if not pool:
        return datasets
    sources = sorted((s for d in datasets for s in d._sources), key=lambda s: s.path)
    if any(d.fixed_format for d in datasets):
        if not all(d.fixed_format for d in datasets):
            raise CalibcliError(
                "--pool mixes converted dumps (LLM evaluations) with prediction tables: pool inputs of one kind"
            )
        facts = [d.described.get("llm") for d in datasets]
        return [
            Dataset(
                ", ".join(paths),
                sources,
                "pool",
                fixed_format=converted.CONVERTED_FORMAT,
                described={"llm": {"pooled": facts}},
            )
        ]
    for a, b in itertools.pairwise(sources):
        if a.path == b.path:
            raise CalibcliError(f"{a.path}: is named more than once in the pooled inputs: each file can be read once")
    return [Dataset(", ".join(paths), sources, "pool", formats_unknown=any(d.formats_unknown for d in datasets))]


def _converted(arg: str) -> list[Dataset] | None:
    """The datasets of an argument registered as converted (:mod:`calibcli.io.converted`), one per table."""
    tables = converted.lookup(arg)
    if tables is None:
        return None
    return [
        Dataset(
            t.name,
            [_Source(t.name, t.location)],
            "file",
            fixed_format=converted.CONVERTED_FORMAT,
            described=t.described,
        )
        for t in tables
    ]


def _resolve(arg: str) -> Dataset:
    if arg == "-":
        return Dataset(STDIN, [_Source(STDIN, "-", single_pass=True)], "stdin")
    if uri_scheme(arg) is not None:
        return _resolve_uri(arg)
    if os.path.isdir(arg):
        found = _walk(arg)
        unknown = not found
        if unknown:  # files without a known extension (part-00000, ...): read when a format is given
            found = [rel for rel in _other_files(arg) if not any(_hidden(part) for part in rel.split(os.sep))]
            if not found:
                _no_files(arg, found)
        for rel in found:
            check_member(os.path.join(arg, rel), arg)
        return Dataset(
            arg,
            [_Source(os.path.join(arg, rel), os.path.join(arg, rel), _hive(rel)) for rel in found],
            "directory",
            formats_unknown=unknown,
        )
    try:
        mode = os.stat(arg).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a loop of symbolic links, a path through a file, no permission, ...
        raise CalibcliError(_unopenable(arg, exc)) from None
    if mode is not None:
        # Standard input or a named pipe (<(cmd) is /dev/fd/N) is read once, as a stream; a device, a socket or
        # a directory is refused before it is opened (/dev/zero would be read for ever).
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or _names_descriptor(arg)):
            raise CalibcliError(
                f"{arg}: is {file_kind(mode)}, not a file of predictions: name a regular file, a "
                f"directory of them, a pipe, or '-' for standard input"
            )
        return Dataset(arg, [_Source(arg, arg, single_pass=not stat.S_ISREG(mode))], "file")
    if glob.has_magic(arg):
        return _resolve_glob(arg)
    if os.path.islink(arg):
        raise CalibcliError(
            f"{arg}: is a symbolic link to {shown(os.readlink(arg))}, which does not exist: check the link"
        )
    raise CalibcliError(f"{arg}: no such file: check the path")


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, as a message says it."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def file_mode(path: str, *, where: str, broken: str, missing: str, unopenable) -> int:
    """``os.stat(path).st_mode`` through links, or one error headed ``where``: a symbolic link to nothing
    (``broken``: how to mend it), no such file (``missing``), or the ``OSError`` ``unopenable(exc)`` words."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise CalibcliError(
                f"{where}: is a symbolic link to {shown(os.readlink(path))}, which does not exist: {broken}"
            ) from None
        raise CalibcliError(f"{where}: {missing}") from None
    except OSError as exc:
        raise CalibcliError(f"{where}: {unopenable(exc)}") from None


def _names_descriptor(arg: str) -> bool:
    """Whether ``arg`` names one of this process's descriptors (``/dev/stdin``, ``/dev/fd/0``, a terminal
    given as ``/dev/stdin``): read as standard input is, whatever is behind it."""
    return named_descriptor(arg) is not None


def check_member(path: str, arg: str) -> None:
    """Refuse, before anything is opened, a file of a directory or glob that is not a regular file (through
    links): a named pipe would block its reader for ever waiting for a writer, a link to ``/dev/zero`` would be
    read for ever, a socket cannot be read at all. One error naming the file and the argument it is in."""
    mode = file_mode(
        path,
        where=f"{path} (in {arg})",
        broken="fix or remove the link",
        missing="disappeared while the input was being listed: run again",
        unopenable=lambda exc: _unopenable(path, exc).split(": ", 1)[1],
    )
    if not stat.S_ISREG(mode):
        link = f" (a link to {shown(os.path.realpath(path), quote=False)})" if os.path.islink(path) else ""
        raise CalibcliError(
            f"{path} (in {arg}): is {file_kind(mode)}{link}, not a regular file: the files of a "
            f"directory or a pattern are read as data; move it out of {arg}"
        )


def _unopenable(arg: str, exc: OSError) -> str:
    import errno

    if exc.errno == errno.ELOOP:
        return (
            f"{arg}: is a loop of symbolic links (they lead back to each other, not to a file): check them with ls -l"
        )
    if exc.errno == errno.ENOTDIR:
        return f"{arg}: a part of the path is a file, not a directory: check the path"
    if exc.errno == errno.EACCES:
        return f"{arg}: permission denied: check the file's permissions"
    return f"{arg}: cannot open ({exc.strerror or exc}): check the path"


def _walk(directory: str) -> list[str]:
    """Relative paths of the files of known formats below ``directory``, sorted."""
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not _hidden(d)]
        rel_root = os.path.relpath(root, directory)
        found.extend(os.path.normpath(os.path.join(rel_root, f)) for f in files if not _hidden(f) and _known(f))
    return sorted(found)


def _other_files(directory: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(root, f), directory)
        for root, dirs, files in os.walk(directory)
        for f in files
        if not _hidden(f)
    )


def _hive(rel: str, sep: str = os.sep) -> tuple[tuple[str, str | None], ...]:
    """The ``key=value`` directories of a relative path (values URL-decoded; the hive null as None)."""
    out = {}
    for segment in rel.split(sep)[:-1]:
        key, eq, value = segment.partition("=")
        if eq and key:
            out[unquote(key)] = None if value == _HIVE_NULL else unquote(value)
    return tuple(out.items())


def _resolve_glob(pattern: str) -> Dataset:
    base = _glob_base(pattern, os.sep)
    paths: set[str] = set()
    for match in glob.glob(pattern, recursive=True):
        if os.path.isdir(match):
            paths.update(os.path.join(match, rel) for rel in _walk(match))
        elif _known(os.path.basename(match)) and not _hidden(os.path.basename(match)):
            paths.add(match)
    for path in sorted(paths):
        check_member(path, pattern)
    if not paths:
        raise CalibcliError(
            f"{pattern}: no file of a known format matches the pattern: check it (and quote it, so that the shell "
            f"passes it on)"
        )
    return Dataset(pattern, [_Source(p, p, _hive(os.path.relpath(p, base))) for p in sorted(paths)], "glob")


def _glob_base(pattern: str, sep: str) -> str:
    """The directory part of a pattern before its first wildcard."""
    parts = pattern.split(sep)
    base = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        base.append(part)
    if base == [""]:
        return sep
    return sep.join(base) or "."


def _resolve_uri(uri: str) -> Dataset:
    scheme_end = uri.index("://") + 3
    if not glob.has_magic(uri[scheme_end:]):
        listing = list_files(uri)
        if listing is None:
            raise CalibcliError(f"{uri}: no such file: check the path")
        kind, rels = listing
        if kind == "file":
            return Dataset(uri, [_Source(uri, uri)], "file")
        return _uri_dataset(uri, uri.rstrip("/"), rels, lambda parts: True, "directory")
    base = _glob_base(uri[scheme_end:], "/")
    base = uri[:scheme_end] + ("" if base == "." else base)
    pattern = [p for p in uri[len(base) :].split("/") if p]
    listing = list_files(base)
    rels = listing[1] if listing is not None and listing[0] == "directory" else []

    def matches(parts: list[str]) -> bool:  # the file, or a directory above it, matches the pattern
        return any(_match_segments(pattern, parts[:j]) for j in range(1, len(parts) + 1))

    return _uri_dataset(uri, base.rstrip("/"), rels, matches, "glob")


def _uri_dataset(name: str, base: str, rels: list[str], matches, kind: str) -> Dataset:
    found = sorted(
        rel
        for rel in rels
        if matches(rel.split("/")) and not any(_hidden(p) for p in rel.split("/")) and _known(rel.rsplit("/", 1)[-1])
    )
    if not found:
        if kind == "glob":
            raise CalibcliError(f"{name}: no file matches the pattern: check it")
        _no_files(name, [r for r in rels if not any(_hidden(p) for p in r.split("/"))])
    return Dataset(name, [_Source(f"{base}/{rel}", f"{base}/{rel}", _hive(rel, "/")) for rel in found], kind)


def _match_segments(pattern: list[str], parts: list[str]) -> bool:
    """Glob matching segment by segment (``*`` within a segment, ``**`` across any number of them)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_match_segments(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _match_segments(pattern[1:], parts[1:])
