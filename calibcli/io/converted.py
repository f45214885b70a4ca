"""Inputs converted before reading: an argument that names a dump of another kind (an LLM evaluation's samples,
:mod:`calibcli.llm.convert`) is registered here with the tables it became, and
:func:`calibcli.io.resolve.resolve_datasets` gives one dataset per table, named as the dump's file and reported
with its facts. The registry lasts one command (the command wrapper clears it)."""

from __future__ import annotations

from dataclasses import dataclass

#: The format of a converted table.
CONVERTED_FORMAT = "feather"


@dataclass(frozen=True)
class Converted:
    """One table of a converted argument: its name in reports, where the table is, and the input section's
    extra facts."""

    name: str
    location: str
    described: dict


_REGISTRY: dict[str, list[Converted]] = {}


def register(arg: str, tables: list[Converted]) -> None:
    _REGISTRY[arg] = list(tables)


def lookup(arg: str) -> list[Converted] | None:
    return _REGISTRY.get(arg)


def clear() -> None:
    _REGISTRY.clear()
