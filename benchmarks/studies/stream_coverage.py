"""Coverage of the streamed bootstrap interval: per-row bootstrap versus per-bin sufficient statistics (SPEC 8).

SPEC 8 lets the binned family draw its bootstrap replicates from per-(bin, label) sufficient statistics
once a stream has more rows than it keeps (``calibcli.binned.accumulator.ROW_LIMIT``), and says that
"that interval's coverage is checked against the per-row bootstrap". This script does that check by
simulation, library only (no CLI):

- Settings (fixed seeds): predictions ``z ~ Beta(a, b)``, labels ``y ~ Bernoulli(p(z))`` with a known
  true calibration curve ``p``; see ``SETTINGS``. One is clearly miscalibrated, one is close to
  calibrated (gaps of the size of the estimators' noise, where the plug-in ECEs are most biased), one is
  a stress case with bins that hold only a handful of rows and a heavy-tailed log-loss.
- For every simulated data set (n = 200,000 rows by default) the SAME rows go through
  ``BinnedAccumulator(row_limit=n)`` (rows kept: exact per-row Poisson bootstrap) and
  ``BinnedAccumulator(row_limit=2**17)`` (n > row_limit: replicates from the cells' sufficient
  statistics), each with R = 500 resamples and a 95% percentile interval, bootstrap seed = data set number.
- Target: each metric's population value on the same 15 equal-width bins, by numerical integration
  (``scipy.integrate.quad`` per bin), checked against the closed form (incomplete beta functions, digamma).
  ``ece_l1_plugin``: ``sum_b |E[(y - z) 1{z in b}]|``; ``ece_l2_plugin``: ``sqrt(sum_b E[(y-z) 1_b]^2 / P(b))``;
  ``ece_l2_sq_debiased_dpe``: the square of the latter; ``brier_score``: ``E[(z - y)^2]``; ``log_loss``:
  ``E[-y log z - (1-y) log(1-z)]``; ``dce``: ``sum_k |E[(y - (k+1)/B) 1_k]|`` (SPEC 2.4, c_k the upper end).
- Table: coverage of the target by each interval, with its Monte Carlo standard error
  ``sqrt(c (1 - c) / N)``, the difference per-bin minus per-row with its paired standard error (both
  intervals are computed on the same data sets), mean widths, and a flag where the two coverages differ by
  more than 2 points (the bar). Plug-in binned ECEs are biased upwards, so the percentile interval can
  under-cover the population value for BOTH methods; a second table gives the estimator's bias and its
  sampling s.d. across data sets against the bootstrap's (width / 3.92), and the coverage of the
  estimator's own mean (which isolates the variance part of the interval from the bias).
- Timing: ``update()`` + ``result(n_boot=1000)`` of both paths at n = 10^6, and of the per-bin path at
  n = 10^8 (rows generated batch by batch outside the timer; the per-row path would hold 10^8 rows, so its
  time there is the 10^6 time scaled by 100, which is how it grows: every resample touches every row).

Run: ``python benchmarks/studies/stream_coverage.py`` (about 10 minutes on 2 idle cores, 12-14 with other jobs
running; progress on stderr).
``--reps`` (data sets per setting), ``--seed`` (the first data set's number), ``--n``, ``--settings``, ``--workers``
for shorter runs; ``--timing`` adds the old timing part.
"""

from __future__ import annotations

import os

# one BLAS thread per worker: the workers are the parallelism
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import math
import multiprocessing as mp
import platform
import sys
import time
from dataclasses import dataclass

import numpy as np

N_BINS = 15
ALPHA = 0.05
METRICS = ("ece_l1_plugin", "ece_l2_plugin", "ece_l2_sq_debiased_dpe", "brier_score", "log_loss", "dce")
PER_BIN_ROW_LIMIT = 1 << 17
BAR_POINTS = 2.0


@dataclass(frozen=True)
class Setting:
    name: str
    a: float  # z ~ Beta(a, b)
    b: float
    kind: str  # true calibration curve p(z)
    k: float
    seed: int

    def describe(self) -> str:
        curve = {"power": f"z^{self.k:g}"}[self.kind]
        return f"z ~ Beta({self.a:g}, {self.b:g}), y ~ Bernoulli({curve})"

    def p(self, z):
        return np.power(z, self.k)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        z = rng.beta(self.a, self.b, size=n)
        y = (rng.random(n) < self.p(z)).astype(np.int64)
        return z, y


