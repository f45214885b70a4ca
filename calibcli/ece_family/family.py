"""The binned family (``calibcli ece``; SPEC 2): binned calibration errors, proper scores, intervals and bounds."""

from __future__ import annotations

from calibcli.binned.stats import LOG_LOSS_EPS
from calibcli.core.accumulator import per_input
from calibcli.core.binning import EDGE_CONVENTION
from calibcli.core.documents import new_document
from calibcli.core.family import Family, Plan, sources_block
from calibcli.core.registry import describe
from calibcli.ece_family.accumulator import InputAccumulator
from calibcli.ece_family.options import Options


def plan(o: Options, sources, engine: str) -> Plan:
    """``ece``'s document (its parameters; entries come from :func:`calibcli.engines.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream: the command apart from running it, so that
    ``calibcli report`` feeds it in one pass beside the other families."""
    gate = o.gate
    doc = new_document(
        "ece",
        {
            **o.shown("n_bins", "strategy"),
            "edges_convention": EDGE_CONVENTION,
            **o.shown("mode", "class_weights", "n_boot"),
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
            f"{o.row_limit} rows, from per-bin sufficient statistics beyond",
            "alpha": o.alpha,
            "confidence_level": 1.0 - o.alpha,
            "seed": o.seed,
            "bound_delta": o.alpha,
            "log_loss_eps": LOG_LOSS_EPS,
            "estimators": describe("binned"),
            **sources_block(sources, engine),
            "gate": gate.describe() if gate.active else None,
        },
    )
    return Plan(doc, per_input(InputAccumulator, o.mode, o), gate, o.n_boot)


FAMILY = Family("ece", Options, plan)
