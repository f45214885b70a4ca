"""The local engine: every dataset's batches streamed through the accumulators in this process."""

from __future__ import annotations

from contextlib import contextmanager

from calibcli.core.errors import CalibcliError
from calibcli.engines.base import register
from calibcli.engines.fragments import run_local


@register
class LocalEngine:
    """Streams each dataset's batches through the accumulators in this process."""

    name = "local"
    where = "this process"
    workers: int | None = None

    def run(self, stream, new) -> tuple[list[tuple[dict | None, object]], dict]:
        """The stream's entries ``(group values or None, accumulator)`` and its report input section."""
        entries = run_local(stream, new)
        return entries, stream.describe()

    @classmethod
    def check(cls, scheduler: str | None, workers: int | None) -> None:
        if scheduler is not None or workers is not None:
            raise CalibcliError(
                f"{'--scheduler' if scheduler is not None else '--workers'} is for --engine dask: "
                f"add --engine dask, or drop it"
            )

    @classmethod
    @contextmanager
    def open(cls, *, scheduler: str | None = None, workers: int | None = None, progress=None):
        yield cls()
