"""The classical tests (``calibcli tcal --test spiegelhalter|hosmer-lemeshow|ecce``; SPEC 9 for ECCE): on every
row through the pipeline, entries shaped as T-Cal's (test, sample, result with reject and p-value), gated by
``--fail-on-reject``. Their options are the ``tcal`` command's (:class:`calibcli.tcal.options.Options`), the
one object their accumulator receives."""

from __future__ import annotations

from calibcli.clinical.accumulator import ECCE_METHOD, ClinicalTestAccumulator
from calibcli.clinical.classical_tests import HL_CAVEATS
from calibcli.core.accumulator import per_input
from calibcli.core.documents import new_document
from calibcli.core.family import Family, Plan, sources_block
from calibcli.core.gates import GateSpec
from calibcli.cumulative.accumulator import N_CELLS
from calibcli.tcal.family import gates
from calibcli.tcal.options import Options

#: The gate metric of each test's entries.
GATE_METRICS = {
    "spiegelhalter": "spiegelhalter_p_value",
    "hosmer-lemeshow": "hosmer_lemeshow_p_value",
    "ecce": "ecce_p_value",
}


def plan(o: Options, sources, engine: str) -> Plan:
    """The classical test's document (its parameters) and ``new(stream)``, the input accumulator of a stream."""
    test = o.test
    n_bins = o.groups
    parameters = {**o.shown("mode", "test", "alpha")}
    if test == "spiegelhalter":
        parameters.update(
            statistic="Z = sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2 p (1 - p)) (Spiegelhalter 1986)",
            p_value="two-sided, standard normal",
        )
    elif test == "ecce":
        parameters.update(
            statistic=ECCE_METHOD.split("; ")[0],
            p_value="range of standard Brownian motion on [0, 1] (asymptotic)",
            max_rows=o.max_rows,
            rows=f"exact on every row up to {o.max_rows} rows; beyond, sums over {N_CELLS} uniform score "
            f"cells with the error bound stated (docs: How it is computed §9)",
            weights_convention="weights as the papers: C weighted, sigma with w^2 (a weight is one draw, not a count)",
        )
    else:
        parameters.update(
            n_bins=n_bins,
            grouping="deciles of risk: quantile bins of the predictions "
            "(docs: How it is computed §2.1; ties merge bins)",
            statistic="C-hat = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g)) (Hosmer & Lemeshow 1980)",
            p_value="chi-square with G - 2 degrees of freedom, G the non-empty groups",
            caveats=HL_CAVEATS,
        )
    parameters.update(fail_on_reject=o.fail_on_reject, **sources_block(sources, engine))
    doc = new_document("tcal", parameters)
    return Plan(doc, per_input(ClinicalTestAccumulator, o.mode, o), GateSpec(GATE_METRICS[test]), 0)


def finish(doc: dict, o: Options) -> list[str]:
    """Which groups reject, and the ``--fail-on-reject`` gate."""
    return gates(doc, alpha=o.alpha, fail_on_reject=o.fail_on_reject)


FAMILY = Family("tcal", Options, plan, finish)
