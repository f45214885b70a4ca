"""``calibcli regression`` end to end: every kind of input recognised, the JSON layout of the other commands,
every source kind with the same numbers, groups, gates, and bad input as one Error line (exit 2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _cli import run
from _data import assert_refused, gaussian
from scipy import stats


def _frame(kind: str, n: int = 1500, seed: int = 0) -> pd.DataFrame:
    mu, s, y = gaussian(n=n, seed=seed)
    if kind == "gaussian":
        return pd.DataFrame({"mean": mu, "std": s, "y": y})
    if kind == "var":
        return pd.DataFrame({"mu": mu, "variance": s**2, "target": y})
    if kind == "quantiles":
        return pd.DataFrame({**{f"q{q}": stats.norm.ppf(q, mu, s) for q in (0.05, 0.25, 0.5, 0.75, 0.95)}, "y": y})
    if kind == "intervals":
        half = stats.norm.ppf(0.95) * s
        return pd.DataFrame({"lower_0.9": mu - half, "upper_0.9": mu + half, "y": y})
    rng = np.random.default_rng(seed + 1)
    return pd.DataFrame({**{f"s{j}": mu + rng.normal(size=n) * s for j in range(12)}, "y": y})


def _csv(tmp_path, kind: str, name: str | None = None, **kw) -> str:
    path = tmp_path / (name or f"{kind}.csv")
    _frame(kind, **kw).to_csv(path, index=False)
    return str(path)


def _doc(*args) -> dict:
    r = run("regression", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _metrics(doc: dict, entry: int = 0) -> dict:
    return doc["files"][entry]["problems"][0]["metrics"]


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("gaussian", {"mace", "rmsce", "miscalibration_area", "pit_ks", "pit_ks_pvalue", "ence", "uce", "crps", "nll"}),
        ("var", {"mace", "ence", "nll", "crps"}),
        ("quantiles", {"mace", "pinball", "picp_0.5", "picp_0.9", "pit_ks"}),
        ("intervals", {"mace", "picp_0.9", "mpiw_0.9", "interval_score_0.9", "ssc_0.9"}),
        ("samples", {"mace", "crps", "ence", "pit_ks", "picp_0.9"}),
    ],
)
def test_every_kind_is_recognised_and_reported_in_the_common_layout(tmp_path, kind, expected):
    doc = _doc(_csv(tmp_path, kind), "--n-boot", "20")
    assert doc["command"] == "regression"
    entry = doc["files"][0]
    assert entry["input"]["columns"]["kind"] == ("gaussian" if kind == "var" else kind)
    metrics = _metrics(doc)
    assert expected <= set(metrics)
    assert all(set(m) >= {"estimate", "ci_low", "ci_high"} for m in metrics.values())
    assert metrics["mace"]["ci_low"] <= metrics["mace"]["ci_high"]


def test_flags_name_the_columns_and_var_equals_std(tmp_path):
    mu, s, y = gaussian(n=500)
    path = tmp_path / "odd.csv"
    pd.DataFrame({"a": mu, "b": s, "c": s**2, "obs": y}).to_csv(path, index=False)
    by_std = _metrics(_doc(path, "--mean", "a", "--std", "b", "--target", "obs", "--n-boot", "0"))
    by_var = _metrics(_doc(path, "--mean", "a", "--var", "c", "--target", "obs", "--n-boot", "0"))
    for name in by_std:
        assert by_var[name]["estimate"] == pytest.approx(by_std[name]["estimate"], rel=1e-12)


def test_quantile_columns_by_pattern_and_levels(tmp_path):
    frame = _frame("quantiles").rename(columns={"q0.05": "a", "q0.25": "b", "q0.5": "c", "q0.75": "d", "q0.95": "e"})
    path = tmp_path / "plain.csv"
    frame.to_csv(path, index=False)
    named = _metrics(_doc(_csv(tmp_path, "quantiles"), "--n-boot", "0"))
    given = _metrics(
        _doc(path, "--quantile-cols", "a,b,c,d,e", "--quantile-levels", "0.05,0.25,0.5,0.75,0.95", "--n-boot", "0")
    )
    assert given == named


def test_several_intervals_with_flags(tmp_path):
    mu, s, y = gaussian(n=800)
    path = tmp_path / "two.csv"
    z50, z90 = stats.norm.ppf(0.75), stats.norm.ppf(0.95)
    pd.DataFrame({"l5": mu - z50 * s, "u5": mu + z50 * s, "l9": mu - z90 * s, "u9": mu + z90 * s, "y": y}).to_csv(
        path, index=False
    )
    doc = _doc(path, "--lower", "l5,l9", "--upper", "u5,u9", "--level", "0.5", "--level", "0.9", "--n-boot", "0")
    m = _metrics(doc)
    assert m["picp_0.5"]["estimate"] == pytest.approx(np.mean(np.abs(y - mu) <= z50 * s))
    curve = doc["files"][0]["problems"][0]["calibration_curve"]
    assert curve["expected"] == [0.5, 0.9]
    assert curve["observed"] == [m["picp_0.5"]["estimate"], m["picp_0.9"]["estimate"]]


def test_json_carries_the_curve_and_the_pit_histogram(tmp_path):
    doc = _doc(_csv(tmp_path, "gaussian"), "--n-boot", "0", "--pit-bins", "5")
    problem = doc["files"][0]["problems"][0]
    assert problem["calibration_curve"]["form"] == "interval"
    assert len(problem["calibration_curve"]["expected"]) == 100
    hist = problem["pit_histogram"]
    assert len(hist["counts"]) == 5 and sum(hist["counts"]) == 1500
    assert doc["parameters"]["n_boot"] == 0 and doc["parameters"]["seed"] == 0


def test_same_numbers_over_every_source_kind_and_batch_size(tmp_path):
    frame = _frame("samples", n=3000)
    whole = tmp_path / "whole.parquet"
    frame.to_parquet(whole)
    shards = tmp_path / "shards"
    shards.mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[part].to_csv(shards / f"part-{k}.csv", index=False)
    options = ["--n-boot", "30", "--seed", "3"]
    reference = _metrics(_doc(whole, *options))
    csv_text = frame.to_csv(index=False)
    for args in ([shards], [str(shards / "part-*.csv")], [whole, "--batch-rows", "257"]):
        got = _metrics(_doc(*args, *options))
        for name, m in reference.items():
            for key in ("estimate", "ci_low", "ci_high"):
                if m[key] is not None:
                    assert got[name][key] == pytest.approx(m[key], rel=1e-12, abs=1e-15), (args, name, key)
    r = run("regression", "-", *options, "--json", input=csv_text)
    assert r.exit_code == 0, r.stderr
    got = _metrics(json.loads(r.stdout))
    assert got["crps"]["estimate"] == pytest.approx(reference["crps"]["estimate"], rel=1e-12)


def test_hive_partitions_and_groups(tmp_path):
    frame = _frame("gaussian", n=2000)
    root = tmp_path / "hive"
    for region, part in (("north", frame.iloc[:1200]), ("south", frame.iloc[1200:])):
        (root / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), root / f"region={region}" / "p.parquet")
    doc = _doc(root, "--group-by", "region", "--n-boot", "0")
    assert [e["group"] for e in doc["files"]] == [{"region": "north"}, {"region": "south"}]
    alone = tmp_path / "south.csv"
    frame.iloc[1200:].to_csv(alone, index=False)
    south = _metrics(_doc(alone, "--n-boot", "0"))
    for name, m in south.items():
        assert _metrics(doc, 1)[name]["estimate"] == pytest.approx(m["estimate"], rel=1e-12)
    assert doc["groups"]["by"] == ["region"]


def test_gate_fails_with_exit_1_and_passes_with_0(tmp_path):
    path = _csv(tmp_path, "gaussian")
    failed = run("regression", path, "--metric", "mace", "--fail-above", "0.01", "--n-boot", "0")
    assert failed.exit_code == 1
    assert "mace" in failed.stderr
    passed = run("regression", path, "--metric", "mace", "--fail-above", "0.5", "--n-boot", "0")
    assert passed.exit_code == 0


def test_crossed_quantiles_are_sorted_counted_and_warned(tmp_path):
    path = tmp_path / "cross.csv"
    path.write_text("q0.1,q0.5,q0.9,y\n0.1,0.5,0.9,0.2\n0.6,0.5,0.9,0.3\n0.1,0.2,0.3,0.25\n")
    r = run("regression", path, "--n-boot", "0", "--json")
    assert r.exit_code == 0
    crossed = json.loads(r.stdout)["files"][0]["problems"][0]["crossed_quantiles"]
    assert crossed == {"rows": 1, "rate": 1 / 3, "handling": "sorted"}
    assert r.stderr == (
        f"Warning: {path}: 1 row(s) (0.333 of them) have crossed quantiles (a higher level's value below a lower "
        "one's): sorted before use\n"
    )


def test_drop_invalid_counts_the_rows_by_reason(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("mean,std,y\n0.1,0.5,0.2\n0.2,-0.5,0.1\n0.3,0.5,\n0.0,1.0,0.4\n")
    doc = _doc(path, "--drop-invalid", "--n-boot", "0")
    described = doc["files"][0]["input"]
    assert described["rows_used"] == 2 and described["rows_dropped"] == 2
    assert described["dropped_reasons"] == {"empty target": 1, "std not positive": 1}


BAD = {
    "std not positive": (
        "mean,std,y\n0.1,0.5,0.2\n0.2,-0.5,0.1\n",
        [],
        "{p}: row 2, column std: the std is -0.5: expected a positive number; 1 such row(s) (std not positive): fix "
        "the file or pass --drop-invalid to drop them",
    ),
    "zero variance": (
        "mean,var,y\n0.1,0,0.2\n",
        [],
        "{p}: row 1, column var: the variance is 0: expected a positive number; 1 such row(s) (std not positive): fix "
        "the file or pass --drop-invalid to drop them",
    ),
    "NaN target": (
        "mean,std,y\n0.1,0.5,0.2\n0.2,0.5,nan\n",
        [],
        "{p}: row 2, column y: the target is nan, not a finite number; 1 such row(s) (target not a finite number): "
        "fix the file or pass --drop-invalid to drop them",
    ),
    "std of text": (
        "mean,std,y\n0.1,abc,0.2\n0.2,0.5,0.3\n",
        [],
        "{p}: row 1, column std: the cell holds 'abc', not a number; 1 such row(s) (prediction not a finite number): "
        "fix the file or pass --drop-invalid to drop them",
    ),
    "level above 1": (
        "lower,upper,y\n0.1,0.5,0.2\n",
        ["--level", "1.5"],
        "--level 1.5 is outside (0, 1): expected a level such as 0.9 (a 90% interval)",
    ),
    "level 0": (
        "lower,upper,y\n0.1,0.5,0.2\n",
        ["--level", "0"],
        "--level 0 is outside (0, 1): expected a level such as 0.9 (a 90% interval)",
    ),
    "lower above upper": (
        "lower,upper,y\n0.1,0.5,0.2\n0.6,0.5,0.3\n",
        ["--level", "0.9"],
        "{p}: row 2, column lower: the lower end 0.6 is above the upper end 0.5 (column 'upper'): expected lower <= "
        "upper; 1 such row(s) (lower above upper): fix the file or pass --drop-invalid to drop them",
    ),
    "no target column": (
        "mean,std,out\n0.1,0.5,0.2\n",
        [],
        "{p}: no target column recognised among ['mean', 'std', 'out']: expected one named y/target/y_true; pass "
        "--target NAME",
    ),
    "missing column": (
        "mean,std,y\n0.1,0.5,0.2\n",
        ["--mean", "mu", "--std", "std"],
        "{p}: no column 'mu' (given by --mean); the file has columns ['mean', 'std', 'y']",
    ),
    "interval of unknown level": (
        "lower,upper,y\n0.1,0.5,0.2\n",
        [],
        "{p}: columns 'lower' and 'upper' hold an interval of unknown level: pass --level (e.g. --level 0.9 for a 90% "
        "interval)",
    ),
    "no prediction": (
        "a,b,y\n0.1,0.5,0.2\n",
        [],
        "{p}: no prediction columns recognised among ['a', 'b', 'y']: expected mean and std (or var), quantile "
        "columns q0.05 ... q0.95, interval columns lower/upper, or sample columns s0 ... sN; pass --mean/--std, "
        "--quantile-cols, --lower/--upper or --sample-cols",
    ),
    "two kinds": (
        "mean,std,s0,s1,y\n0.1,0.5,0.1,0.2,0.2\n",
        [],
        "{p}: the prediction columns are ambiguous (candidates: gaussian (mean, std); samples (s0, s1)): pass the "
        "options of one kind",
    ),
    "std without mean": (
        "mean,std,y\n0.1,0.5,0.2\n",
        ["--std", "std"],
        "--std and --var need --mean COL: name the predicted mean's column",
    ),
    "quantile level unreadable": (
        "a,b,y\n0.1,0.5,0.2\n",
        ["--quantile-cols", "a,b"],
        "{p}: the level of quantile column 'a' cannot be read from its name: name the columns q0.05 ... or "
        "quantile_0.05 ..., or pass --quantile-levels with one level per column",
    ),
    "level without its quantile pair": (
        "q0.1,q0.5,q0.9,y\n0.1,0.5,0.9,0.2\n",
        ["--level", "0.5"],
        "--level 0.5 has no pair of quantile columns (levels 0.25 and 0.75); the central intervals of these quantiles "
        "are at [0.8]",
    ),
}


@pytest.mark.parametrize("text, options, message", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_error_line_and_nothing_is_written(tmp_path, text, options, message):
    assert_refused(tmp_path, text, options, message)


def test_a_library_state_round_trips_and_merges(tmp_path):
    from calibcli.regression.accumulator import RegressionAccumulator
    from calibcli.regression.kinds import Prediction, RegressionOptions

    mu, s, y = gaussian(n=900)
    preds = np.column_stack([mu, s])
    prediction = Prediction("gaussian", (), RegressionOptions(n_boot=20))
    whole = RegressionAccumulator(prediction).update(np.arange(900), preds, y)
    a = RegressionAccumulator(prediction).update(np.arange(400), preds[:400], y[:400])
    b = RegressionAccumulator(prediction).update(np.arange(400, 900), preds[400:], y[400:])
    merged = RegressionAccumulator.from_dict(json.loads(json.dumps(b.to_dict()))).merge(a)
    for name, m in whole.result().metrics.items():
        got = merged.result().metrics[name]
        assert got.estimate == pytest.approx(m.estimate, rel=1e-12, abs=1e-15)
        if m.ci_low is not None:
            assert got.ci_low == pytest.approx(m.ci_low, rel=1e-12) and got.ci_high == pytest.approx(
                m.ci_high, rel=1e-12
            )
    assert not math.isnan(whole.result().metrics["ence"].estimate)


def test_what_the_family_computes_is_every_declared_option_of_the_same_name():
    """``Options.computed`` reads :class:`RegressionOptions`' fields from the command's options by name: each
    field but the levels and the bootstrap's row cap is a declared option, and a non-default value of each
    arrives."""
    from dataclasses import fields

    from calibcli.regression.family import Options
    from calibcli.regression.kinds import RegressionOptions

    declared = {f.name for f in fields(Options)}
    computed = {f.name for f in fields(RegressionOptions)} - {"levels", "boot_rows"}
    assert computed <= declared, computed - declared
    given = dict(
        curve_form="quantile",
        n_levels=9,
        crps_estimator="fair",
        n_bins=4,
        binning="equal-width",
        pit_bins=5,
        n_boot=7,
        alpha=0.1,
        seed=3,
        max_rows=100,
    )
    assert set(given) == computed
    o = Options(**given).computed((0.5, 0.9))
    assert o == RegressionOptions(**given, levels=(0.5, 0.9))
