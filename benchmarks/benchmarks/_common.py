"""What every benchmark of the suite shares: the seeded data, cached outside the repository, and whole-process runs
of the installed ``calibcli``.

Data. Written once per machine into ``$CALIBCLI_BENCH_CACHE`` (default ``~/.cache/calibcli-bench``; never in the
repository) and reused by every commit and every environment: the same bytes on both sides of
``asv continuous main HEAD``. Each file's name carries ``DATA_VERSION``, so a change to how a file is made writes a
new one. Files are written to a temporary name and renamed, so an interrupted run leaves no half file.

- ``rows_1e6.parquet``: 1,000,000 rows, ``prob`` ~ Beta(2, 5) (continuous, every score distinct: issue 37's file),
  ``label`` ~ Bernoulli(prob^1.1) (mildly miscalibrated), ``g`` uniform over 1,000 groups, ``g100`` over 100; seed 0.
  ``rows_1e4``, ``rows_1e5`` are the same law with their own draws (seed 0 too, fewer rows).
- ``candidate_1e6.parquet``: a second model on the same rows (``prob^0.9``, the same labels): ``compare``'s other
  side.
- ``stream_1e6/``, ``stream_1e7/`` (and ``stream_1e8/``, 870 MB, only when a benchmark asks for it): Parquet shards
  of 1e6 rows in 2 shards, 1e7 in 10, 1e8 in 20, written block by block (blocks of 500,000 rows, block ``b`` from
  ``default_rng([20251123, b])``, ``prob`` ~ Beta(2, 5), ``label`` ~ Bernoulli(prob^1.3), one row group each), so
  every size starts with the same rows and writing holds one block in memory.

Runs. :func:`run` starts the ``calibcli`` console script of the environment that runs the benchmark (asv's
virtualenv, where the commit's wheel is installed: what a user types), waits with ``os.wait4`` and returns the wall
clock, the CPU time of the process and all its threads, and its peak resident memory.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: raise when a data file is made differently: new files are written beside the old ones
DATA_VERSION = 1
#: the repository's root (the benchmarks' checkout; the sample files of sample_data/ are read from it)
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data" / "breast_cancer_nb.csv"


def cache_dir() -> Path:
    """The folder of the generated data (``$CALIBCLI_BENCH_CACHE``, default ``~/.cache/calibcli-bench``)."""
    path = Path(os.environ.get("CALIBCLI_BENCH_CACHE") or Path.home() / ".cache" / "calibcli-bench")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_atomically(path: Path, table) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def distinct_scores(rng, n: int):
    """``n`` Beta(2, 5) scores, every one distinct (a repeated draw, rare in doubles, is drawn again)."""
    import numpy as np

    prob = rng.beta(2.0, 5.0, n)
    while True:
        _, first = np.unique(prob, return_index=True)
        if first.size == n:
            return prob
        repeated = np.ones(n, dtype=bool)
        repeated[first] = False
        prob[repeated] = rng.beta(2.0, 5.0, int(repeated.sum()))


def rows(n: float = 1e6) -> Path:
    """The seeded file of ``n`` rows (``prob``, ``label``, ``g``, ``g100``), written on first use."""
    import numpy as np
    import pyarrow as pa

    count = int(n)
    path = cache_dir() / f"rows_{n:.0e}_v{DATA_VERSION}.parquet".replace("+0", "")
    if not path.exists():
        rng = np.random.default_rng(0)
        prob = distinct_scores(rng, count)
        label = (rng.random(count) < prob**1.1).astype(np.int64)
        g = rng.integers(0, 1000, count)
        g100 = rng.integers(0, 100, count)
        _write_atomically(path, pa.table({"prob": prob, "label": label, "g": g, "g100": g100}))
    return path


def candidate(n: float = 1e6) -> Path:
    """A second model scored on the rows of :func:`rows` (``prob^0.9``, the same labels), for ``compare``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = cache_dir() / f"candidate_{n:.0e}_v{DATA_VERSION}.parquet".replace("+0", "")
    if not path.exists():
        table = pq.read_table(rows(n), columns=["prob", "label"])
        prob = table["prob"].to_numpy() ** 0.9
        _write_atomically(path, pa.table({"prob": prob, "label": table["label"]}))
    return path


#: shard directories: name -> (rows, shards)
SHARDS = {"1e6": (1_000_000, 2), "1e7": (10_000_000, 10), "1e8": (100_000_000, 20)}
BLOCK_ROWS = 500_000


