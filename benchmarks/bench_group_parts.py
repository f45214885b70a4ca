"""Benchmark: where a grouped ``ece`` spends its CPU time, part by part, against the previous version, in one run.

``ece --group-by g`` on ``benchmarks/out/groups_1e6.parquet`` (1e6 rows, 1,000 groups; written by
``bench_groups.py``), run in-process in a fresh interpreter per version and repeat, the bootstrap's thread pool
set to one thread so that every part's CPU time is its own (``time.process_time`` around each of the functions
below; a part's figure includes the parts it calls). Printed side by side with the ratio after / before, and
whether the two versions printed the same JSON text (byte for byte).

The parts: reading and splitting the rows among the groups (``Grouped.update``); the grouped bootstrap
(``SortedGroups.__init__`` and ``.resampled``); the estimators and percentile intervals over its
``(G, R, bins)`` statistics (``_summarise_halves``); the rest of ``binned_calibration_groups``; every group's Cox
and ICI (``ClinicalAccumulator.results``: ``cox_groups``, ``ici_groups``); each group's ECCE
(``EcceAccumulator.result`` one group at a time, ``.results`` every group at once) and report
(``InputAccumulator._report``); the JSON text (``report.emit``); the whole command (``whole main``, start-up
after the interpreter's excluded). A part a version does not have is left blank.

Run: ``python benchmarks/bench_group_parts.py --before DIR [--after DIR] [--repeat N]``.
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

PARTS = [
    ("calibcli.core.groups", "Grouped.update"),
    ("calibcli.binned.bootstrap", "SortedGroups.__init__"),
    ("calibcli.binned.bootstrap", "SortedGroups.resampled"),
    ("calibcli.binned.estimators", "_summarise_halves"),
    ("calibcli.binned.estimators", "binned_calibration_groups"),
    ("calibcli.clinical.accumulator", "ClinicalAccumulator.results"),
    ("calibcli.clinical.cox", "cox_groups"),
    ("calibcli.clinical.ici", "ici_groups"),
    ("calibcli.cumulative.accumulator", "EcceAccumulator.result"),
    ("calibcli.cumulative.accumulator", "EcceAccumulator.results"),
    ("calibcli.ece_family.accumulator", "InputAccumulator._report"),
    ("calibcli.report.emit", "emit"),
]

#: Run in the child: wraps each part (in its module and wherever it was imported by name), runs the command.
CHILD = r"""
import contextlib, hashlib, importlib, io, json, sys, time
parts = json.loads(sys.argv[1])
import calibcli, calibcli.core.resampling
calibcli.core.resampling.THREADS = 1
from calibcli.cli import app as cli
import calibcli.cli.commands.ece, calibcli.engines.pipeline, calibcli.ece_family.accumulator, calibcli.binned.accumulator
import calibcli.clinical.accumulator
T = {}
def wrap(modname, qual):
    obj = importlib.import_module(modname)
    names = qual.split(".")
    for name in names[:-1]:
        obj = getattr(obj, name)
    if names[-1] not in getattr(obj, "__dict__", {}) and not hasattr(obj, names[-1]):
        return  # (not in this version)
    static = isinstance(obj, type) and isinstance(obj.__dict__.get(names[-1]), (classmethod, staticmethod))
    raw = obj.__dict__[names[-1]].__func__ if static else getattr(obj, names[-1])
    kind = type(obj.__dict__[names[-1]]) if static else None
    def timed(*a, **k):
        t = time.process_time()
        try:
            return raw(*a, **k)
        finally:
            T[qual] = T.get(qual, 0.0) + time.process_time() - t
    setattr(obj, names[-1], kind(timed) if kind else timed)
    if len(names) == 1:
        for name, module in list(sys.modules.items()):
            if name.startswith("calibcli") and getattr(module, names[-1], None) is raw:
                setattr(module, names[-1], timed)
for m, q in parts:
    wrap(m, q)
out = io.StringIO()
t0 = time.process_time()
with contextlib.redirect_stdout(out):
    sys.argv = ["calibcli", "ece", sys.argv[2], "--group-by", "g", "--json"]
    try:
        cli.main()
    except SystemExit:
        pass
T["whole main"] = time.process_time() - t0
T["module"] = calibcli.__file__
T["sha256"] = hashlib.sha256(out.getvalue().encode()).hexdigest()
print(json.dumps(T))
"""


def run(code: str, data: Path) -> dict:
    """One fresh interpreter on the code at ``code``: run from an empty directory, since ``python -c`` puts its
    working directory first on ``sys.path`` (a checkout's would shadow ``code``)."""
    env = {**os.environ, "PYTHONPATH": code}
    with tempfile.TemporaryDirectory() as empty:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(PARTS), str(data)],
            cwd=empty,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="checkout of the previous version")
    parser.add_argument("--after", default=str(ROOT), help="checkout of the new version (default: this one)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_groups import data_file

    data = data_file().resolve()
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for _ in range(args.repeat):
        for label, code in (("before", args.before), ("after", args.after)):  # interleaved: the load weighs alike
            runs[label].append(run(code, data))
    print(f"before: {runs['before'][0]['module']}\nafter:  {runs['after'][0]['module']}")
    print(f"(CPU seconds, one thread, median of {args.repeat}; load average now {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)\n")
    print(f"{'part':34s} {'before':>8s} {'after':>8s} {'after/before':>12s} {'saved':>7s}")
    for _, name in [*PARTS, ("", "whole main")]:
        b, a = (sorted(r.get(name, float("nan")) for r in runs[k])[len(runs[k]) // 2] for k in ("before", "after"))
        print(f"{name:34s} {b:8.3f} {a:8.3f} {a / b:12.2f} {b - a:7.3f}")
    same = {r["sha256"] for r in runs["before"]} == {r["sha256"] for r in runs["after"]}
    print(f"\nsame JSON text, byte for byte: {'yes' if same else 'NO'} (sha256 {runs['after'][0]['sha256'][:16]}...)")


if __name__ == "__main__":
    main()
