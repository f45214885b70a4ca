"""The alerts of ``calibcli monitor`` (SPEC 12): p-values adjusted over every test of every monitored window,
an ``alert`` per window when one of its adjusted p-values is below alpha, and the first window from which the
alerts persist.

Holm's step-down (S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979)
keeps the family-wise error rate (the chance of any false alarm over the whole series) at most alpha under any
dependence between the tests (the windows share their reference); Bonferroni does too, less powerfully;
Benjamini-Hochberg ("Controlling the false discovery rate", JRSS B 57, 1995) controls the expected share of
false alarms among the alarms instead (for independent or positively dependent tests), and ``none`` each test
alone at alpha (no control over the series).
"""

from __future__ import annotations

import numpy as np

#: ``--adjust`` choices.
ADJUSTMENTS = ("holm", "bonferroni", "bh", "none")

ADJUST_RULES = {
    "holm": "Holm step-down over every test of every monitored window: family-wise false-alarm rate <= alpha",
    "bonferroni": "Bonferroni over every test of every monitored window: family-wise false-alarm rate <= alpha",
    "bh": "Benjamini-Hochberg over every test of every monitored window: false discovery rate <= alpha "
    "(not the family-wise rate)",
    "none": "no adjustment: each test at alpha alone (the false-alarm rate over the series grows with its length)",
}


def adjusted(p_values: list[float], method: str) -> list[float]:
    """The adjusted p-values, in the given order (each at most 1)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if m == 0 or method == "none":
        return [float(v) for v in p]
    if method == "bonferroni":
        return [float(v) for v in np.minimum(1.0, p * m)]
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        steps = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    else:  # bh
        steps = np.minimum.accumulate(m / np.arange(m, 0, -1) * ranked[::-1])[::-1]
        steps = np.minimum(1.0, steps)
    out = np.empty(m)
    out[order] = steps
    return [float(v) for v in out]


def persisting_from(alerts: list[bool | None]) -> int | None:
    """The index of the first window from which every later window that was tested is alerted (the drift's
    start), or None when the last tested window is calm. Windows not tested (None) neither break nor start it."""
    start = None
    for i, alert in enumerate(alerts):
        if alert is None:
            continue
        if alert:
            start = i if start is None else start
        else:
            start = None
    return start
