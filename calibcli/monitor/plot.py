"""The monitor's picture: each monitored metric over time (one panel each), the windows' intervals as a band,
the reference's interval as a horizontal band, the alerted windows marked, too-small windows hollow.
Data first (:func:`prepare_monitor_plot`), then drawing (:func:`plot_monitor`), as the diagrams do.
matplotlib is imported only here, on the headless Agg canvas."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core.outputs import write_output
from calibcli.core.safe_text import for_matplotlib
from calibcli.diagram import plot as dg


@dataclass(frozen=True)
class MetricSeries:
    """One metric over the windows of one series: window midpoints (as ISO text), estimates, band, flags."""

    name: str
    group: str
    starts: tuple[str, ...]
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    alert: np.ndarray  # bool
    untested: np.ndarray  # bool: reference or too small
    reference: tuple[float | None, float | None, float | None]  # estimate, ci_low, ci_high


def _num(v) -> float:
    return np.nan if v is None else float(v)


def prepare_monitor_plot(doc: dict) -> list[MetricSeries]:
    """Every (metric, series) of the document, in the order of the metrics, then of the series."""
    out = []
    refs = {str(r["group"]): r for r in doc["reference"]}
    for name in doc["parameters"]["metrics"]:
        series: dict[str, list[dict]] = {}
        for w in doc["windows"]:
            series.setdefault(str(w["group"]), []).append(w)
        for group, ws in series.items():
            m = [w["metrics"].get(name) or {} for w in ws]
            ref = refs[group]["metrics"].get(name) or {}
            out.append(
                MetricSeries(
                    name=name,
                    group="" if group == "None" else group,
                    starts=tuple(w["start"] for w in ws),
                    estimate=np.array([_num(x.get("estimate")) for x in m]),
                    low=np.array([_num(x.get("ci_low")) for x in m]),
                    high=np.array([_num(x.get("ci_high")) for x in m]),
                    alert=np.array([bool(w["alert"]) for w in ws]),
                    untested=np.array([w["alert"] is None for w in ws]),
                    reference=(ref.get("estimate"), ref.get("ci_low"), ref.get("ci_high")),
                )
            )
    return out


def plot_monitor(data: list[MetricSeries], *, by_time: bool = True):
    """One panel per metric (series of the groups overlaid); returns the matplotlib Figure."""
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(s.name for s in data))
    fig = Figure(figsize=(8, 2.6 * len(names)), layout="constrained")
    axes = fig.subplots(len(names), 1, squeeze=False, sharex=True)[:, 0]
    for ax, name in zip(axes, names, strict=True):
        for s in (s for s in data if s.name == name):
            x = np.arange(len(s.starts))
            label = for_matplotlib(s.group) if s.group else "windows"
            line = ax.plot(x, s.estimate, marker="o", ms=4, lw=1.2, label=label)[0]
            ax.fill_between(x, s.low, s.high, color=line.get_color(), alpha=0.2, lw=0)
            est, lo, hi = s.reference
            if lo is not None and hi is not None:
                ax.axhspan(lo, hi, color="0.5", alpha=0.18, lw=0, label="reference interval")
            if est is not None:
                ax.axhline(est, color="0.35", lw=0.8, ls="--", label="reference")
            if s.alert.any():
                ax.scatter(x[s.alert], s.estimate[s.alert], s=70, marker="X", color="crimson", zorder=5, label="alert")
            if s.untested.any():
                ax.scatter(
                    x[s.untested],
                    s.estimate[s.untested],
                    s=40,
                    facecolors="white",
                    edgecolors="0.3",
                    zorder=4,
                    label="reference or too small (not tested)",
                )
            ticks = x if len(x) <= 12 else x[:: max(1, len(x) // 12)]
            ax.set_xticks(ticks, [_tick(s.starts[i]) for i in ticks], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(for_matplotlib(name))
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("window start" if by_time else "window")
    return fig


def _tick(start: str) -> str:
    return start[:10] if start.endswith("T00:00:00") else start[:16]


def save_plot(doc: dict, path: str) -> None:
    """Draw the document's picture and write it (PNG, SVG or PDF by the extension) atomically."""
    fmt = path.rsplit(".", 1)[-1].lower()
    fig = plot_monitor(prepare_monitor_plot(doc), by_time=doc["parameters"]["windows"]["by"] == "time")
    write_output(path, dg.figure_bytes(fig, fmt, dpi=120), "plot")
