"""The families: each metric family of calibcli declared once, apart from any command (SPEC 2, 3, 4, 8, 9).

One module per family (:mod:`~calibcli.ece_family.family`, :mod:`~calibcli.smooth.family`,
:mod:`~calibcli.tcal.family`, :mod:`~calibcli.clinical.family`, :mod:`~calibcli.audit.family`), each
with its :class:`Family`: an options dataclass whose fields carry their flags, help and constraints (a
:class:`~calibcli.core.validation.Declared`: checked once, when made), and ``plan(options, sources, engine)``,
which returns the report document (the ``parameters`` block: every effective option echoed) and
``new(stream)``, the input accumulator of a stream. :func:`calibcli.engines.pipeline.run` fills in the entries (or
``calibcli report``'s one pass over an input, every family a member of one
:class:`~calibcli.core.composite.Composite`). A command parses its options (its signature is built
from the declaration by :mod:`calibcli.cli.options`), runs the pipeline and renders.
:mod:`calibcli.report.families` names the families ``calibcli report`` composes.

This package imports none of the family modules, so a command loads only its own family.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from calibcli.core.declarations import ALPHA, MODE, N_BOOT
from calibcli.core.errors import CalibcliError
from calibcli.core.gates import GateSpec
from calibcli.core.validation import Declared, Param, declared, option


@dataclass
class Plan:
    """A family set up for a run: its document (``parameters`` filled in, ``files`` empty), ``new(stream)``
    making a stream's input accumulator, the gate of its entries and the resamples each problem draws when it
    is finished (the progress bar's steps: the bootstrap's, T-Cal's null's, none for a classical test). The
    options themselves reach the accumulators in ``new``, whole."""

    doc: dict
    new: Callable
    gate: GateSpec
    resamples: int


@dataclass(frozen=True)
class Family:
    """One family, declared once: its name (the document's ``command``), its options dataclass, ``plan(options,
    sources, engine)`` -> :class:`Plan`, and ``finish(doc, options)`` -> the gate's failures, run once every
    entry is in (None: the entries' own gates say it all)."""

    name: str
    options: type[Declared]
    plan: Callable[..., Plan]
    finish: Callable[[dict, Any], list[str]] | None = None


# ---------------------------------------------------------------------------------------------
# Options several families share: declared once in calibcli.core.declarations (the library checks its keywords against
# the same declarations); a family narrows or rewords one with Param.narrowed


@dataclass(frozen=True)
class Bootstrap(Declared):
    """The bootstrap options: resamples, level and seed."""

    n_boot: int = declared(1000, N_BOOT, library=0)
    alpha: float = declared(0.05, ALPHA)
    seed: int = option(0, "--seed", help="Seed of every random draw; the same seed prints the same numbers.")


@dataclass(frozen=True)
class Gates(Declared):
    """The threshold gates on a metric's estimate and on its interval's upper end."""

    fail_above: float | None = option(
        None, "--fail-above", help="Exit 1 when the gated metric's estimate exceeds this value."
    )
    fail_above_upper: float | None = option(
        None, "--fail-above-upper", help="Exit 1 when the upper end of the gated metric's interval exceeds this value."
    )


@dataclass(frozen=True)
class GatedMetrics(Bootstrap, Gates, ABC):
    """A family of metrics with intervals and the threshold gates on one of them (``gate_metric``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fail_above_upper is not None and self.n_boot == 0:
            raise CalibcliError("{opt:fail_above_upper} needs bootstrap intervals: pass {opt:n_boot} N with N > 0")

    @property
    @abstractmethod
    def gate_metric(self) -> str:
        """The name of the metric the gates read (each family says which)."""

    @property
    def gate(self) -> GateSpec:
        return GateSpec(self.gate_metric, self.fail_above, self.fail_above_upper)


def mode_field(param: Param = MODE) -> Any:
    return declared(None, param)


def split_columns(value: str | None) -> tuple[str, ...]:
    """``a,b`` -> ``("a", "b")``; None -> ``()``."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def sources_parameters(*, weighted: bool, group_by: tuple[str, ...], pool: bool, batch_rows: int, engine: str) -> dict:
    """The part of every streaming family's parameter block that echoes the sources and engine options (the
    weights, groups, pooling, batch size and engine), in report order."""
    return {
        "weights": "frequency weights" if weighted else None,
        "group_by": list(group_by) or None,
        "pool": pool,
        "batch_rows": batch_rows,
        "engine": engine,
    }


def sources_block(sources, engine: str) -> dict:
    """:func:`sources_parameters` of a :class:`calibcli.io.Sources`."""
    return sources_parameters(
        weighted=sources.spec.weight_col is not None,
        group_by=sources.group_by,
        pool=sources.pool,
        batch_rows=sources.batch_rows,
        engine=engine,
    )
