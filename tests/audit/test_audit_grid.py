"""The audit beyond the rows it holds (SPEC 9, "Streams"): the columns' codings from mergeable first-pass
statistics, every segment summed on the score grid in a second pass, each segment's ``ecce_bound`` stated.

Checked against the exact audit of the same rows: the same codings and segments, rows, O/E and l1-ECE to
rounding, and ECCE-R within the bound (the exact value lies in ``[ecce_r, ecce_r + 2 ecce_bound]``); the same
numbers however the rows are split among batches and merged, through the states' JSON (the Dask engine's),
and end to end through the command, locally and on Dask.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from _cli import SAMPLE, run  # noqa: E402  (tests/ is on sys.path)

import calibcli.audit.accumulator as segments_state
from calibcli.audit.grid import GRID_CELLS
from calibcli.audit.accumulator import SegmentAuditAccumulator
from calibcli.audit.options import Options
from calibcli.io.columns import segment_values

ADS = str(SAMPLE / "ads_segments.csv")
N = 30_000


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, N)
    country = np.array(["de", "fr", "br", "us", None], dtype=object)[rng.integers(0, 5, N)]
    shift = 0.06 * (country == "br")
    y = (rng.uniform(size=N) < np.clip(s + shift, 0, 1)).astype(int)
    age = rng.integers(18, 90, N)
    income = np.where(rng.uniform(size=N) < 0.01, np.nan, rng.lognormal(size=N))
    return s, y, country, age, income


def _columns(rows, part):
    _, _, country, age, income = rows
    return (segment_values(pa.chunked_array([country[part]]), "str", "country", "f", 0), age[part], income[part])


def _state(rows, limit, parts):
    s, y, *_ = rows
    acc = SegmentAuditAccumulator(
        mode="binary",
        n_classes=2,
        class_names=("0", "1"),
        options=Options(segment_cols="country,age,income", min_segment=50),
        row_limit=limit,
    )
    for part in parts:
        index = np.arange(N)[part]
        acc.update(index, np.c_[1 - s[part], s[part]], y[part], columns=_columns(rows, part))
    return acc


def _audit(rows, limit, parts, *, through_json=False):
    first = _state(rows, limit, parts)
    if not first.needs_second_pass():
        return first.result().to_dict()
    s, y, *_ = rows
    second = first.for_second_pass()
    if through_json:
        second = SegmentAuditAccumulator.from_dict(json.loads(json.dumps(second.to_dict())))
    for part in parts:
        second.update(np.arange(N)[part], np.c_[1 - s[part], s[part]], y[part], columns=_columns(rows, part))
    return second.result().to_dict()


def _close(a, b, rel=1e-12):
    """Equal up to float rounding (sums added in another order: SPEC 8's 1e-12 relative)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k], rel)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, z in zip(a, b, strict=True):
            _close(x, z, rel)
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=rel, abs=1e-15)
    else:
        assert a == b


def _by_definition(doc):
    return {json.dumps(seg["definition"], sort_keys=True): seg for seg in doc["segments"]}


def _within_the_bound(exact, grid):
    assert exact["segment_columns"] == grid["segment_columns"]
    mine, theirs = _by_definition(grid), _by_definition(exact)
    assert mine.keys() == theirs.keys()
    for key, g in mine.items():
        e = theirs[key]
        assert (g["rows"], g["tested"]) == (e["rows"], e["tested"])
        for name in ("o_e", "observed_rate", "mean_prediction", "ece_l1_plugin", "sigma"):
            assert g[name] == pytest.approx(e[name], rel=1e-9, abs=1e-12)
        assert g["ecce_bound"] >= 0 and e["ecce_bound"] == 0
        assert g["ecce_r"] - 1e-12 <= e["ecce_r"] <= g["ecce_r"] + 2 * g["ecce_bound"] + 1e-12
        assert g["ecce_mad"] - 1e-12 <= e["ecce_mad"] <= g["ecce_mad"] + g["ecce_bound"] + 1e-12


BATCHES = [slice(a, b) for a, b in zip(range(0, N, 4000), range(4000, N + 4000, 4000), strict=True)]


def test_grid_audit_equals_the_exact_one_within_its_bound(rows):
    exact = _audit(rows, 10**9, BATCHES)
    grid = _audit(rows, 5000, BATCHES)
    assert "grid" not in exact
    assert grid["grid"]["cells"] == GRID_CELLS and grid["grid"]["rows"] == N
    assert grid["grid"]["quantile_edges"] == {"age": "exact", "income": "exact"}
    _within_the_bound(exact, grid)
    # with fewer rows than cells, nearly every cell holds one row: the grid's numbers are the exact ones here
    assert grid["segments"][0]["definition"] == exact["segments"][0]["definition"] == {"country": "br"}
    assert grid["mce_sigma"] == pytest.approx(exact["mce_sigma"], rel=1e-6)


