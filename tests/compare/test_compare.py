"""calibcli compare: a model against a baseline, paired or not, with gates (issue 13)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from _cli import BINARY, run, run_json


def _models(n=3000, seed=0):
    """Labels drawn from a true probability p; a miscalibrated raw model and a recalibrated (calibrated) one."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(int)
    raw = np.clip(p**2.5 + rng.normal(0, 0.03, n), 0, 1)  # overconfident towards 0: miscalibrated
    recal = np.clip(p + rng.normal(0, 0.03, n), 0, 1)
    return y, raw, recal


def _write(tmp_path, name, z, y, **extra):
    path = tmp_path / name
    pd.DataFrame({"prob": z, "label": y, **extra}).to_csv(path, index=False)
    return str(path)


@pytest.fixture()
def pair(tmp_path):
    y, raw, recal = _models()
    return _write(tmp_path, "raw.csv", raw, y), _write(tmp_path, "recal.csv", recal, y)


def test_identical_files_difference_is_exactly_zero():
    doc = run_json("compare", BINARY, BINARY, "--n-boot", "200")
    assert doc["command"] == "compare"
    assert doc["parameters"]["pairing"]["by"] == "order" and doc["parameters"]["pairing"]["paired"]
    from calibcli.binned.estimators import metric_names

    for name, c in doc["comparison"].items():
        assert c["difference"] == 0.0, name
        assert not c["significant"] and not c["worse"]
        if name in metric_names():  # bootstrapped here: paired replicates; others (Wald intervals) go unpaired
            assert (c["ci_low"], c["ci_high"]) == (0.0, 0.0), name
            assert c["paired"]
    # the two entries are ece's own entries for the file (same seed, same rows): the same numbers
    ece = run_json("ece", BINARY, "--n-boot", "200")
    mine = doc["files"][0]["problems"][0]["metrics"]
    theirs = ece["files"][0]["problems"][0]["metrics"]
    for name in ("ece_l1_plugin", "brier_score", "dce"):
        assert mine[name] == theirs[name]


def test_gate_direction_and_exit_codes(pair):
    raw, recal = pair
    ok = run("compare", raw, recal, "--n-boot", "300", "--fail-if-worse", "ece_l1_plugin", "--fail-if-worse", "brier_score")
    assert ok.exit_code == 0, ok.stderr
    bad = run("compare", recal, raw, "--n-boot", "300", "--fail-if-worse", "ece_l1_plugin")
    assert bad.exit_code == 1
    line = bad.stderr.strip().splitlines()[-1]
    assert line.startswith(f"Gate failed: {raw} (candidate) is worse than {recal} (baseline) on ece_l1_plugin: ")
    doc = run_json("compare", recal, raw, "--n-boot", "300")
    c = doc["comparison"]["ece_l1_plugin"]
    assert c["worse"] and c["significant"] and c["ci_low"] > 0
    from calibcli.core.documents import fmt_interval, fmt_number

    assert f"{fmt_number(c['candidate'])} vs {fmt_number(c['baseline'])}, difference {c['difference']:+.4g}" in line
    assert f"(95% CI {fmt_interval(c['ci_low'], c['ci_high'])}, paired)" in line
    # --fail-if-worse-by: a margin larger than the difference passes, a smaller one fails
    d = c["difference"]
    assert run("compare", recal, raw, "--n-boot", "0", "--fail-if-worse-by", f"ece_l1_plugin={d * 2}").exit_code == 0
    r = run("compare", recal, raw, "--n-boot", "0", "--fail-if-worse-by", f"ece_l1_plugin={d / 2}")
    assert r.exit_code == 1 and "--fail-if-worse-by: worse by" in r.stderr
    # a higher-is-better metric: worse means lower
    skill = doc["comparison"].get("brier_resolution")
    assert skill["better"] == "higher" and skill["worse"] == (skill["difference"] < 0)


