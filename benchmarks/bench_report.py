"""Benchmark: where ``calibcli report`` spends its time, and how often it reads each input.

Data: the streaming benchmark's Parquet shards (``benchmarks/out/stream_1e6/``, ``stream_1e7/``; columns
``prob``, ``label``; ``python benchmarks/bench_stream.py --quick`` writes them). Command, as a user runs it:
``calibcli report DIR -o page.html`` with the defaults (``--n-boot 1000``, the 5 default methods).

Each run is a fresh subprocess (``--child``) that imports calibcli from ``--code`` (default: this checkout;
another version with ``git archive COMMIT | tar -x -C DIR``), wraps a few functions with timers and runs the
command in-process. The phases (seconds; they nest, so they do not add up to the total):

- ``passes``: the passes over the rows (reading and every accumulator's ``update``;
  ``calibcli.engines.fragments._stream_into``, the local engine), and ``reads``: how many times the input's files
  were read (``calibcli.io.formats.iter_tables``, per file; the number below is per shard);
- ``tcal_setup`` and ``tcal_resampling``: T-Cal's sorted engine (``calibcli.tcal.procedure.make_engine``) and its
  y-bootstrap resamples (``calibcli.tcal.engine.resample_all``): the report's ``tcal`` test plus the held-out
  test of every method whose predictions are not discrete;
- ``total``: the command, from its start to the page written; ``load``: the machine's 1-minute load
  average after the run.

Measured on this machine (2 cores, shared with other work), ``--code`` the commit before the change
(0b48954) and after it (844e069, with the same ``resampling.py``), runs interleaved, one line per run:

=====  =============  =========  =====  ==========  ============  ===============
rows   code           total (s)  reads  passes (s)  T-Cal setup   T-Cal resampling
=====  =============  =========  =====  ==========  ============  ===============
1e6    before         79.7       7      2.2         4.6           62.4
1e6    after          70.3       3      1.6         4.5           53.3
1e6    after          68.0       3      1.6         4.4           52.3
1e6    before         67.3       7      1.9         4.4           50.3
1e7    before         125.3      7      14.3        7.7           90.4
1e7    after          129.4      3      12.0        8.0           96.9
=====  =============  =========  =====  ==========  ============  ===============

(Earlier the same day, under a heavier load, cProfile'd: before 108 s at 1e6 and 250 s at 1e7, of which
T-Cal's resampling 81 s and 183 s, the passes 2.9 s and 20.6 s.)

The reads went from 7 to 3 per input (ece, smece, tcal, the diagrams and the holdout split's counting share
one pass; then the fit part and the test part of the recalibration comparison, which cannot share it: the fit
rows depend on the number of rows, the test rows are measured through calibrators fitted on the fit rows),
and the time in passes fell by 0.3 to 0.6 s at 1e6 and 2.3 s at 1e7: reading is not what a pass costs (the
next batch is read in a thread while this one is reduced; the accumulators' updates, which the one pass
still does for every family, are most of it). End to end the two versions are within the machine's noise:
T-Cal's y-bootstrap is 72 to 78% of the time (1000 resamples of up to 1e6 rows for ``tcal``, and again for
the held-out test of the uncalibrated model and of each method with continuous outputs, on the test half of
the rows, at most 1e6: 4 tests with the default methods), about 40 ms per resample of 1e6 rows on one core,
an O(R x n) computation that the report must do as the commands do to print the same p-values. Its setup
(sorting, the nested bins of 37 levels) is another 6%.

Run: ``python benchmarks/bench_report.py [--rows 1e6 1e7] [--repeat N] [--code DIR]``.
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"


def child(data: str, n_boot: int) -> dict:
    """Run ``calibcli report`` in this process with timers around the phases; the figures."""
    from collections import Counter

    from typer.testing import CliRunner

    try:  # where tcal_test finds its engine and its resampling driver
        from calibcli.tcal import procedure as tcal
        engine_names = ("make_engine", "resample_all")
    except ImportError:  # a checkout from before the T-Cal package
        from calibcli import tcal  # type: ignore[no-redef]
        engine_names = ("_make_engine", "_resample_all")
    try:
        from calibcli.engines import fragments as passes
    except ImportError:  # a checkout from before the engines' own module
        from calibcli import evaluation as passes
    from calibcli.cli.app import app
    from calibcli.io import formats

    spent: Counter = Counter()
    reads: Counter = Counter()

    def timer(module, name: str, phase: str) -> None:
        original = getattr(module, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - start

        setattr(module, name, timed)

    timer(passes, "_stream_into", "passes")
    timer(tcal, engine_names[0], "tcal_setup")
    timer(tcal, engine_names[1], "tcal_resampling")
    iter_tables = formats.iter_tables

    def counting(location, *args, **kwargs):
        reads[str(location)] += 1
        return iter_tables(location, *args, **kwargs)

    formats.iter_tables = counting
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        r = CliRunner().invoke(app, ["report", data, "-o", os.path.join(tmp, "page.html"), "--n-boot", str(n_boot)])
        total = time.perf_counter() - start
    if r.exit_code != 0:
        raise SystemExit(f"report failed: {r.stderr.strip().splitlines()[-1]}")
    per_file = sorted(set(reads.values()))
    return {"total": total, **{k: spent[k] for k in ("passes", "tcal_setup", "tcal_resampling")},
            "reads": per_file[0] if len(per_file) == 1 else per_file}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", default=["1e6", "1e7"], choices=["1e6", "1e7", "1e8"])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="runs per data set (the table gives each)")
    parser.add_argument("--code", default=str(ROOT), help="the calibcli checkout to measure")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n_boot)))
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([args.code, os.environ.get("PYTHONPATH", "")])}
    print(f"calibcli report DIR --n-boot {args.n_boot} (5 default methods); code: {args.code}")
    print(f"{'rows':>5}  {'run':>3}  {'total s':>8}  {'reads':>5}  {'passes s':>8}  {'tcal setup s':>12}  "
          f"{'tcal resampling s':>17}  load")
    for rows in args.rows:
        data = OUT / f"stream_{rows}"
        if not data.is_dir():
            print(f"{rows:>5}  {data} is missing: python benchmarks/bench_stream.py --quick writes it")
            continue
        for run in range(1, args.repeat + 1):
            proc = subprocess.run([sys.executable, __file__, "--child", str(data), "--n-boot", str(args.n_boot)],
                                  cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{rows:>5}  {run:>3}  failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
                continue
            f = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{rows:>5}  {run:>3}  {f['total']:8.1f}  {str(f['reads']):>5}  {f['passes']:8.1f}  "
                  f"{f['tcal_setup']:12.1f}  {f['tcal_resampling']:17.1f}  {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
