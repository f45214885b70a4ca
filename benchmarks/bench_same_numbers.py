"""Same numbers on every engine and every tree (SPEC 8 "Engines", issue #25): how far ``--engine dask`` moves each
reported number from the local engine's, per metric, for the previous version and this one side by side.

Data (written on the first run under ``benchmarks/out/same_numbers/``, git-ignored): 600,000 rows in 20 Parquet
files of 30 row groups of 1,000 rows (Beta(2, 5) predictions, labels Bernoulli(p^1.3), weights, a ``model``
column of 3 groups, ``country`` and ``device`` segment columns), and a candidate model on the same labels.
Beyond the 2^17 rows kept, so ``ece``'s bootstrap draws from per-bin moments and quantile edges take a
second pass; with ``--batch-rows 1000`` every row group is a fragment, and ``CALIBCLI_TASK_ROWS=1000`` makes it
a task: 600 tasks, merged in a tree of 16-ary merges of depth 3 (600 -> 38 blocks -> 3 -> 1). A second set runs
with ``--batch-rows 2500`` (``--unaligned``): there the local engine's batches (2,500 rows, across row groups)
are not the tasks' batches (a fragment is two row groups), so the per-batch sums themselves differ in their
last bits.

For each version (this checkout, and ``--before DIR``, a checkout of the previous version) an external
``dask scheduler`` and ``dask worker --nworkers 2`` run that version; every command runs once locally and once
on it. Printed: per command and reported number (its JSON path, list indices dropped), the largest relative
difference ``|a - b| / max(|a|, |b|)`` between the two engines, for both versions, and whether every number
was bit for bit the same.

Run: ``PYTHONPATH=. python benchmarks/bench_same_numbers.py --before /tmp/before-exact`` (about 10 minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_dask  # noqa: E402  (this folder's helpers: the external cluster, a timed client run)

REPO = os.path.dirname(HERE)
DATA = os.path.join(HERE, "out", "same_numbers")
FILES, ROWS_PER_FILE, GROUP_ROWS = 20, 30_000, 1000
#: The unaligned runs' batch rows: the local engine reads 2,500-row batches, a task (a fragment of two row groups:
#: the runs of row groups fit in a batch) 2,000-row ones, so their per-batch sums are of other rows.
UNALIGNED_ROWS = 2500


def ensure_data() -> tuple[str, str]:
    """``base/`` and ``cand/``: the model and a candidate on the same rows (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base, cand = os.path.join(DATA, "base"), os.path.join(DATA, "cand")
    if all(os.path.isdir(d) and len(os.listdir(d)) == FILES for d in (base, cand)):
        return base, cand
    shutil.rmtree(DATA, ignore_errors=True)
    for d in (base, cand):
        os.makedirs(d)
    for k in range(FILES):
        rng = np.random.default_rng([20261128, 25, k])
        n = ROWS_PER_FILE
        z = rng.beta(2, 5, n)
        y = (rng.random(n) < z**1.3).astype(np.int64)
        common = {
            "label": y,
            "w": rng.gamma(2.0, 0.5, n),
            "model": rng.choice(np.array(["a", "b", "c"]), n),
            "country": rng.choice(np.array(["BR", "DE", "FR", "IN", "US"]), n),
            "device": rng.choice(np.array(["android", "ios", "web"]), n),
        }
        cand_z = np.clip(z**1.2 + rng.normal(0, 0.02, n), 0.0, 1.0)
        for d, prob in ((base, z), (cand, cand_z)):
            pq.write_table(pa.table({"prob": prob, **common}), os.path.join(d, f"part-{k:03d}.parquet"),
                           row_group_size=GROUP_ROWS)
    return base, cand


SPEED_ROWS = 4_000_000


def ensure_speed_data() -> str:
    """``speed.parquet``: 4e6 rows (bench_stream's law) with weights, in 100,000-row row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(DATA, "speed.parquet")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng([20261128, 26])
    z = rng.beta(2, 5, SPEED_ROWS)
    y = (rng.random(SPEED_ROWS) < z**1.3).astype(np.int64)
    pq.write_table(pa.table({"prob": z, "label": y, "w": rng.gamma(2.0, 0.5, SPEED_ROWS)}), path + ".tmp",
                   row_group_size=100_000)
    os.rename(path + ".tmp", path)
    return path


def part_speed(versions: dict[str, str], repeats: int) -> list[str]:
    """CPU seconds of ``ece`` (the calibcli process alone, os.wait4) on 4e6 rows, both versions interleaved: the
    default batches (2^17 rows), and 8,192-row batches (where a per-batch cost would show most)."""
    data = ensure_speed_data()
    runs = {
        "ece --n-boot 0": ["ece", data, "--n-boot", "0"],
        "ece --n-boot 0 --batch-rows 8192": ["ece", data, "--n-boot", "0", "--batch-rows", "8192"],
        "ece --n-boot 0 --weight-col w --batch-rows 8192": ["ece", data, "--n-boot", "0", "--weight-col", "w",
                                                            "--batch-rows", "8192"],
    }
    cpu: dict = {}
    for path in versions.values():  # warm-up (the page cache)
        bench_dask.run_client(runs["ece --n-boot 0"], path)
    for rep in range(repeats):
        for name, cmd in runs.items():
            for version, path in versions.items():
                bench_dask.log(f"  speed [{rep + 1}/{repeats}] {name}: {version}")
                _, c, doc, _ = bench_dask.run_client(cmd, path)
                if doc is not None:
                    cpu.setdefault((name, version), []).append(c)
    lines = [f"== ece's CPU seconds on {SPEED_ROWS:,} rows (median of {repeats}, interleaved; the process alone) =="]
    for name in runs:
        med = {v: bench_dask.median(cpu.get((name, v), [])) for v in versions}
        ratio = f"   now / before {med['now'] / med['before']:.3f}" if "before" in med else ""
        lines.append(f"{name:50} " + "  ".join(f"{v} {m:6.2f} s" for v, m in med.items()) + ratio)
    return lines


UPDATE = r"""
import sys, time
import numpy as np
from calibcli.ece_family import options as ece_options
from calibcli.ece_family.accumulator import InputAccumulator
rng = np.random.default_rng(5)
n, size, weighted, repeats = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "w", int(sys.argv[4])
z = rng.beta(2, 5, n)
y = (rng.random(n) < z**1.3).astype(np.int64)
w = rng.gamma(2.0, 0.5, n) if weighted else None
rows = np.arange(n)
best = float("inf")
for _ in range(repeats):
    acc = InputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=ece_options.Options.library())
    t0 = time.process_time()
    for s in range(0, n, size):
        acc.update(rows[s:s + size], z[s:s + size], y[s:s + size], None if w is None else w[s:s + size])
    best = min(best, time.process_time() - t0)
