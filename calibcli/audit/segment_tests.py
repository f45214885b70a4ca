"""The multicalibration audit's numbers (SPEC 9): every segment's calibration, the worst first, and MCE.

For each segment of each partition (:mod:`calibcli.audit.segments`: the whole population, each segment column's
values, their intersections up to a depth) the audit reports

- ``rows``, ``weight`` and ``positives`` (``sum w y``), the mean prediction ``E / W`` and the observed rate
  ``O / W`` (``O = sum w y``, ``E = sum w s``, ``W = sum w``), and ``o_e = O / E`` with a ``1 - alpha``
  interval ``(O -+ z sqrt(V)) / E``, ``V = sum w^2 s (1 - s)``: the variance of ``O`` given the predictions
  if they were calibrated (the Poisson-binomial variance behind ECCE's sigma; normal approximation);
- ECCE-R and ECCE-MAD with their sigma scale and asymptotic p-values (:mod:`calibcli.cumulative.ecce`);
- ``mde``: the minimum detectable ECCE-R at the level the segment is judged at and ``power``, in probability
  units (``sigma`` times :func:`calibcli.cumulative.ecce.minimum_detectable_ecce_sigma`): how small a
  miscalibration this segment could have revealed. The level is ``alpha / m`` (m segments tested) when the
  p-values are adjusted, as the gates judge them, and ``alpha`` with ``adjust="none"`` (``mde_level``);
- ``ece_l1_plugin``: the binned l1-ECE of the segment's rows (SPEC 2.2, uniform bins), a point estimate;
- ``tested``: whether the segment has at least ``min_segment`` rows; smaller segments are counted, not
  tested (no p-value, not in the adjustment, not in MCE);
- ``p_adjusted``: the ECCE-R p-values adjusted over the tested segments by Holm, Benjamini-Hochberg or none
  (:mod:`calibcli.audit.multitest`).

MCE is the largest ECCE-R/sigma over the tested segments (Guy, Haimovich, Linder, Okati, Perini, Tax and
Tygert, "Measuring multi-calibration", arXiv:2506.11251, 2025); ``mce_pvalue`` accounts for the number of
segments tested (Bonferroni by default: valid for overlapping segments); ``mce_relative`` is MCGrad's
relative scale in percent (:func:`calibcli.cumulative.ecce.relative_percent`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibcli.audit.multitest import adjust_pvalues, mce_pvalue
from calibcli.audit.options import Options
from calibcli.audit.segments import ColumnCoding, Partition, definition
from calibcli.core import cancel
from calibcli.cumulative.brownian import minimum_detectable_ecce_sigma, relative_percent
from calibcli.cumulative.ecce import EcceResult, ecce_segments


@dataclass(frozen=True)
class SegmentSums:
    """Per-segment sums, one entry per segment of every partition (partitions one after another)."""

    rows: np.ndarray
    w: np.ndarray
    wy: np.ndarray
    ws: np.ndarray
    w2v: np.ndarray  # sum of w^2 s (1 - s)
    ece_l1: np.ndarray  # the binned l1-ECE of each segment's rows


@dataclass(frozen=True)
class AuditResult:
    """Every segment (a list of dicts, worst first: largest ECCE-R/sigma, untested last) and the summary."""

    segments: list[dict]
    mce_sigma: float
    mce_pvalue: float | None
    mce_relative: float | None
    n_segments: int  # segments with rows
    n_segments_tested: int
    population: dict = field(default_factory=dict)
    mde_level: float = 0.05
    #: Where each entry of ``segments`` is: (partition index, segment index within it); not in the JSON.
    located: tuple[tuple[int, int], ...] = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return {
            "mce_sigma": self.mce_sigma,
            "mce_pvalue": self.mce_pvalue,
            "mce_relative": self.mce_relative,
            "n_segments": self.n_segments,
            "n_segments_tested": self.n_segments_tested,
            "mde_level": self.mde_level,
            "population": self.population,
            "segments": self.segments,
        }


def segment_sums(
    y: np.ndarray,
    s: np.ndarray,
    w: np.ndarray,
    ids: list[np.ndarray],
    sizes: list[int],
    *,
    n_bins: int,
    ecce: EcceResult,
) -> SegmentSums:
    """The per-segment sums of every partition: three ``bincount`` per partition over (segment, bin) pairs (the
    bins give the l1-ECE; summed over the bins they give ``O`` and ``E``), no loop over segments. Rows, weights
    and ``sum w^2 s (1 - s) = (sigma W)^2`` come with the ECCE statistics."""
    bins = np.minimum((s * n_bins).astype(np.int64), n_bins - 1)
    unit = bool(np.all(w == 1.0))
    wy, ws = (y.astype(np.float64), s) if unit else (w * y, w * s)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("wy", "ws", "ece_l1")}
    key = np.empty(len(s), dtype=np.int64)  # reused by every partition
    for seg, g in zip(ids, sizes, strict=True):
        cancel.check()  # a signal stops the audit between partitions
        np.multiply(seg, n_bins, out=key, dtype=np.int64)  # ids come in small unsigned types: widened first
        key += bins
        bw = (
            np.bincount(key, minlength=g * n_bins).astype(np.float64)
            if unit
            else np.bincount(key, weights=w, minlength=g * n_bins)
        ).reshape(g, n_bins)
        bwy = np.bincount(key, weights=wy, minlength=g * n_bins).reshape(g, n_bins)
        bws = np.bincount(key, weights=ws, minlength=g * n_bins).reshape(g, n_bins)
        total = bw.sum(axis=1)
        parts["wy"].append(bwy.sum(axis=1))
        parts["ws"].append(bws.sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            parts["ece_l1"].append(np.where(total > 0, np.abs(bwy - bws).sum(axis=1) / total, np.nan))
    weight = np.asarray(ecce.weight, dtype=np.float64)
    return SegmentSums(
        rows=np.asarray(ecce.rows, dtype=np.int64),
        w=weight,
        w2v=np.nan_to_num(np.asarray(ecce.sigma) * weight) ** 2,
        **{k: np.concatenate(v) for k, v in parts.items()},
    )


def finish(
    sums: SegmentSums, ecce: EcceResult, codings: list[ColumnCoding], partitions: list[Partition], options: Options
) -> AuditResult:
    """The audit's result from the per-segment sums and ECCE statistics (both in partition order)."""
    from scipy.special import ndtri

    # one value per segment (EcceResult's fields are floats only for a single series)
    sigma, ecce_r, ecce_r_sigma, ecce_mad, ecce_mad_sigma, ecce_bound = (
        np.asarray(v)
        for v in (ecce.sigma, ecce.ecce_r, ecce.ecce_r_sigma, ecce.ecce_mad, ecce.ecce_mad_sigma, ecce.error_bound)
    )
    nonempty = (sums.rows > 0) & (sums.w > 0)
    tested = nonempty & (sums.rows >= options.min_segment)
    p = np.where(tested, ecce.ecce_r_pvalue, np.nan)
    p_adj = adjust_pvalues(p, method=options.adjust) if tested.any() else p
    n_tested = int(tested.sum())
    stat = np.where(tested, ecce.ecce_r_sigma, -np.inf)
    mce = float(stat.max()) if n_tested else float("nan")
    population = {
        "rows": int(sums.rows[0]),
        "weight": float(sums.w[0]),
        "observed_rate": float(sums.wy[0] / sums.w[0]),
        "mean_prediction": float(sums.ws[0] / sums.w[0]),
        "sigma": float(sigma[0]),
    }
    prevalence = population["observed_rate"]
    # the level a segment is judged at: Bonferroni's alpha / m whenever p-values are adjusted (Holm's first step
    # and the MCE gate's level; conservative for Holm's later steps and for BH), alpha when they are not
    mde_level = options.alpha / max(n_tested, 1) if options.adjust != "none" else options.alpha
    mde_sigma = minimum_detectable_ecce_sigma(mde_level, options.power)
    z = -float(ndtri(options.alpha / 2.0))  # by symmetry: 1 - alpha / 2 rounds to 1 for alpha 1e-17
    with np.errstate(divide="ignore", invalid="ignore"):
        o_e = sums.wy / sums.ws
        half = z * np.sqrt(sums.w2v) / sums.ws
    order = np.lexsort((np.arange(len(stat)), -np.nan_to_num(stat, nan=-np.inf), ~tested))  # worst first
    starts = np.cumsum([0] + [p_.n_segments for p_ in partitions])
    which = np.searchsorted(starts, np.arange(len(stat)), side="right") - 1
    segments, located = [], []
    for i in order:
        if not nonempty[i]:
            continue
        part = partitions[which[i]]
        located.append((int(which[i]), int(i - starts[which[i]])))
        entry = {
            "definition": definition(codings, part, int(i - starts[which[i]])),
            "rows": int(sums.rows[i]),
            "weight": float(sums.w[i]),
            "positives": float(sums.wy[i]),
            "mean_prediction": float(sums.ws[i] / sums.w[i]),
            "observed_rate": float(sums.wy[i] / sums.w[i]),
            "o_e": _num(o_e[i]),
            "o_e_ci_low": _num(max(o_e[i] - half[i], 0.0)) if np.isfinite(half[i]) else None,
            "o_e_ci_high": _num(o_e[i] + half[i]) if np.isfinite(half[i]) else None,
            "ecce_r": float(ecce_r[i]),
            "ecce_r_sigma": _num(ecce_r_sigma[i]),
            "ecce_mad": float(ecce_mad[i]),
            "ecce_mad_sigma": _num(ecce_mad_sigma[i]),
            "sigma": float(sigma[i]),
            "ecce_bound": float(ecce_bound[i]),
            "tested": bool(tested[i]),
            "p_value": _num(p[i]),
            "p_adjusted": _num(p_adj[i]),
            "mde": float(mde_sigma * sigma[i]),
            "ece_l1_plugin": _num(sums.ece_l1[i]),
        }
        segments.append(entry)
    return AuditResult(
        segments=segments,
        mce_sigma=mce,
        mce_pvalue=_num(mce_pvalue(mce, n_tested, method=options.mce_method)) if n_tested else None,
        mce_relative=_num(relative_percent(mce, global_sigma=population["sigma"], prevalence=prevalence))
        if n_tested
        else None,
        n_segments=int(nonempty.sum()),
        n_segments_tested=n_tested,
        population=population,
        mde_level=mde_level,
        located=tuple(located),
    )


