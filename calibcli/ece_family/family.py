"""The binned family (``calibcli ece``; SPEC 2): binned calibration errors, proper scores, intervals and bounds."""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.binned.stats import LOG_LOSS_EPS
from calibcli.core.accumulator import per_input
from calibcli.core.binning import EDGE_CONVENTION
from calibcli.core.declarations import CLASS_WEIGHTS_PARAM, N_BINS, STRATEGY
from calibcli.core.documents import new_document
from calibcli.core.family import Family, GatedMetrics, Plan, mode_field, sources_block
from calibcli.core.registry import describe
from calibcli.core.validation import declared, option
from calibcli.ece_family.accumulator import BinnedOptions, InputAccumulator


@dataclass(frozen=True)
class Options(GatedMetrics):
    """``ece``'s options, declared once: the command's flags, the checks, the report's ``parameters``."""

    mode: str | None = mode_field()
    class_weights: str = declared("uniform", CLASS_WEIGHTS_PARAM)
    n_bins: int = declared(15, N_BINS)
    strategy: str = declared("uniform", STRATEGY)
    metric: str = option("ece_l1_plugin", "--metric", help="Metric the gates look at (a name from the report).")

    @property
    def gate_metric(self) -> str:
        return self.metric


def plan(o: Options, sources, engine: str) -> Plan:
    """``ece``'s document (its parameters; entries come from :func:`calibcli.engines.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream: the command apart from running it, so that
    ``calibcli report`` feeds it in one pass beside the other families."""
    options = BinnedOptions(
        n_bins=o.n_bins, strategy=o.strategy, n_boot=o.n_boot, alpha=o.alpha, seed=o.seed, class_weights=o.class_weights
    )
    gate = o.gate
    doc = new_document(
        "ece",
        {
            **o.shown("n_bins", "strategy"),
            "edges_convention": EDGE_CONVENTION,
            **o.shown("mode", "class_weights", "n_boot"),
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
            f"{options.row_limit} rows, from per-bin sufficient statistics beyond",
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
    return Plan(doc, per_input(InputAccumulator, o.mode, options), gate, o.n_boot)


FAMILY = Family("ece", Options, plan)