def shards(name: str) -> Path:
    """The shard directory ``stream_NAME`` (see the module docstring), written on first use."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows, count = SHARDS[name]
    path = cache_dir() / f"stream_{name}_v{DATA_VERSION}"
    if path.is_dir():
        return path
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("prob", pa.float64()), ("label", pa.int64())])
    per_shard = rows // count // BLOCK_ROWS
    for shard in range(count):
        with pq.ParquetWriter(tmp / f"part-{shard:05d}.parquet", schema, compression="snappy") as writer:
            for b in range(shard * per_shard, (shard + 1) * per_shard):
                rng = np.random.default_rng([20251123, b])
                z = rng.beta(2.0, 5.0, size=BLOCK_ROWS)
                y = (rng.random(BLOCK_ROWS) < z**1.3).astype(np.int64)
                writer.write_table(pa.table({"prob": z, "label": y}, schema=schema), row_group_size=BLOCK_ROWS)
    os.replace(tmp, path)
    return path


def calibcli() -> str:
    """The ``calibcli`` console script installed beside the running interpreter (asv's environment)."""
    exe = Path(sys.executable).with_name("calibcli")
    if not exe.exists():
        raise RuntimeError(f"no calibcli console script beside {sys.executable}: install the package there")
    return str(exe)


@dataclasses.dataclass(frozen=True)
class Run:
    """One whole process: wall clock and CPU seconds (user + system, every thread), peak resident MB, stdout."""

    wall: float
    cpu: float
    peak_mb: float
    stdout: str


def run(*args: str, env: dict[str, str] | None = None, json_output: bool = True) -> Run:
    """Run ``calibcli ARGS`` (``--json`` appended unless ``json_output`` is false) as a fresh process from the
    temporary folder and measure it. Exit 0 or 1 (a failed gate) is a run; anything else raises, with the last line
    of its stderr, so a benchmark never times an error."""
    return measure([calibcli(), *args, *(["--json"] if json_output else [])], env=env)


def measure(argv: list[str], *, env: dict[str, str] | None = None) -> Run:
    """Run ``argv`` as a fresh process from the temporary folder and measure it (:func:`run`'s clock: a floor that
    a bar's command cannot go under is measured as the command is)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=tempfile.gettempdir(), env={**os.environ, **(env or {})}, stdout=out, stderr=err, text=True
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if code not in (0, 1):
        last = (stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {last}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout)


def report_args(path: str | Path, out_dir: str | Path, *extra: str) -> list[str]:
    """``report``'s arguments: the page and its JSON document into ``out_dir``."""
    return [
        "report",
        str(path),
        "-o",
        os.path.join(out_dir, "page.html"),
        "--json-output",
        os.path.join(out_dir, "report.json"),
        *extra,
    ]


def record(bar: str, runs: dict) -> dict:
    """Append one bar's runs (wall, CPU, peak MB of each command, the load, the commit asv benchmarks) to
    ``bars.jsonl`` in the cache folder, so the seconds behind a ratio can be read afterwards; returns ``runs``."""
    import json

    line = {
        "bar": bar,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "commit": os.environ.get("ASV_COMMIT", ""),
        "load": load(),
        "runs": {k: dataclasses.asdict(v) | {"stdout": None} for k, v in runs.items()},
    }
    with open(cache_dir() / "bars.jsonl", "a") as fh:
        fh.write(json.dumps(line) + "\n")
    return runs


def load() -> float:
    """The one-minute load average (the machine is shared: stated beside the figures)."""
    return os.getloadavg()[0]


def ratio_bars(name: str, over, under, *, what: str, unit: str, bar: float):
    """A bar on the ratio of runs of a cached record (``setup_cache``'s :class:`Run` values by name; a tuple of
    names: their sum): asv's two tracks ``track_bar_{name}_wall`` and ``track_bar_{name}_cpu``, the wall clock and
    the CPU time (every thread) of ``over`` / ``under``, each with its unit and a docstring that states the bar
    (``what``: what is divided by what). Written once for every module's ratio bars."""
    tops = (over,) if isinstance(over, str) else tuple(over)
    bottoms = (under,) if isinstance(under, str) else tuple(under)

    def track(clock: str):
        def ratio(self, m):
            return sum(getattr(m[k], clock) for k in tops) / sum(getattr(m[k], clock) for k in bottoms)

        ratio.__name__ = ratio.__qualname__ = f"track_bar_{name}_{clock}"
        return ratio

    wall, cpu = track("wall"), track("cpu")
    wall.__doc__ = f"Wall clock of {what}. Bar: at most {bar:g}x."
    cpu.__doc__ = f"The same ratio in CPU time (every thread). Bar (on wall): at most {bar:g}x."
    wall.unit = f"{unit} wall (bar <= {bar:g})"  # type: ignore[attr-defined]
    cpu.unit = f"{unit} CPU (bar on wall <= {bar:g})"  # type: ignore[attr-defined]
    return wall, cpu
