"""`calibcli ece` on datasets: directories of shards, hive partitions, quoted globs, stdin, --pool,
--group-by and --batch-rows, through the CLI, on real files."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _cli import run, run_json

N = 3000


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """A directory of 4 Parquet shards (several row groups each), a hive-partitioned copy, and the whole table."""
    root = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(7)
    z = rng.beta(2, 3, N)
    y = (rng.random(N) < z**1.3).astype(np.int64)
    model = np.where(rng.random(N) < 0.4, "a", "b")
    whole = pa.table({"prob": z, "label": y, "model": model})
    pq.write_table(whole, root / "whole.parquet")
    (root / "shards").mkdir()
    for k, part in enumerate(np.array_split(np.arange(N), 4)):
        pq.write_table(whole.take(part), root / "shards" / f"part-{k:02d}.parquet", row_group_size=300)
    for name in ("a", "b"):
        (root / "hive" / f"model={name}").mkdir(parents=True)
        sel = np.flatnonzero(model == name)
        pq.write_table(whole.take(sel).drop(["model"]), root / "hive" / f"model={name}" / "part-0.parquet")
    return root


def _metrics(doc, k=0):
    return doc["files"][k]["problems"][0]["metrics"]


def test_directory_is_one_dataset_equal_to_the_whole_table(shards):
    a = run_json("ece", shards / "shards", "--n-boot", "50")
    b = run_json("ece", shards / "whole.parquet", "--n-boot", "50")
    assert len(a["files"]) == 1 and a["files"][0]["input"]["rows_read"] == N
    assert _metrics(a) == _metrics(b)


def test_quoted_glob_and_pool_are_one_dataset(shards):
    glob = run_json("ece", str(shards / "shards" / "part-*.parquet"), "--n-boot", "30")
    parts = sorted(str(p) for p in (shards / "shards").iterdir())
    pooled = run_json("ece", *reversed(parts), "--pool", "--n-boot", "30")
    separate = run_json("ece", *parts, "--n-boot", "0")
    whole = run_json("ece", shards / "whole.parquet", "--n-boot", "30")
    assert _metrics(glob) == _metrics(whole) == _metrics(pooled)
    assert len(separate["files"]) == 4


@pytest.mark.parametrize("batch_rows", ["1000", "65536", "7"])
def test_batch_size_does_not_change_the_report(shards, batch_rows):
    a = run_json("ece", shards / "shards", "--n-boot", "40", "--batch-rows", batch_rows, "--mode", "binary")
    b = run_json("ece", shards / "whole.parquet", "--n-boot", "40")
    assert _metrics(a) == _metrics(b)


def test_group_by_column_and_hive_partition_equal_each_group_alone(shards, tmp_path):
    by_column = run_json("ece", shards / "whole.parquet", "--group-by", "model", "--n-boot", "0")
    by_partition = run_json("ece", shards / "hive", "--group-by", "model", "--n-boot", "0")
    assert [f["group"] for f in by_column["files"]] == [{"model": "a"}, {"model": "b"}]
    table = pq.read_table(shards / "whole.parquet").to_pandas()
    for k, name in enumerate("ab"):
        alone = tmp_path / f"{name}.csv"
        table[table["model"] == name][["prob", "label"]].to_csv(alone, index=False)
        ref = run_json("ece", alone, "--n-boot", "0")
        for doc in (by_column, by_partition):
            for metric, m in _metrics(ref).items():
                assert _metrics(doc, k)[metric]["estimate"] == pytest.approx(m["estimate"], rel=1e-12), metric
    summary = by_column["groups"]["metrics"]["ece_l1_plugin"]
    values = [_metrics(by_column, k)["ece_l1_plugin"]["estimate"] for k in range(2)]
    assert summary["worst"] == max(values) and summary["spread"] == pytest.approx(max(values) - min(values))


def test_group_gate_names_the_failing_group(shards):
    r = run("ece", shards / "whole.parquet", "--group-by", "model", "--n-boot", "0", "--fail-above", "0.0001")
    assert r.exit_code == 1
    assert f"{shards / 'whole.parquet'} [model=a]: ece_l1_plugin" in r.stderr and "[model=b]" in r.stderr


def test_stdin_is_read_as_a_stream(shards, tmp_path):
    csv = tmp_path / "w.csv"
    pq.read_table(shards / "whole.parquet").to_pandas()[["prob", "label"]].to_csv(csv, index=False)
    r = subprocess.run([sys.executable, "-m", "calibcli", "ece", "-", "--n-boot", "20", "--json", "--strategy", "quantile"],
                       stdin=open(csv, "rb"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ref = run_json("ece", csv, "--n-boot", "20", "--strategy", "quantile")
    assert _metrics(json.loads(r.stdout)) == _metrics(ref)


def test_missing_directory_and_empty_glob_are_one_error_line(tmp_path):
    r = run("ece", tmp_path / "nothing-here")
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    r = run("ece", str(tmp_path / "*.parquet"))
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1


@pytest.mark.parametrize("batch_rows", ["1000", "65536", "7"])
def test_smece_on_shards_equals_the_whole_table_whatever_the_batches(shards, batch_rows):
    a = run_json("smece", shards / "shards", "--n-boot", "40", "--batch-rows", batch_rows)
    b = run_json("smece", shards / "whole.parquet", "--n-boot", "40")
    assert a["files"][0]["problems"] == b["files"][0]["problems"]


def test_smece_pool_in_any_order_and_groups_equal_each_group_alone(shards, tmp_path):
    parts = sorted(str(p) for p in (shards / "shards").iterdir())
    pooled = run_json("smece", *reversed(parts), "--pool", "--n-boot", "30")
    whole = run_json("smece", shards / "whole.parquet", "--n-boot", "30")
    assert pooled["files"][0]["problems"] == whole["files"][0]["problems"]
    grouped = run_json("smece", shards / "hive", "--group-by", "model", "--n-boot", "0")
    table = pq.read_table(shards / "whole.parquet").to_pandas()
    for k, name in enumerate("ab"):
        alone = tmp_path / f"{name}.parquet"
        table[table["model"] == name][["prob", "label"]].to_parquet(alone)
        ref = run_json("smece", alone, "--n-boot", "0")
        got = grouped["files"][k]["problems"][0]
        assert got["metrics"]["smece"]["estimate"] == pytest.approx(ref["files"][0]["problems"][0]["metrics"]["smece"]["estimate"], rel=1e-12)
