"""Where an output may go, given the inputs of the same run (checked before any work).

An output must not be an input (the same file, through links: writing it would destroy what is being read),
nor become one (a file a directory or glob input would read on the next run: ``apply cal.json
'preds/*.parquet' -o preds/out.parquet`` would read its own output and fail or count rows twice).
:mod:`calibcli.core.outputs` checks the output path alone; this module holds what needs the inputs' dataset rules
(:mod:`calibcli.io.sources`).
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterable

from calibcli.core.errors import CalibcliError, shown
from calibcli.core.outputs import STDOUT, check_output, claim, describe_output, descriptor_of, stat_output
from calibcli.io.filesystems import uri_scheme
from calibcli.io.resolve import _walk, resolve_datasets
from calibcli.io.sources import _hidden, _known


def check_output_target(path: str, option: str | None = "output", inputs: Iterable[tuple[str, str]] = ()) -> None:
    """Refuse, before any work, an output that cannot be written (:func:`calibcli.core.outputs.check_output`), that
    is one of ``inputs`` or that would become part of one (:func:`check_outside_inputs`).

    ``inputs`` are ``(what, argument)`` pairs such as ``("input file", "data.csv")`` or
    ``("calibrator", "cal.json")``; directories and globs are looked through.
    """
    claim(path, option)
    if path == STDOUT:
        return
    found = stat_output(path, option)
    inputs = list(inputs)
    if found is not None and not os.path.isdir(path):
        for what, arg in inputs:
            for candidate in _input_files(arg):
                if _same(found, candidate):
                    shown_arg = arg if candidate == arg else f"{candidate} (in {arg})"
                    raise CalibcliError(f"{describe_output(path, option)} is the {what} {shown_arg}: name another file")
    if found is None or not os.path.isdir(path):
        check_outside_inputs(inputs, [(path, option)])
    check_output(path, option)


def check_outside_inputs(inputs: Iterable[tuple[str, str]], outputs: Iterable[tuple[str, str | None]]) -> None:
    """Refuse, before any work, an output that would become part of an input dataset: a file of a known
    format inside an input directory, or one an input glob matches (``apply cal.json 'preds/*.parquet' -o
    preds/out.parquet`` would read its own output the next time, and fail or count rows twice).

    ``inputs`` are ``(what, argument)`` pairs as for :func:`check_output` (which calls this for its path);
    ``outputs`` are ``(path, option)`` pairs. Standard output and descriptors (:func:`descriptor_of`) are
    never part of a dataset."""
    inputs = list(inputs)
    for path, option in outputs:
        if path == STDOUT or descriptor_of(path) is not None:
            continue
        for _what, arg in inputs:
            why = would_read(arg, path)
            if why is not None:
                raise CalibcliError(f"{describe_output(path, option)} is {why}")
    return None


def would_read(arg: str, path: str) -> str | None:
    """Whether a file written at ``path`` would be one of the files of the input argument ``arg`` (a local
    directory or glob; files, standard input and URIs never grow): None if not, else the end of the message
    saying so and how to fix it (``"inside the input directory d: ..."``).

    Follows :func:`_resolve`'s rules: below a directory, a file of a known format whose relative path has no
    hidden or ``_``-prefixed part (any such file when the directory holds no file of a known format, since it
    is then read whole with {opt:input_format}); for a glob, a path the pattern matches, or one of known
    format below a directory it matches. Paths are compared both as written (absolute) and with every link
    resolved, so a link to the directory or inside it does not hide the output."""
    if arg == "-" or uri_scheme(arg) is not None:
        return None
    out_paths = {
        os.path.abspath(path),
        os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path)),
    }
    if os.path.isdir(arg):
        bases = {os.path.abspath(arg), os.path.realpath(arg)}
        for out in out_paths:
            for base in bases:
                rel = os.path.relpath(out, base)
                if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
                    continue
                if any(_hidden(part) for part in rel.split(os.sep)):
                    continue
                if _known(os.path.basename(out)) or not _walk(arg):
                    return (
                        f"inside the input directory {arg}: it would become one of its files (read by the next run): "
                        f"write it outside {arg}"
                    )
        return None
    if os.path.exists(arg) or not glob.has_magic(arg):
        return None
    pattern = [p for p in os.path.abspath(arg).split(os.sep) if p]
    for out in out_paths:
        parts = [p for p in out.split(os.sep) if p]
        name = parts[-1] if parts else ""
        if _hidden(name) or not _known(name):
            continue
        if any(_glob_match(pattern, parts[:j]) for j in range(1, len(parts) + 1)):
            return (
                f"matched by the input pattern {shown(arg)}: it would become one of its files (read by the next run): "
                f"write it elsewhere, or narrow the pattern"
            )
    return None


def _glob_match(pattern: list[str], parts: list[str]) -> bool:
    """:func:`_match_segments` as :func:`glob.glob` matches: a wildcard never matches a name starting with
    ``.`` unless the pattern's segment does."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(
            _glob_match(pattern[1:], parts[i:])
            for i in range(len(parts) + 1)
            if not any(p.startswith(".") for p in parts[:i])
        )
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], pattern[0])
        and not (parts[0].startswith(".") and not pattern[0].startswith("."))
        and _glob_match(pattern[1:], parts[1:])
    )


def _input_files(arg: str) -> list[str]:
    """The local files an input argument reads (a file, the files of a directory or a glob); none for
    standard input or a remote URI."""
    if arg == "-":
        return []
    scheme = uri_scheme(arg)
    if scheme == "file":
        arg = arg[len("file://") :]
    elif scheme is not None:
        return []
    if os.path.isdir(arg) or (not os.path.exists(arg) and glob.has_magic(arg)):
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
