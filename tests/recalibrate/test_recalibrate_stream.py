"""`recalibrate fit` on streams: directories of shards, --max-rows with exact per-value sums or the
bottom-k sample, the same calibrator whatever the batch size."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _cli import run

N = 2000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("fit")
    rng = np.random.default_rng(3)
    z = np.round(rng.beta(2, 3, N), 3)  # repeated values, as scores often are
    y = (rng.random(N) < z**1.4).astype(np.int64)
    whole = pa.table({"prob": z, "label": y})
    pq.write_table(whole, root / "whole.parquet")
    (root / "shards").mkdir()
    for k, part in enumerate(np.array_split(np.arange(N), 3)):
        pq.write_table(whole.take(part), root / "shards" / f"part-{k}.parquet")
    return root


def _fit(tmp_path, data_path, *args):
    out = tmp_path / "cal.json"
    r = run("recalibrate", "fit", data_path, "--method", *args, "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(out.read_text()), json.loads(r.stdout)


@pytest.mark.parametrize("method", ["platt", "isotonic", "histogram", "venn-abers"])
def test_directory_of_shards_fits_the_same_map_as_the_whole_file(data, tmp_path, method):
    a, report = _fit(tmp_path, data / "shards", method, "--batch-rows", "333")
    b, _ = _fit(tmp_path, data / "whole.parquet", method)
    assert a["calibrator"] == b["calibrator"]
    assert report["files"][0]["fit_rows"] == {"rows": "all", "n": N}


@pytest.mark.parametrize("method", ["platt", "isotonic", "histogram", "polynomial"])
def test_beyond_max_rows_a_weighted_sum_fit_uses_every_row_through_per_value_sums(data, tmp_path, method):
    full, _ = _fit(tmp_path, data / "whole.parquet", method)
    reduced, report = _fit(tmp_path, data / "shards", method, "--max-rows", "100")
    how = report["files"][0]["fit_rows"]
    assert how["rows"] == "all" and how["n"] == N and "per-value sums" in how["via"]
    grid = np.linspace(0, 1, 101)
    from calibcli.calibrators import calibrator_from_dict

    np.testing.assert_allclose(calibrator_from_dict(reduced["calibrator"]).predict(grid),
                               calibrator_from_dict(full["calibrator"]).predict(grid), rtol=1e-7, atol=1e-9)


def test_beyond_max_rows_other_methods_fit_on_the_bottom_k_sample_whatever_the_batches(data, tmp_path):
    a, report = _fit(tmp_path, data / "shards", "venn-abers", "--max-rows", "500", "--batch-rows", "77")
    b, _ = _fit(tmp_path, data / "whole.parquet", "venn-abers", "--max-rows", "500")
    how = report["files"][0]["fit_rows"]
    assert how["rows"] == "bottom-k sample" and (how["k"], how["n"]) == (500, N)
    assert a["calibrator"] == b["calibrator"]


@pytest.mark.parametrize("method, extra", [("isotonic", ()), ("venn-abers", ("--max-rows", "500"))])
def test_dask_engine_fits_the_local_calibrator(data, tmp_path, method, extra):
    pytest.importorskip("distributed")
    import logging

    from distributed import LocalCluster

    local, local_report = _fit(tmp_path, data / "shards", method, *extra)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as cluster:
        remote, report = _fit(tmp_path, data / "shards", method, *extra, "--engine", "dask", "--scheduler",
                              cluster.scheduler_address)
    assert remote["calibrator"] == local["calibrator"]
    assert {k: v for k, v in remote.items() if k != "calibrator"} == {k: v for k, v in local.items() if k != "calibrator"}
    assert report["files"][0]["fit_rows"] == local_report["files"][0]["fit_rows"]
    assert (report["parameters"]["engine"], report["parameters"]["workers"]) == ("dask", 2)


def test_engine_options_are_checked(data, tmp_path):
    r = run("recalibrate", "fit", data / "whole.parquet", "--method", "platt", "--workers", "2", "-o", tmp_path / "c.json")
    assert r.exit_code == 2
    assert r.stderr == "Error: --workers is for --engine dask: add --engine dask, or drop it\n"
