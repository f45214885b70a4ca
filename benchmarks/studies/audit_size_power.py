"""Benchmark: ECCE over many segments (calibcli.cumulative.ecce) against MCGrad's ``MulticalibrationError``, and the
audit's statistical claims by simulation (SPEC 9, issue 23).

Prints three tables:
1. speed and agreement: ECCE-R, its sigma and p-value for every segment (the whole population, each value of
   4 categorical columns, every pair of values of every pair of columns: a few hundred segments) over 1e6
   rows (``--quick``: 2e5), calibcli against MCGrad 0.1.5 (``precision_dtype="float64"``) on the same rows and
   the same segments, matched by their definitions; the largest differences; the speed-up (bar: >= 5x).
   calibcli's time includes turning the columns into segment ids.
2. size: on perfectly calibrated data with 200 segments (3 columns of 8, 8 and 7 values and their pairs,
   plus the whole population), the family-wise false alarm rate of Holm's "any segment" gate and of the MCE
   p-value (Bonferroni; Sidak and MCGrad's unadjusted minimum for comparison) at 0.05, with Monte Carlo
   standard errors (bar: within the nominal 5%);
3. power: a +0.08 miscalibration planted in the 3% of rows of one depth-2 intersection, n = 1e5: how often
   that intersection is the worst segment (largest ECCE-R/sigma; bar: >= 90%), how often the MCE gate fires,
   with Monte Carlo standard errors.

Data are seeded; times are the best of a few runs (machine shared, 2 cores). Needs ``mcgrad`` installed
beside calibcli (``pip install mcgrad``); without it, table 1 shows calibcli only.
The speed of ``ecce_segments`` (at 1e6 and 1e7 rows) and of ``calibcli audit`` against MCGrad are the asv suite's
``audit`` module; table 1 here keeps one timing of each beside the agreement.
Run: ``python benchmarks/studies/audit_size_power.py [--quick] [--reps N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

from calibcli.audit.multitest import adjust_pvalues, mce_pvalue
from calibcli.cumulative.ecce import ecce_segments

ALPHA = 0.05


def best_time(fn, repeat):
    """Best wall time of ``repeat`` runs, the process CPU time of that run (steadier than wall time on a
    shared machine; NumPy here runs one thread), and the result."""
    best, cpu, out = math.inf, math.inf, None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall = time.perf_counter() - t
        if wall < best:
            best, cpu = wall, time.process_time() - c
    return best, cpu, out


def segment_partitions(codes, sizes, depth=2):
    """Partitions for the whole population, every column and every pair of columns: (ids, size, columns)."""
    n = len(codes[0])
    parts = [(np.zeros(n, dtype=np.uint8), 1, ())]
    for d in range(1, depth + 1):
        for cols in itertools.combinations(range(len(codes)), d):
            ids = np.zeros(n, dtype=np.int64)
            size = 1
            for c in cols:
                ids = ids * sizes[c] + codes[c]
                size *= sizes[c]
            dtype = np.uint8 if size <= 255 else np.uint16
            parts.append((ids.astype(dtype), size, cols))
    return parts


# --- 1. speed and agreement against MCGrad -------------------------------------------------------------------


def speed_table(n, repeat, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    values = [5, 6, 8, 10]
    cols = [f"c{i}" for i in range(len(values))]
    s = rng.beta(2, 5, size=n)
    true = np.clip(s + 0.03 * np.sin(8 * s), 0, 1)
    y = (rng.uniform(size=n) < true).astype(np.int64)
    df = pd.DataFrame({"label": y, "score": s})
    for c, k in zip(cols, values):
        p = rng.dirichlet(np.ones(k) * 2)
        df[c] = rng.choice(k, size=n, p=p)

    def ours():
        codes, sizes = [], []
        for c in cols:
            uniq, inv = np.unique(df[c].to_numpy(), return_inverse=True)
            codes.append(inv.astype(np.int64))
            sizes.append(len(uniq))
        parts = segment_partitions(codes, sizes)
        res = ecce_segments(
            df["label"].to_numpy(), df["score"].to_numpy(), [p[0] for p in parts], n_segments=[p[1] for p in parts]
        )
        return res, parts, codes

    t_ours, c_ours, (res, parts, codes) = best_time(ours, repeat)
    tested = res.rows >= 10
    print(
        f"\n1. ECCE over segments, n = {n:,} rows, {tested.sum()} segments "
        f"(whole population, 4 columns of {values} values, all pairs; >= 10 rows each)"
    )
    print(
        f"   calibcli ecce_segments (ids from the columns included): {t_ours:8.3f} s wall, {c_ours:8.3f} s CPU"
        f"  (best of {repeat})"
    )
    try:
        from mcgrad.metrics import MulticalibrationError
    except ImportError:
        print("   mcgrad not installed: no comparison (pip install mcgrad)")
        return

    def theirs():
        m = MulticalibrationError(
            df,
            label_column="label",
            score_column="score",
            categorical_segment_columns=cols,
            max_depth=2,
            max_values_per_segment_feature=max(values),
            min_samples_per_segment=10,
            max_n_segments=None,
            chunk_size=50,
            precision_dtype="float64",
        )
        return m, m.segments_ecce, m.segments_ecce_sigma, m.segments_ecce_pvalue, m._segments_ecce_std

    t_mcg, c_mcg, (m, e_mcg, sig_mcg, p_mcg, std_mcg) = best_time(theirs, max(1, repeat - 1))
    print(f"   MCGrad MulticalibrationError (float64, chunk 50):        {t_mcg:8.3f} s wall, {c_mcg:8.3f} s CPU")
    print(f"   speed-up: {t_mcg / t_ours:6.1f}x wall, {c_mcg / c_ours:6.1f}x CPU   (bar: >= 5x)")

    # Match MCGrad's segments to ours by definition (column -> value).
    feats = m._segments[1]
    defs = {int(i): {} for i in range(len(e_mcg))}
    for col, val, idx in feats[["segment_column", "value", "idx_segment"]].itertuples(index=False):
        defs[int(idx)][col] = val
    offsets = np.cumsum([0] + [p[1] for p in parts])
    by_cols = {p[2]: k for k, p in enumerate(parts)}
    ours_idx = []
    for i in range(len(e_mcg)):
        d = defs[i]
        cidx = tuple(sorted(cols.index(c) for c in d))
        k = by_cols[cidx]
        seg = 0
        for c in cidx:
            uniq = np.unique(df[cols[c]].to_numpy())
            seg = seg * len(uniq) + int(np.searchsorted(uniq, d[cols[c]]))
        ours_idx.append(offsets[k] + seg)
    ours_idx = np.array(ours_idx)
    de = np.abs(res.ecce_r[ours_idx] - e_mcg).max()
    ds = np.abs(res.sigma[ours_idx] - std_mcg).max()
    dz = np.abs(res.ecce_r_sigma[ours_idx] - sig_mcg).max()
    dp = np.abs(res.ecce_r_pvalue[ours_idx] - p_mcg).max()
    print(f"   segments compared: {len(e_mcg)} (MCGrad's, all matched); largest |difference|:")
    print(f"     ECCE-R {de:.2e}   sigma {ds:.2e}   ECCE-R/sigma {dz:.2e}   p-value {dp:.2e}")
    worst_ours = int(np.nanargmax(np.where(tested, res.ecce_r_sigma, -np.inf)))
    print(
        f"   MCE (largest ECCE-R/sigma): calibcli {np.nanmax(res.ecce_r_sigma[tested]):.6f}, "
        f"MCGrad {m.mce_sigma:.6f}; worst segment the same: {worst_ours == ours_idx[int(np.argmax(sig_mcg))]}"
    )


# --- 2. size, 3. power ---------------------------------------------------------------------------------------


def simulate(reps, n, values, probs, rng, plant=None, batch=25):
    """ECCE-R/sigma and p-values of every segment of ``reps`` data sets of ``n`` rows, batched: the replicates
    of a batch are one call, each partition's ids offset by the replicate. Returns (sigma-scale statistics,
    p-values), each (reps, segments), and the segment labels (columns, ids)."""
    sig_all, p_all = [], []
    labels = None
    for start in range(0, reps, batch):
        b = min(batch, reps - start)
        s = rng.beta(2, 5, size=b * n)
        codes = [rng.choice(k, size=b * n, p=p) for k, p in zip(values, probs)]
        mean = s.copy()
        if plant is not None:
            (c1, v1), (c2, v2), shift = plant
            mean = np.where((codes[c1] == v1) & (codes[c2] == v2), np.clip(s + shift, 0, 1), s)
        y = (rng.uniform(size=b * n) < mean).astype(np.int8)
        rep = np.repeat(np.arange(b), n)
        parts = segment_partitions(codes, values)
        ids = [(rep * size + p).astype(np.uint32) for p, size, _ in parts]
        res = ecce_segments(y, s, ids, n_segments=[b * size for _, size, _ in parts])
        sig = np.concatenate([res.ecce_r_sigma[res.partition == k].reshape(b, -1) for k in range(len(parts))], 1)
        pv = np.concatenate([res.ecce_r_pvalue[res.partition == k].reshape(b, -1) for k in range(len(parts))], 1)
        small = np.concatenate([res.rows[res.partition == k].reshape(b, -1) for k in range(len(parts))], 1) < 100
        sig[small] = np.nan  # under --min-segment 100: counted, not tested
        pv[small] = np.nan
        sig_all.append(sig)
        p_all.append(pv)
        if labels is None:
            labels = [(cols, i) for _, size, cols in parts for i in range(size)]
    return np.concatenate(sig_all), np.concatenate(p_all), labels


def rate(hits):
    """A proportion with its Monte Carlo standard error; when every (no) replicate hit, the exact one-sided 95%
    bound instead, since the standard error is then 0: all n hit -> the rate is >= 0.05^(1/n)."""
    hits = np.asarray(hits)
    p = float(np.mean(hits))
    if p == 1.0:
        return f"{p:6.3f} (all {len(hits)}; 95% lower bound {0.05 ** (1 / len(hits)):.3f})"
    if p == 0.0:
        return f"{p:6.3f} (none of {len(hits)}; 95% upper bound {1 - 0.05 ** (1 / len(hits)):.3f})"
    return f"{p:6.3f} (MC s.e. {math.sqrt(p * (1 - p) / len(hits)):.3f})"


def size_table(reps, n, seed=0):
    rng = np.random.default_rng(seed + 1)
    values = [8, 8, 7]
    probs = [rng.dirichlet(np.ones(k) * 3) for k in values]
    t = time.perf_counter()
    sig, pv, _ = simulate(reps, n, values, probs, rng)
    m = (~np.isnan(pv)).sum(axis=1)
    mce = np.nanmax(sig, axis=1)
    print(
        f"\n2. Size: calibrated data, {reps} data sets of n = {n:,}, {sig.shape[1]} segments "
        f"({m.min()}-{m.max()} tested, >= 100 rows); rejection rates at {ALPHA} (nominal 0.05, "
        f"MC s.e. at 0.05: {math.sqrt(0.05 * 0.95 / reps):.3f}); {time.perf_counter() - t:.1f} s"
    )
    holm_any = (adjust_pvalues(pv, method="holm") <= ALPHA).any(axis=1)
    print(f"   Holm, any segment:                      {rate(holm_any)}")
    print(f"   MCE p-value, Bonferroni (the default):  {rate(mce_pvalue(mce, m) <= ALPHA)}")
    print(f"   MCE p-value, Sidak:                     {rate(mce_pvalue(mce, m, method='sidak') <= ALPHA)}")
    print(f"   MCE p-value, unadjusted (MCGrad):       {rate(mce_pvalue(mce, m, method='none') <= ALPHA)}")
    print(f"   BH, any segment (FDR=FWER, all null):   {rate((adjust_pvalues(pv, method='bh') <= ALPHA).any(axis=1))}")
    print(f"   per-segment rate, unadjusted:           {np.nanmean(pv <= ALPHA):6.3f}")


def power_table(reps, n, seed=0):
    rng = np.random.default_rng(seed + 2)
    values = [8, 8, 7]
    probs = [rng.dirichlet(np.ones(k) * 3) for k in values]
    # The planted intersection: column 0 value 0 (15% of rows) and column 1 value 0 (20%): 3% of rows.
    probs[0] = np.r_[0.15, 0.85 * probs[0][1:] / probs[0][1:].sum()]
    probs[1] = np.r_[0.20, 0.80 * probs[1][1:] / probs[1][1:].sum()]
    t = time.perf_counter()
    sig, pv, labels = simulate(reps, n, values, probs, rng, plant=((0, 0), (1, 0), 0.08))
    target = labels.index(((0, 1), 0))  # column pair (0, 1), ids 0 * 8 + 0
    worst = np.nanargmax(sig, axis=1)
    m = (~np.isnan(pv)).sum(axis=1)
    print(
        f"\n3. Power: +0.08 planted in one depth-2 intersection (3% of rows), {reps} data sets of "
        f"n = {n:,}, {sig.shape[1]} segments; {time.perf_counter() - t:.1f} s"
    )
    print(f"   planted segment is the worst (bar >= 0.90): {rate(worst == target)}")
    print(f"   MCE gate fires (Bonferroni, {ALPHA}):          {rate(mce_pvalue(np.nanmax(sig, axis=1), m) <= ALPHA)}")
    print(
        f"   planted segment's Holm-adjusted p <= {ALPHA}:    "
        f"{rate(adjust_pvalues(pv, method='holm')[:, target] <= ALPHA)}"
    )
    print(
        f"   planted segment's ECCE-R/sigma: median {np.median(sig[:, target]):.2f}; "
        f"next worst segment's: median {np.median(np.sort(np.nan_to_num(sig, nan=-1), axis=1)[:, -2]):.2f}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--reps", type=int, default=1000, help="data sets under calibration (size); 2/5 as many planted")
    ap.add_argument("--seed", type=int, default=0, help="table 1 draws from seed, size from seed + 1, power seed + 2")
    args = ap.parse_args()
    if args.quick:
        speed_table(200_000, 1, args.seed)
        size_table(100, 50_000, args.seed)
        power_table(50, 100_000, args.seed)
    else:
        speed_table(1_000_000, 1, args.seed)
        size_table(args.reps, 100_000, args.seed)
        power_table(max(1, 2 * args.reps // 5), 100_000, args.seed)


if __name__ == "__main__":
    main()
