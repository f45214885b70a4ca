"""Benchmark of ``calibcli ece``: large-file throughput, bootstrap speed and memory.

Three measurements, all in one run with fixed seeds:

1. ``calibcli ece FILE --n-boot 0`` (15 uniform bins) on a 10-million-row binary Parquet file
   (float64 ``prob``, int64 ``label``) against reading the same two columns into NumPy with pyarrow
   alone. Both sides are fresh subprocesses, so interpreter start-up and imports count on both;
   several repetitions, median and ratio (target: calibcli <= 3x pyarrow). The in-process time of
   the read and of the compute alone (``calibcli.ece_family.accumulator.evaluate_binned``) is given for context.
2. Bootstrap intervals with 1000 resamples at n = 1,000,000:
   ``calibcli.binned.estimators.binned_calibration(..., n_boot=1000)`` against the bootstrap of the reference
   package of Kumar, Liang & Ma (2019), ``uncertainty-calibration`` (import name ``calibration``; not a
   project dependency: ``pip install uncertainty-calibration`` into the venv to run this part). The
   reference resamples a Python list of (prob, label) tuples, so it is timed with a few resamples and
   extrapolated linearly in R (and, for its public ``get_calibration_error_uncertainties``, in n too).
   The point estimates are compared where the definitions match (plugin l1/l2 and the debiased
   squared l2 of Kumar et al. on the same 15 equal-width bins).
3. Peak memory of that bootstrap (peak resident set ``VmHWM`` of a subprocess, and ``tracemalloc`` of
   the call alone), to show that no n-by-R array is ever built.

Run: ``/work/.venv/bin/python benchmarks/bench_ece.py`` (about 10 minutes on 2 cores) or with
``--quick`` (1M-row file, n = 100,000 for the bootstrap; about a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

PY = sys.executable
CALIBCLI = shutil.which("calibcli", path=os.path.dirname(PY)) or shutil.which("calibcli")
SEED = 20240611
N_BINS = 15


def make_binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Predictions from Beta(2, 5), labels drawn from a slightly miscalibrated truth 0.9 z + 0.05."""
    rng = np.random.default_rng(seed)
    z = rng.beta(2.0, 5.0, size=n)
    y = (rng.random(n) < 0.9 * z + 0.05).astype(np.int64)
    return y, z


def run_timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()}")
    return elapsed


def fmt_s(seconds: float) -> str:
    return f"{seconds:8.3f} s"


# ---------------------------------------------------------------------------------------------
# 1. Large Parquet file: calibcli ece vs pyarrow alone


def bench_parquet(n_rows: int, reps: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    print(f"== 1. calibcli ece on a {n_rows:,}-row Parquet file vs pyarrow alone ==")
    tmp = tempfile.mkdtemp(prefix="bench_ece_")
    try:
        path = os.path.join(tmp, "preds.parquet")
        y, z = make_binary(n_rows, SEED)
        pq.write_table(pa.table({"prob": z, "label": y}), path)
        del y, z
        size_mb = os.path.getsize(path) / 1e6
        print(f"file: {n_rows:,} rows, float64 prob + int64 label, {size_mb:.1f} MB (snappy), seed {SEED}")

        ece_cmd = [CALIBCLI, "ece", path, "--n-bins", str(N_BINS), "--strategy", "uniform", "--n-boot", "0", "--json"]
        read_code = (
            "import pyarrow.parquet as pq; "
            f"t = pq.read_table({path!r}, columns=['prob', 'label']); "
            "z = t.column('prob').to_numpy(); y = t.column('label').to_numpy(); "
            "print(len(z), float(z.mean()), int(y.sum()))"
        )
        read_cmd = [PY, "-c", read_code]
        # one untimed run each to warm the page cache
        run_timed(read_cmd)
        run_timed(ece_cmd)
        t_ece, t_read = [], []
        for _ in range(reps):  # interleaved, so that load from other processes hits both sides alike
            t_read.append(run_timed(read_cmd))
            t_ece.append(run_timed(ece_cmd))
        start_cmd = [PY, "-c", "pass"]
        t_python = statistics.median(run_timed(start_cmd) for _ in range(reps))
        help_t = statistics.median(run_timed([CALIBCLI, "--help"]) for _ in range(reps))

        # In-process, for context: the read (calibcli.io.read_input, with validation) and the compute alone.
        from calibcli.ece_family.accumulator import evaluate_binned
        from calibcli.io.loaded import read_input

        t0 = time.perf_counter()
        loaded = read_input(path)
        t_read_input = time.perf_counter() - t0
        t_compute = []
        for _ in range(reps):
            t0 = time.perf_counter()
            report = evaluate_binned(loaded.labels, loaded.probs, mode="binary", n_bins=N_BINS, strategy="uniform", n_boot=0)
            t_compute.append(time.perf_counter() - t0)
        l1 = report.problems[0].result.metrics["ece_l1_plugin"].estimate
        del loaded, report
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"temporary folder {tmp} deleted: {not os.path.exists(tmp)}")

    med_ece, med_read = statistics.median(t_ece), statistics.median(t_read)
    print(f"{'subprocess (median of ' + str(reps) + ')':<52}{'median':>11}{'min':>11}{'max':>11}")
    print(f"{'calibcli ece FILE --n-boot 0 --json':<52}{fmt_s(med_ece):>11}{fmt_s(min(t_ece)):>11}{fmt_s(max(t_ece)):>11}")
    print(f"{'python -c: pyarrow read 2 columns -> NumPy':<52}{fmt_s(med_read):>11}{fmt_s(min(t_read)):>11}{fmt_s(max(t_read)):>11}")
    print(f"ratio calibcli / pyarrow (medians): {med_ece / med_read:.2f}x   (target <= 3x)")
    print("context:")
    print(f"  python -c pass (interpreter start-up)            {fmt_s(t_python)}")
    print(f"  calibcli --help (start-up + CLI imports)         {fmt_s(help_t)}")
    print(f"  in-process calibcli.io.read_input (read+checks)  {fmt_s(t_read_input)}")
    print(f"  in-process evaluate_binned, n_boot=0 (median)    {fmt_s(statistics.median(t_compute))}")
    print(f"  ece_l1_plugin = {l1:.6f}")
    print()
    return {"ece": med_ece, "read": med_read}


