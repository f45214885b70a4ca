"""Benchmark: ``calibcli audit`` end to end (reading Parquet, coding the segment columns, every segment's ECCE,
the adjustments, the JSON written), against MCGrad's ``MulticalibrationError`` on the same rows and segments.

Two tables (issue 23's bars):

1. 1e6 rows, 4 categorical segment columns at depth 2 (the whole population, each value, each pair of values of
   each pair of columns): the command's wall time (a fresh process, as a user runs it) against MCGrad 0.1.5
   (``precision_dtype="float64"``, in-process, after its data frame is built: its time is the metric alone),
   and the worst segment and MCE of both. Bar: calibcli at least 5x faster.
2. 1e7 rows, 6 segment columns (3 categorical, 3 numeric in 4 quantile bins) at depth 2: the command's wall
   time and peak memory. Bar: under 30 s.

Data are seeded and written once to ``benchmarks/out/audit_*.parquet``. MCGrad runs in the Python given by
``--mcgrad-python`` (a virtual environment with ``pip install mcgrad``); without it, table 1 shows calibcli only.
``--before PATH`` (a checkout of the previous version, e.g. ``git worktree add /tmp/before main``) runs that
version's command on the same data in the same run, side by side, as a ratio (the machine is shared: wall times
move with its load, the ratio and the CPU seconds less so); both must agree on every number.
Run: ``python benchmarks/bench_audit.py [--mcgrad-python PATH] [--before PATH] [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"
CATEGORICAL = {"country": 8, "device": 3, "browser": 5, "plan": 4}
NUMERIC = ("age", "income", "hour")


def write_data(n: int, numeric: bool, seed: int = 0) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = OUT / f"audit_{n:.0e}{'_numeric' if numeric else ''}.parquet".replace("+", "")
    if path.exists():
        return path
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, n)
    cols = {}
    names = list(CATEGORICAL)[:3] if numeric else list(CATEGORICAL)
    for name in names:
        k = CATEGORICAL[name]
        weights = rng.dirichlet(np.ones(k) * 2)
        cols[name] = pa.array(np.array([f"{name}_{j}" for j in range(k)])[rng.choice(k, n, p=weights)])
    if numeric:
        cols["age"] = rng.integers(18, 90, n)
        cols["income"] = np.round(rng.lognormal(10, 0.6, n), 2)
        cols["hour"] = rng.uniform(0, 24, n)
    planted = (np.asarray(cols[names[0]]) == f"{names[0]}_1") & (np.asarray(cols[names[1]]) == f"{names[1]}_2")
    truth = s + 0.05 * planted
    y = (rng.uniform(size=n) < np.clip(truth, 0, 1)).astype(np.int64)
    pq.write_table(pa.table({"prob": s, "label": y, **cols}), path, row_group_size=1 << 20)
    return path


def run_command(path: Path, columns: list[str], repeat: int,
                code: str | None = None) -> tuple[float, float, float, dict]:
    """Best wall time of the command in a fresh process, its CPU seconds (user + system) in that run, its peak
    memory (MB) and its JSON; ``code``: the checkout whose calibcli runs (PYTHONPATH), else this one's."""
    env = dict(os.environ, PYTHONPATH=str(code or Path(__file__).resolve().parents[1]))
    best, cpu, peak, doc = float("inf"), 0.0, 0.0, None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit.json"
        for _ in range(repeat):
            probe = ("import json, resource, subprocess, sys, time\n"
                     "t = time.perf_counter(); p = subprocess.run(sys.argv[1:]); w = time.perf_counter() - t\n"
                     "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                     "print(json.dumps([p.returncode, w, u.ru_utime + u.ru_stime, u.ru_maxrss]))")
            r = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "calibcli", "audit", str(path),
                                "--segment-cols", ",".join(columns), "-o", str(out)], capture_output=True, text=True,
                               env=env, cwd=tmp)  # not this checkout: `python -m` puts the working directory first
            returncode, wall, seconds, rss = json.loads(r.stdout.strip().splitlines()[-1])
            if returncode not in (0, 1):
                raise SystemExit(f"calibcli audit failed: {r.stderr}")
            if wall < best:
                best, cpu = wall, seconds
            peak = max(peak, rss / 1024)
        doc = json.loads(out.read_text())
    return best, cpu, peak, doc


def _same(a: dict, b: dict) -> str:
    """Whether two audit documents agree on every number and segment (the tool's version and the wording of the
    ``exact`` parameter, which now describes the grid form beyond the row limit, aside)."""
    a, b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
    for d in (a, b):
        d.pop("version", None)
        d["parameters"].pop("exact", None)
    return "same numbers" if a == b else "NUMBERS DIFFER"


