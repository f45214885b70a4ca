"""Benchmark: the bootstrap with replicates as an array axis, against the previous version, in one run.

What is measured (issue "every replicate and every group at once", the replicate half), each command
run as a user runs it (``python -m calibcli ...``, a fresh process, wall clock including start-up), its
output kept as ``--json``:

- ``ece`` with its defaults (15 bins, 1000 resamples) on 1e6 rows: the reference of the T-Cal bar;
- ``tcal`` with its defaults (adaptive, y-bootstrap, 1000 resamples) on the same 1e6 rows
  (bar: at most 4x ``ece``);
- ``tcal --n-boot 3000`` on 1e4 rows (bar: well under a second);
- ``smece`` with 1000 resamples on 1e6 rows (the bootstrap from per-cell sums) and on 1e5 rows (the
  per-row bootstrap);
- ``ece --n-boot 1000`` on 1e5 rows, uniform and quantile bins (the per-row binned bootstrap, the
  quantile edges re-fitted on every resample).
- ``report`` with its defaults on 1e6 rows (bar: at most 1.5x the sum of ``ece``, ``smece`` and ``tcal``) and
  ``compare`` with 1000 resamples on 1e6 rows against a second model on the same rows (bar: at most 1.3x
  ``ece``).

Each command runs once per version per repeat, the versions interleaved (before, after, before, ...) so
that the machine's load (2 shared cores) weighs on both alike; the table gives the median of the repeats,
the ratio after / before, and whether the two versions printed the same numbers (every estimate,
interval, p-value and per-level statistic equal to 1e-12 relative; timings and file paths left out).

Data: ``prob`` = a Beta(2, 5) draw, ``label`` ~ Bernoulli(prob^1.1) (mildly miscalibrated), seed 0,
written once to ``benchmarks/out/replicates_{rows}.parquet``.

Besides the wall clock, each run's CPU time (user + system of the child and all its threads) is printed: the
machine's load moves the wall clock of T-Cal's two threads by 2x between runs, the CPU time much less.

Measured 2026-11-28 on a quiet machine (load 1.3-1.8 on 2 cores), before = main at befd388, after = this branch
(T-Cal sweeps several resamples per call; the report's held-out tests share their draws and sort);
``--repeat 2 --only "ece 1e6" "tcal" "smece 1e6" "report"`` (seconds; CPU seconds):

=====================================  ========  =======  ==========  =========  ============
command                                before s  after s  CPU before  CPU after  same numbers
=====================================  ========  =======  ==========  =========  ============
ece 1e6 (defaults)                     0.57      0.61     0.77        0.81       yes
tcal 1e6 (defaults)                    8.54      6.04     13.49       10.08      yes
smece 1e6, 1000 resamples              0.79      0.78     1.22        1.22       yes
tcal 1e4, 3000 resamples               0.51      0.48     0.71        0.68       yes
report 1e6 (defaults)                  27.42     20.29    42.57       32.74      yes
=====================================  ========  =======  ==========  =========  ============

Bars: ``tcal`` / ``ece`` 15.1x before, 9.9x after (CPU 17.6x, 12.5x; bar 4x: not met); ``tcal`` at 1e4 rows
0.51 and 0.48 s (0.71 and 0.68 s CPU; bar: well under a second: met); ``report`` / (``ece`` + ``smece`` +
``tcal``) 2.77x and 2.73x wall, 2.75x and 2.70x CPU (bar 1.5x: not met; ``tcal`` alone, its denominator's largest
term, got faster too). Why, with the per-resample profile of T-Cal and what was tried: ``docs/benchmarks.md``,
"T-Cal and report speed". In short: the same p-values need the same 1e9 uniform draws (1.7 s of CPU in NumPy, twice
the whole ``ece``) and, per draw, the sums of about 1e6 distinct bins of the 37 nested levels (about 9.5 ms per
resample of 1e6 rows in all, on one thread); the report adds four held-out T-Cal tests of 5e5 rows, which share
their draws but not their bins.

Run: ``python benchmarks/bench_replicates.py [--before DIR] [--after DIR] [--repeat N] [--quick]``.
``--before`` is a checkout of the previous version (default: one made in the temporary directory with
``git archive 9aa12dc``, main before this work); ``--after`` defaults to this checkout. ``--quick``
runs only the 1e4 and 1e5 rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"
BEFORE_COMMIT = "9aa12dc"

CASES = [
    # (name, rows, arguments after the file)
    ("ece 1e6 (defaults)", "1e6", ["ece"]),
    ("tcal 1e6 (defaults)", "1e6", ["tcal"]),
    ("smece 1e6, 1000 resamples", "1e6", ["smece", "--n-boot", "1000"]),
    ("tcal 1e4, 3000 resamples", "1e4", ["tcal", "--n-boot", "3000"]),
    ("ece 1e5 uniform, 1000 resamples", "1e5", ["ece", "--n-boot", "1000"]),
    ("ece 1e5 quantile, 1000 resamples", "1e5", ["ece", "--n-boot", "1000", "--strategy", "quantile"]),
    ("smece 1e5, 1000 resamples", "1e5", ["smece", "--n-boot", "1000"]),
    ("report 1e6 (defaults)", "1e6", ["report"]),
    ("compare 1e6, 1000 resamples", "1e6", ["compare", "@candidate", "--n-boot", "1000"]),
]


def data_file(rows: str) -> Path:
    path = OUT / f"replicates_{rows}.parquet"
    if not path.exists():
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        n = int(float(rows))
        rng = np.random.default_rng(0)
        prob = rng.beta(2.0, 5.0, n)
        label = (rng.random(n) < prob**1.1).astype(np.int64)
        OUT.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"prob": prob, "label": label}), path)
    return path


def candidate_file(rows: str) -> Path:
    """A second model scored on the same rows (``compare``'s candidate): the predictions of ``data_file``,
    recalibrated by ``prob^0.9``, the same labels."""
    path = OUT / f"replicates_{rows}_candidate.parquet"
    if not path.exists():
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(data_file(rows))
        prob = table["prob"].to_numpy() ** 0.9
        pq.write_table(pa.table({"prob": prob, "label": table["label"]}), path)
    return path


def before_checkout() -> str:
    target = Path(tempfile.gettempdir()) / f"calibcli_{BEFORE_COMMIT}"
    if not (target / "calibcli").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE_COMMIT], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return str(target)


def run(code: str, args: list[str]) -> tuple[float, float, dict | None, str]:
    """Wall clock and CPU time (user + system, the child's threads included) of one command, its JSON document,
    and the last line of its stderr when it failed. ``report`` writes its page and document to files."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([code, os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        document = os.path.join(tmp, "report.json")
        extra = ["-o", os.path.join(tmp, "page.html"), "--json-output", document] if args[0] == "report" else ["--json"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "calibcli", *args, *extra], cwd=tempfile.gettempdir(), env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 1):
            return seconds, cpu, None, (proc.stderr.strip().splitlines() or ["?"])[-1]
        if args[0] == "report":
            with open(document) as f:
                return seconds, cpu, json.load(f), ""
        return seconds, cpu, json.loads(proc.stdout), ""


_SKIP = {"elapsed", "seconds", "time", "timing", "path", "file", "files", "source", "sources", "calibcli_version",
         "version", "created", "command"}


def numbers(doc, prefix="") -> dict:
    """Every number of a JSON report by its path (timings and paths left out)."""
    out = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in _SKIP:
                out.update(numbers(v, f"{prefix}/{k}"))
    elif isinstance(doc, list):
        for j, v in enumerate(doc):
            out.update(numbers(v, f"{prefix}[{j}]"))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        out[prefix] = float(doc)
    return out


def same_numbers(a: dict | None, b: dict | None) -> str:
    if a is None or b is None:
        return "-"
    na, nb = numbers(a), numbers(b)
    if set(na) != set(nb):
        return f"keys differ ({len(set(na) ^ set(nb))})"
    bad = [k for k in na if not (math.isclose(na[k], nb[k], rel_tol=1e-12, abs_tol=1e-15)
                                  or (math.isnan(na[k]) and math.isnan(nb[k])))]
    return "yes" if not bad else f"no: {len(bad)} of {len(na)} (e.g. {bad[0]})"


def median(values: list[float]) -> float:
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help=f"checkout of the previous version (default: git archive {BEFORE_COMMIT})")
    parser.add_argument("--after", default=str(ROOT), help="checkout of the new version (default: this one)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="only the 1e4 and 1e5 rows")
    parser.add_argument("--only", nargs="+", help="run only the cases whose names start with these words")
    args = parser.parse_args()
    before = args.before or before_checkout()
    cases = [c for c in CASES if not (args.quick and c[1] == "1e6")
             and (not args.only or any(c[0].startswith(w) for w in args.only))]
    print(f"before: {before}\nafter:  {args.after}\n(median of {args.repeat} run(s) each of a fresh process: wall "
          f"clock, and CPU time of all its threads; load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          "cores)\n")
    times: dict[str, dict[str, float]] = {}
    cpus: dict[str, dict[str, float]] = {}
    print(f"{'command':36s} {'before s':>9s} {'after s':>8s} {'after/before':>12s} {'CPU before':>10s} "
          f"{'CPU after':>9s}  same numbers")
    for name, rows, cmd in cases:
        path = str(data_file(rows))
        cmd = [str(candidate_file(rows)) if a == "@candidate" else a for a in cmd]
        got: dict[str, list[float]] = {"before": [], "after": []}
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        docs = {}
        for _ in range(args.repeat):
            for label, code in (("before", before), ("after", args.after)):
                seconds, used, doc, err = run(code, [cmd[0], path, *cmd[1:]])
                if err:
                    print(f"{name:36s} {label} failed: {err}")
                got[label].append(seconds)
                cpu[label].append(used)
                docs[label] = doc
        times[name] = {k: median(v) for k, v in got.items()}
        cpus[name] = {k: median(v) for k, v in cpu.items()}
        t, c = times[name], cpus[name]
        print(f"{name:36s} {t['before']:9.2f} {t['after']:8.2f} {t['after'] / t['before']:12.2f} "
              f"{c['before']:10.2f} {c['after']:9.2f}  {same_numbers(docs['before'], docs['after'])}", flush=True)
    print("\nbars (wall clock; CPU time in brackets)")

    def ratio(label: str, top: str, *bottom: str) -> str:
        if top not in times or any(b not in times for b in bottom):
            return "-"
        wall = times[top][label] / sum(times[b][label] for b in bottom)
        used = cpus[top][label] / sum(cpus[b][label] for b in bottom)
        return f"{wall:5.2f}x  ({used:5.2f}x)"

    for label in ("before", "after"):
        print(f"  tcal / ece at 1e6 rows, {label:6s}: {ratio(label, 'tcal 1e6 (defaults)', 'ece 1e6 (defaults)')}"
              "   (bar: at most 4x)")
    if "tcal 1e4, 3000 resamples" in times:
        for label in ("before", "after"):
            print(f"  tcal at 1e4 rows, 3000 resamples, {label:6s}: {times['tcal 1e4, 3000 resamples'][label]:.2f} s"
                  f"  ({cpus['tcal 1e4, 3000 resamples'][label]:.2f} s CPU)   (bar: well under a second)")
    alone = ("ece 1e6 (defaults)", "smece 1e6, 1000 resamples", "tcal 1e6 (defaults)")
    for label in ("before", "after"):
        print(f"  report / (ece + smece + tcal) at 1e6 rows, {label:6s}: "
              f"{ratio(label, 'report 1e6 (defaults)', *alone)}   (bar: at most 1.5x)")
    for label in ("before", "after"):
        print(f"  compare / ece at 1e6 rows, {label:6s}: "
              f"{ratio(label, 'compare 1e6, 1000 resamples', 'ece 1e6 (defaults)')}   (bar: at most 1.3x)")


if __name__ == "__main__":
    main()