def test_target_metrics_are_worse_when_farther_from_the_calibrated_value(pair):
    """A Cox slope is best at 1, not highest: the raw model (slope far from 1) is worse than the recalibrated
    one whichever side of 1 it lies, and --fail-if-worse-by measures the growth of the distance to 1."""
    from calibcli.compare.paired_bootstrap import worse_by

    raw, recal = pair
    doc = run_json("compare", recal, raw, "--n-boot", "0")
    c = doc["comparison"]["cox_slope"]
    assert c["better"] == "target"
    assert c["worse"] == (abs(c["candidate"] - 1.0) > abs(c["baseline"] - 1.0))
    assert worse_by("cox_slope", 1.0, 0.8) == pytest.approx(0.2) and worse_by("cox_slope", 0.8, 1.1) == pytest.approx(-0.1)
    assert worse_by("cox_intercept", 0.1, -0.3) == pytest.approx(0.2)
    margin = worse_by("cox_slope", c["baseline"], c["candidate"])
    assert margin > 0  # the raw model's slope is farther from 1
    assert run("compare", recal, raw, "--n-boot", "0", "--fail-if-worse-by", f"cox_slope={margin * 2}").exit_code == 0
    assert run("compare", recal, raw, "--n-boot", "0", "--fail-if-worse-by", f"cox_slope={margin / 2}").exit_code == 1
    back = run_json("compare", raw, recal, "--n-boot", "0")["comparison"]["cox_slope"]
    assert not back["worse"]


def test_gate_on_unknown_metric_names_the_available_ones(pair):
    raw, recal = pair
    r = run("compare", raw, recal, "--n-boot", "50", "--fail-if-worse", "ece")
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: no metric 'ece' to gate on: expected one of ece_l1_plugin, ece_l2_plugin")
    r = run("compare", raw, recal, "--fail-if-worse", "smece")
    assert r.exit_code == 2 and r.stderr == "Error: smece is compared with --smece: add --smece to gate on it\n"
    r = run("compare", raw, recal, "--fail-if-worse-by", "ece_l1_plugin")
    assert r.exit_code == 2 and "expected METRIC=X" in r.stderr
    r = run("compare", raw, recal, "--n-boot", "0", "--fail-if-worse", "ece_l1_plugin")
    assert r.exit_code == 2 and "--n-boot" in r.stderr


def test_paired_by_id_on_shuffled_rows_equals_paired_by_order(tmp_path):
    y, raw, recal = _models(n=1500, seed=3)
    ids = np.array([f"ex{i:05d}" for i in range(len(y))])
    base = _write(tmp_path, "base.csv", raw, y, id=ids)
    cand = _write(tmp_path, "cand.csv", recal, y, id=ids)
    perm = np.random.default_rng(1).permutation(len(y))
    shuffled = _write(tmp_path, "cand_shuffled.csv", recal[perm], y[perm], id=ids[perm])
    by_order = run_json("compare", base, cand, "--n-boot", "200", "--prob-col", "prob", "--label-col", "label")
    by_id = run_json("compare", base, shuffled, "--n-boot", "200", "--id-col", "id", "--prob-col", "prob", "--label-col", "label")
    assert by_order["parameters"]["pairing"]["by"] == "order"
    assert by_id["parameters"]["pairing"]["by"] == "id" and by_id["parameters"]["pairing"]["id_column"] == "id"
    assert by_order["comparison"].keys() == by_id["comparison"].keys()
    for name, c in by_order["comparison"].items():
        d = by_id["comparison"][name]
        for key in ("baseline", "candidate", "difference", "ci_low", "ci_high"):
            if c[key] is None:
                assert d[key] is None, (name, key)
            else:
                assert d[key] == pytest.approx(c[key], rel=1e-12, abs=1e-12), (name, key)
        assert d["paired"] == c["paired"]
    assert by_id["comparison"]["ece_l1_plugin"]["paired"]


def test_mismatched_ids_exit_2(tmp_path):
    y, raw, recal = _models(n=200)
    ids = np.arange(len(y))
    base = _write(tmp_path, "base.csv", raw, y, id=ids)
    cand = _write(tmp_path, "cand.csv", recal[3:], y[3:], id=ids[3:] + 1)  # 3 + 1 fewer ... and one new
    r = run("compare", base, cand, "--id-col", "id", "--prob-col", "prob", "--label-col", "label", "-o", tmp_path / "out.json")
    assert r.exit_code == 2
    assert r.stderr == (f"Error: the IDs of column 'id' differ: 4 of {base}'s IDs are missing from {cand}, and 1 of "
                        f"{cand}'s IDs are missing from {base}: pairing by --id-col needs the same examples in both\n")
    assert not (tmp_path / "out.json").exists()
    r = run("compare", base, cand, "--id-col", "nope")
    assert r.exit_code == 2 and "no column 'nope' (given by --id-col)" in r.stderr


