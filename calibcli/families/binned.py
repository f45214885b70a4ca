"""The binned family (``calibcli ece``; SPEC 2): binned calibration errors, proper scores, intervals and bounds."""

from __future__ import annotations

from calibcli.accumulators import per_input
from calibcli.accumulators.inputs import BinnedOptions, InputAccumulator
from calibcli.binning import EDGE_CONVENTION
from calibcli.estimators import LOG_LOSS_EPS
from calibcli.registry import describe
from calibcli.report import GateSpec, new_document
from calibcli.families import sources_parameters


def plan(*, mode: str | None, class_weights: str, n_bins: int, strategy: str, n_boot: int, alpha: float, seed: int,
         weighted: bool, group_by: tuple[str, ...], pool: bool, batch_rows: int, engine: str, gate=None):
    """``ece``'s document (its parameters; entries come from :func:`calibcli.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream: the command apart from running it, so that
    ``calibcli report`` feeds it in one pass beside the other families. Options are checked already."""
    gate = gate if gate is not None else GateSpec("ece_l1_plugin", None, None)
    options = BinnedOptions(n_bins=n_bins, strategy=strategy, n_boot=n_boot, alpha=alpha, seed=seed, class_weights=class_weights)
    doc = new_document(
        "ece",
        {
            "n_bins": n_bins,
            "strategy": strategy,
            "edges_convention": EDGE_CONVENTION,
            "mode": mode or "auto",
            "class_weights": class_weights,
            "n_boot": n_boot,
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
                         f"{options.row_limit} rows, from per-bin sufficient statistics beyond",
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "bound_delta": alpha,
            "log_loss_eps": LOG_LOSS_EPS,
            "estimators": describe("binned"),
            **sources_parameters(weighted=weighted, group_by=group_by, pool=pool, batch_rows=batch_rows, engine=engine),
            "gate": gate.describe() if gate.active else None,
        },
    )
    return doc, per_input(InputAccumulator, mode, options)
