"""The reference's rows and the null of a window's SmoothECE under "the window is drawn from the reference"
(SPEC 12).

Why not the two-sample bootstrap of the difference: SmoothECE is zero at perfect calibration and positive
on every finite sample, its bias shrinking like ``n^(-1/2)``; a small window's SmoothECE exceeds a large
reference's on calibrated data by about two of its bootstrap standard errors (measured: mean z 1.9 for 2,000
against 8,000 calibrated rows), so that test alarms on every calibrated series, and the bootstrap's own bias
correction leaves half of that (mean z 1.2). Instead each window's SmoothECE is compared with the SmoothECE of
``n_null`` samples of the window's size drawn with replacement from the reference's rows: the law of the
window's statistic if its rows came from the reference's distribution, whatever that distribution's own
calibration (the m-out-of-n bootstrap; Bickel, Goetze & van Zwet, Statistica Sinica 7, 1997). The reference's
empirical distribution carries its own sampling noise, which makes the null wider: conservative for the
false-alarm rate, checked by simulation (benchmarks/studies/monitor_false_alarms.py).

The p-value is one-sided (a window worse than the reference), from a normal law fitted to the null's
logarithms (so that a handful of resamples gives p-values below alpha / m for m windows); the empirical
share of null values at or above the window's is reported beside it.
"""

from __future__ import annotations

import math

import numpy as np

from calibcli.core.accumulator import OnePass
from calibcli.core.rows import RowSample
from calibcli.smooth.estimator import smooth_ece

#: Rows of the reference kept for the resampled nulls, by default (a bottom-k sample beyond).
REFERENCE_ROWS = 200_000

STATE_VERSION = 1


def binary_rows(probs: np.ndarray, labels: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """``(z, y)`` of the binary problem the monitor measures: the class-1 probability and the label (binary),
    or the top-label confidence and whether the top label is right (top-label)."""
    if probs.ndim == 1:
        return probs, labels
    if mode == "binary":
        return probs[:, 1], labels
    top = np.argmax(probs, axis=1)
    return probs[np.arange(len(top)), top], (top == labels).astype(np.int64)


class ReferenceRows(OnePass):
    """A window's rows for the reference's nulls: at most ``k`` of them (all while they fit, else the seeded
    bottom-k of SPEC 8, the same however the rows were split), as the binary problem's ``(z, y)``."""

    kind = "monitor_reference_rows"
    state_name = "monitor reference rows"
    merge_rules = {"sample": "merge"}

    def __init__(self, *, mode: str, k: int = REFERENCE_ROWS, seed: int = 0):
        self.mode = mode
        self.sample = RowSample(k, seed)

    def update(self, row_index, probs, labels, w=None) -> ReferenceRows:
        z, y = binary_rows(np.asarray(probs), np.asarray(labels), self.mode)
        self.sample.update(np.asarray(row_index), np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.int64))
        return self

    @property
    def n_rows(self) -> int:
        return self.sample.n_seen

    def for_second_pass(self) -> ReferenceRows:
        return ReferenceRows(mode=self.mode, k=self.sample.k, seed=self.sample.seed)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(z, y)`` of the rows held, in row order."""
        _, z, y, _ = self.sample.arrays()
        return z, y


def pooled(parts: list[ReferenceRows]) -> ReferenceRows:
    """The reference's rows: the windows' samples merged (bottom-k of the union)."""
    out = parts[0].for_second_pass()
    for part in parts:
        out.merge(part)
    return out


def null_smece(z: np.ndarray, y: np.ndarray, n: int, *, n_null: int, seed: int, window: int) -> np.ndarray:
    """SmoothECE of ``n_null`` samples of ``n`` rows drawn with replacement from the reference's rows ``(z, y)``
    (each a multiplicity per reference row, given as frequency weights), seeded by ``(seed, window)``."""
    rng = np.random.Generator(np.random.Philox(key=[seed & 0xFFFFFFFFFFFFFFFF, window]))
    k = len(z)
    out = np.empty(n_null)
    for b in range(n_null):
        counts = np.bincount(rng.integers(0, k, n), minlength=k)
        keep = counts > 0
        out[b] = smooth_ece(y[keep], z[keep], sample_weight=counts[keep].astype(np.float64)).smece
    return out


def log_normal_p(value: float, null: np.ndarray) -> tuple[float, float]:
    """``(p, empirical p)``: one-sided, the chance that the null reaches ``value``, from a normal law fitted to
    the null's logarithms, and the share of null values at or above it (with the usual +1)."""
    empirical = (1.0 + float(np.sum(null >= value))) / (len(null) + 1.0)
    logs = np.log(np.maximum(null, 1e-300))
    sd = float(np.std(logs, ddof=1)) if len(null) > 1 else 0.0
    if not sd > 0 or value <= 0:
        return (empirical if value > 0 else 1.0), empirical
    zscore = (math.log(value) - float(np.mean(logs))) / sd
    return 0.5 * math.erfc(zscore / math.sqrt(2.0)), empirical


def wald_difference_p(window: dict, reference: dict) -> float:
    """Two-sided p-value of the Wald test that two coefficients of independent rows are equal
    (``{"estimate", "se"}`` each)."""
    se = math.hypot(window["se"], reference["se"])
    if not se > 0 or not math.isfinite(se):
        return 1.0
    return math.erfc(abs(window["estimate"] - reference["estimate"]) / se / math.sqrt(2.0))
