"""What an engine is, and the registry of engines by name (``--engine``; SPEC 8 "Engines").

An engine runs a stream's rows through input accumulators and hands back the finished-to-be states:
``run(stream, new) -> ([(group values or None, accumulator)], input section of the report)``, with
``new()`` making an empty input accumulator. Every engine gives the same report (to 1e-12). An engine
class is registered under its ``name`` (:func:`register`), says which of its options are wrong before
any work (:meth:`Engine.check`), and is opened for a run as a context manager (:meth:`Engine.open`:
a cluster lives as long as the run). A new engine is one module in :mod:`calibcli.engines` with a
registered class; the ``--engine`` choices and help come from :data:`ENGINES` (:func:`engines_help`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, TypeVar, cast


class Engine(Protocol):
    """The protocol every engine follows (:class:`~calibcli.engines.local.LocalEngine`,
    :class:`~calibcli.engines.dask.DaskEngine`)."""

    #: The value of ``--engine``.
    name: str
    #: Where it runs, as ``--engine``'s help says it after the name (:func:`engines_help`).
    where: str

    @property
    def workers(self) -> int | None:
        """Worker processes when the run starts (the report's ``workers``); None in this process."""

    def run(self, stream, new) -> tuple[list[tuple[dict | None, object]], dict]:
        """The stream's entries ``(group values or None, accumulator)`` and its report input section."""

    @classmethod
    def check(cls, scheduler: str | None, workers: int | None) -> None:
        """Refuse options this engine cannot take (a :class:`~calibcli.core.errors.CalibcliError`), before any work."""

    @classmethod
    def open(cls, *, scheduler: str | None, workers: int | None, progress=None) -> AbstractContextManager[Engine]:
        """The engine, ready to run, for as long as the context lasts."""


#: Every engine by name, in the order ``--help`` lists them.
ENGINES: dict[str, type[Engine]] = {}

E = TypeVar("E", bound=type[Engine])


def register(cls: E) -> E:
    """Class decorator: ``cls`` runs under ``--engine cls.name``."""
    ENGINES[cls.name] = cls
    return cls


def engines_help() -> str:
    """``--engine``'s help: every registered engine by name with where it runs (its ``where``), in registry order."""
    named = [f"{name} ({cast(Engine, cls).where})" for name, cls in ENGINES.items()]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    return f"{listed}; the same report either way."


@dataclass(frozen=True)
class EngineChoice:
    """Which engine runs (``--engine``) and where (``--scheduler``, ``--workers``): the engine option group."""

    name: str = "local"
    scheduler: str | None = None
    workers: int | None = None
