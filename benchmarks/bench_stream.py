"""Benchmark of the streaming CLI (SPEC 8): flat memory, throughput against a bare pyarrow pass, bootstrap cost.

Data (generated once under ``benchmarks/out/``, git-ignored, and reused when present): Parquet shards
with columns ``prob`` (float64, Beta(2, 5)) and ``label`` (int64, Bernoulli(prob^1.3)), written block by
block (blocks of 500,000 rows, block ``b`` drawn from ``numpy.random.default_rng([SEED, b])``, one row
group each), so generation holds one block in memory and every data set starts with the same rows:

- ``stream_1e6/``: 1,000,000 rows in 2 shards; ``stream_1e6.parquet``: the same rows in one file;
- ``stream_1e7/``: 10,000,000 rows in 10 shards;
- ``stream_1e8/``: 100,000,000 rows in 20 shards (skipped with ``--quick``);
- ``stream_1e8x100/``: the same 100,000,000 rows in 100 shards of 1e6 rows (context, skipped with ``--quick``).

Measurements (every command is a fresh subprocess; wall time from start to exit, peak resident set
``ru_maxrss`` from ``os.wait4`` of that process alone):

1. Memory: ``calibcli ece DIR --n-boot 1000 --json``, ``calibcli smece DIR --json`` and
   ``calibcli diagram DIR -o PNG`` at 1e6, 1e7 and 1e8 rows (``--quick``: 1e6 and 1e7); the ratio of the
   peaks at 1e8 and 1e6 (bar: <= 1.25), and for context that of 1e8 and 1e7 (shards of 1e6 vs 5e6 rows;
   both read in batches of 2^20 rows, while the 1e6 data set's 500,000-row shards give smaller batches).
   A command that does not accept a directory yet (probed on a tiny two-shard directory first) is
   skipped, and the report says so. A command whose resident set passes ``--rss-limit-mb`` (default
   8000: the machine may have no swap) is stopped and reported as such.
2. Throughput: ``calibcli ece DIR --n-boot 0 --json`` against a bare pass, ``python -c`` that reads the
   same two columns batch by batch with ``pyarrow.dataset`` (batches of 2^20 rows) and bins them with three
   ``np.bincount`` per batch (counts, label sums, prediction sums), at 1e7 (10 shards) and 1e8 (20 shards);
   both fresh subprocesses, interleaved, after one untimed warm-up each (the files are then in the page
   cache); medians and their ratio (bar: <= 1.5). The bare pass's l1-ECE is compared with the CLI's. For
   context, the bare pass with ``use_threads=False`` (pyarrow.dataset otherwise decodes ahead on every core).
3. Bootstrap: ``calibcli ece FILE --n-boot 1000 --json`` on the 1e6-row single file (bar: <= 3 s; with
   the same command at ``--n-boot 0`` for context), and at 1e8 rows the ratio of ``--n-boot 1000`` to
   ``--n-boot 0`` wall time, both run interleaved (bar: <= 3x). Consistency: the 1e6 file and the 1e6
   two-shard directory hold the same rows, and so do the 20- and 100-shard 1e8 directories, so their
   reports must agree, bootstrap intervals included (SPEC 8: results do not depend on how the data were split).

A command that fails prints its last stderr line and the benchmark goes on. Exit status 0 whatever the
bars; the table says which were met.

Run: ``python benchmarks/bench_stream.py`` (everything; the first run also writes about 1 GB of shards),
``python benchmarks/bench_stream.py --quick`` (1e6 and 1e7 only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PY = sys.executable
CALIBCLI = shutil.which("calibcli", path=os.path.dirname(PY)) or shutil.which("calibcli") or "calibcli"
SEED = 20251123
BLOCK_ROWS = 500_000
DATA_VERSION = 1
N_BINS = 15
RSS_LIMIT_MB = 8000  # --rss-limit-mb

SIZES = {  # name: (rows, shards)
    "1e6": (1_000_000, 2),
    "1e7": (10_000_000, 10),
    "1e8": (100_000_000, 20),
    "1e8x100": (100_000_000, 100),  # the same rows as 1e8 in shards of 1e6 rows: context for memory and consistency
}

BARE_PASS = r"""
import json, sys
import numpy as np
import pyarrow.dataset as ds
B = 15
data = ds.dataset(sys.argv[1], format="parquet")
threads = sys.argv[2] == "threads"
count = np.zeros(B, dtype=np.int64); sum_y = np.zeros(B); sum_z = np.zeros(B)
for batch in data.to_batches(columns=["prob", "label"], batch_size=1 << 20, use_threads=threads):
    z = batch.column(0).to_numpy()
    y = batch.column(1).to_numpy()
    b = np.minimum((z * B).astype(np.intp), B - 1)
    count += np.bincount(b, minlength=B)
    sum_y += np.bincount(b, weights=y, minlength=B)
    sum_z += np.bincount(b, weights=z, minlength=B)