print(best)
"""


def part_update(versions: dict[str, str], rounds: int) -> list[str]:
    """CPU seconds of ``ece``'s input accumulator alone (``InputAccumulator.update``: every binned, clinical, ECCE
    and score sum, no reading) over 4e6 rows in batches of 8,192 and 131,072 rows, unweighted and weighted: the
    best of 3 in a fresh process per version, ``rounds`` rounds alternating the versions; medians of the rounds."""
    cpu: dict = {}
    cases = [(size, weighted) for size in (8192, 131072) for weighted in ("-", "w")]
    for r in range(rounds):
        for size, weighted in cases:
            for version, path in versions.items():
                bench_dask.log(f"  update [{r + 1}/{rounds}] {size} {weighted}: {version}")
                out = subprocess.run([bench_dask.PY, "-c", UPDATE, str(SPEED_ROWS), str(size), weighted, "3"],
                                     capture_output=True, text=True, cwd=path,
                                     env={**bench_dask.CLEAN_ENV, "PYTHONPATH": path})
                cpu.setdefault((size, weighted, version), []).append(float(out.stdout))
    lines = [f"== ece's accumulator update alone on {SPEED_ROWS:,} rows: CPU seconds (median of {rounds} rounds of "
             f"the best of 3) =="]
    for size, weighted in cases:
        med = {v: bench_dask.median(cpu[(size, weighted, v)]) for v in versions}
        ratio = f"   now / before {med['now'] / med['before']:.3f}" if "before" in med else ""
        name = f"batches of {size:,} rows{', weighted' if weighted == 'w' else ''}"
        lines.append(f"{name:50} " + "  ".join(f"{v} {m:6.3f} s" for v, m in med.items()) + ratio)
    return lines


STATE = r"""
import pickle, sys
from calibcli.ece_family import options as ece_options
from calibcli.ece_family.accumulator import InputAccumulator
from calibcli.engines.fragments import run_fragment
from calibcli.io import ColumnSpec, resolve_datasets
for weight in (None, "w"):
    (dataset,) = resolve_datasets([sys.argv[1]])
    stream = dataset.open(ColumnSpec(weight_col=weight))
    template = InputAccumulator(mode="binary", n_classes=2, class_names=stream.class_names, options=ece_options.Options.library())
    print(len(pickle.dumps(run_fragment(tuple(stream.fragments()), template), protocol=5)))