SETTINGS = {
    "miscal": Setting("miscal", 2.0, 5.0, "power", 1.3, 101),  # over-confident: P(y=1|z) = z^1.3 < z
    "nearcal": Setting("nearcal", 2.0, 5.0, "power", 1.01, 202),  # gaps ~ 0.003, the size of the bins' noise
    "sparse": Setting("sparse", 0.5, 4.0, "power", 0.8, 303),  # under-confident; top bins hold a few rows
}


# ---------------------------------------------------------------------------------------------
# Population values


def population_values(s: Setting) -> dict[str, float]:
    """Each metric's population value on N_BINS equal-width bins, by quad per bin (Beta density exact)."""
    from scipy import integrate, special

    log_beta = special.betaln(s.a, s.b)

    def integral(g, lo, hi):
        # integrate g(z) f(z) over [lo, hi], f the Beta(a, b) density; the algebraic end-point singularities
        # of f (a < 1 at 0, b < 1 at 1) are taken by quad's 'alg' weight
        alpha_ = s.a - 1.0 if lo == 0.0 else 0.0
        beta_ = s.b - 1.0 if hi == 1.0 else 0.0

        def h(z):
            rest = 0.0
            if lo != 0.0:
                rest += (s.a - 1.0) * math.log(z)
            if hi != 1.0:
                rest += (s.b - 1.0) * math.log1p(-z)
            return g(z) * math.exp(rest - log_beta)

        kw = dict(limit=500, epsabs=1e-14, epsrel=1e-12)
        if alpha_ == 0.0 and beta_ == 0.0:
            val, _ = integrate.quad(h, lo, hi, **kw)
        else:
            val, _ = integrate.quad(h, lo, hi, weight="alg", wvar=(alpha_, beta_), **kw)
        return val

    def p(z):
        return z**s.k

    mass, gap, resid_dce = [], [], []
    brier = logloss = 0.0
    for j in range(N_BINS):
        lo, hi = j / N_BINS, (j + 1) / N_BINS
        P = integral(lambda z: 1.0, lo, hi)
        Z = integral(lambda z: z, lo, hi)
        Y = integral(p, lo, hi)
        mass.append(P)
        gap.append(Y - Z)
        resid_dce.append(Y - P * (j + 1) / N_BINS)
        brier += integral(lambda z: z * z - 2.0 * z * p(z) + p(z), lo, hi)
        logloss += integral(lambda z: -special.xlogy(p(z), z) - special.xlog1py(1.0 - p(z), -z), lo, hi)
    mass, gap = np.array(mass), np.array(gap)
    sq = float(np.sum(np.divide(gap**2, mass, out=np.zeros_like(gap), where=mass > 0)))
    return {
        "ece_l1_plugin": float(np.abs(gap).sum()),
        "ece_l2_plugin": math.sqrt(sq),
        "ece_l2_sq_debiased_dpe": sq,
        "brier_score": brier,
        "log_loss": logloss,
        "dce": float(np.abs(resid_dce).sum()),
        "_total_mass": float(mass.sum()),
        "_min_bin_mass": float(mass.min()),
    }


def closed_form_values(s: Setting) -> dict[str, float]:
    """The same population values in closed form (regularised incomplete beta functions, digamma): a check of the quad.

    With ``p(z) = z^k``: ``E[z^m 1{lo <= z < hi}] = B(a+m, b)/B(a, b) (I_hi(a+m, b) - I_lo(a+m, b))``;
    ``E[z^k log z] = B(a+k, b)/B(a, b) (psi(a+k) - psi(a+k+b))``, ``E[z^k log(1-z)] = B(a+k, b)/B(a, b) (psi(b) - psi(a+k+b))``.
    """
    from scipy import special

    def moment(m):
        return math.exp(special.betaln(s.a + m, s.b) - special.betaln(s.a, s.b))

    edges = np.linspace(0.0, 1.0, N_BINS + 1)

    def partial(m):
        return moment(m) * np.diff(special.betainc(s.a + m, s.b, edges))

    P, Z, Y = partial(0), partial(1), partial(s.k)
    gap = Y - Z
    sq = float(np.sum(gap**2 / P))
    brier = moment(2) - 2.0 * moment(s.k + 1) + moment(s.k)
    e_zk_log_z = moment(s.k) * (special.digamma(s.a + s.k) - special.digamma(s.a + s.k + s.b))
    e_log_1mz = special.digamma(s.b) - special.digamma(s.a + s.b)
    e_zk_log_1mz = moment(s.k) * (special.digamma(s.b) - special.digamma(s.a + s.k + s.b))
    return {
        "ece_l1_plugin": float(np.abs(gap).sum()),
        "ece_l2_plugin": math.sqrt(sq),
        "ece_l2_sq_debiased_dpe": sq,
        "brier_score": float(brier),
        "log_loss": float(-e_zk_log_z - e_log_1mz + e_zk_log_1mz),
        "dce": float(np.abs(Y - P * np.arange(1, N_BINS + 1) / N_BINS).sum()),
    }