n = int(count.sum())
print(json.dumps({"n": n, "ece_l1_plugin": float(np.abs(sum_y - sum_z).sum() / n)}))
"""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Data


def block(b: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([SEED, b])
    z = rng.beta(2.0, 5.0, size=BLOCK_ROWS)
    y = (rng.random(BLOCK_ROWS) < z**1.3).astype(np.int64)
    return z, y


def _write_blocks(path: str, blocks: range) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("prob", pa.float64()), ("label", pa.int64())])
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for b in blocks:
            z, y = block(b)
            writer.write_table(pa.table({"prob": z, "label": y}, schema=schema), row_group_size=BLOCK_ROWS)


def _manifest(rows: int, shards: int) -> dict:
    return {"version": DATA_VERSION, "seed": SEED, "block_rows": BLOCK_ROWS, "rows": rows, "shards": shards,
            "columns": {"prob": "float64, Beta(2, 5)", "label": "int64, Bernoulli(prob^1.3)"}}


def ensure_dir(out: str, name: str) -> str:
    """The shard directory of one size, written block by block unless a matching one is there."""
    rows, shards = SIZES[name]
    path = os.path.join(out, f"stream_{name}")
    manifest_path = os.path.join(out, f"stream_{name}.manifest.json")  # outside the directory: not a shard
    want = _manifest(rows, shards)
    if os.path.isdir(path) and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            if json.load(f) == want:
                log(f"reusing {path}")
                return path
    log(f"writing {path}: {rows:,} rows in {shards} shards")
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(tmp)
    per_shard = rows // shards // BLOCK_ROWS
    t0 = time.perf_counter()
    for s in range(shards):
        _write_blocks(os.path.join(tmp, f"part-{s:05d}.parquet"), range(s * per_shard, (s + 1) * per_shard))
        log(f"  shard {s + 1}/{shards} ({time.perf_counter() - t0:.0f} s)")
    os.rename(tmp, path)
    with open(manifest_path, "w") as f:
        json.dump(want, f, indent=1)
    return path


def ensure_file(out: str) -> str:
    """The 1e6 rows of ``stream_1e6/`` in one file."""
    rows = SIZES["1e6"][0]
    path = os.path.join(out, "stream_1e6.parquet")
    manifest_path = path + ".manifest.json"
    want = _manifest(rows, 1)
    if os.path.exists(path) and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            if json.load(f) == want:
                log(f"reusing {path}")
                return path
    log(f"writing {path}")
    _write_blocks(path + ".tmp", range(rows // BLOCK_ROWS))
    os.replace(path + ".tmp", path)
    with open(manifest_path, "w") as f:
        json.dump(want, f, indent=1)
    return path


def dir_size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


# ---------------------------------------------------------------------------------------------
# Running commands


@dataclass
class Run:
    cmd: list[str]
    rc: int
    wall: float
    peak_mb: float
    stdout: str
    stderr: str
    timed_out: bool = False
    over_memory: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.over_memory

    def error_line(self) -> str:
        if self.over_memory:
            return f"stopped by the benchmark: resident set above {RSS_LIMIT_MB:,} MB after {self.wall:.0f} s (--rss-limit-mb)"
        if self.timed_out:
            return f"timed out after {self.wall:.0f} s"
        lines = [ln for ln in self.stderr.splitlines() if ln.strip()]
        return f"exit {self.rc}: " + (lines[-1].strip() if lines else "(no stderr)")

    def json(self):
        try:
            return json.loads(self.stdout)
        except (ValueError, TypeError):
            return None


def run(cmd: list[str], timeout: float) -> Run:
    """One fresh subprocess: wall time, and peak RSS of that process alone (``os.wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO)
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        over = threading.Event()
        done = threading.Event()

        def watch():
            # the machine has no swap and is shared: a command that does not stream is stopped before it
            # takes the machine down
            status_path = f"/proc/{proc.pid}/status"
            while not done.wait(0.1):
                try:
                    with open(status_path) as f:
                        rss_kb = next((int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")), 0)
                except (OSError, ValueError):
                    return
                if rss_kb > RSS_LIMIT_MB * 1024:
                    over.set()
                    proc.kill()
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            done.set()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(cmd, proc.returncode, wall, usage.ru_maxrss / 1024.0, out.read().decode(errors="replace"),
                   err.read().decode(errors="replace"), timed_out.is_set(), over.is_set())


def show(cmd: list[str]) -> str:
    return " ".join("calibcli" if c == CALIBCLI else ("python" if c == PY else os.path.relpath(c, REPO) if os.path.isabs(c) else c)
                    for c in cmd)


def commands(kind: str, path: str, out: str, tag: str) -> list[str]:
    if kind == "ece":
        return [CALIBCLI, "ece", path, "--n-boot", "1000", "--json"]
    if kind == "smece":
        return [CALIBCLI, "smece", path, "--json"]
    if kind == "diagram":
        return [CALIBCLI, "diagram", path, "-o", os.path.join(out, f"diagram_{tag}.png")]
    raise ValueError(kind)


def probe_directory_support(out: str) -> dict[str, str | None]:
    """Which commands accept a directory of shards: None if it works, else the reason (error line)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    probe = os.path.join(out, "probe_dir")
    if not os.path.isdir(probe):
        os.makedirs(probe + ".tmp", exist_ok=True)
        rng = np.random.default_rng([SEED, 10**9])
        for s in range(2):
            z = rng.beta(2.0, 5.0, size=2000)
            y = (rng.random(2000) < z**1.3).astype(np.int64)
            pq.write_table(pa.table({"prob": z, "label": y}), os.path.join(probe + ".tmp", f"part-{s:05d}.parquet"))
        os.rename(probe + ".tmp", probe)
    status = {}
    for kind in ("ece", "smece", "diagram"):
        r = run(commands(kind, probe, out, "probe"), timeout=300)
        status[kind] = None if r.ok else r.error_line()
    return status


# ---------------------------------------------------------------------------------------------
# Parts


def machine_info() -> list[str]:
    import pyarrow

    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    except OSError:
        pass
    try:
        cal = subprocess.run([PY, "-c", "import calibcli; print(calibcli.__version__)"], capture_output=True, text=True).stdout.strip()
    except OSError:
        cal = "?"
    git = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    n_dirty = len([ln for ln in dirty.splitlines() if ln.strip()])
    return [
        f"machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {mem} RAM, {platform.platform()}, "
        f"load average {os.getloadavg()[0]:.2f} at start",
        f"versions: calibcli {cal}, Python {platform.python_version()}, numpy {np.__version__}, pyarrow {pyarrow.__version__}",
        f"repository: HEAD {git[:100]}" + (f" (+ {n_dirty} modified tracked files in the work tree)" if n_dirty else ""),
    ]


def part_memory(data: dict, out: str, sizes: tuple[str, ...], support: dict, timeout: float, results: dict,
                context: tuple[str, ...] = ()) -> list[str]:
    """The bar compares the first and last sizes; a middle size (1e7, same batch size as 1e8) and the ``context``
    data sets (the 1e8 rows in 100 shards) are context. A command stopped at the largest size is not run on them."""
    small, large = sizes[0], sizes[-1]
    lines = [f"== 1. Peak memory and wall time at {', '.join(f'{SIZES[s][0]:,}' for s in sizes)} rows (one fresh process each) ==",
             f"{'command':<44}{'rows':>13}{'shards':>7}{'wall':>10}{'peak RSS':>11}  note"]
    summary = []
    for kind in ("ece", "smece", "diagram"):
        label = show(commands(kind, "DIR", out, "x")).replace("benchmarks/out/diagram_x.png", "PNG")
        if support.get(kind):
            lines.append(f"{label:<44}{'':>13}{'':>7}{'':>10}{'':>11}  SKIPPED: does not accept "
                         f"a directory yet ({support[kind]})")
            summary.append((kind, None, "skipped"))
            continue
        peaks = {}
        for size in sizes + context:
            if size in context and not (results.get((kind, large)) and results[(kind, large)].ok):
                lines.append(f"{label:<44}{SIZES[size][0]:>13,}{SIZES[size][1]:>7}{'':>10}{'':>11}  not run (failed at {large})")
                continue
            cmd = commands(kind, data[size], out, size)
            log(f"running {show(cmd)}")
            r = run(cmd, timeout)
            results[(kind, size)] = r
            note = ""
            if r.ok:
                peaks[size] = r.peak_mb
                doc = r.json()
                if kind in ("ece", "smece") and doc is not None:
                    note = _ece_note(doc, "ece_l1_plugin" if kind == "ece" else "smece")
                elif kind == "diagram":
                    note = (r.stdout.strip().splitlines() or [""])[0][:90]
            else:
                note = "FAILED: " + r.error_line()
            lines.append(f"{label:<44}{SIZES[size][0]:>13,}{SIZES[size][1]:>7}{r.wall:>9.2f}s{r.peak_mb:>8.0f} MB  {note}")
        context_note = ""
        if len(sizes) > 2 and sizes[-2] in peaks and large in peaks:
            context_note = f"; context: peak({large}) / peak({sizes[-2]}) = {peaks[large] / peaks[sizes[-2]]:.2f}"
        for c in context:
            if c in peaks:
                context_note += f", peak({c}) / peak({small}) = {peaks[c] / peaks[small]:.2f}"
        if small in peaks and large in peaks:
            ratio = peaks[large] / peaks[small]
            summary.append((kind, ratio, ("met" if ratio <= 1.25 else "MISSED") + ")" + context_note))
        else:
            summary.append((kind, None, "not measured (a run failed or was stopped)" + context_note))
    for kind, ratio, verdict in summary:
        if ratio is None:
            lines.append(f"peak({large}) / peak({small}) for {kind}: {verdict}")
        else:
            lines.append(f"peak({large}) / peak({small}) for {kind}: {ratio:.2f}   (bar <= 1.25: {verdict}")
    return lines


def _find_metric(doc, name: str = "ece_l1_plugin"):
    """The first entry ``name`` found in a report (the layout of the JSON is the command's business)."""
    if isinstance(doc, dict):
        if name in doc and isinstance(doc[name], dict) and "estimate" in doc[name]:
            return doc[name]
        for v in doc.values():
            found = _find_metric(v, name)
            if found is not None:
                return found
    elif isinstance(doc, list):
        for v in doc:
            found = _find_metric(v, name)
            if found is not None:
                return found
    return None


def _find_key(doc, key: str):
    if isinstance(doc, dict):
        if key in doc and not isinstance(doc[key], (dict, list)):
            return doc[key]
        for v in doc.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    elif isinstance(doc, list):
        for v in doc:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def _ece_note(doc, name: str = "ece_l1_plugin") -> str:
    m = _find_metric(doc, name)
    if m is None:
        return f"(no {name} in the report)"
    n = _find_key(doc, "rows_read")
    n = _find_key(doc, "n") if n is None else n
    s = f"n={n:,} " if isinstance(n, int) else ""
    s += f"{name} {m['estimate']:.6f}"
    if m.get("ci_low") is not None:
        s += f" [{m['ci_low']:.6f}, {m['ci_high']:.6f}]"
    return s


def part_throughput(data: dict, sizes: list[str], reps: dict, timeout: float, results: dict) -> list[str]:
    lines = [f"== 2. Throughput: calibcli ece DIR --n-boot 0 --json vs a bare pyarrow.dataset pass (3 x np.bincount per batch) ==",
             f"{'rows':>13}{'shards':>7}  {'side':<10}{'median':>10}{'min':>10}{'max':>10}{'Mrows/s':>10}{'peak RSS':>11}  ece_l1_plugin"]
    verdicts = []
    for size in sizes:
        path = data[size]
        sides = {
            "calibcli": [CALIBCLI, "ece", path, "--n-boot", "0", "--json"],
            "bare": [PY, "-c", BARE_PASS, path, "threads"],
            "bare-1thr": [PY, "-c", BARE_PASS, path, "single"],
        }
        log(f"throughput at {size}: warm-up")
        warm = {side: run(cmd, timeout) for side, cmd in sides.items()}
        for side, r in warm.items():
            if not r.ok:
                lines.append(f"{SIZES[size][0]:>13,}{SIZES[size][1]:>7}  {side} FAILED: {r.error_line()}")
        times = {side: [] for side in sides}
        last = dict(warm)
        peak = {side: r.peak_mb for side, r in warm.items()}
        for k in range(reps[size]):
            for side, cmd in sides.items():
                if not warm[side].ok:
                    continue
                log(f"throughput at {size}: {side} {k + 1}/{reps[size]}")
                r = run(cmd, timeout)
                if r.ok:
                    times[side].append(r.wall)
                    last[side] = r
                    peak[side] = max(peak[side], r.peak_mb)
        results[("ece0", size)] = times["calibcli"]
        for side in sides:
            t = times[side]
            if not t:
                continue
            doc = last[side].json()
            m = _find_metric(doc) if side == "calibcli" else doc
            est = m.get("estimate") if side == "calibcli" and m else (m or {}).get("ece_l1_plugin")
            lines.append(f"{SIZES[size][0]:>13,}{SIZES[size][1]:>7}  {side:<10}{statistics.median(t):>9.2f}s{min(t):>9.2f}s"
                         f"{max(t):>9.2f}s{SIZES[size][0] / statistics.median(t) / 1e6:>10.1f}{peak[side]:>8.0f} MB  "
                         + (f"{est:.12f}" if isinstance(est, float) else "?"))
        if times["calibcli"] and times["bare"]:
            ratio = statistics.median(times["calibcli"]) / statistics.median(times["bare"])
            extra = f"; ratio of the minima {min(times['calibcli']) / min(times['bare']):.2f}x"
            if times["bare-1thr"]:
                extra += (f"; context: calibcli / bare-1thr (use_threads=False) = "
                         f"{statistics.median(times['calibcli']) / statistics.median(times['bare-1thr']):.2f}x")
            verdicts.append(f"ratio calibcli / bare at {size} ({SIZES[size][1]} shards): {ratio:.2f}x   "
                            f"(bar <= 1.5: {'met' if ratio <= 1.5 else 'MISSED'}){extra}")
        else:
            verdicts.append(f"ratio calibcli / bare at {size}: not measured")
    return lines + verdicts


def part_bootstrap(data: dict, file_1e6: str, large: str, timeout: float, results: dict, reps: int, reps_large: int) -> list[str]:
    lines = ["== 3. Bootstrap cost ==",
             f"{'command':<72}{'rows':>13}{'median':>10}{'min':>10}  note"]
    verdicts = []
    t = {}
    docs = {}
    for nb in ("0", "1000"):
        cmd = [CALIBCLI, "ece", file_1e6, "--n-boot", nb, "--json"]
        runs = []
        for k in range(reps):
            log(f"bootstrap: {show(cmd)} {k + 1}/{reps}")
            r = run(cmd, timeout)
            if not r.ok:
                lines.append(f"{show(cmd):<72}{SIZES['1e6'][0]:>13,}  FAILED: {r.error_line()}")
                break
            runs.append(r)
        if runs:
            t[nb] = statistics.median(r.wall for r in runs)
            docs[nb] = runs[-1].json()
            lines.append(f"{show(cmd):<72}{SIZES['1e6'][0]:>13,}{t[nb]:>9.2f}s{min(r.wall for r in runs):>9.2f}s  "
                         + (_ece_note(docs[nb]) if docs[nb] is not None else ""))
    if "1000" in t:
        verdicts.append(f"ece FILE --n-boot 1000 at 1e6 rows: {t['1000']:.2f} s wall   (bar <= 3 s: "
                        f"{'met' if t['1000'] <= 3.0 else 'MISSED'})")
    else:
        verdicts.append("ece FILE --n-boot 1000 at 1e6 rows: not measured")
    # file vs two-shard directory: the same rows, the same report
    r_dir = results.get(("ece", "1e6"))
    if "1000" in docs and r_dir is not None and r_dir.ok:
        a, b = _find_metric(docs["1000"]), _find_metric(r_dir.json())
        if a and b:
            diffs = [abs((a[k] or 0.0) - (b[k] or 0.0)) for k in ("estimate", "ci_low", "ci_high")]
            verdicts.append(f"1e6 rows as one file vs as 2 shards, ece_l1_plugin estimate / ci_low / ci_high: max |difference| "
                            f"{max(diffs):.3g}" + ("  (identical)" if max(diffs) == 0 else ("  (equal within 1e-12)" if max(diffs) < 1e-12 else "  DIFFERENT")))
    # the large data set: --n-boot 1000 vs --n-boot 0, interleaved, after the warm-up of part 2
    path = data[large]
    t_large = {"0": [], "1000": []}
    for k in range(reps_large):
        for nb in ("0", "1000"):
            cmd = [CALIBCLI, "ece", path, "--n-boot", nb, "--json"]
            log(f"bootstrap: {show(cmd)} {k + 1}/{reps_large}")
            r = run(cmd, timeout)
            if r.ok:
                t_large[nb].append(r.wall)
            elif k == 0:
                lines.append(f"{show(cmd):<72}{SIZES[large][0]:>13,}  FAILED: {r.error_line()}")
    for nb in ("0", "1000"):
        if t_large[nb]:
            cmd = [CALIBCLI, "ece", path, "--n-boot", nb, "--json"]
            lines.append(f"{show(cmd):<72}{SIZES[large][0]:>13,}{statistics.median(t_large[nb]):>9.2f}s"
                         f"{min(t_large[nb]):>9.2f}s  median of {len(t_large[nb])}, interleaved")
    if t_large["0"] and t_large["1000"]:
        ratio = statistics.median(t_large["1000"]) / statistics.median(t_large["0"])
        verdicts.append(f"ratio --n-boot 1000 / --n-boot 0 at {large} rows: {ratio:.2f}x   (bar <= 3x: {'met' if ratio <= 3 else 'MISSED'}); "
                        f"ratio of the minima {min(t_large['1000']) / min(t_large['0']):.2f}x")
    else:
        verdicts.append(f"ratio --n-boot 1000 / --n-boot 0 at {large} rows: not measured (a run failed)")
    # the same 1e8 rows in 20 and in 100 shards: the same report (bootstrap keyed by global row index)
    a, b = results.get(("ece", "1e8")), results.get(("ece", "1e8x100"))
    if a is not None and b is not None and a.ok and b.ok:
        ma, mb = _find_metric(a.json()), _find_metric(b.json())
        if ma and mb:
            diffs = [abs((ma[k] or 0.0) - (mb[k] or 0.0)) for k in ("estimate", "ci_low", "ci_high")]
            verdicts.append(f"1e8 rows as 20 vs as 100 shards (--n-boot 1000), ece_l1_plugin estimate / ci_low / ci_high: max |difference| "
                            f"{max(diffs):.3g}" + ("  (identical)" if max(diffs) == 0 else ("  (equal within 1e-12)" if max(diffs) < 1e-12 else "  DIFFERENT")))
    return lines + verdicts


def main() -> int:
    global RSS_LIMIT_MB
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only the 1e6 and 1e7 data sets (about two minutes)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="folder of the generated data (default benchmarks/out)")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions per side at 1e6/1e7 (default 3)")
    ap.add_argument("--reps-large", type=int, default=2, help="timed repetitions per side at 1e8 (default 2)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds before a command is killed (default 3600)")
    ap.add_argument("--parts", default="1,2,3", help="which parts to run (default 1,2,3)")
    ap.add_argument("--rss-limit-mb", type=int, default=RSS_LIMIT_MB,
                    help=f"stop a command whose resident set exceeds this (default {RSS_LIMIT_MB}; the machine may have no swap)")
    args = ap.parse_args()
    RSS_LIMIT_MB = args.rss_limit_mb
    parts = set(args.parts.split(","))
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    t_start = time.perf_counter()

    header = ["bench_stream.py" + (" --quick" if args.quick else "")] + machine_info()
    sizes_all = ["1e6", "1e7"] + ([] if args.quick else ["1e8"])
    data = {name: ensure_dir(out, name) for name in sizes_all + ([] if args.quick else ["1e8x100"])}
    file_1e6 = ensure_file(out)
    header.append("data: " + "; ".join(f"{os.path.relpath(data[s], REPO)} {SIZES[s][0]:,} rows / {SIZES[s][1]} shards / "
                                        f"{dir_size(data[s]) / 1e6:.0f} MB" for s in data)
                  + f"; {os.path.relpath(file_1e6, REPO)} (the 1e6 rows in one file)")
    header.append(f"columns prob float64 ~ Beta(2, 5), label int64 ~ Bernoulli(prob^1.3); seed {SEED}; calibcli = {CALIBCLI}")
    print("\n".join(header), flush=True)

    support = probe_directory_support(out)
    print("directory input (probe on a 2-shard, 4,000-row directory): "
          + "; ".join(f"{k}: {'yes' if v is None else 'NO (' + v + ')'}" for k, v in support.items()), flush=True)

    results: dict = {}
    large = "1e7" if args.quick else "1e8"
    if "1" in parts:
        print()
        print("\n".join(part_memory(data, out, tuple(sizes_all), support, args.timeout, results,
                                     context=() if args.quick else ("1e8x100",))), flush=True)
    if "2" in parts:
        print()
        reps = {"1e7": args.reps, "1e8": args.reps_large}
        tp_sizes = ["1e7"] + ([] if args.quick else ["1e8"])
        print("\n".join(part_throughput(data, tp_sizes, reps, args.timeout, results)), flush=True)
    if "3" in parts:
        print()
        print("\n".join(part_bootstrap(data, file_1e6, large, args.timeout, results, args.reps, args.reps_large)), flush=True)
    print()
    print(f"total wall time {time.perf_counter() - t_start:.0f} s; load average {os.getloadavg()[0]:.2f} at the end "
          "(other processes on the machine slow both sides of every comparison)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
