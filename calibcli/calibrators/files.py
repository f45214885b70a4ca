"""Reading a calibrator file's JSON safely: what ``calibcli recalibrate apply`` (and :mod:`calibcli.sklearn`) read
before :func:`calibcli.calibrators.calibrator_from_dict` checks the fields.

:func:`read_calibrator_document` refuses, each with one message naming the file:

- anything but a regular file, by type, before it is opened: a named pipe would block the open until a writer
  comes, ``/dev/zero`` would be read for ever (both used to be "no such calibrator file");
- text that is not UTF-8, or not JSON (truncated files said so);
- JSON nested deeper than :data:`MAX_DEPTH` (Python's parser recurses once per level: a 200,000-deep array was a
  ``RecursionError``), checked with one NumPy pass over the bytes before parsing;
- an integer of more than :data:`MAX_INTEGER_DIGITS` digits (Python refuses to convert over 4,300 digits with a
  ``ValueError``; no field of a calibrator needs more than a handful).

The messages for a missing file, bad UTF-8 and bad JSON are the ones ``load_calibrator`` has always given.
"""

from __future__ import annotations

import json
import os
import stat

from calibcli.core.errors import CalibcliError
from calibcli.io.formats import json_depth_bound, json_too_deep
from calibcli.io.resolve import file_kind, file_mode

#: Deepest nesting a calibrator file may have: fitted ones nest 5 levels (a marginal calibrator's ``info``).
MAX_DEPTH = 64

#: Most digits of an integer in a calibrator file (counts and sizes fit in 19).
MAX_INTEGER_DIGITS = 100

#: What a calibrator file is, for messages.
HINT = "expected the JSON document written by `calibcli recalibrate fit`"


def check_calibrator_path(path: str) -> None:
    """Refuse, without opening it, a calibrator path that is not a regular file (through links)."""
    mode = file_mode(
        path,
        where=path,
        broken="check the link",
        missing="no such calibrator file: check the path",
        unopenable=lambda exc: f"cannot open the calibrator file ({exc.strerror or exc}): check the path",
    )
    if not stat.S_ISREG(mode):
        link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise CalibcliError(f"{path}: is {file_kind(mode)}{link}, not a calibrator file: {HINT}, saved to a file")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise CalibcliError(
            f"not a calibrator: an integer of {len(text.lstrip('-'))} digits: no field of a calibrator "
            f"has more than {MAX_INTEGER_DIGITS}; {HINT}"
        )
    return int(text)


def parse_calibrator_json(raw: bytes):
    """The JSON value of a calibrator file's bytes; a :class:`CalibcliError` (without the file's name, which
    the caller adds) for text that is not UTF-8, not JSON, too deeply nested or with an absurd integer."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CalibcliError(f"not a calibrator (not UTF-8 text): {HINT}") from None
    if raw and json_depth_bound(raw, 0)[0] > MAX_DEPTH:
        found = json_too_deep(raw, MAX_DEPTH)
        if found is not None:
            raise CalibcliError(
                f"not a calibrator: the JSON nests deeper than {MAX_DEPTH} levels (line {found[0]}): "
                f"a calibrator nests at most 5; {HINT}"
            )
    try:
        return json.loads(text, parse_int=_integer)
    except json.JSONDecodeError as exc:
        ends_early = exc.pos >= len(raw.rstrip()) or exc.msg.startswith("Unterminated")
        truncated = " (the file looks truncated)" if ends_early else ""
        raise CalibcliError(
            f"not a calibrator: invalid JSON ({exc.msg}: line {exc.lineno} column {exc.colno}){truncated}: {HINT}"
        ) from None
    except RecursionError:  # (the depth check above makes this unreachable; kept as the backstop)
        raise CalibcliError(f"not a calibrator: the JSON nests too deeply: {HINT}") from None


def read_calibrator_document(path: str):
    """The JSON value of the calibrator file at ``path``, every problem a :class:`CalibcliError` starting with
    ``path``: not a regular file (checked before opening), unreadable, not UTF-8, not JSON, too deep, an absurd
    integer. The open and the read run in the calling thread, so SIGINT and SIGTERM interrupt them."""
    check_calibrator_path(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise CalibcliError(
            f"{path}: cannot read the calibrator file ({exc.strerror or exc}): check its permissions"
        ) from None
    try:
        return parse_calibrator_json(raw)
    except CalibcliError as exc:
        raise CalibcliError(f"{path}: {exc.template}") from None
