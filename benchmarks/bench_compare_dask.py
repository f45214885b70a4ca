"""``calibcli compare --engine dask``: wall time against the local engine, and the same report (issue 25).

Two models' predictions of the same ``--rows`` examples, laid out differently (the baseline in 4 shards of
100,000-row row groups, the candidate one file of 160,000-row row groups), so that the ranges of rows a task
reads cut through the candidate's fragments. Timed in one run, best of ``--repeats`` each, as fresh processes:

- the previous version's local engine (``--before``: a checkout of main, run with ``PYTHONPATH`` set to it);
- this version's local engine (the pass over both inputs was rewritten as one range of a cluster's tasks);
- this version on a local cluster of ``--workers`` processes (started by the command, counted in its time).

Printed: the times and their ratios, and the largest relative difference between the local and the Dask
reports (numbers other than the paired intervals beyond 2^17 rows, whose joint draws depend on the order of the
sums, see docs/commands/compare.md; those are printed apart, as a fraction of the interval's width).

    python benchmarks/bench_compare_dask.py --before /tmp/before-cmpdask
    python benchmarks/bench_compare_dask.py --rows 200000 --repeats 1     # quick
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def write_inputs(folder: str, rows: int) -> tuple[str, str]:
    rng = np.random.default_rng(1)
    p = rng.beta(2, 2, rows)
    y = (rng.random(rows) < p).astype(np.int64)
    za = np.clip(p + rng.normal(0, 0.05, rows), 0, 1)
    zb = np.clip(za**1.15 + rng.normal(0, 0.01, rows), 0, 1)
    base = os.path.join(folder, "base")
    os.makedirs(base)
    table = pa.table({"prob": za, "label": y})
    for k, part in enumerate(np.array_split(np.arange(rows), 4)):
        pq.write_table(table.take(part), os.path.join(base, f"part-{k}.parquet"), row_group_size=100_000)
    cand = os.path.join(folder, "cand.parquet")
    pq.write_table(pa.table({"prob": zb, "label": y}), cand, row_group_size=160_000)
    return base, cand


def run(pythonpath: str, args: list[str], repeats: int) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    best, doc = math.inf, {}
    for _ in range(repeats):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "calibcli", *args, "--json"], check=True, env=env,
                             capture_output=True, text=True)
        best = min(best, time.perf_counter() - t)
        doc = json.loads(out.stdout)
    return best, doc


def differences(a, b, where="$", out=None) -> list[tuple[float, str]]:
    """Relative differences of every number of two documents (paths of ``ci_low``/``ci_high`` marked)."""
    out = [] if out is None else out
    if isinstance(b, dict):
        for k in b:
            if k not in ("engine", "workers"):
                differences(a[k], b[k], f"{where}.{k}", out)
    elif isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            differences(x, y, f"{where}[{i}]", out)
    elif isinstance(b, float) and isinstance(a, float):
        out.append((abs(a - b) / max(abs(b), 1e-300), where))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--before", help="a checkout of the previous version (its local engine is timed too)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base, cand = write_inputs(folder, opts.rows)
        args = ["compare", base, cand, "--n-boot", str(opts.n_boot)]
        times, docs = {}, {}
        if opts.before:
            times["before, local"], _ = run(opts.before, args, opts.repeats)
        times["this, local"], docs["local"] = run(REPO, args, opts.repeats)
        times[f"this, dask --workers {opts.workers}"], docs["dask"] = run(
            REPO, [*args, "--engine", "dask", "--workers", str(opts.workers)], opts.repeats)
    load = os.getloadavg()[0]
    print(f"compare, {opts.rows:,} rows, --n-boot {opts.n_boot}, best of {opts.repeats} (load {load:.1f})")
    reference = times["this, local"]
    for name, t in times.items():
        print(f"  {name:<28} {t:7.2f} s   {t / reference:5.2f}x this version's local engine")
    diffs = differences(docs["dask"], docs["local"])
    plain = [d for d in diffs if not d[1].endswith(("ci_low", "ci_high"))]
    worst = max(plain) if plain else (0.0, "-")
    print(f"  dask vs local, estimates and everything but intervals: largest relative difference {worst[0]:.1e} "
          f"({worst[1]})")
    moved = []
    for name, c in docs["local"]["comparison"].items():
        r = docs["dask"]["comparison"][name]
        if c["ci_low"] is not None and c["ci_high"] > c["ci_low"]:
            width = c["ci_high"] - c["ci_low"]
            moved.append((max(abs(r["ci_low"] - c["ci_low"]), abs(r["ci_high"] - c["ci_high"])) / width, name))
    if moved:
        top = max(moved)
        print(f"  paired intervals of the differences: bounds moved by at most {top[0]:.1e} of the interval's width "
              f"({top[1]}; {docs['local']['comparison'][top[1]]['ci_method']})")


if __name__ == "__main__":
    main()