# ---------------------------------------------------------------------------------------------
# 2. and 3. Bootstrap speed and memory


CALIBCLI_BOOT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    sys.path.insert(0, {bench_dir!r})
    from bench_ece import make_binary, peak_rss_kb, reset_peak_rss
    from calibcli.binned.estimators import binned_calibration
    y, z = make_binary({n}, {seed})
    reset = reset_peak_rss()  # the peak from here on is the call's (plus what is already resident)
    before = peak_rss_kb()
    t0 = time.perf_counter()
    r = binned_calibration(y, z, n_bins={bins}, strategy="uniform", n_boot={R}, alpha=0.05, seed=0)
    elapsed = time.perf_counter() - t0
    after = peak_rss_kb()
    m = {{k: [v.estimate, v.ci_low, v.ci_high] for k, v in r.metrics.items()}}
    print(json.dumps({{"seconds": elapsed, "rss_before_kb": before, "rss_after_kb": after, "reset": reset, "metrics": m}}))
    """
)


def peak_rss_kb() -> int:
    """VmHWM, the peak resident set of this process since exec (or since :func:`reset_peak_rss`).

    ``resource.getrusage().ru_maxrss`` is not used: on Linux it survives fork + exec, so a child
    started by a large parent reports the parent's peak.
    """
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current resident set (Linux ``clear_refs`` value 5); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


TRACEMALLOC = textwrap.dedent(
    """
    import json, sys, tracemalloc
    import numpy as np
    sys.path.insert(0, {bench_dir!r})
    from bench_ece import make_binary
    from calibcli.binned.estimators import binned_calibration
    y, z = make_binary({n}, {seed})
    out = {{}}
    for R in (0, 10, {R}):
        tracemalloc.start()
        binned_calibration(y, z, n_bins={bins}, n_boot=R, seed=0)
        out[R] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(json.dumps(out))
    """
)


def _subprocess_json(code: str) -> dict:
    proc = subprocess.run([PY, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"subprocess failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _reference_functional(p: int, debias: bool):
    """The reference's lp error on 15 equal-width bins, as a functional of a list of (prob, label)."""
    import calibration as cal

    def functional(data):
        probs, labels = zip(*data)
        return cal.lower_bound_scaling_ce(
            np.array(probs), np.array(labels), p=p, debias=debias, num_bins=N_BINS, binning_scheme=cal.get_equal_prob_bins
        )

    return functional


def _time_reference_bootstrap(y, z, resamples: tuple[int, int]) -> tuple[float, float, tuple]:
    """Per-resample and fixed cost of ``calibration.bootstrap_uncertainty`` (two-point fit in R)."""
    import calibration as cal

    data = list(zip(z, y))
    f = _reference_functional(2, False)
    times, interval = [], None
    for R in resamples:
        np.random.seed(SEED)  # the reference draws from NumPy's global generator
        t0 = time.perf_counter()
        interval = cal.bootstrap_uncertainty(data, f, num_samples=R, alpha=5.0)
        times.append(time.perf_counter() - t0)
    (r1, r2), (t1, t2) = resamples, times
    per = (t2 - t1) / (r2 - r1)
    return per, t1 - per * r1, interval


