"""LLM evaluation dumps (calibcli.llm) and ``calibcli selective``, and issue 35's bar.

Data: a directory of 50 lm-evaluation-harness samples files (``samples_task00_<date>.jsonl`` ...), 20,000 documents
each (1,000,000 in all), in lm-eval 0.4's layout (``doc``, ``target``, ``arguments`` as ``gen_args_i``,
``filtered_resps`` as string pairs, ``doc_hash``), 4 choices with seeded Gamma log-likelihoods; and the same
1,000,000 items as one Parquet file of ``p_0..p_3, label`` (the tool's own table format), for ``ece``. Cached as
:mod:`._common` caches its files (about 0.9 GB of JSON Lines).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from . import _common

FILES, PER_FILE = 50, 20_000


def samples_dir(files: int = FILES, per_file: int = PER_FILE) -> Path:
    """The seeded lm-eval output directory, written on first use (to a temporary name, then renamed)."""
    import numpy as np

    path = _common.cache_dir() / f"lm_eval_{files}x{per_file}_v{_common.DATA_VERSION}"
    if path.exists():
        return path
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    rng = np.random.default_rng(0)
    choices = ["alpha", "beta gamma", "delta", "epsilon zeta"]
    for t in range(files):
        lls = -rng.gamma(2.0, 2.0, size=(per_file, 4))
        targets = rng.integers(0, 4, per_file)
        with open(tmp / f"samples_task{t:02d}_2026-12-02T00-00-00.000000.jsonl", "w") as fh:
            for i in range(per_file):
                doc = {"question": f"q{i}", "subject": f"s{i % 7}", "choices": choices, "answer": int(targets[i])}
                args = {
                    f"gen_args_{k}": {"arg_0": f"Question: q{i}\nAnswer:", "arg_1": " " + c}
                    for k, c in enumerate(choices)
                }
                record = {
                    "doc_id": i,
                    "doc": doc,
                    "target": int(targets[i]),
                    "arguments": args,
                    "resps": [[[repr(float(v)), "False"]] for v in lls[i]],
                    "filtered_resps": [[repr(float(v)), "False"] for v in lls[i]],
                    "filter": "none",
                    "metrics": ["acc"],
                    "doc_hash": hashlib.sha256(f"{t}-{i}".encode()).hexdigest(),
                    "acc": float(int(np.argmax(lls[i])) == targets[i]),
                }
                fh.write(json.dumps(record) + "\n")
    os.replace(tmp, path)
    return path


def table_file(files: int = FILES, per_file: int = PER_FILE) -> Path:
    """The same items as one Parquet file of ``p_0..p_3, label`` (the softmax of the log-likelihoods)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _common.cache_dir() / f"lm_eval_table_{files}x{per_file}_v{_common.DATA_VERSION}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    parts = []
    for _ in range(files):
        lls = -rng.gamma(2.0, 2.0, size=(per_file, 4))
        targets = rng.integers(0, 4, per_file)
        e = np.exp(lls - lls.max(axis=1, keepdims=True))
        parts.append((e / e.sum(axis=1, keepdims=True), targets))
    probs = np.vstack([p for p, _ in parts])
    labels = np.concatenate([t for _, t in parts])
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(pa.table({**{f"p_{k}": probs[:, k] for k in range(4)}, "label": labels}), tmp)
    os.replace(tmp, path)
    return path


class Command:
    """``ece`` and ``selective`` over the 50 task files as fresh processes, their defaults."""

    number = 1
    repeat = (1, 3, 120.0)
    warmup_time = 0
    timeout = 1200

    def setup(self):
        self.samples = str(samples_dir())

    def time_ece_50_tasks(self):
        _common.run("ece", self.samples)

    def time_selective_50_tasks(self):
        _common.run("selective", self.samples)


#: The floor under issue 35's bar: a fresh interpreter that parses the 50 files with pyarrow's JSON reader (the
#: fastest reader measured here: msgspec's typed decoder and polars' read_ndjson took 2.5 s on one core and 3.3-4.0 s
#: on two) and the columns calibcli's columnar reader asks for, and does nothing else: no item, no statistic.
PARSE_FLOOR = """
import json, sys
from pathlib import Path
import pyarrow.json as pjson
from calibcli.llm.lm_eval_columns import _schema
files = sorted(Path(sys.argv[1]).glob("*.jsonl"))
with open(files[0]) as fh:
    schema = _schema(json.loads(fh.readline()), requests=False)
options = pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
rows = sum(pjson.read_json(f, parse_options=options).num_rows for f in files)
assert rows == int(sys.argv[2]), rows
"""


class Bar:
    """Issue 35's bar: the directory of 50 samples files (1e6 items in all) evaluated as 50 inputs in one command,
    against ``ece`` on one Parquet file of the same 1e6 rows, fresh processes with their defaults, in one run; and
    the floor under it, pyarrow's parse of the 50 files alone (:data:`PARSE_FLOOR`)."""

    timeout = 1800

    def setup_cache(self):
        import sys

        samples, table = str(samples_dir()), str(table_file())
        floor = [sys.executable, "-c", PARSE_FLOOR, samples, str(FILES * PER_FILE)]
        runs = {
            "table": _common.run("ece", table),
            "dumps": _common.run("ece", samples),
            "parse": _common.measure(floor),
        }
        return {**_common.record("llm", runs), "load": _common.load()}

    def track_floor_parse_over_table_wall(self, m):
        """Wall clock of pyarrow's parse of the 50 files alone (a fresh interpreter, no item or statistic made) over
        ``ece`` on the Parquet table: the part of the bar's 3x that reading the JSON takes before any of calibcli's
        own work (on two cores, 1.32 s wall and 2.5 s of CPU against the table's 0.58-0.65 s, 2026-12-04)."""
        return m["parse"].wall / m["table"].wall

    track_floor_parse_over_table_wall.unit = "x ece wall (the bar: dumps <= 3)"  # type: ignore[attr-defined]

    def track_floor_parse_over_table_cpu(self, m):
        """The same in CPU time (every thread): pyarrow's reader parses on both cores."""
        return m["parse"].cpu / m["table"].cpu

    track_floor_parse_over_table_cpu.unit = "x ece CPU"  # type: ignore[attr-defined]

    track_bar_dumps_over_table_wall, track_bar_dumps_over_table_cpu = _common.ratio_bars(
        "dumps_over_table",
        "dumps",
        "table",
        what="``ece DIR`` (50 lm-eval files) / ``ece FILE`` (one Parquet file, same rows)",
        unit="x ece",
        bar=3,
    )
