"""Opening an evaluation dump: plain, gzip (``.gz``) or Zstandard (``.zst``, with the ``zstandard`` package:
``pip install 'calibcli[zstd]'``), and its JSON Lines one record at a time, every problem naming file and line."""

from __future__ import annotations

import io
import json
import os
import zlib
from collections.abc import Iterator
from typing import Any

from calibcli.core.errors import CalibcliError
from calibcli.io import formats

#: Compression suffixes, looked through when a dump's kind is told from its name.
COMPRESSED = (".gz", ".zst")


def bare_name(path: str) -> str:
    """The file name without a compression suffix, lower case."""
    name = os.path.basename(path).lower()
    for suffix in COMPRESSED:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def open_text(path: str) -> io.TextIOBase:
    """The file as UTF-8 text, decompressed by its suffix."""
    lower = path.lower()
    try:
        if lower.endswith(".gz"):
            import gzip

            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
        if lower.endswith(".zst"):
            try:
                import zstandard
            except ImportError:
                raise CalibcliError(
                    f"{path}: is Zstandard-compressed and the zstandard package is not installed: "
                    f"pip install 'calibcli[zstd]', or decompress it (zstd -d)"
                ) from None
            raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
            return io.TextIOWrapper(raw, encoding="utf-8")
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise CalibcliError(f"{path}: cannot open ({exc.strerror or exc}): check the path") from None


def open_binary(path: str):
    """The file's bytes, decompressed by its suffix (for pyarrow's readers)."""
    lower = path.lower()
    if lower.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    if lower.endswith(".zst"):
        open_text(path).close()  # the message when zstandard is missing
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))
    return open(path, "rb")


def _zstd_errors() -> tuple[type[BaseException], ...]:
    """zstandard's error type, when the package is installed (a damaged .zst stream)."""
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


def json_lines(path: str) -> Iterator[tuple[int, dict]]:
    """``(line number, record)`` for every non-empty line; a line that is not a JSON object (a truncated last
    line, a stray text line) is an error naming the line."""
    with open_text(path) as fh:
        try:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except RecursionError:
                    raise CalibcliError(
                        f"{path}: line {number} nests JSON too deep to read: expected one flat record per line"
                    ) from None
                except json.JSONDecodeError as exc:
                    cut = "" if line.endswith("\n") else " (the file ends inside it: truncated?)"
                    raise CalibcliError(
                        f"{path}: line {number} is not valid JSON ({exc.msg}, column {exc.colno}){cut}: expected "
                        f"one JSON object per line; regenerate or repair the file"
                    ) from None
                if not isinstance(record, dict):
                    raise CalibcliError(
                        f"{path}: line {number} is a JSON {type(record).__name__}, not an object: expected one "
                        f"JSON object per line"
                    )
                yield number, record
        except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
            raise CalibcliError(f"{path}: cannot be read as UTF-8 JSON Lines ({exc}): check the file") from None
        except Exception as exc:
            if not isinstance(exc, _zstd_errors()):
                raise
            raise CalibcliError(f"{path}: cannot be read as UTF-8 JSON Lines ({exc}): check the file") from None


def json_document(path: str) -> object:
    """A whole JSON file (one document)."""
    with open_text(path) as fh:
        try:
            return json.load(fh)
        except RecursionError:
            raise CalibcliError(f"{path}: the JSON document nests too deep to read: check the file") from None
        except json.JSONDecodeError as exc:
            raise CalibcliError(
                f"{path}: line {exc.lineno} is not valid JSON ({exc.msg}, column {exc.colno}): expected one JSON "
                f"document; check that the file is complete"
            ) from None
        except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
            raise CalibcliError(f"{path}: cannot be read as UTF-8 JSON ({exc}): check the file") from None


def first_record(path: str) -> dict | None:
    """The first line's JSON object (for telling a dump's kind), or None when it is not one."""
    try:
        with open_text(path) as fh:
            line = fh.readline(1 << 24)
    except Exception:  # a sniff: unreadable bytes (bad gzip, not UTF-8, ...) are not a dump; the table reader says why
        return None
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError):  # (a document nested too deep: not a dump, the table reader says)
        return None
    return record if isinstance(record, dict) else None


def need(record: dict, key: str, where: str, what: str) -> Any:
    """``record[key]``, or an error naming the field and what it should hold."""
    if key not in record:
        present = ", ".join(sorted(record)[:12])
        raise CalibcliError(f"{where}: no field {key!r} ({what}); the record has {present}")
    return record[key]


def number(value: object, where: str, what: str) -> float:
    """A number written as a number or as text (lm-eval logs log-likelihoods as strings)."""
    if isinstance(value, bool):
        raise CalibcliError(f"{where}: {what} is {value!r}: expected a number")
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise CalibcliError(f"{where}: {what} is {str(value)[:40]!r}: expected a number") from None
    if out != out:
        raise CalibcliError(f"{where}: {what} is NaN: expected a finite number")
    return out


def read_rows(path: str) -> list[dict]:
    """Every row of a table (CSV, TSV, JSON Lines, Parquet, Arrow; by the extension) as a dict."""
    if not os.path.isfile(path):
        raise CalibcliError(f"{path}: no such file: check the path")
    fmt = formats.detect_format(path, None)
    try:
        table = formats.read_table(path, fmt)
    except Exception as exc:  # pyarrow's own error: one line naming the file
        raise formats.unreadable(path, fmt, exc, path) from None
    return table.to_pylist()
