"""`recalibrate evaluate` on streams: the holdout split by row identity (the same rows whatever the batches,
shards or engine), --max-rows stated in the report, the same report on a directory of shards as on the file."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _cli import run
from calibcli.core.resampling import row_hash

N = 2000
HOLDOUT = 0.4
METHODS = ["--method", "platt", "--method", "isotonic", "--method", "histogram"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaluate")
    rng = np.random.default_rng(5)
    z = np.round(rng.beta(2, 3, N), 3)
    y = (rng.random(N) < z**1.4).astype(np.int64)
    whole = pa.table({"prob": z, "label": y})
    pq.write_table(whole, root / "whole.parquet")
    (root / "shards").mkdir()
    for k, part in enumerate(np.array_split(np.arange(N), 4)):
        pq.write_table(whole.take(part), root / "shards" / f"part-{k}.parquet")
    # the split written out by hand: the round(F n) rows with the smallest hash of (seed 7, row index), and the rest
    order = np.argsort(row_hash(7, np.arange(N)))
    n_fit = int(round(HOLDOUT * N))
    pq.write_table(whole.take(np.sort(order[:n_fit])), root / "fit_part.parquet")
    pq.write_table(whole.take(np.sort(order[n_fit:])), root / "test_part.parquet")
    return root


def _evaluate(path, *args) -> dict:
    r = run("recalibrate", "evaluate", path, *METHODS, "--n-boot", "99", "--seed", "7", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _numbers(doc: dict) -> list:
    """The rows of the report without what names the input."""
    return doc["files"][0]["rows"]


def assert_same_rows(a: list, b: list, rel: float = 1e-12) -> None:
    def walk(x, y, where):
        if isinstance(x, dict):
            assert x.keys() == y.keys(), where
            for k in x:
                walk(x[k], y[k], f"{where}.{k}")
        elif isinstance(x, list):
            assert len(x) == len(y), where
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{where}[{i}]")
        elif isinstance(x, float) and isinstance(y, float):
            assert x == pytest.approx(y, rel=rel, abs=1e-15), where
        else:
            assert x == y, where

    walk(a, b, "rows")


@pytest.fixture(scope="module")
def reference(data):
    return _evaluate(data / "whole.parquet", "--holdout", str(HOLDOUT))


def test_holdout_split_is_the_bottom_k_rows_by_hash(data, reference):
    f = reference["files"][0]
    assert f["split"] == {"kind": "holdout", "fit_fraction": HOLDOUT, "n_fit": 800, "n_test": 1200, "seed": 7}
    assert f["input"]["rows_used"] == N
    assert [r["method"] for r in f["rows"]] == ["uncalibrated", "platt", "isotonic", "histogram"]
    assert all(r["fit_rows"] == {"rows": "all", "n": 800} for r in f["rows"][1:])
    # fitting on the hand-made fit part and measuring on the hand-made test part gives the same numbers
    by_files = _evaluate(data / "test_part.parquet", "--fit", data / "fit_part.parquet")
    assert by_files["files"][0]["split"] == {"kind": "files", "fit_path": str(data / "fit_part.parquet"),
                                             "n_fit": 800, "n_test": 1200}
    assert_same_rows(_numbers(by_files), _numbers(reference), rel=1e-9)


@pytest.mark.parametrize("batch_rows", ["1", "77", "1000"])
def test_any_batch_size_gives_the_same_report(data, reference, batch_rows):
    doc = _evaluate(data / "whole.parquet", "--holdout", str(HOLDOUT), "--batch-rows", batch_rows)
    assert doc["files"][0]["split"] == reference["files"][0]["split"]
    assert_same_rows(_numbers(doc), _numbers(reference), rel=1e-9)


@pytest.mark.parametrize("source", ["shards", "shards/part-*.parquet"])
def test_a_directory_or_glob_of_shards_gives_the_report_of_the_whole_file(data, reference, source):
    doc = _evaluate(str(data / source), "--holdout", str(HOLDOUT), "--batch-rows", "333")
    assert doc["files"][0]["split"] == reference["files"][0]["split"]
    assert doc["files"][0]["input"]["rows_used"] == N
    assert_same_rows(_numbers(doc), _numbers(reference), rel=1e-9)


def test_max_rows_below_the_fit_part_is_stated_in_the_report(data, reference):
    r = run("recalibrate", "evaluate", data / "shards", "--method", "isotonic", "--method", "venn-abers",
            "--holdout", str(HOLDOUT), "--seed", "7", "--n-boot", "99", "--max-rows", "300", "--json")
    assert r.exit_code == 0, r.stderr
    f = json.loads(r.stdout)["files"][0]
    assert f["split"]["n_fit"] == 800  # --max-rows does not change the split, only the rows each fit uses
    iso, va = f["rows"][1], f["rows"][2]
    assert iso["fit_rows"]["rows"] == "all" and "per-value sums" in iso["fit_rows"]["via"]
    assert va["fit_rows"]["rows"] == "bottom-k sample" and (va["fit_rows"]["k"], va["fit_rows"]["n"]) == (300, 800)
    # the uncalibrated T-Cal test runs on the bottom-k sample of the 1200 test rows
    sample = f["rows"][0]["test"]["per_problem"][0]["sample"]
    assert (sample["method"], sample["n"], sample["n_tested"]) == ("bottom-k", 1200, 300)
    assert json.loads(r.stdout)["parameters"]["max_rows"] == 300
    table = run("recalibrate", "evaluate", data / "shards", "--method", "venn-abers", "--holdout", str(HOLDOUT),
                "--seed", "7", "--n-boot", "99", "--max-rows", "300").stdout
    table = " ".join(table.split())  # the console wraps long lines
    assert "venn-abers fitted on the bottom-k sample of 300 of the 800 fit rows (--max-rows)" in table
    assert "T-Cal on the bottom-k sample of 300 test rows (--max-rows)" in table
    # the isotonic fit through per-value sums equals the fit on every row
    assert_same_rows(iso["metrics"], reference["files"][0]["rows"][2]["metrics"], rel=1e-6)


def test_too_small_a_holdout_is_an_error(data):
    r = run("recalibrate", "evaluate", data / "whole.parquet", "--method", "platt", "--holdout", "0.0005")
    assert r.exit_code == 2
    assert r.stderr == ("Error: --holdout 0.0005 leaves 1 of 2000 rows to fit on and 1999 to evaluate: expected at "
                        "least 2 in each part\n")


def test_dask_engine_gives_the_local_report(data, reference):
    pytest.importorskip("distributed")
    import logging

    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as cluster:
        doc = _evaluate(data / "shards", "--holdout", str(HOLDOUT), "--engine", "dask", "--scheduler",
                        cluster.scheduler_address)
        fitted = run("recalibrate", "evaluate", data / "test_part.parquet", "--fit", data / "fit_part.parquet",
                     *METHODS, "--n-boot", "99", "--seed", "7", "--engine", "dask", "--scheduler",
                     cluster.scheduler_address, "--json")
    assert doc["parameters"]["engine"] == "dask" and doc["parameters"]["workers"] == 2
    assert doc["files"][0]["split"] == reference["files"][0]["split"]
    assert_same_rows(_numbers(doc), _numbers(reference), rel=1e-9)
    assert fitted.exit_code == 0, fitted.stderr
    assert_same_rows(_numbers(json.loads(fitted.stdout)), _numbers(reference), rel=1e-9)
