"""Where a file's bytes are: a local path, or a URI (``s3://``, ``gs://``, ``file://``, ...).

URIs are opened through ``pyarrow.fs`` (S3, GCS, HDFS, Azure and local files are built in); a scheme
pyarrow does not know goes through fsspec when it is installed. Nothing here is imported until a URI
is actually read, so local files never pay for it.
"""

from __future__ import annotations

import functools
import re

from calibcli.core.errors import CalibcliError

_URI_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def uri_scheme(path: str) -> str | None:
    """The scheme of a URI (``s3`` for ``s3://bucket/key``); None for a local path."""
    m = _URI_RE.match(path)
    return m.group(1).lower() if m else None


@functools.lru_cache(maxsize=256)
def filesystem_of(uri: str):
    """``(pyarrow filesystem, path inside it)`` for a URI; a :class:`CalibcliError` saying what is missing."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    scheme = uri_scheme(uri)
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, ValueError):  # a scheme pyarrow has no filesystem for
        pass
    except Exception as exc:  # the filesystem exists but cannot be set up (credentials, network, ...)
        raise CalibcliError(f"{uri}: cannot open ({first_line(exc)}): check the URI and its credentials") from None
    try:
        import fsspec
    except ImportError:
        raise CalibcliError(
            f"{uri}: cannot open {scheme}:// URIs: pyarrow has no filesystem for them and the package fsspec is not "
            f"installed: pip install fsspec (with the package for {scheme}://, such as s3fs, gcsfs or adlfs)"
        ) from None
    try:
        fs = fsspec.filesystem(scheme)
    except Exception as exc:  # unknown protocol, or its implementation is not installed
        raise CalibcliError(f"{uri}: cannot open {scheme}:// URIs ({first_line(exc)})") from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), fs._strip_protocol(uri)


def open_random_access(location: str):
    """What the Parquet and Arrow readers take: the local path itself, or a random-access file for a URI."""
    if uri_scheme(location) is None:
        return location
    fs, inner = filesystem_of(location)
    return fs.open_input_file(inner)


def open_input_stream(location: str, *, gzip: bool):
    """A sequential stream of the file's bytes (gunzipped when ``gzip``); a local plain file as its path."""
    import pyarrow as pa

    if uri_scheme(location) is None:
        return pa.input_stream(location, compression="gzip") if gzip else location
    fs, inner = filesystem_of(location)
    return fs.open_input_stream(inner, compression="gzip" if gzip else None)


def list_files(uri: str) -> tuple[str, list[str]] | None:
    """``("file" | "directory", relative paths of the files below it)`` for a URI; None when nothing is there."""
    import pyarrow.fs as pafs

    fs, inner = filesystem_of(uri)
    try:
        info = fs.get_file_info(inner)
        if info.type == pafs.FileType.File:
            return "file", []
        if info.type != pafs.FileType.Directory:
            return None
        base = inner.rstrip("/")
        found = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    except CalibcliError:
        raise
    except Exception as exc:
        raise CalibcliError(f"{uri}: cannot list ({first_line(exc)}): check the URI and its credentials") from None
    return "directory", [f.path[len(base) :].lstrip("/") for f in found if f.type == pafs.FileType.File]


def first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