"""


def part_state(versions: dict[str, str], million: str) -> list[str]:
    """The packed state (a pickled part, as a task returns it) of ``ece`` over one 1e6-row task, per version."""
    lines = ["== A 1e6-row ece task's state, pickled (packed arrays) =="]
    for version, path in versions.items():
        out = subprocess.run([bench_dask.PY, "-c", STATE, million], capture_output=True, text=True, cwd=path,
                             env={**bench_dask.CLEAN_ENV, "PYTHONPATH": path}).stdout.split()
        lines.append(f"{version:8} unweighted {int(out[0]):,} bytes, weighted {int(out[1]):,} bytes")
    return lines


def part_local(versions: dict[str, str]) -> list[str]:
    """The local engine's reports, this version against the previous one: ece, smece, tcal and report on the sample
    data and on 1e6 rows (the first 1e6 of ``speed.parquet``, written once), largest relative difference."""
    import pyarrow.parquet as pq

    million = os.path.join(DATA, "million.parquet")
    if not os.path.exists(million):
        pq.write_table(pq.read_table(ensure_speed_data()).slice(0, 1_000_000), million, row_group_size=250_000)
    sample = os.path.join(REPO, "sample_data")
    runs = {}
    inputs = {"breast_cancer_nb": f"{sample}/breast_cancer_nb.parquet", "digits_svm": f"{sample}/digits_svm.parquet",
              "eval_shards": f"{sample}/eval_shards", "1e6 rows": million}
    for name, data in inputs.items():
        extra = ["--logits"] if name == "digits_svm" else []
        runs[f"ece {name}"] = ["ece", data, "--n-boot", "200", *extra]
        runs[f"smece {name}"] = ["smece", data, "--n-boot", "20", *extra]
        runs[f"tcal {name}"] = ["tcal", data, "--n-boot", "100", *extra]
    runs["ece digits_svm marginal"] = ["ece", f"{sample}/digits_svm.parquet", "--logits", "--mode", "marginal",
                                       "--n-boot", "200"]
    runs["ece 1e6 rows weights quantile"] = ["ece", million, "--n-boot", "200", "--weight-col", "w",
                                             "--strategy", "quantile"]
    runs["ece eval_shards --group-by model"] = ["ece", f"{sample}/eval_shards", "--n-boot", "200",
                                                "--group-by", "model"]
    lines = ["== The local engine, this version against the previous one (largest relative difference) =="]
    tmp = tempfile.mkdtemp(prefix="bench_same_local_")
    try:
        for name, cmd in runs.items():
            docs = {}
            for version, path in versions.items():
                bench_dask.log(f"  local {name}: {version}")
                docs[version] = bench_dask.run_client(cmd, path)[2]
            lines.append(_line(name, docs))
        docs = {}
        for version, path in versions.items():
            bench_dask.log(f"  local report: {version}")
            out = os.path.join(tmp, f"{version}.json")
            subprocess.run([bench_dask.PY, "-m", "calibcli", "report", f"{sample}/breast_cancer_nb.parquet", "-o",
                            os.path.join(tmp, "p.html"), "--json-output", out], cwd=path, capture_output=True,
                           env={**bench_dask.CLEAN_ENV, "PYTHONPATH": path})
            docs[version] = json.load(open(out)) if os.path.exists(out) else None
        lines.append(_line("report breast_cancer_nb", docs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return lines + part_state(versions, million)


def _line(name: str, docs: dict) -> str:
    if any(d is None for d in docs.values()):
        return f"{name:40} FAILED"
    dev, same = deviations(docs["now"], docs["before"])
    worst = max(dev, key=dev.get) if dev else ""
    return f"{name:40} max {dev.get(worst, 0.0):.1e}" + (" (bit for bit)" if same else f"  ({short(worst)[:60]})")


def commands(base: str, cand: str) -> dict[str, list[str]]:
    return {
        "ece": ["ece", base, "--n-boot", "200"],
        "ece weights quantile": ["ece", base, "--n-boot", "200", "--weight-col", "w", "--strategy", "quantile"],
        "ece --group-by": ["ece", base, "--n-boot", "100", "--group-by", "model"],
        "smece": ["smece", base, "--n-boot", "20"],
        "smece --group-by": ["smece", base, "--n-boot", "10", "--group-by", "model"],
        "tcal": ["tcal", base, "--n-boot", "100", "--max-rows", "100000"],
        "tcal spiegelhalter": ["tcal", base, "--test", "spiegelhalter", "--weight-col", "w"],
        "tcal hosmer-lemeshow": ["tcal", base, "--test", "hosmer-lemeshow"],
        "tcal ecce grid": ["tcal", base, "--test", "ecce", "--max-rows", "100000", "--weight-col", "w"],
        "audit": ["audit", base, "--segment-cols", "country,device"],
        "compare": ["compare", base, cand, "--n-boot", "200"],
    }


def leaves(doc, path="$"):
    """``(path with list indices dropped, value)`` of every number in a report."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in ("engine", "workers", "scheduler"):
                yield from leaves(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for v in doc:
            yield from leaves(v, f"{path}[]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path, doc


def deviations(a, b) -> tuple[dict[str, float], bool]:
    """Per number (path), the largest relative difference between two reports; and whether all are identical."""
    out: dict[str, float] = {}
    la, lb = list(leaves(a)), list(leaves(b))
    if [p for p, _ in la] != [p for p, _ in lb]:
        return {"(shape)": math.inf}, False
    same = True
    for (p, x), (_, y) in zip(la, lb, strict=True):
        if x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)):
            d = 0.0
        else:
            same = False
            d = abs(x - y) / max(abs(x), abs(y))
        out[p] = max(out.get(p, 0.0), d)
    return out, same


