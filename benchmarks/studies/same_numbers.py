"""Same numbers on every engine, batch size and split (SPEC 8 "Engines", the house rule of issue 32): how far
``--engine dask`` and other ``--batch-rows`` move each reported number from the local engine's default run, per
command, against the tolerance (1e-12 relative, 1e-15 absolute near zero).

Data (written once into the benchmarks' cache, ``$CALIBCLI_BENCH_CACHE``, default ``~/.cache/calibcli-bench``):
600,000 rows in 20 Parquet files of 30 row groups of 1,000 rows (Beta(2, 5) predictions, labels Bernoulli(p^1.3),
weights, a ``model`` column of 3 groups, ``country`` and ``device`` segment columns; file k from seed
``[--seed, 25, k]``), and a candidate model on the same labels. Beyond the 2^17 rows kept, so ``ece``'s bootstrap
draws from per-bin moments and quantile edges take a second pass. The runs of each command:

- ``local --batch-rows 1000``: every row group a batch, against the local default (other batches, other sums);
- ``local --batch-rows 2500``: batches across row groups;
- ``dask``: an external ``dask scheduler`` and ``dask worker --nworkers 2`` on 127.0.0.1, ``--batch-rows 1000`` and
  ``CALIBCLI_TASK_ROWS=1000``: 600 tasks, merged in a tree of 16-ary merges, in whatever order they finish
  (``--reps`` runs: the order differs between them).

Printed per command and run: the largest relative difference over every reported number (list indices dropped,
timings and paths left out) and the number where it is, and whether it is within the rule. The numbers are
deterministic given the data and the order, so there is no Monte Carlo error: a run outside the rule is a defect.

Run: ``python benchmarks/studies/same_numbers.py [--reps 1] [--seed 20261128] [--only ece compare] [--no-dask]``
(about 5 minutes; the bench extra's ``distributed`` comes with calibcli's ``dask`` extra).
Ported from ``bench_same_numbers.py`` and ``bench_compare_dask.py``'s agreement half (its ``--before DIR`` is gone:
the suite compares versions, ``asv continuous main HEAD``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FILES, ROWS_PER_FILE, GROUP_ROWS = 20, 30_000, 1000
RTOL, ATOL = 1e-12, 1e-15
_SKIP = {
    "engine",
    "workers",
    "scheduler",
    "elapsed",
    "seconds",
    "path",
    "file",
    "files",
    "source",
    "sources",
    "calibcli_version",
    "version",
    "batch_rows",
}


def cache_dir() -> Path:
    path = Path(os.environ.get("CALIBCLI_BENCH_CACHE") or Path.home() / ".cache" / "calibcli-bench")
    path.mkdir(parents=True, exist_ok=True)
    return path


def ensure_data(seed: int) -> tuple[str, str]:
    """``base/`` and ``cand/``: the model and a candidate on the same rows (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = cache_dir() / f"same_numbers_{seed}"
    base, cand = root / "base", root / "cand"
    if all(d.is_dir() and len(os.listdir(d)) == FILES for d in (base, cand)):
        return str(base), str(cand)
    tmp = root.with_name(f".{root.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    for d in ("base", "cand"):
        (tmp / d).mkdir(parents=True)
    for k in range(FILES):
        rng = np.random.default_rng([seed, 25, k])
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
        for d, prob in (("base", z), ("cand", cand_z)):
            pq.write_table(
                pa.table({"prob": prob, **common}), tmp / d / f"part-{k:03d}.parquet", row_group_size=GROUP_ROWS
            )
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    return str(base), str(cand)


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


def run(args: list[str], env: dict | None = None) -> dict | None:
    """The JSON report of ``python -m calibcli ARGS --json`` (None, said on stderr, when it failed)."""
    proc = subprocess.run(
        [sys.executable, "-m", "calibcli", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env={**os.environ, **(env or {})},
    )
    if proc.returncode not in (0, 1):
        print(f"  FAILED ({proc.returncode}): {(proc.stderr.strip().splitlines() or [''])[-1]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout)


def leaves(doc, path="$"):
    """``(path with list indices dropped, value)`` of every number in a report."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in _SKIP:
                yield from leaves(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for v in doc:
            yield from leaves(v, f"{path}[]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path, doc


def worst(a, b) -> tuple[float, str, bool]:
    """The largest relative difference of two reports, where, and whether every number is within the rule."""
    la, lb = list(leaves(a)), list(leaves(b))
    if [p for p, _ in la] != [p for p, _ in lb]:
        return math.inf, "(the reports' shapes differ)", False
    top, where, ok = 0.0, "", True
    for (p, x), (_, y) in zip(la, lb, strict=True):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        ok = ok and math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL)
        d = abs(x - y) / max(abs(x), abs(y))
        if d > top:
            top, where = d, p
    return top, where, ok


class ExternalCluster:
    """``dask scheduler`` and ``dask worker --nworkers N --nthreads 1`` on 127.0.0.1, stopped by :meth:`close`."""

    def __init__(self, n_workers: int, tmp: str):
        dask_cli = os.path.join(os.path.dirname(sys.executable), "dask")
        file = os.path.join(tmp, "scheduler.json")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.procs = [
            subprocess.Popen(
                [
                    dask_cli,
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--dashboard-address",
                    "127.0.0.1:0",
                    "--scheduler-file",
                    file,
                ],
                **quiet,
            )
        ]
        deadline = time.monotonic() + 60
        while not (os.path.exists(file) and os.path.getsize(file)) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(file) as f:
            self.address = json.load(f)["address"]
        self.procs.append(
            subprocess.Popen(
                [
                    dask_cli,
                    "worker",
                    self.address,
                    "--nworkers",
                    str(n_workers),
                    "--nthreads",
                    "1",
                    "--host",
                    "127.0.0.1",
                    "--dashboard-address",
                    "127.0.0.1:0",
                ],
                **quiet,
            )
        )
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n_workers, timeout=120)

    def close(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1, help="Dask runs per command (tasks finish in other orders)")
    parser.add_argument("--seed", type=int, default=20261128, help="the data's seed")
    parser.add_argument("--only", nargs="*", help="commands to run (names as printed)")
    parser.add_argument("--no-dask", action="store_true", help="only the local engine's batch sizes")
    args = parser.parse_args()
    base, cand = ensure_data(args.seed)
    chosen = {k: v for k, v in commands(base, cand).items() if not args.only or k in args.only}
    print(
        f"Largest relative difference against the local engine's default run, per command; the rule: "
        f"{RTOL:g} relative, {ATOL:g} absolute (deterministic: no Monte Carlo error); data seed {args.seed}"
    )
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        cluster = None if args.no_dask else ExternalCluster(2, tmp)
        try:
            for name, cmd in chosen.items():
                reference = run(cmd)
                runs = {
                    "local --batch-rows 1000": (["--batch-rows", str(GROUP_ROWS)], None),
                    "local --batch-rows 2500": (["--batch-rows", "2500"], None),
                }
                if cluster is not None:
                    for r in range(args.reps):
                        runs[f"dask #{r + 1}"] = (
                            ["--batch-rows", str(GROUP_ROWS), "--engine", "dask", "--scheduler", cluster.address],
                            {"CALIBCLI_TASK_ROWS": str(GROUP_ROWS)},
                        )
                for label, (extra, env) in runs.items():
                    other = run(cmd + extra, env)
                    if reference is None or other is None:
                        failures += 1
                        print(f"{name:22} {label:24} failed")
                        continue
                    top, where, ok = worst(reference, other)
                    failures += not ok
                    print(
                        f"{name:22} {label:24} {top:8.1e}  {'within' if ok else 'OUTSIDE'} the rule  {where[:60]}",
                        flush=True,
                    )
        finally:
            if cluster is not None:
                cluster.close()
    print(f"{failures} run(s) outside the rule or failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
