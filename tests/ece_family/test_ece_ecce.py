"""ECCE-MAD and ECCE-R in ``ece`` and the library (SPEC 9): registry metrics with their sigma scale and p-value,
exact while the binned family keeps the rows, from the fine score grid with its stated bound beyond."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibcli.cumulative.accumulator import EcceAccumulator
from calibcli.ece_family import options as ece_options
from calibcli.ece_family.accumulator import InputAccumulator
from calibcli.cumulative.ecce import cell_sums, ecce, uniform_cells
from calibcli.metrics import REGISTRY, compute

from _cli import BINARY, MULTI, run_json

N = 4000


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(11)
    p = rng.beta(2, 3, N)
    y = (rng.random(N) < np.clip(p * 1.15, 0, 1)).astype(np.int64)
    w = rng.integers(1, 4, N).astype(np.float64)
    return p, y, w


def _check(entry, direct):
    for name in ("ecce_mad", "ecce_r"):
        assert entry[name]["estimate"] == pytest.approx(getattr(direct, name), rel=1e-12)
        assert entry[name][f"{name}_sigma"] == pytest.approx(getattr(direct, f"{name}_sigma"), rel=1e-12)
        assert entry[name][f"{name}_pvalue"] == pytest.approx(getattr(direct, f"{name}_pvalue"), rel=1e-12)
        assert entry[name]["sigma"] == pytest.approx(direct.sigma, rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_ece_json_has_ecce_metrics_equal_to_the_direct_computation(rows, weighted, tmp_path):
    p, y, w = rows
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"prob": p, "label": y, "w": w}), path, row_group_size=900)
    args = ["--weight-col", "w"] if weighted else []
    doc = run_json("ece", path, *args, "--batch-rows", "700")
    problem = doc["files"][0]["problems"][0]
    _check(problem["metrics"], ecce(y, p, sample_weight=w if weighted else None))
    assert problem["ecce"]["method"] == "exact" and problem["ecce"]["error_bound"] == 0.0
    assert {"ecce_mad", "ecce_r"} <= set(doc["parameters"]["estimators"])  # the report echoes their formulas


def test_registry_names_the_ecce_metrics_and_the_library_computes_them(rows):
    p, y, w = rows
    assert REGISTRY["ecce_r"].spec == REGISTRY["ecce_mad"].spec == "9"
    direct = ecce(y, p, sample_weight=w)
    for name in ("ecce_mad", "ecce_r"):
        r = compute(name, y, p, sample_weight=w)
        assert r.estimate == pytest.approx(getattr(direct, name), rel=1e-12)
        d = r.to_dict()
        assert d[f"{name}_sigma"] == pytest.approx(getattr(direct, f"{name}_sigma"), rel=1e-12)
        assert d[f"{name}_pvalue"] == pytest.approx(getattr(direct, f"{name}_pvalue"), rel=1e-12)


def test_beyond_the_binned_row_limit_ecce_comes_from_the_grid_within_its_bound(rows):
    p, y, w = rows

    def fed(lo, hi, limit=1000):
        acc = InputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=ece_options.Options.library(row_limit=limit))
        for start in range(lo, hi, 600):
            stop = min(start + 600, hi)
            acc.update(np.arange(start, stop), p[start:stop], y[start:stop], w[start:stop])
        return acc

    exact = ecce(y, p, sample_weight=w)
    whole = fed(0, N).result()
    merged = InputAccumulator.from_dict(json.loads(json.dumps(fed(0, 1700).to_dict()))).merge(
        InputAccumulator.from_dict(json.loads(json.dumps(fed(1700, N).to_dict())))).result()
    for report in (whole, merged):
        problem = report.problems[0]
        assert problem.ecce["method"] == "grid" and problem.ecce["n"] == N and problem.ecce["row_limit"] == 1000
        bound = problem.ecce["error_bound"]
        m = problem.result.metrics
        assert m["ecce_r"].estimate <= exact.ecce_r + 1e-15 <= m["ecce_r"].upper_bound + 2e-15
        assert m["ecce_r"].upper_bound == pytest.approx(m["ecce_r"].estimate + 2 * bound, rel=1e-12)
        assert m["ecce_mad"].estimate <= exact.ecce_mad + 1e-15 <= m["ecce_mad"].upper_bound + 2e-15
        assert "grid" in m["ecce_r"].note and "grid" in m["ecce_r"].upper_bound_method
        # 4000 continuous scores on 2^16 cells: almost every cell holds one row, so the grid is nearly exact
        assert m["ecce_r"].estimate == pytest.approx(exact.ecce_r, rel=1e-3)
    assert whole.problems[0].result.metrics["ecce_r"].estimate == pytest.approx(
        merged.problems[0].result.metrics["ecce_r"].estimate, rel=1e-12)


def test_the_streamed_cell_sums_are_calibcli_cumulative_cell_sums(rows):
    p, y, w = rows
    for weights in (None, w):
        acc = EcceAccumulator(None, n_cells=512)
        for start in range(0, N, 1000):
            acc.update(np.arange(start, start + 1000), p[start:start + 1000], y[start:start + 1000],
                       None if weights is None else weights[start:start + 1000])
        ref = cell_sums(y, p, uniform_cells(p, 512), n_cells=512, sample_weight=weights)
        for name in ("w", "wy", "ws", "w2v", "wabs"):
            np.testing.assert_allclose(getattr(acc, name), getattr(ref, name), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(acc.count, ref.rows)


def test_every_problem_of_the_marginal_mode_and_top_label_has_ecce():
    doc = run_json("ece", MULTI, "--mode", "marginal")
    problems = doc["files"][0]["problems"]
    assert len(problems) == 10 and all("ecce_r" in pr["metrics"] and pr["ecce"]["method"] == "exact" for pr in problems)
    assert "ecce_r" not in doc["files"][0].get("aggregate", {})  # no class rule: per class only
    top = run_json("ece", BINARY)["files"][0]["problems"][0]["metrics"]["ecce_r"]
    assert top["estimate"] == pytest.approx(0.03882494089771531, rel=1e-12)
    assert top["ecce_r_sigma"] == pytest.approx(12.21142288739757, rel=1e-12)