def test_unpaired_when_labels_differ_is_stated(tmp_path):
    y, raw, recal = _models(n=800)
    y2 = y.copy()
    y2[10] = 1 - y2[10]
    base = _write(tmp_path, "base.csv", raw, y)
    cand = _write(tmp_path, "cand.csv", recal, y2)
    r = run("compare", base, cand, "--n-boot", "100", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    p = doc["parameters"]["pairing"]
    assert not p["paired"] and p["by"] == "none" and "labels differ first at row 11" in p["reason"]
    assert doc["parameters"]["seeds"]["candidate"] != doc["parameters"]["seeds"]["baseline"]
    assert all(not c["paired"] for c in doc["comparison"].values())
    assert "are compared unpaired (the labels differ first at row 11" in r.stderr
    # asking for pairing by order makes it an error naming both files and the row
    r = run("compare", base, cand, "--pairing", "order")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"Error: {base} and {cand} cannot be paired by row order: the labels differ first at row 11 ")
    # different row counts: unpaired too
    short = _write(tmp_path, "short.csv", recal[:500], y[:500])
    doc = run_json("compare", base, short, "--n-boot", "50")
    assert doc["parameters"]["pairing"]["reason"] == f"{base} has 800 rows and {short} has 500"


def test_directory_inputs(tmp_path):
    y, raw, recal = _models(n=1200, seed=5)
    for name, z in (("base", raw), ("cand", recal)):
        (tmp_path / name).mkdir()
        for k, part in enumerate(np.array_split(np.arange(len(y)), 3)):
            pd.DataFrame({"prob": z[part], "label": y[part]}).to_parquet(tmp_path / name / f"part-{k}.parquet")
    whole = [_write(tmp_path, f"{n}.csv", z, y) for n, z in (("base", raw), ("cand", recal))]
    from_dirs = run_json("compare", tmp_path / "base", tmp_path / "cand", "--n-boot", "100")
    from_files = run_json("compare", *whole, "--n-boot", "100")
    assert from_dirs["parameters"]["pairing"]["by"] == "order"
    assert from_dirs["files"][0]["input"]["files"] == 3
    for name, c in from_files["comparison"].items():
        for key in ("difference", "ci_low", "ci_high"):
            if c[key] is not None:
                assert from_dirs["comparison"][name][key] == pytest.approx(c[key], rel=1e-12, abs=1e-14), (name, key)


def test_csv_and_markdown_and_json_round_trip(pair, tmp_path):
    raw, recal = pair
    r = run("compare", raw, recal, "--n-boot", "100", "--format", "csv", "-o", tmp_path / "report.json")
    assert r.exit_code == 0, r.stderr
    table = pd.read_csv(io.StringIO(r.stdout))
    assert list(table.columns) == ["file", "group", "problem", "metric", "estimate", "ci_low", "ci_high", "bound"]
    doc = json.loads((tmp_path / "report.json").read_text())
    diff = table[table.file == "candidate - baseline"].set_index("metric")
    for name, c in doc["comparison"].items():
        assert diff.loc[name, "estimate"] == c["difference"]
        if c["ci_low"] is None:
            assert np.isnan(diff.loc[name, "ci_low"])
        else:
            assert diff.loc[name, "ci_low"] == c["ci_low"]
    assert set(table.file) == {raw, recal, "candidate - baseline"}
    assert table[table.file == raw].set_index("metric").loc["ece_l1_plugin", "estimate"] == \
        doc["comparison"]["ece_l1_plugin"]["baseline"]
    # the JSON on stdout is the file's document
    again = run_json("compare", raw, recal, "--n-boot", "100")
    assert again == doc
    assert [f.get("role") for f in doc["files"]] == ["baseline", "candidate", "difference"]
    md = run("compare", raw, recal, "--n-boot", "100", "--format", "markdown").stdout
    assert "candidate - baseline" in md and "`ece_l1_plugin`" in md


def test_smece_comparison(pair):
    raw, recal = pair
    doc = run_json("compare", raw, recal, "--n-boot", "100", "--smece")
    c = doc["comparison"]["smece"]
    assert c["paired"] and c["difference"] < 0 and c["ci_high"] < 0
    assert [(f["role"], f["family"]) for f in doc["files"][:4]] == [
        ("baseline", "ece"), ("candidate", "ece"), ("baseline", "smece"), ("candidate", "smece")]


