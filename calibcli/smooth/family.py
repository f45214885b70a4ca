"""The smooth family (``calibcli smece``; SPEC 3): SmoothECE with a bootstrap interval."""

from __future__ import annotations

import calibcli.smooth.estimator
import calibcli.smooth.grid
from calibcli.core.accumulator import per_input
from calibcli.core.documents import new_document
from calibcli.core.family import Family, Plan, sources_block
from calibcli.core.registry import REGISTRY
from calibcli.smooth.inputs import SmoothInputAccumulator
from calibcli.smooth.options import Options


def plan(o: Options, sources, engine: str) -> Plan:
    """``smece``'s document (its parameters; entries come from :func:`calibcli.engines.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream: the command apart from running it, so that
    ``calibcli report`` feeds it in one pass beside the other families."""
    sigma = o.sigma
    metric = o.metric
    gate = o.gate
    doc = new_document(
        "smece",
        {
            **o.shown("sigma"),
            "fixed_point_tolerance": calibcli.smooth.grid.FIXED_POINT_TOL if sigma is None else None,
            "kernel": "reflected Gaussian on [0, 1] (every reflection; predictions at 0 or 1 carry full weight)",
            **o.shown("mode"),
            "class_weights": o.class_weights,
            "marginal_aggregate": "sum_k v_k smECE_k (the lp rule with p = 1)",
            "n_boot": o.n_boot,
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
            f"{o.row_limit} rows, from per-cell sufficient statistics beyond"
            + (", bandwidth re-solved on each resample" if sigma is None else ", fixed sigma"),
            # read at run time: the library may change it
            "first_pass_grid_cells": calibcli.smooth.estimator.STATS_GRID,
            "alpha": o.alpha,
            "confidence_level": 1.0 - o.alpha,
            "seed": o.seed,
            "estimators": {metric: REGISTRY[metric].description},
            **sources_block(sources, engine),
            "gate": gate.describe() if gate.active else None,
        },
    )
    return Plan(doc, per_input(SmoothInputAccumulator, o.mode, o), gate, o.n_boot)


FAMILY = Family("smece", Options, plan)