def monte_carlo_values(s: Setting, n: int, seed: int) -> dict[str, float]:
    """The same population values from one huge sample (the library's point estimates, no bootstrap)."""
    from calibcli.binned.accumulator import BinnedAccumulator

    acc = BinnedAccumulator(n_bins=N_BINS, row_limit=1)
    rng = np.random.default_rng([seed, 999])
    chunk = 1 << 21
    done = 0
    while done < n:
        m = min(chunk, n - done)
        z, y = s.sample(m, rng)
        acc.update(np.arange(done, done + m), z, y)
        done += m
    r = acc.result(n_boot=0)
    return {k: r.metrics[k].estimate for k in METRICS}


# ---------------------------------------------------------------------------------------------
# One simulated data set


def one_dataset(task):
    """Both bootstraps on one simulated data set: (setting, i, estimates, per-row CIs, per-bin CIs, times)."""
    from calibcli.binned.accumulator import BinnedAccumulator

    setting_name, i, n, n_boot = task
    s = SETTINGS[setting_name]
    z, y = s.sample(n, np.random.default_rng([s.seed, i]))
    idx = np.arange(n)
    out = {"setting": setting_name, "i": i}
    for label, row_limit in (("row", max(n, PER_BIN_ROW_LIMIT)), ("bin", PER_BIN_ROW_LIMIT)):
        t0 = time.perf_counter()
        acc = BinnedAccumulator(n_bins=N_BINS, strategy="uniform", row_limit=row_limit)
        acc.update(idx, z, y)
        res = acc.result(n_boot=n_boot, alpha=ALPHA, seed=i, keep_replicates=True)
        out[f"time_{label}"] = time.perf_counter() - t0
        # the bootstrap distribution's location and spread: mean replicate minus estimate, s.d. of the replicates
        out[f"boot_{label}"] = {
            k: (
                float(np.nanmean(res.replicates[k])) - res.metrics[k].estimate,
                float(np.nanstd(res.replicates[k], ddof=1)),
            )
            for k in METRICS
        }
        expected = "over rows" if label == "row" else "sufficient statistics"
        method = res.metrics[METRICS[0]].ci_method or ""
        if expected not in method:
            raise RuntimeError(f"{label} path used the wrong bootstrap: {method!r}")
        out[label] = {k: (res.metrics[k].ci_low, res.metrics[k].ci_high) for k in METRICS}
        out["est"] = {k: res.metrics[k].estimate for k in METRICS}
    return out


# ---------------------------------------------------------------------------------------------
# Timing