def test_multiclass_marginal_scores_are_compared():
    from _cli import MULTI

    doc = run_json("compare", MULTI, MULTI, "--n-boot", "50", "--mode", "marginal")
    for name in ("ece_l1_plugin", "brier_score_multiclass", "log_loss_multiclass"):
        c = doc["comparison"][name]
        assert c["difference"] == 0 and (c["ci_low"], c["ci_high"]) == (0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# The paired bootstrap beyond the kept rows (joint per-bin draws), through the library


def _streams(tmp_path, za, zb, y, tag=""):
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    paths = [_write(tmp_path, f"{tag}a.csv", za, y), _write(tmp_path, f"{tag}b.csv", zb, y)]
    return [resolve_datasets([p])[0].open(ColumnSpec()) for p in paths]


def _compare(tmp_path, za, zb, y, *, row_limit, pairing="auto", n_boot=300, seed=0, tag=""):
    from calibcli.compare.run import compare_streams
    from calibcli.ece_family import options as ece_options


    a, b = _streams(tmp_path, za, zb, y, tag)
    options = ece_options.Options.library(n_boot=n_boot, seed=seed, row_limit=row_limit)
    return compare_streams(a, b, options, mode_a="binary", pairing=pairing)


def test_joint_per_bin_draw_identical_inputs_give_zero(tmp_path):
    y, raw, _ = _models(n=2000)
    run_ = _compare(tmp_path, raw, raw, y, row_limit=100)
    c = run_.comparison["ece_l1_plugin"]
    assert "joint per-bin" in c["ci_method"] and c["paired"]
    assert abs(c["ci_low"]) < 1e-10 and abs(c["ci_high"]) < 1e-10  # zero up to the eigen-decomposition's rounding


def test_paired_interval_is_narrower_and_agrees_with_per_row(tmp_path):
    """Correlated models on the same examples: the paired interval (per row, and from joint per-bin draws) is
    much narrower than the unpaired one, and the two paired methods agree on its width."""
    y, raw, _ = _models(n=4000, seed=7)
    rng = np.random.default_rng(8)
    other = np.clip(raw + 0.02 + rng.normal(0, 0.01, len(y)), 0, 1)  # the same model, shifted
    width = {}
    for name, limit, pairing in (("row", 1 << 17, "auto"), ("joint", 100, "auto"), ("unpaired", 1 << 17, "none")):
        c = _compare(tmp_path, raw, other, y, row_limit=limit, pairing=pairing, tag=name).comparison["brier_score"]
        width[name] = c["ci_high"] - c["ci_low"]
    assert width["row"] < 0.5 * width["unpaired"]
    assert width["joint"] == pytest.approx(width["row"], rel=0.3)


def test_installed_command_runs(pair):
    raw, recal = pair
    r = subprocess.run([sys.executable, "-m", "calibcli", "compare", raw, recal, "--n-boot", "50", "--fail-if-worse",
                        "ece_l1_plugin"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    words = " ".join(r.stdout.split())
    assert "│ ece_l1_plugin " in r.stdout and "paired by row order" in words and f"baseline {raw}: 3000 rows" in words


@pytest.mark.slow  # about 20 s of CPU: 60 comparisons
def test_paired_interval_covers_the_true_difference(tmp_path):
    """A small simulation (the full one is benchmarks/studies/compare_coverage.py): 30 test sets of 1000 examples from one
    population; the paired 95% interval of the Brier score difference covers the population difference in at
    least 24 of them (P(fewer) < 0.4% at the nominal 95%), and is narrower than the unpaired one every time."""
    rng = np.random.default_rng(11)

    def draw(n):
        p = rng.beta(2, 2, n)
        y = (rng.random(n) < p).astype(int)
        za = np.clip(p + rng.normal(0, 0.05, n), 0, 1)
        zb = np.clip(za**1.15 + rng.normal(0, 0.01, n), 0, 1)
        return y, za, zb

    y, za, zb = draw(2_000_000)
    true = np.mean((zb - y) ** 2) - np.mean((za - y) ** 2)
    covered = narrower = 0
    for s in range(30):
        y, za, zb = draw(1000)
        paired = _compare(tmp_path, za, zb, y, row_limit=1 << 17, n_boot=200, seed=s, tag="p").comparison["brier_score"]
        unpaired = _compare(tmp_path, za, zb, y, row_limit=1 << 17, pairing="none", n_boot=200, seed=s,
                            tag="u").comparison["brier_score"]
        assert paired["paired"] and not unpaired["paired"]
        covered += paired["ci_low"] <= true <= paired["ci_high"]
        narrower += (paired["ci_high"] - paired["ci_low"]) < (unpaired["ci_high"] - unpaired["ci_low"])
    assert covered >= 24
    assert narrower == 30


def test_weighted_joint_draw_matches_per_row(tmp_path):
    """Frequency weights beyond the kept rows: identical inputs still give 0, and the joint per-bin interval of a
    real difference has about the per-row interval's width."""
    from calibcli.compare.run import compare_streams
    from calibcli.ece_family import options as ece_options

    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    y, raw, recal = _models(n=3000, seed=9)
    w = np.random.default_rng(2).integers(1, 4, len(y)).astype(float)
    paths = [_write(tmp_path, "wa.csv", raw, y, w=w), _write(tmp_path, "wb.csv", recal, y, w=w)]
    spec = ColumnSpec(prob_col="prob", label_col="label", weight_col="w")

    def compare(a, b, limit):
        streams = [resolve_datasets([p])[0].open(spec) for p in (a, b)]
        return compare_streams(*streams, ece_options.Options.library(n_boot=300, row_limit=limit), mode_a="binary").comparison

    same = compare(paths[0], paths[0], 100)["brier_score"]
    assert "joint per-bin" in same["ci_method"] and abs(same["ci_low"]) < 1e-10 and abs(same["ci_high"]) < 1e-10
    joint, rows = compare(*paths, 100)["brier_score"], compare(*paths, 1 << 17)["brier_score"]
    assert joint["difference"] == pytest.approx(rows["difference"], rel=1e-12)
    assert joint["ci_high"] - joint["ci_low"] == pytest.approx(rows["ci_high"] - rows["ci_low"], rel=0.3)


def test_joint_draw_multiclass_quantile_and_smooth_beyond_the_kept_rows():
    """Beyond the kept rows: top-label and marginal problems and the multiclass scores are paired through the
    joint draw, quantile bins through a second pass; SmoothECE is stated unpaired, with its own seed."""
    from _cli import MULTI

    from calibcli.compare.run import compare_streams
    from calibcli.ece_family import options as ece_options

    from calibcli.smooth import options as smece_options

    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    def compare(path, mode, smooth=None, **options):
        streams = [resolve_datasets([path])[0].open(ColumnSpec()) for _ in range(2)]
        return compare_streams(*streams, ece_options.Options.library(n_boot=60, row_limit=100, **options), mode_a=mode,
                               smooth_options=smooth)

    for mode in ("top-label", "marginal"):
        c = compare(MULTI, mode).comparison
        for name in ("ece_l1_plugin", "brier_score_multiclass", "log_loss_multiclass"):
            assert c[name]["paired"] and "joint" in c[name]["ci_method"], (mode, name)
            assert abs(c[name]["ci_low"]) < 1e-10 and abs(c[name]["ci_high"]) < 1e-10, (mode, name)
    c = compare(BINARY, "binary", strategy="quantile").comparison["ece_l1_plugin"]
    assert c["paired"] and abs(c["ci_low"]) < 1e-10 and abs(c["ci_high"]) < 1e-10
    run_ = compare(BINARY, "binary", smooth=smece_options.Options.library(n_boot=60, row_limit=100))
    c = run_.comparison["smece"]
    assert not c["paired"] and c["ci_method"].startswith("unpaired: the SmoothECE bootstrap from per-cell sums")
    assert c["difference"] == 0 and c["ci_low"] < 0 < c["ci_high"]
    assert run_.seeds["candidate_smece"] != run_.seeds["baseline"]


@pytest.mark.parametrize("columns", ["60", "80"])
def test_a_narrow_terminal_gets_every_number_and_verdict_whole(pair, monkeypatch, columns):
    """At 80 columns the verdict column was left one character wide (an ellipsis for every verdict), and at 60 the
    numbers were cut too: the table is now printed wider than the terminal rather than cut."""
    from calibcli.cli.commands.compare import verdict
    from calibcli.core.documents import fmt_interval, fmt_number

    doc = run_json("compare", *pair, "--n-boot", "50")
    monkeypatch.setenv("COLUMNS", columns)
    r = run("compare", *pair, "--n-boot", "50")
    assert r.exit_code == 0, r.stderr
    assert "…" not in r.stdout
    for name, c in doc["comparison"].items():
        row = [line for line in r.stdout.splitlines() if line.startswith(f"│ {name} ")]
        assert len(row) == 1, name
        assert fmt_number(c["baseline"]) in row[0] and fmt_number(c["candidate"]) in row[0]
        if c["ci_low"] is not None:
            assert fmt_interval(c["ci_low"], c["ci_high"]) in r.stdout
        assert verdict(c).split()[0] in row[0]
