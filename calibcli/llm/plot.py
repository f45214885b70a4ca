"""The risk-coverage diagram: ``prepare_risk_coverage(doc)`` -> :class:`RiskCoverageData`, then
``plot_risk_coverage(data, ax=None)`` draws it (one curve per input or group, its AURC in the legend; the
oracle's curve dashed for the first). matplotlib is imported when drawing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core.documents import entry_label


@dataclass(frozen=True)
class Curve:
    label: str
    coverage: np.ndarray
    risk: np.ndarray
    aurc: float | None


@dataclass(frozen=True)
class RiskCoverageData:
    curves: tuple[Curve, ...]


def prepare_risk_coverage(doc: dict) -> RiskCoverageData:
    """The curves of a ``selective`` report, one per entry."""
    out = []
    for entry in doc["files"]:
        problem = entry["problems"][0]
        curve = problem["risk_coverage_curve"]
        out.append(
            Curve(
                entry_label(entry),
                np.asarray(curve["coverage"], dtype=float),
                np.asarray(curve["risk"], dtype=float),
                problem["metrics"]["aurc"]["estimate"],
            )
        )
    return RiskCoverageData(tuple(out))


def plot_risk_coverage(data: RiskCoverageData, *, ax=None):
    """Risk against coverage (a step at each tie block's end), legend names with their AURC; returns the figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.0, 4.5))
    else:
        fig = ax.figure
    for c in data.curves:
        name = f"{c.label} (AURC {c.aurc:.4g})" if c.aurc is not None else c.label
        ax.plot(np.r_[0.0, c.coverage], np.r_[c.risk[:1], c.risk], drawstyle="steps-post", label=name)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("coverage (share of answers kept, most confident first)")
    ax.set_ylabel("risk (error rate among those kept)")
    ax.set_title("Risk-coverage curve")
    ax.grid(alpha=0.3)
    legend = ax.legend(fontsize="small", loc="best")
    for text in legend.get_texts():
        text.set_usetex(False)
        text.set_parse_math(False)  # names from the data: $ is text, not mathtext
    return fig
