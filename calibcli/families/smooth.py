"""The smooth family (``calibcli smece``; SPEC 3): SmoothECE with a bootstrap interval."""

from __future__ import annotations

import calibcli.smooth
from calibcli.accumulators import per_input
from calibcli.accumulators.inputs import SmoothInputAccumulator, SmoothOptions
from calibcli.registry import REGISTRY
from calibcli.report import GateSpec, new_document
from calibcli.families import sources_parameters


def plan(*, mode: str | None, class_weights: str, sigma: float | None, n_boot: int, alpha: float, seed: int,
         weighted: bool, group_by: tuple[str, ...], pool: bool, batch_rows: int, engine: str, gate=None):
    """``smece``'s document (its parameters; entries come from :func:`calibcli.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream: the command apart from running it, so that
    ``calibcli report`` feeds it in one pass beside the other families. Options are checked already."""
    options = SmoothOptions(sigma=sigma, n_boot=n_boot, alpha=alpha, seed=seed, class_weights=class_weights)
    metric = options.metric
    gate = gate if gate is not None else GateSpec(metric, None, None)
    doc = new_document(
        "smece",
        {
            "sigma": "fixed point" if sigma is None else sigma,
            "fixed_point_tolerance": calibcli.smooth.FIXED_POINT_TOL if sigma is None else None,
            "kernel": "reflected Gaussian on [0, 1] (every reflection; predictions at 0 or 1 carry full weight)",
            "mode": mode or "auto",
            "class_weights": class_weights,
            "marginal_aggregate": "sum_k v_k smECE_k (the lp rule with p = 1)",
            "n_boot": n_boot,
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
                         f"{options.row_limit} rows, from per-cell sufficient statistics beyond"
                         + (", bandwidth re-solved on each resample" if sigma is None else ", fixed sigma"),
            "first_pass_grid_cells": calibcli.smooth.STATS_GRID,  # read at run time: the library may change it
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "estimators": {metric: REGISTRY[metric].description},
            **sources_parameters(weighted=weighted, group_by=group_by, pool=pool, batch_rows=batch_rows, engine=engine),
            "gate": gate.describe() if gate.active else None,
        },
    )
    return doc, per_input(SmoothInputAccumulator, mode, options)