def compute_alone(path: Path, columns: list[str], repeat: int) -> float:
    """The audit's numbers alone, in this process, from the rows already in memory (what MCGrad's time measures):
    coding the segment columns, every segment's ECCE and sums, the adjustments."""
    import pyarrow.parquet as pq

    from calibcli.audit.segment_tests import AuditOptions, audit_arrays
    from calibcli.audit.segments import code_values, partitions

    table = pq.read_table(path)
    s = table.column("prob").to_numpy()
    y = table.column("label").to_numpy()
    values = [table.column(c).to_numpy(zero_copy_only=False) for c in columns]
    options = AuditOptions()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        coded = [code_values(c, v, max_values=options.max_values, segment_bins=options.segment_bins)
                 for c, v in zip(columns, values, strict=True)]
        codings = [c for c, _ in coded]
        audit_arrays(y, s, np.ones(len(s)), [k for _, k in coded], codings, partitions(codings, options.depth), options)
        best = min(best, time.perf_counter() - t)
    return best


MCGRAD = """
import json, sys, time
import pandas as pd
from mcgrad.metrics import MulticalibrationError
df = pd.read_parquet(sys.argv[1])
cols = sys.argv[2].split(",")
best = float("inf")
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    m = MulticalibrationError(df, label_column="label", score_column="prob", categorical_segment_columns=cols,
                              max_depth=2, max_values_per_segment_feature=20, min_samples_per_segment=100,
                              max_n_segments=None, precision_dtype="float64")
    mce = float(m.mce_sigma)
    best = min(best, time.perf_counter() - t)
print(json.dumps({"seconds": best, "mce_sigma": mce, "p_value": float(m.mce_pvalue)}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mcgrad-python", default=None, help="a Python with mcgrad installed")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--before", default=None, help="a checkout of the previous version, run side by side")
    args = parser.parse_args(argv)
    print(f"load average before the runs: {os.getloadavg()[0]:.2f} (2 cores)")

    cats = list(CATEGORICAL)
    path = write_data(1_000_000, numeric=False)
    wall, cpu, peak, doc = run_command(path, cats, args.repeat)
    print(f"1. 1e6 rows, {len(cats)} categorical columns at depth 2: {doc['n_segments_tested']} segments tested")
    print(f"   calibcli audit (whole command, fresh process): {wall:8.2f} s ({cpu:.2f} CPU s), peak {peak:.0f} MB; "
          f"MCE {doc['mce_sigma']:.4f} sigma, worst {doc['segments'][0]['definition']}")
    if args.before:
        b_wall, b_cpu, b_peak, b_doc = run_command(path, cats, args.repeat, args.before)
        print(f"   previous version, same run: {b_wall:8.2f} s ({b_cpu:.2f} CPU s), peak {b_peak:.0f} MB; "
              f"{b_wall / wall:.2f}x wall, {b_cpu / cpu:.2f}x CPU; {_same(doc, b_doc)}")
    alone = compute_alone(path, cats, args.repeat)
    print(f"   calibcli's audit numbers alone (in memory, as MCGrad's time below): {alone:8.2f} s")
    if args.mcgrad_python:
        r = subprocess.run([args.mcgrad_python, "-c", MCGRAD, str(path), ",".join(cats), str(args.repeat)],
                           capture_output=True, text=True)
        if r.returncode == 0:
            m = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"   MCGrad MulticalibrationError (float64, metric alone): {m['seconds']:8.2f} s; MCE "
                  f"{m['mce_sigma']:.4f} sigma")
            print(f"   speed-up: {m['seconds'] / wall:.1f}x for the whole command, {m['seconds'] / alone:.1f}x for the "
                  f"numbers alone (bar: >= 5x)")
        else:
            print(f"   MCGrad failed: {r.stderr.strip().splitlines()[-1] if r.stderr else r.returncode}")
    if not args.skip_large:
        cols = cats[:3] + list(NUMERIC)
        path = write_data(10_000_000, numeric=True)
        # with --before, the two versions alternate (this, previous, this, ...): a load that drifts during the
        # run then weighs on both alike; each version's best of --repeat runs
        runs: dict = {"this": [], "previous": []}
        for _ in range(args.repeat if args.before else 1):
            runs["this"].append(run_command(path, cols, 1))
            if args.before:
                runs["previous"].append(run_command(path, cols, 1, args.before))
        wall, cpu, peak, doc = min(runs["this"], key=lambda r: r[0])
        print(f"2. 1e7 rows, 6 segment columns (3 categorical, 3 numeric) at depth 2: {doc['n_segments_tested']} "
              f"segments tested (load average {os.getloadavg()[0]:.2f})")
        print(f"   calibcli audit: {wall:8.2f} s (bar: < 30 s; {cpu:.2f} CPU s), peak {peak:.0f} MB; "
              f"MCE {doc['mce_sigma']:.4f} sigma, worst {doc['segments'][0]['definition']}; all runs "
              + ", ".join(f"{r[0]:.1f} s ({r[1]:.1f} CPU s)" for r in runs["this"]))
        if args.before:
            b_wall, b_cpu, b_peak, b_doc = min(runs["previous"], key=lambda r: r[0])
            print(f"   previous version, alternating: {b_wall:8.2f} s ({b_cpu:.2f} CPU s), peak {b_peak:.0f} MB; "
                  f"{b_wall / wall:.2f}x wall, {b_cpu / cpu:.2f}x CPU; {_same(doc, b_doc)}; all runs "
                  + ", ".join(f"{r[0]:.1f} s ({r[1]:.1f} CPU s)" for r in runs["previous"]))
    print(f"load average after the runs: {os.getloadavg()[0]:.2f} (2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