def _num(x):
    """A float for JSON: NaN as None (JSON has no NaN), inf kept as a float."""
    x = float(x)
    return None if np.isnan(x) else x


def in_score_order(y: np.ndarray, s: np.ndarray, w: np.ndarray, codes: list[np.ndarray]):
    """The rows sorted by score (ties in any order: ECCE treats them as blocks), the segment columns' codes with
    them. A gather by a random permutation costs a cache miss per row whatever its width, so the codes (small
    integers) travel packed, up to 8 one-byte codes in one 8-byte word per row: one gather for 6 columns
    instead of one per partition (22 at depth 2) inside :func:`calibcli.cumulative.ecce.ecce_segments`."""
    if len(s) < 2 or bool(np.all(s[1:] >= s[:-1])):
        return y, s, w, codes
    order = np.argsort(s)
    y, s = y[order], s[order]
    w = w if bool(np.all(w == 1.0)) else w[order]
    small = [j for j, c in enumerate(codes) if len(c) and int(c.max()) < 256]
    out = list(codes)
    for first in range(0, len(small), 8):
        batch = small[first : first + 8]
        packed = np.zeros((len(s), 8), dtype=np.uint8)
        for k, j in enumerate(batch):
            packed[:, k] = codes[j]
        gathered = packed.view(np.uint64).reshape(len(s))[order].view(np.uint8).reshape(len(s), 8)
        del packed
        for k, j in enumerate(batch):
            out[j] = np.ascontiguousarray(gathered[:, k])
    for j in set(range(len(codes))) - set(small):
        out[j] = codes[j][order]
    return y, s, w, out


def audit_arrays(
    y: np.ndarray,
    s: np.ndarray,
    w: np.ndarray,
    codes: list[np.ndarray],
    codings: list[ColumnCoding],
    partitions: list[Partition],
    options: Options,
) -> AuditResult:
    """The audit of rows held in memory, exactly: ECCE of every segment after one sort
    (:func:`calibcli.cumulative.ecce.ecce_segments`), the sums by ``bincount``. The result does not depend on the
    order of the rows."""
    sizes = [p.n_segments for p in partitions]
    y_o, s_o, w_o, codes_o = in_score_order(y, s, w, codes)
    ecce = ecce_segments(
        y_o, s_o, [p.segment_ids(codes_o, len(s)) for p in partitions], n_segments=sizes, sample_weight=w_o
    )
    # the sums in the rows' own order: the same additions, so the same last digits, as ever
    ids = [p.segment_ids(codes, len(s)) for p in partitions]
    return finish(
        segment_sums(y, s, w, ids, sizes, n_bins=options.n_bins, ecce=ecce), ecce, codings, partitions, options
    )