def time_paths(n_small: int, n_large: int, n_boot: int) -> list[tuple]:
    """(path, n, update s, result s, note) rows."""
    from calibcli.binned.accumulator import BinnedAccumulator

    s = SETTINGS["miscal"]
    rows = []
    chunk = 1 << 20
    # n_small: both paths on the same rows, fed in batches of 2^20
    rng = np.random.default_rng([s.seed, 10**6])
    batches = []
    for start in range(0, n_small, chunk):
        m = min(chunk, n_small - start)
        batches.append((np.arange(start, start + m),) + s.sample(m, rng))
    for label, row_limit in (("per-row", n_small), ("per-bin", PER_BIN_ROW_LIMIT)):
        acc = BinnedAccumulator(n_bins=N_BINS, row_limit=row_limit)
        t0 = time.perf_counter()
        for idx, z, y in batches:
            acc.update(idx, z, y)
        t1 = time.perf_counter()
        acc.result(n_boot=n_boot, alpha=ALPHA, seed=0)
        t2 = time.perf_counter()
        rows.append((label, n_small, t1 - t0, t2 - t1, "measured"))
        print(f"  timed {label} at n={n_small:,}: {t2 - t0:.2f} s", file=sys.stderr, flush=True)
    per_row_small = rows[0]
    del batches
    # n_large: the per-bin path, rows generated batch by batch outside the timer
    acc = BinnedAccumulator(n_bins=N_BINS, row_limit=PER_BIN_ROW_LIMIT)
    t_update = 0.0
    rng = np.random.default_rng([s.seed, 10**8])
    for start in range(0, n_large, chunk):
        m = min(chunk, n_large - start)
        z, y = s.sample(m, rng)
        idx = np.arange(start, start + m)
        t0 = time.perf_counter()
        acc.update(idx, z, y)
        t_update += time.perf_counter() - t0
        if (start // chunk) % 16 == 0:
            print(f"  per-bin update at n={n_large:,}: {start + m:,} rows", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    res = acc.result(n_boot=n_boot, alpha=ALPHA, seed=0)
    t_result = time.perf_counter() - t0
    assert res.n == n_large
    scale = n_large / n_small
    rows.append(
        (
            "per-row",
            n_large,
            per_row_small[2] * scale,
            per_row_small[3] * scale,
            f"extrapolated: n={n_small:,} times {scale:g}",
        )
    )
    rows.append(("per-bin", n_large, t_update, t_result, "measured (update timed without data generation)"))
    return rows


# ---------------------------------------------------------------------------------------------
# Report


def _cov(hits: np.ndarray) -> tuple[float, float]:
    c = float(hits.mean())
    return 100.0 * c, 100.0 * math.sqrt(c * (1.0 - c) / len(hits))


def _paired_diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Difference of two coverages on the same data sets (b - a, points) and its standard error."""
    d = b.astype(float) - a.astype(float)
    return 100.0 * d.mean(), 100.0 * d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else float("nan")


def report(results: list[dict], targets: dict, settings: list[str], n: int, n_boot: int) -> bool:
    print()
    print(
        f"== Coverage of the population value: per-row vs per-bin bootstrap (n = {n:,}, R = {n_boot}, "
        f"{100 * (1 - ALPHA):g}% percentile intervals, {N_BINS} equal-width bins) =="
    )
    hdr = (
        f"{'metric':<24}{'setting':<9}{'target':>11}{'nominal':>8}  {'per-row cov':>14}  {'per-bin cov':>14}  "
        f"{'bin-row':>13}  {'width row':>10}{'width bin':>10}{'bin/row':>8}  flag"
    )
    print(hdr)
    print("-" * len(hdr))
    flagged = []
    diag = []
    for metric in METRICS:
        for sname in settings:
            rs = [r for r in results if r["setting"] == sname]
            if not rs:
                continue
            t = targets[sname][metric]
            est = np.array([r["est"][metric] for r in rs])
            lo_r, hi_r = (np.array([r["row"][metric][j] for r in rs]) for j in (0, 1))
            lo_b, hi_b = (np.array([r["bin"][metric][j] for r in rs]) for j in (0, 1))
            hit_r = (lo_r <= t) & (t <= hi_r)
            hit_b = (lo_b <= t) & (t <= hi_b)
            cr, sr = _cov(hit_r)
            cb, sb = _cov(hit_b)
            d, sd = _paired_diff(hit_r, hit_b)
            wr, wb = float(np.mean(hi_r - lo_r)), float(np.mean(hi_b - lo_b))
            flag = ""
            if abs(d) > BAR_POINTS:
                flag = "DIFF>2pt" + (" (> 2 s.e.)" if abs(d) > 2 * sd else " (< 2 s.e.)")
            if flag:
                flagged.append((metric, sname, d))
            print(
                f"{metric:<24}{sname:<9}{t:>11.5g}{100 * (1 - ALPHA):>7.0f}%  {cr:>6.1f} ± {sr:>4.1f}  {cb:>6.1f} ± {sb:>4.1f}  "
                f"{d:>+5.1f} ± {sd:>4.1f}  {wr:>10.3g}{wb:>10.3g}{wb / wr if wr > 0 else float('nan'):>8.3f}  {flag}"
            )
            # diagnostics: bias, sampling s.d. vs bootstrap s.d., coverage of the estimator's own mean
            mean_est = float(est.mean())
            cr_m, _ = _cov((lo_r <= mean_est) & (mean_est <= hi_r))
            cb_m, _ = _cov((lo_b <= mean_est) & (mean_est <= hi_b))
            bb_r = np.array([r["boot_row"][metric][0] for r in rs])
            bb_b = np.array([r["boot_bin"][metric][0] for r in rs])
            bs_r = np.array([r["boot_row"][metric][1] for r in rs])
            bs_b = np.array([r["boot_bin"][metric][1] for r in rs])
            dd = bb_b - bb_r
            diag.append(
                (
                    metric,
                    sname,
                    mean_est - t,
                    float(est.std(ddof=1)),
                    float(bs_r.mean()),
                    float(bs_b.mean()),
                    cr_m,
                    cb_m,
                    float(bb_r.mean()),
                    float(bb_b.mean()),
                    float(dd.mean()),
                    float(dd.std(ddof=1) / math.sqrt(len(dd))),
                )
            )
    print(
        f"(± : Monte Carlo standard error over {len(results) // max(1, len(settings))} data sets per setting; "
        f"'bin-row' is the paired difference of the two coverages, points, ± its s.e.; flag: |difference| > {BAR_POINTS:g} points)"
    )
    print()
    print("== Diagnostics: estimator bias and spread across data sets vs the bootstrap's spread ==")
    hdr2 = (
        f"{'metric':<24}{'setting':<9}{'bias':>11}{'bias/sd':>8}{'sd(est)':>11}{'boot sd row':>12}{'boot sd bin':>12}"
        f"{'cov E[est] row':>15}{'cov E[est] bin':>15}{'boot bias row':>14}{'boot bias bin':>14}{'bin-row':>20}"
    )
    print(hdr2)
    print("-" * len(hdr2))
    for metric, sname, bias, sd_est, bsr, bsb, cr_m, cb_m, bbr, bbb, dd, dd_se in diag:
        print(
            f"{metric:<24}{sname:<9}{bias:>11.3g}{bias / sd_est if sd_est > 0 else float('nan'):>8.2f}{sd_est:>11.3g}"
            f"{bsr:>12.3g}{bsb:>12.3g}{cr_m:>14.1f}%{cb_m:>14.1f}%{bbr:>14.3g}{bbb:>14.3g}{dd:>11.2g} ± {dd_se:<6.2g}"
        )
    print(
        "(bias = mean estimate - population value; sd(est) = s.d. of the estimate across data sets; boot sd = s.d. of the "
        "replicates, averaged over data sets; cov E[est] = coverage of the mean estimate, i.e. of the estimator's expectation; "
        "boot bias = mean replicate - estimate, averaged over data sets; bin-row = their paired difference ± s.e.: "
        "a location shift of the per-bin bootstrap distribution would show here first)"
    )
    print()
    if flagged:
        print(
            "BAR MISSED: per-bin and per-row coverages differ by more than 2 points in: "
            + ", ".join(f"{m}/{s} ({d:+.1f})" for m, s, d in flagged)
            + " (see the s.e.: a difference under 2 s.e. may be Monte Carlo noise; rerun with more --n-datasets)"
        )
    else:
        print(f"BAR MET: per-bin coverage within {BAR_POINTS:g} points of per-row coverage in every cell")
    return not flagged


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000, help="rows per simulated data set (default 200,000)")
    ap.add_argument(
        "--reps",
        "--n-datasets",
        dest="n_datasets",
        type=int,
        default=110,
        help="simulated data sets per setting (default 110)",
    )
    ap.add_argument(
        "--seed",
        "--first-dataset",
        dest="first_dataset",
        type=int,
        default=0,
        help="number of the first data set (data seeds (setting, i), bootstrap seed i); default 0",
    )
    ap.add_argument("--n-boot", type=int, default=500, help="bootstrap resamples per interval (default 500)")
    ap.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, from {','.join(SETTINGS)}")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument(
        "--mc-check", type=int, default=0, help="rows of an extra Monte Carlo cross-check (default 0: none)"
    )
    ap.add_argument(
        "--timing",
        action="store_true",
        help="also time both paths in this process (the asv suite times them: binned.ece.Library, io.stream)",
    )
    ap.add_argument("--no-timing", action="store_true", help="no timing part (the default)")
    ap.add_argument("--timing-boot", type=int, default=1000)
    ap.add_argument("--timing-large", type=int, default=100_000_000)
    args = ap.parse_args()
    settings = [s for s in args.settings.split(",") if s]
    for s in settings:
        if s not in SETTINGS:
            ap.error(f"unknown setting {s!r}")
    if args.n <= PER_BIN_ROW_LIMIT:
        ap.error(f"--n must exceed {PER_BIN_ROW_LIMIT} so that the per-bin path is used")

    import scipy

    import calibcli
    import calibcli.binned.accumulator  # noqa: F401  (imported before the workers fork: one version of the library)

    t_start = time.perf_counter()
    print(
        f"studies/stream_coverage.py: calibcli {getattr(calibcli, '__version__', '?')}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, {os.cpu_count()} CPUs, {args.workers} workers"
    )
    import subprocess

    head = subprocess.run(
        ["git", "-C", os.path.dirname(os.path.abspath(__file__)), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"repository: HEAD {head[:100]}")
    print(
        f"n = {args.n:,} rows per data set, {args.n_datasets} data sets per setting (numbers {args.first_dataset} to "
        f"{args.first_dataset + args.n_datasets - 1}), R = {args.n_boot}, "
        f"per-row path row_limit = n, per-bin path row_limit = {PER_BIN_ROW_LIMIT}"
    )
    print()
    print("== Settings and population values (15 equal-width bins; quad per bin, checked against the closed form) ==")
    targets = {}
    for sname in settings:
        s = SETTINGS[sname]
        targets[sname] = population_values(s)
        print(
            f"{sname}: {s.describe()}; data seeds ({s.seed}, i); total mass {targets[sname]['_total_mass']:.12f}, "
            f"smallest bin mass {targets[sname]['_min_bin_mass']:.3g} (~{targets[sname]['_min_bin_mass'] * args.n:.3g} rows of {args.n:,})"
        )
        closed = closed_form_values(s)
        mc = monte_carlo_values(s, args.mc_check, s.seed) if args.mc_check else {}
        for k in METRICS:
            rel = abs(closed[k] - targets[sname][k]) / abs(closed[k])
            extra = f"   Monte Carlo n={args.mc_check:.0e}: {mc[k]:.7g}" if mc else ""
            print(
                f"    {k:<24}quad {targets[sname][k]:<17.10g}closed form {closed[k]:<17.10g}rel. diff {rel:.1e}{extra}"
            )
    sys.stdout.flush()

    tasks = [
        (sname, i, args.n, args.n_boot)
        for i in range(args.first_dataset, args.first_dataset + args.n_datasets)
        for sname in settings
    ]
    results = []
    t0 = time.perf_counter()
    ctx = mp.get_context("fork")
    with ctx.Pool(args.workers) as pool:
        for k, r in enumerate(pool.imap_unordered(one_dataset, tasks), 1):
            results.append(r)
            if k % 10 == 0 or k == len(tasks):
                el = time.perf_counter() - t0
                print(
                    f"  {k}/{len(tasks)} data sets, {el:.0f} s, about {el / k * (len(tasks) - k):.0f} s to go",
                    file=sys.stderr,
                    flush=True,
                )
    t_row = np.mean([r["time_row"] for r in results])
    t_bin = np.mean([r["time_bin"] for r in results])
    ok = report(results, targets, settings, args.n, args.n_boot)
    print(f"mean time per data set (update + result, R = {args.n_boot}): per-row {t_row:.3f} s, per-bin {t_bin:.3f} s")

    if args.timing and not args.no_timing:
        print()
        print(f"== Time of update() + result(n_boot={args.timing_boot}), one process ==")
        rows = time_paths(1_000_000, args.timing_large, args.timing_boot)
        print(f"{'path':<9}{'n':>13}{'update':>10}{'result':>10}{'total':>10}  note")
        for label, n, tu, tr, note in rows:
            print(f"{label:<9}{n:>13,}{tu:>9.2f}s{tr:>9.2f}s{tu + tr:>9.2f}s  {note}")
    print()
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