def short(path: str) -> str:
    path = re.sub(r"^\$\.(files\[\]|entries\[\]|results\[\])\.", "", path)
    return path.replace("problems[].metrics.", "").replace("[]", "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a checkout of the previous version, run side by side")
    parser.add_argument("--only", nargs="*", help="commands to run (names as printed)")
    parser.add_argument("--unaligned", action="store_true", help="also the runs with the default batch rows")
    parser.add_argument("--top", type=int, default=6, help="numbers shown per command, the largest deviations")
    parser.add_argument("--speed", type=int, default=0, metavar="REPEATS",
                        help="also time ece's CPU on 4e6 rows, REPEATS runs per version (0: not)")
    parser.add_argument("--no-engines", action="store_true", help="skip the engines' comparison")
    parser.add_argument("--update", type=int, default=0, metavar="ROUNDS",
                        help="also time ece's accumulator update alone, ROUNDS rounds per version (0: not)")
    parser.add_argument("--local", action="store_true", help="also the local engine's reports, now against --before")
    args = parser.parse_args()
    base, cand = ensure_data()
    versions = {"before": args.before, "now": REPO} if args.before else {"now": REPO}
    chosen = {k: v for k, v in commands(base, cand).items() if not args.only or k in args.only}
    layouts = {"aligned": (["--batch-rows", str(GROUP_ROWS)], {"CALIBCLI_TASK_ROWS": str(GROUP_ROWS)})}
    if args.unaligned:
        layouts["unaligned"] = (["--batch-rows", str(UNALIGNED_ROWS)], {"CALIBCLI_TASK_ROWS": str(GROUP_ROWS)})
    speed = part_speed(versions, args.speed) if args.speed else []
    if args.update:
        speed = part_update(versions, args.update) + speed
    if args.local and args.before:
        speed = part_local(versions) + speed
    if args.no_engines:
        print("\n".join(speed))
        return 0
    tmp = tempfile.mkdtemp(prefix="bench_same_")
    clusters = {}
    found: dict = {}
    try:
        for version, path in versions.items():
            clusters[version] = bench_dask.ExternalCluster(2, path, tmp)
        for layout, (extra, env) in layouts.items():
            for name, cmd in chosen.items():
                for version, path in versions.items():
                    bench_dask.log(f"  {layout} {name}: {version}")
                    _, _, local, _ = bench_dask.run_client(cmd + extra, path)
                    _, _, remote, _ = bench_dask.run_client(
                        cmd + extra + ["--engine", "dask", "--scheduler", clusters[version].address], path, env)
                    if local is None or remote is None:
                        found[(layout, name, version)] = ({"(failed)": math.inf}, False)
                    else:
                        found[(layout, name, version)] = deviations(remote, local)
    finally:
        for c in clusters.values():
            c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"== Largest relative difference, --engine dask ({FILES * ROWS_PER_FILE // GROUP_ROWS} tasks of "
          f"{GROUP_ROWS} rows, 16-ary tree of depth 3) against the local engine, per reported number ==")
    names = list(versions)
    for layout in layouts:
        for name in chosen:
            per = {v: found.get((layout, name, v), ({}, False)) for v in names}
            paths = sorted({p for d, _ in per.values() for p in d},
                           key=lambda p: -max(per[v][0].get(p, 0.0) for v in names))
            worst = {v: max(per[v][0].values(), default=0.0) for v in names}
            same = {v: per[v][1] for v in names}
            head = "  ".join(f"{v}: max {worst[v]:.1e}{' (bit for bit)' if same[v] else ''}" for v in names)
            print(f"{layout:9} {name:22} {head}")
            now_paths = sorted((p for p in paths if per["now"][0].get(p, 0.0) > 0), key=lambda p: -per["now"][0][p])
            shown = [p for p in paths[: args.top] if max(per[v][0].get(p, 0.0) for v in names) > 0]
            for p in shown + [p for p in now_paths[:3] if p not in shown]:
                print(f"{'':32} {short(p)[:70]:70} " + "  ".join(f"{v} {per[v][0].get(p, 0.0):8.1e}" for v in names))
    print("\n".join(speed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
