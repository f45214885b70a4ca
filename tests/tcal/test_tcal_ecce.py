"""``tcal --test ecce``: the ECCE-R test (SPEC 9) on streams, exact up to the row limit and on a fine score grid
with its stated error bound beyond, through the CLI, the library and the gate."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibcli.clinical.accumulator import ClinicalTestAccumulator
from calibcli.tcal.options import Options as TcalOptions
from calibcli.cumulative.accumulator import EcceAccumulator
from calibcli.cumulative.ecce import ecce
from calibcli.cumulative.brownian import range_brownian_sf
from calibcli.metrics import compute

from _cli import BINARY, MULTI, run, run_json

N = 3000


@pytest.fixture(scope="module")
def rows():
    """Miscalibrated predictions (true rate p^1.3 * 1.1), integer weights, ties (scores rounded to 1e-3)."""
    rng = np.random.default_rng(7)
    p = np.round(rng.beta(2, 3, N), 3)
    y = (rng.random(N) < np.clip(p**1.3 * 1.1, 0, 1)).astype(np.int64)
    w = rng.integers(1, 4, N).astype(np.float64)
    return p, y, w


@pytest.fixture(scope="module")
def parquet(rows, tmp_path_factory):
    p, y, w = rows
    path = tmp_path_factory.mktemp("ecce") / "preds.parquet"
    pq.write_table(pa.table({"prob": p, "label": y, "w": w}), path, row_group_size=700)
    return str(path)


def _feed(acc, p, y, w, batch):
    for start in range(0, len(p), batch):
        sl = slice(start, start + batch)
        acc.update(np.arange(start, min(start + batch, len(p))), p[sl], y[sl], None if w is None else w[sl])
    return acc


def _fields(res):
    return {
        f: getattr(res, f) for f in ("ecce_r", "ecce_mad", "sigma", "ecce_r_sigma", "ecce_r_pvalue", "ecce_mad_pvalue")
    }


@pytest.mark.parametrize("weighted", [False, True])
def test_accumulator_is_exact_up_to_the_row_limit_for_any_batches_and_merges(rows, weighted):
    p, y, w = rows
    w = w if weighted else None
    direct = _fields(ecce(y, p, sample_weight=w))
    whole, how = _feed(EcceAccumulator(N), p, y, w, N).result()
    assert how["method"] == "exact" and how["error_bound"] == 0.0
    batched = _feed(EcceAccumulator(N), p, y, w, 257).result()[0]
    a = _feed(EcceAccumulator(N), p[:1100], y[:1100], None if w is None else w[:1100], 400)
    b = EcceAccumulator(N)
    b.update(np.arange(1100, N), p[1100:], y[1100:], None if w is None else w[1100:])
    merged = (
        EcceAccumulator.from_dict(json.loads(json.dumps(b.to_dict())))
        .merge(EcceAccumulator.from_dict(json.loads(json.dumps(a.to_dict()))))
        .result()[0]
    )
    for res in (whole, batched, merged):
        for name, value in _fields(res).items():
            assert value == pytest.approx(direct[name], rel=1e-12, abs=1e-300), name


@pytest.mark.parametrize("weighted", [False, True])
def test_beyond_the_row_limit_the_grid_form_is_within_its_stated_bound(rows, weighted):
    p, y, w = rows
    w = w if weighted else None
    exact = ecce(y, p, sample_weight=w)
    acc = _feed(EcceAccumulator(500, n_cells=64), p, y, w, 400)  # a coarse grid, so the bound matters
    res, how = acc.result()
    assert how["method"] == "grid" and how["n_cells"] == 64 and how["n"] == N
    bound = how["error_bound"]
    assert 0 < bound < 0.05
    assert res.ecce_mad <= exact.ecce_mad + 1e-15 and exact.ecce_mad <= res.ecce_mad + bound + 1e-15
    assert res.ecce_r <= exact.ecce_r + 1e-15 and exact.ecce_r <= res.ecce_r + 2 * bound + 1e-15
    assert res.sigma == pytest.approx(exact.sigma, rel=1e-12)  # sigma is a sum over rows: exact on the grid too
    # the default grid (2^16 cells) holds one distinct score (of the 1e-3 grid) per cell: the exact values
    fine = _feed(EcceAccumulator(500), p, y, w, 400)
    res, how = fine.result()
    assert how["method"] == "grid"
    for name, value in _fields(res).items():
        assert value == pytest.approx(_fields(exact)[name], rel=1e-10), name
    # the state round-trips beyond the limit too (rows dropped, sums kept)
    again = EcceAccumulator.from_dict(json.loads(json.dumps(fine.to_dict()))).result()[0]
    assert _fields(again) == _fields(res)


def test_a_merge_past_the_limit_drops_the_rows_and_uses_the_grid(rows):
    p, y, w = rows
    a = _feed(EcceAccumulator(2000), p[:1500], y[:1500], w[:1500], 500)
    b = _feed(EcceAccumulator(2000), p[1500:], y[1500:], w[1500:], 500)
    assert a.exact and b.exact
    res, how = a.merge(b).result()
    assert how["method"] == "grid" and how["n"] == N
    assert res.ecce_r == pytest.approx(ecce(y, p, sample_weight=w).ecce_r, rel=1e-10)


def test_clinical_test_accumulator_runs_the_ecce_test(rows):
    p, y, w = rows
    acc = ClinicalTestAccumulator(
        mode="binary", n_classes=2, class_names=("0", "1"), options=TcalOptions(test="ecce", max_rows=N)
    )
    report = _feed(acc, p, y, w, 1000).result()
    direct = ecce(y, p, sample_weight=w)
    assert report.result.statistic == pytest.approx(direct.ecce_r_sigma, rel=1e-12)
    assert report.result.p_value == pytest.approx(range_brownian_sf(direct.ecce_r_sigma), rel=1e-12)
    assert report.reject == (report.result.p_value <= 0.05)
    head = report.headline()
    assert set(head) == {"ecce_p_value", "ecce_statistic"}
    again = ClinicalTestAccumulator.from_dict(json.loads(json.dumps(acc.to_dict()))).result()
    assert again.result.statistic == report.result.statistic


def test_tcal_test_ecce_json_matches_the_library(parquet, rows):
    p, y, w = rows
    doc = run_json("tcal", parquet, "--test", "ecce", "--weight-col", "w")
    entry = doc["files"][0]
    r = entry["result"]
    direct = ecce(y, p, sample_weight=w)
    assert entry["test"] == "ecce" and doc["parameters"]["test"] == "ecce"
    assert doc["parameters"]["max_rows"] == 1_000_000
    for name in ("ecce_r", "ecce_r_sigma", "ecce_r_pvalue", "ecce_mad", "ecce_mad_sigma", "ecce_mad_pvalue", "sigma"):
        assert r[name] == pytest.approx(getattr(direct, name), rel=1e-12), name
    assert r["statistic"] == r["ecce_r_sigma"] and r["p_value"] == r["ecce_r_pvalue"]
    assert r["statistic_name"] == "ECCE-R/sigma" and r["form"] == "exact" and r["error_bound"] == 0.0
    assert r["reject"] is True  # p^1.3 * 1.1 on 3000 rows is far from calibrated
    assert entry["headline"]["ecce_p_value"]["estimate"] == r["p_value"]
    lib = compute("ecce_p_value", y, p, sample_weight=w)
    assert lib.estimate == pytest.approx(r["p_value"], rel=1e-12)
    assert lib.related["ecce_statistic"].estimate == pytest.approx(r["statistic"], rel=1e-12)


def test_tcal_test_ecce_beyond_max_rows_states_the_grid_and_its_bound(parquet, rows):
    p, y, w = rows
    doc = run_json("tcal", parquet, "--test", "ecce", "--max-rows", "1000", "--batch-rows", "500")
    entry = doc["files"][0]
    r = entry["result"]
    exact = ecce(y, p)
    assert r["form"] == "grid" and r["n_cells"] == 65536 and r["row_limit"] == 1000 and r["n"] == N
    assert r["ecce_r"] <= exact.ecce_r + 1e-15 <= r["ecce_r"] + 2 * r["error_bound"] + 2e-15
    assert any("65536 uniform score cells" in note for note in entry["notes"])
    assert "65536-cell grid" in entry["headline"]["ecce_statistic"]["note"]


def test_tcal_test_ecce_gate_exit_codes(parquet, tmp_path):
    values = np.linspace(0.02, 0.98, 25)  # exactly calibrated rows: every tie block has sum w (y - s) = 0
    calibrated = tmp_path / "calibrated.parquet"
    pq.write_table(
        pa.table(
            {
                "prob": np.concatenate([values, values]),
                "label": np.repeat([1, 0], 25),
                "w": np.concatenate([values, 1 - values]) * 40,
            }
        ),
        calibrated,
    )
    r = run("tcal", calibrated, "--test", "ecce", "--weight-col", "w", "--fail-on-reject", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["gate"]["passed"] is True
    assert doc["files"][0]["result"]["ecce_r"] == pytest.approx(0.0, abs=1e-15)
    assert doc["files"][0]["result"]["p_value"] == 1.0
    r = run("tcal", parquet, "--test", "ecce", "--fail-on-reject", "--json")
    assert r.exit_code == 1
    assert "ecce rejects perfect calibration" in r.stderr


def test_tcal_test_ecce_table_lines_and_modes():
    r = run("tcal", BINARY, "--test", "ecce")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "calibcli tcal --test ecce: alpha 0.05" in out
    assert (
        "ECCE-R/sigma 12.21, range of standard Brownian motion on [0, 1]: p-value 1.080e-33 at alpha 0.05: "
        "REJECT perfect calibration"
    ) in out
    assert "ECCE-R 0.03882, sigma 0.003179; ECCE-MAD 0.02101 (6.608 sigma, p-value 7.772e-11); exact" in out
    r = run("tcal", MULTI, "--test", "ecce", "--mode", "canonical")
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: --mode canonical: the ecce test is of one probability per prediction: use the binary "
        "or top-label mode\n"
    )
    assert run_json("tcal", MULTI, "--test", "ecce")["files"][0]["mode"] == "top-label"
