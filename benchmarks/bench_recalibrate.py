"""Speed of the recalibration methods (calibcli.calibrators), with agreement checks.

Tables:
1. isotonic fit at n = 1e6 against scikit-learn's IsotonicRegression in the same run (target: no slower),
   best of --repeat runs each, and the largest difference of their predictions;
2. Venn-Abers with 100,000 calibration and 100,000 test points, fit + predict (target: under 10 s), and the
   largest difference from the direct computation (two isotonic fits on the augmented set) on a few test points;
3. fit and predict time of every method at n = 1e6 (binary), and temperature scaling with K = 10 classes.

Data: z ~ Beta(0.7, 0.9), y ~ Bernoulli(z^1.7), seed 0. Timings are wall-clock on whatever machine runs it.

    python benchmarks/bench_recalibrate.py           # full sizes
    python benchmarks/bench_recalibrate.py --quick   # n = 1e5 / 2e4, a few seconds
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from calibcli.calibrators import METHODS, fit_calibrator
from calibcli.calibrators.isotonic import fit_isotonic, fit_venn_abers
from calibcli.calibrators.parametric import fit_temperature


def data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    z = rng.beta(0.7, 0.9, size=n)
    y = (rng.uniform(size=n) < z ** 1.7).astype(np.int64)
    return y, z


def best_time(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def bench_isotonic(n: int, repeat: int) -> None:
    from sklearn.isotonic import IsotonicRegression

    y, z = data(n, 0)
    fit_isotonic(y[:100], z[:100])  # import scipy once, outside the timing
    IsotonicRegression().fit(z[:100], y[:100])
    t_ours, ours = best_time(lambda: fit_isotonic(y, z, interpolation="linear"), repeat)
    t_sk, ref = best_time(lambda: IsotonicRegression(out_of_bounds="clip").fit(z, y), repeat)
    new = np.random.default_rng(1).uniform(size=100_000)
    diff = max(np.max(np.abs(ours.predict(z) - ref.predict(z))), np.max(np.abs(ours.predict(new) - ref.predict(new))))
    ratio = t_sk / t_ours
    table(f"1. isotonic fit, n = {n:,} (best of {repeat})",
          ["implementation", "fit time [s]", "speed-up vs sklearn", "max |pred diff|", "target (no slower)"],
          [["calibcli fit_isotonic", f"{t_ours:.3f}", f"{ratio:.2f}x", f"{diff:.1e}", "met" if ratio >= 1 else "NOT met"],
           ["sklearn IsotonicRegression", f"{t_sk:.3f}", "1.00x", "-", "-"]])


def bench_venn_abers(n_cal: int, n_test: int, n_check: int) -> None:
    from sklearn.isotonic import IsotonicRegression

    y, z = data(n_cal + n_test, 2)
    zc, yc, zt = z[:n_cal], y[:n_cal], z[n_cal:]
    t0 = time.perf_counter()
    cal = fit_venn_abers(yc, zc)
    t1 = time.perf_counter()
    p0, p1 = cal.predict_interval(zt)
    p = p1 / (1 - p0 + p1)
    t2 = time.perf_counter()
    # direct computation on a few test points, one of them tied with a calibration point
    check = np.concatenate([zt[: n_check - 1], zc[:1]])
    c0, c1 = cal.predict_interval(check)
    worst = 0.0
    t3 = time.perf_counter()
    for i, t in enumerate(check):
        for label, mine in ((0, c0[i]), (1, c1[i])):
            fit = IsotonicRegression().fit(np.append(zc, t), np.append(yc, label))
            worst = max(worst, abs(fit.predict([t])[0] - mine))
    t4 = time.perf_counter()
    total = t2 - t0
    table(f"2. Venn-Abers, {n_cal:,} calibration + {n_test:,} test points",
          ["step", "time [s]", "note"],
          [["fit (sort, tie pooling, two hull scans)", f"{t1 - t0:.3f}", f"{len(cal.scores):,} distinct scores"],
           ["predict (p0, p1, p) for all test points", f"{t2 - t1:.3f}", f"mean width p1 - p0 = {np.mean(p1 - p0):.2e}"],
           ["total", f"{total:.3f}", "target < 10 s: " + ("met" if total < 10 else "NOT met")],
           [f"direct: 2 isotonic fits x {n_check} points", f"{t4 - t3:.3f}",
            f"max |diff| vs fast = {worst:.1e}; direct for all {n_test:,} would take ~{(t4 - t3) / n_check * n_test:,.0f} s"]])
    assert np.all(np.isfinite(p))


def bench_methods(n: int, k_classes: int) -> None:
    y, z = data(n, 3)
    new = np.random.default_rng(4).uniform(size=n)
    rows = []
    for method in METHODS:
        t0 = time.perf_counter()
        cal = fit_calibrator(method, y, z, rng=np.random.default_rng(0))
        t1 = time.perf_counter()
        cal.predict(new)
        t2 = time.perf_counter()
        rows.append([method, "binary", f"{t1 - t0:.3f}", f"{t2 - t1:.3f}"])
    rng = np.random.default_rng(5)
    logits = rng.normal(scale=2.0, size=(n, k_classes))
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    c = np.argmax(logits + rng.gumbel(size=logits.shape) * 2.0, axis=1)
    t0 = time.perf_counter()
    cal = fit_temperature(c, P)
    t1 = time.perf_counter()
    cal.predict(P)
    t2 = time.perf_counter()
    rows.append(["temperature", f"K = {k_classes}", f"{t1 - t0:.3f}", f"{t2 - t1:.3f}"])
    table(f"3. fit / predict time per method, n = {n:,} (predict on n new points)",
          ["method", "input", "fit [s]", "predict [s]"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (n = 1e5, Venn-Abers 2e4 + 2e4)")
    parser.add_argument("--repeat", type=int, default=3, help="isotonic timings: best of this many runs")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    n_va = 20_000 if args.quick else 100_000
    print(f"bench_recalibrate: python {platform.python_version()}, numpy {np.__version__}, "
          f"{'quick' if args.quick else 'full'} sizes, seed 0")
    bench_isotonic(n, args.repeat)
    bench_venn_abers(n_va, n_va, 5 if args.quick else 10)
    bench_methods(n, 10)


if __name__ == "__main__":
    main()
