"""Quantiles in long form (``id, quantile_level, value`` and the target on each row): pivoted by id, streamed
across batches and files in any order, the same numbers as the equivalent wide file; an id with inconsistent
levels or targets is one Error line (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _cli import SAMPLE, run
from _data import assert_refused, gaussian
from scipy import stats

LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)


def _wide(n: int = 700, seed: int = 0) -> pd.DataFrame:
    mu, s, y = gaussian(n=n, seed=seed)
    return pd.DataFrame({"id": np.arange(n), **{f"q{q}": stats.norm.ppf(q, mu, s) for q in LEVELS}, "y": y})


def _long(wide: pd.DataFrame, seed: int | None = None) -> pd.DataFrame:
    cols = [f"q{q}" for q in LEVELS]
    long = wide.melt(id_vars=["id", "y"], value_vars=cols, var_name="quantile_level", value_name="value")
    long["quantile_level"] = long["quantile_level"].str[1:].astype(float)
    long = long[["id", "quantile_level", "value", "y"]]
    if seed is None:  # grouped by id, in the wide file's order
        return long.sort_values(["id", "quantile_level"], kind="stable")
    return long.sample(frac=1, random_state=seed)


def _metrics(*args) -> dict:
    r = run("regression", *args, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    return {k: v["estimate"] for k, v in doc["files"][0]["problems"][0]["metrics"].items()}


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert b[k] == pytest.approx(a[k], rel=1e-12, abs=1e-15), k


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_long_form_gives_the_wide_numbers_in_any_row_order_and_batch_size(tmp_path, seed):
    wide = _wide()
    wide.drop(columns="id").to_csv(tmp_path / "wide.csv", index=False)
    _long(wide, seed).to_csv(tmp_path / "long.csv", index=False)
    expected = _metrics(tmp_path / "wide.csv", "--n-boot", "0")
    for batch_rows in ("64", "999", "100000"):
        _close(expected, _metrics(tmp_path / "long.csv", "--n-boot", "0", "--batch-rows", batch_rows))


def test_rows_of_one_id_in_different_files_are_joined_and_the_id_column_can_be_named(tmp_path):
    wide = _wide(n=300)
    wide.drop(columns="id").to_csv(tmp_path / "wide.csv", index=False)
    long = _long(wide, seed=3).rename(columns={"id": "row_key"})
    folder = tmp_path / "parts"
    folder.mkdir()
    for k in range(4):
        part = long.iloc[k * len(long) // 4 : (k + 1) * len(long) // 4]
        part.to_parquet(folder / f"part{k}.parquet", index=False)
    got = run("regression", folder, "--id-col", "row_key", "--n-boot", "0", "--json")
    assert got.exit_code == 0, got.stderr
    doc = json.loads(got.stdout)
    columns = doc["files"][0]["input"]["columns"]
    assert columns["form"] == "long" and columns["id"] == "row_key" and columns["levels"] == list(LEVELS)
    assert doc["files"][0]["input"]["rows_used"] == 300
    metrics = {k: v["estimate"] for k, v in doc["files"][0]["problems"][0]["metrics"].items()}
    _close(_metrics(tmp_path / "wide.csv", "--n-boot", "0"), metrics)


def test_the_bundled_long_sample_is_the_wide_sample():
    wide = _metrics(SAMPLE / "regression" / "diabetes_quantiles.csv", "--n-boot", "0")
    _close(wide, _metrics(SAMPLE / "regression" / "diabetes_quantiles_long.csv", "--n-boot", "0"))


def test_bootstrap_intervals_of_the_shuffled_long_file_are_the_wide_ones(tmp_path):
    wide = _wide(n=400)
    wide.drop(columns="id").to_csv(tmp_path / "wide.csv", index=False)
    _long(wide, seed=5).to_csv(tmp_path / "long.csv", index=False)
    a = run("regression", tmp_path / "wide.csv", "--n-boot", "50", "--seed", "4", "--json")
    b = run("regression", tmp_path / "long.csv", "--n-boot", "50", "--seed", "4", "--json")
    ma = json.loads(a.stdout)["files"][0]["problems"][0]["metrics"]
    mb = json.loads(b.stdout)["files"][0]["problems"][0]["metrics"]
    with_ci = [k for k in ma if ma[k]["ci_low"] is not None]
    assert "mace" in with_ci and "pinball" in with_ci
    for k in with_ci:
        assert ma[k]["ci_low"] < ma[k]["ci_high"], k
        assert [mb[k]["ci_low"], mb[k]["ci_high"]] == pytest.approx([ma[k]["ci_low"], ma[k]["ci_high"]], rel=1e-12), k


HEAD = "id,quantile_level,value,y\n"
BAD = {
    "stray level": (
        HEAD + "a,0.1,1,5\na,0.9,2,5\nb,0.1,1,6\nb,0.5,2,6\n",
        ["--batch-rows", "2"],
        "{p}: row 4: id 'b' has the level 0.5, not among the levels [0.1, 0.9] of the first rows: every id must "
        "have the same levels",
    ),
    "two targets": (
        HEAD + "a,0.1,1,5\nb,0.1,1,6\na,0.9,2,7\nb,0.9,2,6\n",
        [],
        "{p}: row 3: id 'a' has the target 7 but 5 in row 1: expected one target per id",
    ),
    "level twice": (
        HEAD + "a,0.1,1,5\na,0.9,2,5\nb,0.1,1,6\nb,0.1,2,6\nb,0.9,3,6\n",
        [],
        "{p}: row 4: id 'b' has a second row at the same quantile level: expected one row per id and level",
    ),
    "missing level": (
        HEAD + "a,0.1,1,5\na,0.9,2,5\nb,0.9,3,6\n",
        [],
        "{p}: row 3: id 'b' has the levels [0.9] but not [0.1] when the input ends: expected every id to have the "
        "levels [0.1, 0.9]",
    ),
    "nan value": (
        HEAD + "a,0.1,1,5\na,0.9,nan,5\n",
        [],
        "{p}: row 2, column value: the value is 'nan': expected a finite number (long-form quantiles have no "
        "--drop-invalid)",
    ),
    "empty id": (
        HEAD + "a,0.1,1,5\n,0.9,2,5\n",
        [],
        "{p}: row 2, column id: the id is empty",
    ),
    "no id": (
        "key,quantile_level,value,y\na,0.1,1,5\n",
        [],
        "{p}: quantiles in long form (quantile_level, value) need an id column: expected one named id; pass "
        "--id-col NAME",
    ),
    "level outside (0, 1)": (
        HEAD + "a,0.1,1,5\na,1.5,2,5\n",
        [],
        "{p}: row 2, column quantile_level: the level 1.5 is outside (0, 1): expected a level such as 0.9",
    ),
    "group-by": (
        "id,quantile_level,value,y,g\na,0.1,1,5,x\na,0.9,2,5,x\n",
        ["--group-by", "g"],
        "{p}: quantiles in long form are read without --group-by: pivot the file to wide columns (q0.05 ...) to "
        "use it",
    ),
}


@pytest.mark.parametrize("text, options, message", BAD.values(), ids=BAD.keys())
def test_an_inconsistent_id_is_one_error_line(tmp_path, text, options, message):
    assert_refused(tmp_path, text, options, message)


def test_text_ids_give_the_same_numbers_in_any_row_order(tmp_path):
    wide = _wide(n=300)
    wide["id"] = [f"site-{i:04d}" for i in range(300)]
    _long(wide, seed=1).to_csv(tmp_path / "a.csv", index=False)
    _long(wide, seed=2).to_parquet(tmp_path / "b.parquet", index=False)
    a = run("regression", tmp_path / "a.csv", "--n-boot", "30", "--batch-rows", "100", "--json")
    b = run("regression", tmp_path / "b.parquet", "--n-boot", "30", "--json")
    ma = json.loads(a.stdout)["files"][0]["problems"][0]["metrics"]
    mb = json.loads(b.stdout)["files"][0]["problems"][0]["metrics"]
    for k in ma:
        for part in ("estimate", "ci_low", "ci_high"):
            if ma[k][part] is None:
                assert mb[k][part] is None
            else:
                assert mb[k][part] == pytest.approx(ma[k][part], rel=1e-12, abs=1e-15), (k, part)


def test_the_long_form_is_read_by_the_local_engine_only_and_apply_refuses_it(tmp_path):
    from calibcli.core.errors import CalibcliError
    from calibcli.io.regression import RegressionSpec, open_regression
    from calibcli.io.resolve import resolve_datasets

    path = tmp_path / "long.csv"
    _long(_wide(n=50)).to_csv(path, index=False)
    stream = open_regression(resolve_datasets([str(path)])[0], RegressionSpec())
    with pytest.raises(CalibcliError, match="pivoted by id in one process"):
        stream.fragments()
    fitted = tmp_path / "cal.json"
    fit = run("recalibrate", "fit", path, "--method", "conformal", "--output", fitted)
    assert fit.exit_code == 0, fit.stderr
    applied = run("recalibrate", "apply", fitted, path, "--output", tmp_path / "out.csv")
    assert applied.exit_code == 2
    assert applied.stderr == (
        f"Error: {path}: recalibrate apply writes wide columns, and this file holds quantiles in long form "
        "(quantile_level, value): pivot it to wide columns (q0.05 ...) first\n"
    )