def bootstrap_breakdown(n: int, R: int) -> None:
    """Where one resample's time goes in calibcli's bootstrap (private helpers, for diagnosis only)."""
    from calibcli.core.binning import fit_binning
    from calibcli.binned.estimators import _point_metrics
    from calibcli.binned.bootstrap import _SortedProblem
    from calibcli.core.resampling import Multiplicities

    y, z = make_binary(n, SEED)
    w = np.ones(n)
    problem = _SortedProblem(y, z, w, fit_binning(z, n_bins=N_BINS), N_BINS)
    rows = Multiplicities(0, np.arange(n))
    t = dict.fromkeys(("draw multiplicities (counter-based Poisson)", "reorder to sorted rows", "per-bin sums (dot products)", "metrics from bin sums"), 0.0)
    keys = list(t)
    for r in range(R):
        t0 = time.perf_counter()
        m = rows.replicate(r)
        t1 = time.perf_counter()
        m = m[problem.order]
        t2 = time.perf_counter()
        s_b, s_u = problem.resampled(m)
        t3 = time.perf_counter()
        _point_metrics(s_b, s_u)
        t4 = time.perf_counter()
        for k, dt in zip(keys, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            t[k] += dt
    print(f"  where one resample's time goes (mean of {R}, n = {n:,}): " + "; ".join(f"{k} {1000 * v / R:.1f} ms" for k, v in t.items()))


def bench_bootstrap(n: int, R: int, ref_resamples: tuple[int, int], n_public: int) -> None:
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    print(f"== 2. bootstrap, {R} resamples, n = {n:,} (15 equal-width bins, seed {SEED}) ==")
    res = _subprocess_json(CALIBCLI_BOOT.format(bench_dir=bench_dir, n=n, seed=SEED, bins=N_BINS, R=R))
    res0 = _subprocess_json(CALIBCLI_BOOT.format(bench_dir=bench_dir, n=n, seed=SEED, bins=N_BINS, R=0))
    print(f"calibcli binned_calibration(n_boot={R}), run 1: {res['seconds']:.1f} s wall "
          f"({1000 * res['seconds'] / R:.1f} ms per resample; every metric of SPEC 2 per resample; "
          f"load average {os.getloadavg()[0]:.2f})")

    bootstrap_breakdown(n, 20)

    try:
        import calibration as cal
    except ImportError:
        print("reference package not installed (pip install uncertainty-calibration): skipped")
        print()
        return

    y, z = make_binary(n, SEED)
    per, fixed, ref_ci = _time_reference_bootstrap(y, z, ref_resamples)
    print(
        f"reference calibration.bootstrap_uncertainty (plugin l2, same bins), timed with R = {ref_resamples[0]} and "
        f"{ref_resamples[1]}:\n  {per:.2f} s per resample + {fixed:.2f} s fixed -> extrapolated linearly to R = {R}: "
        f"{fixed + per * R:.0f} s ({(fixed + per * R) / 60:.1f} min)"
    )
    # calibcli again right after the reference, so that both sides see the same load on this shared machine
    res2 = _subprocess_json(CALIBCLI_BOOT.format(bench_dir=bench_dir, n=n, seed=SEED, bins=N_BINS, R=R))
    slow = max(res["seconds"], res2["seconds"])
    print(f"calibcli binned_calibration(n_boot={R}), run 2 (after the reference): {res2['seconds']:.1f} s wall "
          f"({1000 * res2['seconds'] / R:.1f} ms per resample; load average {os.getloadavg()[0]:.2f})")
    print(f"  speed-up of calibcli (all metrics) over the reference (one metric), slower calibcli run: {(fixed + per * R) / slow:.0f}x")

    # The public entry point: get_calibration_error_uncertainties (100 resamples hard-coded, bins
    # chosen by its heuristic: equal-mass for continuous predictions). Timed at a smaller n.
    y_s, z_s = make_binary(n_public, SEED + 1)
    np.random.seed(SEED)
    t0 = time.perf_counter()
    cal.get_calibration_error_uncertainties(z_s, y_s, p=2, alpha=5.0)
    t_pub = time.perf_counter() - t0
    scale = (R / 100) * (n / n_public)
    print(
        f"reference calibration.get_calibration_error_uncertainties (its fixed 100 resamples, equal-mass bins) "
        f"at n = {n_public:,}: {t_pub:.1f} s\n  -> extrapolated linearly to n = {n:,}, R = {R}: "
        f"{t_pub * scale:.0f} s ({t_pub * scale / 60:.1f} min)"
    )

    # Point estimates where the definitions match. calibcli's bins are [j/B, (j+1)/B), the reference's
    # (j/B, (j+1)/B] (numpy.searchsorted side='left' on the upper edges): they differ only for
    # predictions exactly on an edge, counted here.
    on_edge = int(np.sum(z * N_BINS == np.floor(z * N_BINS)))
    m = res["metrics"]
    ref_l1 = cal.lower_bound_scaling_ce(z, y, p=1, debias=False, num_bins=N_BINS, binning_scheme=cal.get_equal_prob_bins)
    ref_l2 = cal.lower_bound_scaling_ce(z, y, p=2, debias=False, num_bins=N_BINS, binning_scheme=cal.get_equal_prob_bins)
    ref_l2_deb = cal.lower_bound_scaling_ce(z, y, p=2, debias=True, num_bins=N_BINS, binning_scheme=cal.get_equal_prob_bins)
    ref_sq_deb = cal.unbiased_square_ce(cal.bin(list(zip(z, y)), cal.get_equal_prob_bins(z, N_BINS)))
    print(f"point estimates, n = {n:,}, 15 equal-width bins ({on_edge} predictions exactly on an edge):")
    print(f"  {'metric':<42}{'calibcli':>14}{'reference':>14}{'abs diff':>11}")
    rows = [
        ("l1 plugin (ece_l1_plugin / get_ece)", m["ece_l1_plugin"][0], ref_l1),
        ("l2 plugin (ece_l2_plugin / plugin_ce p=2)", m["ece_l2_plugin"][0], ref_l2),
        ("l2^2 debiased Kumar (unbiased_square_ce)", m["ece_l2_sq_debiased_kumar"][0], ref_sq_deb),
        ("l2 debiased Kumar (unbiased_l2_ce)", m["ece_l2_debiased_kumar"][0], ref_l2_deb),
    ]
    for name, a, b in rows:
        print(f"  {name:<42}{a:14.8f}{float(b):14.8f}{abs(a - float(b)):11.1e}")
    lo, mid, hi = ref_ci
    print(
        f"  95% intervals of the l2 plugin: calibcli percentile bootstrap (R = {R}) [{m['ece_l2_plugin'][1]:.6f}, "
        f"{m['ece_l2_plugin'][2]:.6f}];\n  reference basic bootstrap (R = {ref_resamples[1]}, too few resamples to be "
        f"precise) [{lo:.6f}, {hi:.6f}]"
    )
    print()

    print(f"== 3. peak memory of the bootstrap, n = {n:,} ==")
    print("peak resident set (VmHWM of a subprocess; reset after making the data: %s)" % ("yes" if res["reset"] else "no"))
    print(f"  binned_calibration(n_boot=0):    resident before the call {res0['rss_before_kb'] / 1024:5.0f} MiB, "
          f"peak during it {res0['rss_after_kb'] / 1024:5.0f} MiB ({res0['seconds']:.2f} s)")
    print(f"  binned_calibration(n_boot={R}): resident before the call {res['rss_before_kb'] / 1024:5.0f} MiB, "
          f"peak during it {res['rss_after_kb'] / 1024:5.0f} MiB")
    Rt = min(R, 50)
    tm = _subprocess_json(TRACEMALLOC.format(bench_dir=bench_dir, n=n, seed=SEED, bins=N_BINS, R=Rt))
    peaks = ", ".join(f"n_boot={k} {v / 2**20:.0f} MiB" for k, v in tm.items())
    print(f"tracemalloc peak of the call alone: {peaks} (independent of R beyond the first resample)")
    print(f"an n-by-R array of float64 multiplicities would need {n * R * 8 / 2**20:,.0f} MiB; "
          f"n float64 values take {n * 8 / 2**20:.1f} MiB")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small version: 1M-row file, n = 100,000 bootstrap")
    args = parser.parse_args()
    if CALIBCLI is None:
        raise SystemExit("the calibcli console script is not installed next to this Python")
    import numpy, pyarrow

    print(f"bench_ece.py{' --quick' if args.quick else ''}: Python {sys.version.split()[0]}, numpy {numpy.__version__}, "
          f"pyarrow {pyarrow.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print()
    if args.quick:
        bench_parquet(1_000_000, reps=3)
        bench_bootstrap(100_000, R=1000, ref_resamples=(2, 6), n_public=10_000)
    else:
        bench_parquet(10_000_000, reps=5)
        bench_bootstrap(1_000_000, R=1000, ref_resamples=(1, 3), n_public=100_000)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (the machine is shared; timings are wall clock)")


if __name__ == "__main__":
    main()
