"""``calibcli regression --engine dask``: the local engine's report, bootstrap intervals included, to 1e-12."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _cli import run

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    import logging

    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.CRITICAL,
    ) as c:
        yield c.scheduler_address


def _compare(a, b, where="$"):
    if isinstance(b, dict):
        assert list(a) == list(b), where
        for k in b:
            _compare(a[k], b[k], f"{where}.{k}")
    elif isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _compare(x, y, f"{where}[{i}]")
    elif isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.mark.parametrize("kind", ["gaussian", "quantiles"])
def test_dask_equals_local(tmp_path, cluster, kind):
    rng = np.random.default_rng(2)
    n = 40_000
    mu = rng.normal(size=n)
    s = rng.uniform(0.5, 2.0, n)
    y = mu + rng.normal(size=n) * s * 1.2
    if kind == "gaussian":
        columns = {"mean": mu, "std": s}
    else:
        from scipy import stats

        columns = {f"q{q}": stats.norm.ppf(q, mu, s) for q in (0.1, 0.25, 0.5, 0.75, 0.9)}
    table = pa.table({**columns, "y": y, "g": np.where(rng.random(n) < 0.6, "a", "b")})
    root = tmp_path / "shards"
    root.mkdir()
    for k, part in enumerate(np.array_split(np.arange(n), 4)):
        pq.write_table(table.take(part), root / f"part-{k}.parquet", row_group_size=5000)
    options = ["--n-boot", "40", "--seed", "9", "--group-by", "g", "--json"]
    local = run("regression", root, *options, "--batch-rows", "3000")
    remote = run("regression", root, *options, "--engine", "dask", "--scheduler", cluster)
    assert local.exit_code == 0 and remote.exit_code == 0, (local.stderr, remote.stderr)
    a, b = json.loads(remote.stdout), json.loads(local.stdout)
    assert a["parameters"].pop("engine") == "dask" and b["parameters"].pop("engine") == "local"
    a["parameters"].pop("workers"), b["parameters"].pop("workers")
    a["parameters"].pop("batch_rows"), b["parameters"].pop("batch_rows")
    _compare(a, b)
