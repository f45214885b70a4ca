"""Benchmark: ``--group-by`` with the groups as an array axis, against the previous version, in one run.

What is measured (issue "every replicate and every group at once", the group half), each command run as a
user runs it (``python -m calibcli ...``, a fresh process, wall clock including start-up, CPU time and peak
resident memory from ``os.wait4``), its output kept as ``--json``:

- ``ece`` with its defaults (15 bins, 1000 resamples) on 1e6 rows, without groups and with ``--group-by g``
  (1,000 groups of about 1,000 rows: every group takes the per-row bootstrap). Bars: grouped at most 5x
  ungrouped; the grouped run at most 1.5 GB peak;
- ``smece`` with its defaults on the same rows, without groups and with ``--group-by g100`` (100 groups of
  about 10,000 rows). Bar: grouped at most 5x ungrouped;
- the grouped ``ece`` once more with ``CALIBCLI_MEMORY_BUDGET=400M``, whose ``(G, R, bins)`` statistics pass
  the budget's half: it completes in chunks of groups (38 chunks of 27 groups) with the same numbers.

Each command runs once per version per repeat, the versions interleaved (before, after, before, ...) so that
the machine's load (2 cores shared with other sessions) weighs on both alike; the table gives the median of
the repeats (wall clock, and the CPU time of all the process's threads from ``os.wait4``, the steadier figure
on a shared machine), the ratio after / before and whether the two versions printed the same numbers (every
estimate, interval, p-value and per-bin statistic equal to 1e-12 relative; timings and paths left out).

Data: ``prob`` a Beta(2, 5) draw, ``label`` ~ Bernoulli(prob^1.1), ``g`` uniform on 0..999, ``g100`` uniform
on 0..99, seed 0, written once to ``benchmarks/out/groups_1e6.parquet``.

Measured 2026-11-28, before = main at 9f5c51a, after = the grouped bootstrap on two threads (``--repeat 1``, load
3.7-5.5 on 2 cores from other sessions):

==========================================  ========  =======  ==========  =========  =========  ========  ======
command                                     before s  after s  CPU before  CPU after  before MB  after MB  same
==========================================  ========  =======  ==========  =========  =========  ========  ======
ece 1e6                                     1.04      1.48     0.81        0.70       154        150       yes
ece 1e6 --group-by g (1000 groups)          12.83     12.00    11.94       11.38      597        677       yes
smece 1e6                                   1.17      1.58     1.16        1.18       200        254       yes
smece 1e6 --group-by g100 (100 groups)      68.84     76.57    50.12       39.87      1058       320       yes
ece 1e6 --group-by g, budget 400M           -         18.93    -           11.38      -          515       yes
==========================================  ========  =======  ==========  =========  =========  ========  ======

Bars (grouped / ungrouped): ``ece`` 1000 groups 12.3x wall and 14.8x CPU before, 8.1x and 16.3x after (bar 5x:
not met); ``smece`` 100 groups 58.7x / 43.1x before, 48.3x / 33.7x after (bar 5x: not met); the 1000-group
run's peak 0.68 GB (bar 1.5 GB: met); past the budget it completes in chunks with the same numbers (met).

The wall clock of this run says little: the work runs on two threads, and while other sessions kept the load at
3.5-9 no second core was free (two threads of a plain NumPy shift/xor loop took as long as one; the 1000-group
bootstrap alone took 4.7 s of wall and 4.7 s of CPU on two threads). The CPU figures: the 1000-group bootstrap
(``SortedGroups.resampled`` over every chunk, one thread) 5.5-7.9 s -> 4.5 s in the same minutes, with
byte-identical sums; the grouped ``smece`` -20% (6.8 instead of 8.9 bandwidth evaluations, FFTs of a 8,192-point
mirrored grid, per replicate). What remains of the grouped ``ece`` besides the bootstrap (cProfile, one
thread): the per-group Cox and ICI fits and the 1000-entry JSON document (about 40% together), the estimators
over the ``(G, R, bins)`` statistics (~10%), reading and grouping (~10%). The grouped ``smece`` is every
replicate's bandwidth search on a grid of at least 4,096 cells (``MIN_GRID``), whatever the group's size: 1e5
replicate searches of ~7 transforms each; the same numbers leave no smaller grid. Earlier runs, before = 9aa12dc:
ece 1000 groups 35.3 -> 14.6 s (load 2), smece 100 groups 174 -> 161 s (load 6-8).

Second round: every group's Cox fits as one stacked Newton iteration (``calibcli/clinical/cox.py``), every group's ICI as
one lockstep fixed point (``calibcli/clinical/ici.py``), the JSON text in one pass. Before = 9f5c51a (main), after = that
branch; ``--skip-smece --repeat 3`` at load 4.4-4.8 (median of 3 fresh processes each, CPU = user + system):

==========================================  ========  =======  ==========  =========  =========  ============
command                                     before s  after s  CPU before  CPU after  after MB   same numbers
==========================================  ========  =======  ==========  =========  =========  ============
ece 1e6                                     0.86      0.70     0.83        0.62       152        yes
ece 1e6 --group-by g (1000 groups)          18.06     15.92    12.24       10.72      596        yes
ece 1e6 --group-by g, budget 400M           -         20.43    -           10.50      516        yes
==========================================  ========  =======  ==========  =========  =========  ============

The grouped run's CPU 0.88x (0.85x and 0.86x in two earlier runs of the script); the ungrouped one's 0.75x too (its
Cox fit on the 33k cells took 0.25 s, now 0.03 s), so the bar's ratio in CPU time moved from 14.7x to 17.3x: both
sides faster, the grouped side by less in proportion (bar 5x: not met). In-process CPU time of the parts this round
rebuilt, 1,000 groups of 1,000 rows: the Cox fits 0.61 -> 0.31 s, the ICI 1.76 -> 0.74-0.90 s, the JSON text 0.50 ->
0.20 s. cProfile of the 1,000-group run, before -> after (shares of the whole run): Cox 6.0% -> 3.0%, ICI 14.1% ->
6.4%, JSON 12.3% -> 3.8%; what is left is the binned bootstrap, 53% -> 69% (the 1e9 per-row multiplicities 21.5% ->
27.6%, the sparse products 11.2% -> 15.1%), reading and the per-group updates 7%, each group's ECCE 3%. Every number
of both documents agrees to 1e-12 relative or 1e-15 absolute (the script's comparison); beyond it, every float of
the two 1,000-group documents: all but the Cox fields and ``ici`` are bit for bit the same; Cox's differ by at most
2e-13 relative, or a few 1e-15 absolute for values near 0 (an intercept of -5e-5, a slope's z of -8e-4), ``ici`` by
6e-16: the sums are added in another order.

Run: ``python benchmarks/bench_groups.py --before DIR [--after DIR] [--repeat N] [--skip-smece]`` (``--before``:
a checkout of the previous version, e.g. ``git worktree add --detach /tmp/before main``).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replicates import median, same_numbers  # noqa: E402  (the same comparison of two reports)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"


def data_file() -> Path:
    path = OUT / "groups_1e6.parquet"
    if not path.exists():
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        n = 10**6
        rng = np.random.default_rng(0)
        prob = rng.beta(2.0, 5.0, n)
        label = (rng.random(n) < prob**1.1).astype(np.int64)
        g = rng.integers(0, 1000, n)
        g100 = rng.integers(0, 100, n)
        OUT.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"prob": prob, "label": label, "g": g, "g100": g100}), path)
    return path


def run(code: str, args: list[str], env_extra: dict | None = None) -> tuple[float, float, float, dict | None, str]:
    """``(seconds, CPU seconds, peak MB, report, error)`` of one fresh process of ``python -m calibcli args --json``:
    wall clock, the user + system time of all its threads and its peak resident memory (``os.wait4``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([code, os.environ.get("PYTHONPATH", "")]), **(env_extra or {})}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "calibcli", *args, "--json"], cwd=tempfile.gettempdir(),
                                env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu, mb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
    if proc.returncode not in (0, 1):
        return seconds, cpu, mb, None, (stderr.strip().splitlines() or ["?"])[-1]
    return seconds, cpu, mb, json.loads(stdout), ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="checkout of the previous version")
    parser.add_argument("--after", default=str(ROOT), help="checkout of the new version (default: this one)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-smece", action="store_true", help="only the ece cases")
    args = parser.parse_args()
    path = str(data_file())
    cases = [
        ("ece 1e6", ["ece", path], None),
        ("ece 1e6 --group-by g (1000 groups)", ["ece", path, "--group-by", "g"], None),
    ]
    if not args.skip_smece:
        cases += [
            ("smece 1e6", ["smece", path, "--n-boot", "1000"], None),
            ("smece 1e6 --group-by g100 (100 groups)", ["smece", path, "--n-boot", "1000", "--group-by", "g100"], None),
        ]
    cases.append(("ece 1e6 --group-by g, budget 400M", ["ece", path, "--group-by", "g"],
                  {"CALIBCLI_MEMORY_BUDGET": "400M"}))
    print(f"before: {args.before}\nafter:  {args.after}\n(median of {args.repeat} run(s) each of a fresh process: wall "
          f"clock, and CPU time of all its threads; load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          "cores)\n")
    print(f"{'command':42s} {'before s':>9s} {'after s':>8s} {'after/before':>12s} {'CPU before':>10s} "
          f"{'CPU after':>9s} {'before MB':>9s} {'after MB':>8s}  same numbers")
    times: dict[str, dict[str, float]] = {}
    cpus: dict[str, dict[str, float]] = {}
    docs_of: dict[str, dict] = {}
    for name, cmd, env in cases:
        got: dict[str, list] = {"before": [], "after": []}
        cpu: dict[str, list] = {"before": [], "after": []}
        peaks: dict[str, list] = {"before": [], "after": []}
        docs = {}
        for _ in range(args.repeat):
            for label, code in (("before", args.before), ("after", args.after)):
                if env and label == "before":  # the previous version has no chunks: the same command as above
                    continue
                seconds, cpu_seconds, mb, doc, err = run(code, cmd, env)
                if err:
                    print(f"{name:42s} {label} failed: {err}")
                got[label].append(seconds)
                cpu[label].append(cpu_seconds)
                peaks[label].append(mb)
                docs[label] = doc
        t = {k: median(v) if v else float("nan") for k, v in got.items()}
        c = {k: median(v) if v else float("nan") for k, v in cpu.items()}
        m = {k: max(v) if v else float("nan") for k, v in peaks.items()}
        times[name], cpus[name] = t, c
        docs_of[name] = docs
        grouped = docs_of.get("ece 1e6 --group-by g (1000 groups)", {})
        reference = docs.get("before") if "before" in docs else grouped.get("before")
        print(f"{name:42s} {t['before']:9.2f} {t['after']:8.2f} {t['after'] / t['before']:12.2f} {c['before']:10.2f} "
              f"{c['after']:9.2f} {m['before']:9.0f} {m['after']:8.0f}  {same_numbers(reference, docs.get('after'))}",
              flush=True)
    print("\nbars (grouped / ungrouped, same version; wall clock, then CPU time)")
    pairs = [("ece --group-by (1000 groups) / ece", "ece 1e6 --group-by g (1000 groups)", "ece 1e6")]
    if not args.skip_smece:
        pairs.append(("smece --group-by (100 groups) / smece", "smece 1e6 --group-by g100 (100 groups)", "smece 1e6"))
    for title, grouped_case, alone in pairs:
        for label in ("before", "after"):
            wall = times[grouped_case][label] / times[alone][label]
            cpu_ratio = cpus[grouped_case][label] / cpus[alone][label]
            print(f"  {title}, {label:6s}: {wall:6.1f}x wall, {cpu_ratio:6.1f}x CPU   (bar: at most 5x)")
    print("  (peak memory of the 1000-group run: the MB columns; bar: at most 1.5 GB)")


if __name__ == "__main__":
    main()