def test_grid_bound_is_stated_and_holds_when_cells_hold_many_rows(rows, monkeypatch):
    import calibcli.audit.grid as grid_module

    monkeypatch.setattr(grid_module, "GRID_CELLS", 64)  # coarse: many rows per cell, a bound that matters
    exact = _audit(rows, 10**9, BATCHES)
    grid = _audit(rows, 5000, BATCHES)
    _within_the_bound(exact, grid)
    assert max(seg["ecce_bound"] for seg in grid["segments"]) > 1e-3


def test_grid_audit_does_not_depend_on_the_split_or_the_json_round_trip(rows):
    one = _audit(rows, 5000, BATCHES)
    _close(_audit(rows, 5000, list(reversed(BATCHES)), through_json=True), one)
    # first-pass states of parts merged (as the engines merge fragments), through their JSON too
    halves = [_state(rows, 5000, BATCHES[:3]), _state(rows, 5000, BATCHES[3:])]
    merged = SegmentAuditAccumulator.from_dict(json.loads(json.dumps(halves[1].to_dict())))
    merged.merge(halves[0])
    assert merged.needs_second_pass() and merged.n_rows == N
    codings = merged.for_second_pass().grid.codings
    assert codings == _state(rows, 5000, BATCHES).for_second_pass().grid.codings


def test_small_parts_merged_beyond_the_limit_switch_to_the_grid(rows):
    parts = [_state(rows, 12_000, [b]) for b in BATCHES]  # each part below the limit, the whole above it
    assert not any(p.needs_second_pass() for p in parts)
    whole = parts[0]
    for p in parts[1:]:
        whole.merge(p)
    assert whole.needs_second_pass() and whole._rows == []  # the rows are let go


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_command_beyond_the_row_limit(engine, monkeypatch):
    if engine == "dask":
        pytest.importorskip("distributed")
    cols = ["--segment-cols", "country,device,age"]
    exact = json.loads(run("audit", ADS, *cols, "--json").stdout)
    monkeypatch.setattr(segments_state, "ROW_LIMIT", 3000)  # the states carry it to the workers
    r = run("audit", ADS, *cols, "--json", "--engine", engine, *(["--workers", "1"] if engine == "dask" else []))
    assert r.exit_code == 0, r.stderr
    grid = json.loads(r.stdout)
    (entry,) = grid["files"]
    assert grid["parameters"]["engine"] == engine
    assert entry["grid"]["rows"] == 20_000 and entry["grid"]["row_limit"] == 3000
    _within_the_bound(exact["files"][0], entry)
    assert grid["segments"][0]["definition"] == {"country": "BR", "device": "android"}


def test_report_beyond_the_row_limit_says_why_there_are_no_segment_diagrams(tmp_path, monkeypatch):
    monkeypatch.setattr(segments_state, "ROW_LIMIT", 3000)
    page, data = tmp_path / "r.html", tmp_path / "r.json"
    r = run(
        "report",
        ADS,
        "-o",
        page,
        "--json-output",
        data,
        "--n-boot",
        "20",
        "--method",
        "platt",
        "--segment-cols",
        "country,device,age",
    )
    assert r.exit_code == 0, r.stderr
    (entry,) = json.loads(data.read_text())["audit"]["files"]
    assert entry["figure"] is None and entry["grid"]["row_limit"] == 3000
    assert "score cells (each segment's <code>ecce_bound</code> states the grid's error)" in page.read_text()


def test_grid_form_is_conservative_and_keeps_its_power_by_simulation(monkeypatch):
    """Size and power of MCE (alpha 0.05, Bonferroni) for the grid form against the exact form on the same draws,
    on a grid 1,000 times coarser than the real one (64 cells for 4,000 rows), a small version of
    benchmarks/studies/audit_grid_validity.py: the grid's rejections are a subset of the exact form's on every draw
    (its ECCE-R is read at the cells' edges), its size is within alpha plus two Monte Carlo SE
    (sqrt(0.05 x 0.95 / 200) = 0.015), and the power it loses under a shifted segment is a few points (the full
    benchmark: 0.835 exact, 0.814 grid over 1,000 draws)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "studies" / "audit_grid_validity.py"
    spec = importlib.util.spec_from_file_location("bench_audit_grid_validity", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench.segment_grid, "GRID_CELLS", 64)
    reps = 200
    for shift in (0.0, 0.05):
        exact = grid = 0
        for r in range(reps):
            s, y, country = bench.draw(r, 4000, shift)
            e = bench.audit(s, y, country, grid=False)["mce_pvalue"] <= bench.ALPHA
            g = bench.audit(s, y, country, grid=True)["mce_pvalue"] <= bench.ALPHA
            assert e or not g, f"draw {r}: the grid form rejects where the exact form does not"
            exact, grid = exact + e, grid + g
        if shift == 0.0:
            assert grid / reps <= 0.05 + 2 * 0.015
        else:
            assert exact / reps > 0.7  # the shift is there to be found
            assert (exact - grid) / reps <= 0.05
