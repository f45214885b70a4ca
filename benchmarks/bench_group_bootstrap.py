"""Benchmark: the bootstrap over groups alone (``SortedGroups``: sorting the groups' rows, then every chunk's
``(G, R, bins)`` resampled statistics), in-process, against the previous version, in one run.

The rows of ``benchmarks/out/groups_1e6.parquet`` (made by ``bench_groups.py``) in its 1,000 groups ``g``, 15
equal-width bins (or ``--strategy quantile``) and 1000 resamples, as ``ece --group-by g`` takes them: each version
runs in a fresh process of its own (``PYTHONPATH``), the versions interleaved, a first call (compiling or loading
a compiled loop) left out of the timing; wall clock and the process's CPU time (every thread) of the construction
and of the resamples over every chunk, and whether the two versions' statistics are bit for bit the same (a
SHA-256 of every array).

Measured 2026-11-28, before = main at 55e823e (sparse products of NumPy's draws; quantile bins through each
group's BLAS products), after = the compiled loops (``calibcli/core/poisson.py``), load 1.4-1.5 on 2 cores:

========================================  ========  =======  ==========  =========  ================
1,000 groups of 1e6 rows, 1000 resamples  before s  after s  CPU before  CPU after  same statistics
========================================  ========  =======  ==========  =========  ================
uniform bins: sorting (init)              0.22      0.09     0.22        0.09
uniform bins: resamples                   2.98      1.25     5.03        2.09       bit for bit
quantile bins: resamples                  57.57     4.73     64.84       8.41       bins equal, sums
                                                                                    within 3e-15
========================================  ========  =======  ==========  =========  ================

(uniform: best of 3; quantile: one run each, before the compiled loop's unit-value shortcut.) The whole commands
(fresh processes): ``ece --group-by g`` 6.28 -> 4.68 s median of 3 (``bench_groups.py --skip-smece --repeat 3``);
``ece --group-by g --strategy quantile`` 62.8 -> 8.5 s, every number within 1e-12 relative or 1e-15 absolute of
the previous version's (7 of 175,076 beyond 1e-12 relative, all ``brier_within_bin`` interval ends within 6e-17
of zero in absolute terms).

Run: ``python benchmarks/bench_group_bootstrap.py --before DIR [--repeat N] [--column g|g100] [--strategy uniform|quantile] [--n-boot R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import hashlib, json, sys, time
import calibcli
assert calibcli.__file__.startswith(sys.argv[5]), calibcli.__file__
import numpy as np
import pyarrow.parquet as pq
from calibcli.binned.bootstrap import SortedGroups
from calibcli.core.binning import fit_binning
from calibcli.binned.estimators import group_chunk

path, column, strategy, n_boot = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = pq.read_table(path, columns=["prob", "label", column])
z, y, g = (t.column(c).to_numpy() for c in ("prob", "label", column))
order = np.argsort(g, kind="stable")
starts = np.flatnonzero(np.diff(g[order], prepend=-1))
groups = [(y[rows], z[rows], np.ones(len(rows)), rows) for rows in np.split(order, starts[1:])]
binnings = [fit_binning(gz if strategy == "quantile" else np.empty(0), n_bins=15, strategy=strategy)
            for _, gz, _, _ in groups]
warm = SortedGroups(groups[:2], binnings[:2], 15)
warm.resampled(0, 2, 0, 8)  # compiles (or loads) a compiled loop: not timed
c0, w0 = time.process_time(), time.perf_counter()
problems = SortedGroups(groups, binnings, 15)
c1, w1 = time.process_time(), time.perf_counter()
digest, wall, cpu = hashlib.sha256(), 0.0, 0.0
for g0, g1 in problems.chunks(group_chunk(n_boot, 15 if strategy == "uniform" else 30)):
    c, w = time.process_time(), time.perf_counter()
    main, uniform = problems.resampled(g0, g1, 0, n_boot)
    wall, cpu = wall + time.perf_counter() - w, cpu + time.process_time() - c
    for stats in (main, uniform):
        for a in ([] if stats is None else stats._arrays()):
            digest.update(np.ascontiguousarray(a).tobytes())
print(json.dumps({"init": [w1 - w0, c1 - c0], "resampled": [wall, cpu], "sha": digest.hexdigest()}))
"""


def run(code: str, args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": code}  # (run outside any checkout: `python -c` puts the cwd on the path first)
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, check=True,
                          cwd=tempfile.gettempdir())
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="checkout of the previous version")
    parser.add_argument("--after", default=str(ROOT), help="checkout of the new version (default: this one)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--column", default="g", help="the group column (g: 1,000 groups; g100: 100)")
    parser.add_argument("--strategy", default="uniform", choices=["uniform", "quantile"])
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_groups import data_file

    cmd = [str(data_file()), args.column, args.strategy, str(args.n_boot)]
    got: dict[str, list[dict]] = {"before": [], "after": []}
    for _ in range(args.repeat):
        for label, code in (("before", args.before), ("after", args.after)):
            got[label].append(run(code, [*cmd, str(Path(code).resolve())]))
    print(f"{args.column}, {args.strategy} bins, {args.n_boot} resamples; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores; best of {args.repeat} fresh process(es) each")
    print(f"{'part':12s} {'before s':>9s} {'after s':>8s} {'ratio':>6s} {'CPU before':>10s} {'CPU after':>9s} {'ratio':>6s}")
    for part in ("init", "resampled"):
        b = [min(r[part][k] for r in got["before"]) for k in (0, 1)]
        a = [min(r[part][k] for r in got["after"]) for k in (0, 1)]
        print(f"{part:12s} {b[0]:9.2f} {a[0]:8.2f} {a[0] / b[0]:6.2f} {b[1]:10.2f} {a[1]:9.2f} {a[1] / b[1]:6.2f}")
    shas = {r["sha"] for rs in got.values() for r in rs}
    print(f"same statistics bit for bit: {'yes' if len(shas) == 1 else 'no'}")


if __name__ == "__main__":
    main()
