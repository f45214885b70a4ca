"""Clinical and regulatory statistics (calibcli.clinical.classical_tests): Cox calibration, Spiegelhalter's Z, Hosmer-Lemeshow,
ICI / E50 / E90 / Emax and the Brier skill score, checked against independent implementations (statsmodels,
scipy.stats, pandas.qcut, an O(n^2) kernel regression), streamed with any batch size, and from the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.stats
import statsmodels.api as sm

from calibcli.clinical.accumulator import ClinicalAccumulator, ClinicalTestAccumulator
from calibcli.tcal.options import Options as TcalOptions
from calibcli.clinical.classical_tests import (
    GridSums,
    brier_skill_score,
    cox_calibration,
    cox_from_grid,
    hosmer_lemeshow,
    integrated_calibration_index,
    spiegelhalter_z,
)
from calibcli.clinical.cox import cox_from_rows
from calibcli.clinical.ici import weighted_quantile
from calibcli.core.errors import CalibcliError
from calibcli.metrics import REGISTRY, compute, worse

from _cli import BINARY, MULTI, run, run_json

N = 2000


@pytest.fixture(scope="module")
def rows():
    """Miscalibrated binary predictions (true rate p^1.3 * 1.1) with integer frequency weights, a few exact 0/1."""
    rng = np.random.default_rng(1)
    p = rng.beta(2, 3, N)
    p[:3], p[3:5] = 0.0, 1.0
    y = (rng.random(N) < np.clip(p**1.3 * 1.1, 0, 1)).astype(np.int64)
    w = rng.integers(1, 4, N).astype(np.float64)
    return p, y, w


@pytest.fixture(scope="module")
def parquet(rows, tmp_path_factory):
    p, y, w = rows
    path = tmp_path_factory.mktemp("clinical") / "preds.parquet"
    pq.write_table(pa.table({"prob": p, "label": y, "w": w}), path, row_group_size=500)
    return str(path)


def _logit(p):
    pc = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(pc) - np.log1p(-pc)


# ---------------------------------------------------------------------------------------------
# Cox calibration against statsmodels


@pytest.mark.parametrize("weighted", [False, True])
def test_cox_slope_intercept_and_wald_errors_match_statsmodels_glm(rows, weighted):
    p, y, w = rows
    r = cox_calibration(y, p, sample_weight=w if weighted else None)
    eta = _logit(p)
    fw = w if weighted else None
    joint = sm.GLM(y, sm.add_constant(eta), family=sm.families.Binomial(), freq_weights=fw).fit(tol=1e-12)
    assert r.slope.estimate == pytest.approx(joint.params[1], abs=1e-6)
    assert r.intercept.estimate == pytest.approx(joint.params[0], abs=1e-6)
    assert r.slope.se == pytest.approx(joint.bse[1], abs=1e-6)
    assert r.intercept.se == pytest.approx(joint.bse[0], abs=1e-6)
    lo, hi = joint.conf_int(alpha=0.05)[1]
    assert (r.slope.ci_low, r.slope.ci_high) == pytest.approx((lo, hi), abs=1e-6)
    # the test of slope = 1 is the Wald test statsmodels gives for the constraint
    t = joint.t_test(([0.0, 1.0], 1.0))
    assert r.slope.p_value == pytest.approx(float(t.pvalue), abs=1e-6)
    assert r.intercept.p_value == pytest.approx(joint.pvalues[0], abs=1e-6)
    citl = sm.GLM(y, np.ones((N, 1)), family=sm.families.Binomial(), offset=eta, freq_weights=fw).fit(tol=1e-12)
    assert r.calibration_in_the_large.estimate == pytest.approx(citl.params[0], abs=1e-6)
    assert r.calibration_in_the_large.se == pytest.approx(citl.bse[0], abs=1e-6)
    assert r.calibration_in_the_large.p_value == pytest.approx(citl.pvalues[0], abs=1e-6)
    assert r.n_clipped == 5  # the exact 0s and 1s, clipped to 1e-12 as Platt scaling clips them


def test_cox_with_logit_model_is_statsmodels_logit(rows):
    p, y, _ = rows
    r = cox_calibration(y, p)
    fit = sm.Logit(y, sm.add_constant(_logit(p))).fit(disp=0, tol=1e-12)
    assert (r.intercept.estimate, r.slope.estimate) == pytest.approx(tuple(fit.params), abs=1e-6)
    assert (r.intercept.se, r.slope.se) == pytest.approx(tuple(fit.bse), abs=1e-6)


def test_exactly_calibrated_weighted_rows_have_slope_one_and_intercepts_zero():
    """Each value p with weight p on a positive and 1 - p on a negative: the score equations hold at a = 0, b = 1."""
    values = np.linspace(0.02, 0.98, 25)
    p = np.concatenate([values, values])
    y = np.concatenate([np.ones(25, dtype=int), np.zeros(25, dtype=int)])
    w = np.concatenate([values, 1 - values]) * 40
    r = cox_calibration(y, p, sample_weight=w)
    assert r.slope.estimate == pytest.approx(1.0, abs=1e-10)
    assert r.intercept.estimate == pytest.approx(0.0, abs=1e-10)
    assert r.calibration_in_the_large.estimate == pytest.approx(0.0, abs=1e-10)
    assert r.slope.p_value == pytest.approx(1.0, abs=1e-8)
    assert spiegelhalter_z(y, p, sample_weight=w).statistic == pytest.approx(0.0, abs=1e-10)


def test_cox_on_cells_matches_the_row_wise_fit(rows):
    """Beyond the kept rows, Cox is fitted on per-cell sums (each cell's rows at their mean prediction)."""
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.beta(0.5, 0.8, 200_000), [0.0] * 50, [1.0] * 50, rng.uniform(0, 1e-5, 200)])
    y = (rng.random(p.size) < np.clip(p**1.2 + 0.02, 0, 1)).astype(np.int64)
    w = rng.integers(1, 4, p.size).astype(np.float64)
    for weights in (None, w):
        exact = cox_from_rows(y, p, np.ones(p.size) if weights is None else weights)
        cells = cox_from_grid(GridSums().add_rows(p, y, weights))
        for name in ("slope", "intercept", "calibration_in_the_large"):
            a, b = getattr(exact, name), getattr(cells, name)
            assert b.estimate == pytest.approx(a.estimate, rel=1e-6)
            assert b.se == pytest.approx(a.se, rel=1e-6)


def test_cox_on_cells_is_exact_for_a_discrete_predictor():
    rng = np.random.default_rng(3)
    values = np.array([0.05, 0.2, 0.35, 0.5, 0.61, 0.9, 0.999])
    p = values[rng.integers(0, len(values), 100_000)]
    y = (rng.random(p.size) < p).astype(np.int64)
    exact = cox_from_rows(y, p, np.ones(p.size))
    cells = cox_from_grid(GridSums().add_rows(p, y, None))
    assert cells.slope.estimate == pytest.approx(exact.slope.estimate, rel=1e-10)
    assert cells.slope.se == pytest.approx(exact.slope.se, rel=1e-10)


def test_the_tail_grid_clips_as_platt_scaling_does():
    from calibcli.calibrators._common import DEFAULT_CLIP
    from calibcli.clinical.classical_tests import CLIP

    assert CLIP == DEFAULT_CLIP


def test_cox_refuses_one_label_and_separated_data():
    with pytest.raises(CalibcliError, match="needs both labels"):
        cox_calibration([1, 1, 1], [0.2, 0.5, 0.9])
    with pytest.raises(CalibcliError, match="separated"):
        cox_calibration([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])


# ---------------------------------------------------------------------------------------------
# Spiegelhalter, Hosmer-Lemeshow, ICI, Brier skill score against hand computations


def test_spiegelhalter_matches_the_hand_formula(rows):
    p, y, w = rows
    for weights in (None, w):
        ww = np.ones(N) if weights is None else weights
        z = np.sum(ww * (y - p) * (1 - 2 * p)) / np.sqrt(np.sum(ww * (1 - 2 * p) ** 2 * p * (1 - p)))
        r = spiegelhalter_z(y, p, sample_weight=weights)
        assert r.statistic == pytest.approx(z, rel=1e-12)
        assert r.p_value == pytest.approx(2 * scipy.stats.norm.sf(abs(z)), rel=1e-9)
        assert r.reject == (r.p_value <= 0.05)


def test_spiegelhalter_rejects_overconfident_predictions():
    """Predictions too extreme (true rate sigmoid(logit(p) / 2)): Z is far in its tail (|Z| about 15 here)."""
    rng = np.random.default_rng(7)
    p = rng.uniform(0.02, 0.98, 20_000)
    truth = 1 / (1 + np.exp(-_logit(p) / 2))
    r = spiegelhalter_z(rng.random(p.size) < truth, p)
    assert r.reject and r.statistic > 8


def test_hosmer_lemeshow_matches_a_hand_computation_with_pandas_qcut(rows):
    p, y, _ = rows
    p = np.concatenate([[0.001, 0.002, 0.003, 0.998, 0.999], p[5:]])  # 2000 distinct values: qcut's deciles split
    groups = pd.qcut(p, 10, labels=False)
    # the sorted values where SPEC 2.1's rank rule round(j n / 10) does
    frame = pd.DataFrame({"g": groups, "y": y, "p": p}).groupby("g").agg(O=("y", "sum"), E=("p", "sum"), n=("y", "size"))
    chat = float((((frame.O - frame.E) ** 2) / (frame.E * (1 - frame.E / frame.n))).sum())
    r = hosmer_lemeshow(y, p, n_bins=10)
    assert r.df == 8 and r.n_groups == 10
    assert [g["rows"] for g in r.groups] == frame.n.tolist()
    assert r.statistic == pytest.approx(chat, rel=1e-10)
    assert r.p_value == pytest.approx(scipy.stats.chi2.sf(chat, 8), rel=1e-9)


def test_hosmer_lemeshow_needs_three_groups():
    with pytest.raises(CalibcliError, match="at least 3 non-empty groups"):
        hosmer_lemeshow([0, 1, 0, 1], [0.2, 0.2, 0.7, 0.7])


def _reflected_kernel(t, z, s):
    out = np.zeros(np.broadcast(t, z).shape)
    for k in range(-3, 4):
        out += np.exp(-0.5 * ((t - z - 2 * k) / s) ** 2) + np.exp(-0.5 * ((t + z - 2 * k) / s) ** 2)
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_ici_matches_a_direct_kernel_regression_at_the_same_bandwidth(rows, weighted):
    p, y, w = rows
    ww = w if weighted else np.ones(N)
    r = integrated_calibration_index(y, p, sample_weight=w if weighted else None)
    K = _reflected_kernel(p[:, None], p[None, :], r.sigma)  # O(n^2): every pair
    f = (K @ (ww * y)) / (K @ ww)
    gap = np.abs(f - p)
    assert r.ici == pytest.approx(np.sum(ww * gap) / ww.sum(), abs=1e-5)
    assert r.e50 == pytest.approx(weighted_quantile(gap, ww, 0.5), abs=1e-4)
    assert r.e90 == pytest.approx(weighted_quantile(gap, ww, 0.9), abs=1e-4)
    assert r.emax == pytest.approx(gap.max(), abs=1e-4)
    if not weighted:
        assert r.e50 == pytest.approx(np.median(gap), abs=1e-4)
        assert r.e90 == pytest.approx(np.quantile(gap, 0.9), abs=1e-4)
    # the bandwidth is the SmoothECE fixed point
    assert r.sigma == pytest.approx(compute("smece", y, p, sample_weight=w if weighted else None).estimate, abs=1e-5)


def test_weighted_quantile_is_the_expanded_sample_quantile():
    rng = np.random.default_rng(4)
    v = rng.random(50)
    w = rng.integers(1, 5, 50)
    expanded = np.repeat(v, w)
    for q in (0.0, 0.1, 0.5, 0.9, 1.0):
        assert weighted_quantile(v, w.astype(float), q) == pytest.approx(np.quantile(expanded, q), rel=1e-12)


def test_brier_skill_score_against_climatology(rows):
    p, y, w = rows
    ybar = np.average(y, weights=w)
    expected = 1 - np.average((p - y) ** 2, weights=w) / (ybar * (1 - ybar))
    assert brier_skill_score(y, p, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    assert compute("brier_skill_score", y, p, sample_weight=w).estimate == pytest.approx(expected, rel=1e-12)
    with pytest.raises(CalibcliError, match="undefined"):
        brier_skill_score([1, 1], [0.3, 0.6])


def test_registry_knows_the_new_metrics_and_target_directions():
    assert REGISTRY["cox_slope"].better == "target" and REGISTRY["cox_slope"].target == 1.0
    assert worse("cox_slope", 0.7, 1.2)  # 0.3 from 1 is worse than 0.2
    assert not worse("cox_slope", 1.1, 0.8)
    assert worse("calibration_in_the_large", -0.5, 0.2)
    assert REGISTRY["brier_skill_score"].better == "higher"
    for name in ("ici", "e50", "e90", "emax", "spiegelhalter_p_value", "hosmer_lemeshow_statistic"):
        assert "Austin" in REGISTRY[name].description or "Spiegelhalter" in REGISTRY[name].description \
            or "Hosmer" in REGISTRY[name].description


# ---------------------------------------------------------------------------------------------
# Streaming: the same numbers for any batch size, states that round-trip and merge


def _feed(acc, p, y, w, batch):
    for start in range(0, len(p), batch):
        sl = slice(start, start + batch)
        acc.update(np.arange(start, min(start + batch, len(p))), p[sl], y[sl], None if w is None else w[sl])
    return acc


def test_clinical_accumulator_gives_the_same_numbers_for_any_batch_size_and_split(rows):
    p, y, w = rows
    whole = _feed(ClinicalAccumulator(), p, y, w, len(p)).result()[0]
    batched = _feed(ClinicalAccumulator(), p, y, w, 1000).result()[0]
    a, b = ClinicalAccumulator(), ClinicalAccumulator()
    _feed(a, p[:700], y[:700], w[:700], 300)
    _feed(b, p[700:], y[700:], w[700:], 1000)
    merged = ClinicalAccumulator.from_dict(json.loads(json.dumps(a.to_dict()))).merge(
        ClinicalAccumulator.from_dict(json.loads(json.dumps(b.to_dict())))).result()[0]
    assert set(whole) == {"cox_slope", "cox_intercept", "calibration_in_the_large", "ici", "e50", "e90", "emax"}
    for name, m in whole.items():
        assert batched[name].estimate == pytest.approx(m.estimate, rel=1e-12, abs=1e-15)
        assert merged[name].estimate == pytest.approx(m.estimate, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("test", ["spiegelhalter", "hosmer-lemeshow"])
def test_test_accumulator_streams_and_merges(rows, test):
    p, y, w = rows
    options = TcalOptions(test=test, n_bins=10 if test == "hosmer-lemeshow" else None)

    def new():
        return ClinicalTestAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=options)

    whole = _feed(new(), p, y, w, len(p)).result()
    batched = _feed(new(), p, y, w, 1000).result()
    a = _feed(new(), p[:1200], y[:1200], w[:1200], 500)
    b = _feed(new(), p[1200:], y[1200:], w[1200:], 500)
    merged = ClinicalTestAccumulator.from_dict(a.to_dict()).merge(ClinicalTestAccumulator.from_dict(b.to_dict())).result()
    for other in (batched, merged):
        assert other.result.statistic == pytest.approx(whole.result.statistic, rel=1e-12)
        assert other.result.p_value == pytest.approx(whole.result.p_value, rel=1e-12)
    direct = spiegelhalter_z(y, p, sample_weight=w) if test == "spiegelhalter" else hosmer_lemeshow(y, p, sample_weight=w)
    assert whole.result.statistic == pytest.approx(direct.statistic, rel=1e-12)


def test_hosmer_lemeshow_beyond_the_kept_rows_takes_its_deciles_from_a_first_pass():
    """More rows than the binned family keeps (2^17): edges from a first pass, sums from a second."""
    from calibcli.api import _one_batch  # the engine's two passes over one batch
    from calibcli.io.arrays import prepare

    rng = np.random.default_rng(9)
    n = (1 << 17) + 5000
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.int64)
    acc = ClinicalTestAccumulator(mode="binary", n_classes=2, class_names=("0", "1"),
                                  options=TcalOptions(test="hosmer-lemeshow"))
    report = _one_batch(acc, prepare(y, p, None)).result()
    direct = hosmer_lemeshow(y, p)
    assert report.result.statistic == pytest.approx(direct.statistic, rel=1e-9)
    assert report.result.df == direct.df == 8
    assert any("edges from exact quantiles" in note for note in report.notes)


# ---------------------------------------------------------------------------------------------
# The command line


def test_ece_reports_cox_ici_and_brier_skill_score(parquet, rows):
    p, y, w = rows
    doc = run_json("ece", parquet, "--weight-col", "w", "--n-boot", "50")
    problem = doc["files"][0]["problems"][0]
    m = problem["metrics"]
    r = cox_calibration(y, p, sample_weight=w)
    assert m["cox_slope"]["estimate"] == pytest.approx(r.slope.estimate, rel=1e-9)
    assert (m["cox_slope"]["ci_low"], m["cox_slope"]["ci_high"]) == pytest.approx((r.slope.ci_low, r.slope.ci_high), rel=1e-9)
    assert m["calibration_in_the_large"]["estimate"] == pytest.approx(r.calibration_in_the_large.estimate, rel=1e-9)
    assert problem["clinical"]["cox"]["slope"]["p_value"] == pytest.approx(r.slope.p_value, rel=1e-6, abs=1e-300)
    ici = integrated_calibration_index(y, p, sample_weight=w)
    assert m["ici"]["estimate"] == pytest.approx(ici.ici, rel=1e-12)
    assert m["e90"]["estimate"] == pytest.approx(ici.e90, rel=1e-12)
    bss = m["brier_skill_score"]
    assert bss["estimate"] == pytest.approx(brier_skill_score(y, p, sample_weight=w), rel=1e-12)
    assert bss["ci_low"] < bss["estimate"] < bss["ci_high"]  # bootstrapped with the other binned metrics
    assert {"brier_skill_score", "cox_slope", "ici", "e90"} <= set(doc["parameters"]["estimators"])


def test_ece_batch_size_does_not_change_the_clinical_metrics(parquet):
    names = ("cox_slope", "cox_intercept", "calibration_in_the_large", "ici", "e50", "e90", "emax", "brier_skill_score")
    a = run_json("ece", parquet, "--n-boot", "0", "--batch-rows", "1000")["files"][0]["problems"][0]["metrics"]
    b = run_json("ece", parquet, "--n-boot", "0")["files"][0]["problems"][0]["metrics"]
    for name in names:
        assert a[name]["estimate"] == pytest.approx(b[name]["estimate"], rel=1e-12)


def test_ece_marginal_aggregates_ici_by_the_class_rule():
    doc = run_json("ece", MULTI, "--mode", "marginal", "--n-boot", "0")
    f = doc["files"][0]
    per_class = [q["metrics"]["ici"]["estimate"] for q in f["problems"]]
    v = np.array(f["aggregate"]["class_weight_values"])
    assert f["aggregate"]["metrics"]["ici"]["estimate"] == pytest.approx(float(v @ per_class), rel=1e-12)
    assert f["aggregate"]["metrics"]["emax"]["estimate"] == pytest.approx(max(q["metrics"]["emax"]["estimate"]
                                                                             for q in f["problems"]), rel=1e-12)
    assert "cox_slope" in f["problems"][0]["metrics"] and "cox_slope" not in f["aggregate"]["metrics"]


def test_ece_csv_carries_the_new_metrics(parquet):
    import io

    r = run("ece", parquet, "--n-boot", "0", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    table = pd.read_csv(io.StringIO(r.stdout))
    assert {"cox_slope", "calibration_in_the_large", "ici", "e50", "e90", "brier_skill_score"} <= set(table.metric)


@pytest.mark.parametrize("test, name", [("spiegelhalter", "spiegelhalter_p_value"),
                                        ("hosmer-lemeshow", "hosmer_lemeshow_p_value")])
def test_tcal_test_json_matches_the_library(parquet, rows, test, name):
    p, y, w = rows
    doc = run_json("tcal", parquet, "--test", test, "--weight-col", "w")
    entry = doc["files"][0]
    r = entry["result"]
    direct = spiegelhalter_z(y, p, sample_weight=w) if test == "spiegelhalter" else hosmer_lemeshow(y, p, sample_weight=w)
    assert entry["test"] == test and doc["parameters"]["test"] == test
    assert r["statistic"] == pytest.approx(direct.statistic, rel=1e-12)
    assert r["p_value"] == pytest.approx(direct.p_value, rel=1e-12)
    assert r["reject"] == direct.reject
    assert entry["headline"][name]["estimate"] == pytest.approx(direct.p_value, rel=1e-12)
    assert entry["sample"]["method"] == "all rows"
    if test == "hosmer-lemeshow":
        assert r["df"] == direct.df == r["n_groups"] - 2
        assert "rejects almost every model at large n" in doc["parameters"]["caveats"]
        assert len(r["groups"]) == r["n_groups"]


def test_tcal_test_gate_exit_codes(parquet, tmp_path):
    values = np.linspace(0.02, 0.98, 25)  # exactly calibrated frequency-weighted rows: Z = 0
    calibrated = tmp_path / "calibrated.parquet"
    pq.write_table(pa.table({"prob": np.concatenate([values, values]), "label": np.repeat([1, 0], 25),
                             "w": np.concatenate([values, 1 - values]) * 40}), calibrated)
    r = run("tcal", calibrated, "--test", "spiegelhalter", "--weight-col", "w", "--fail-on-reject", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["gate"]["passed"] is True
    r = run("tcal", parquet, "--test", "hosmer-lemeshow", "--fail-on-reject", "--json")
    assert r.exit_code == 1
    assert "hosmer-lemeshow rejects perfect calibration" in r.stderr


def test_tcal_n_bins_sets_the_hosmer_lemeshow_groups(parquet):
    r = run_json("tcal", parquet, "--test", "hosmer-lemeshow", "--n-bins", "5")["files"][0]["result"]
    assert (r["n_bins"], r["n_groups"], r["df"]) == (5, 5, 3)


@pytest.mark.parametrize("args, message", [
    (["--test", "cox"], "Error: --test is 'cox': expected one of auto, tcal, binomial, spiegelhalter, hosmer-lemeshow, ecce\n"),
    (["--n-bins", "5"], "Error: --n-bins sets the groups of --test hosmer-lemeshow, and --test is auto: drop --n-bins\n"),
    (["--test", "hosmer-lemeshow", "--n-bins", "0"], "Error: --n-bins is 0: expected a positive number of bins\n"),
    (["--test", "tcal", "--discrete", "yes"],
     "Error: --test tcal and --discrete yes disagree: --test tcal is --discrete no\n"),
    (["--test", "spiegelhalter", "--mode", "canonical"],
     "Error: --mode canonical: the spiegelhalter test is of one probability per prediction: use the binary or "
     "top-label mode\n"),
])
def test_tcal_test_bad_options_are_one_line_errors(args, message, tmp_path):
    out = tmp_path / "report.json"
    r = run("tcal", MULTI, *args, "--output", out)
    assert r.exit_code == 2
    assert r.stderr == message
    assert not out.exists()


def test_tcal_hosmer_lemeshow_with_too_few_groups_is_an_error(tmp_path):
    path = tmp_path / "two.csv"
    pd.DataFrame({"prob": [0.2, 0.2, 0.7, 0.7], "label": [0, 1, 0, 1]}).to_csv(path, index=False)
    r = run("tcal", path, "--test", "hosmer-lemeshow")
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {path}: the Hosmer-Lemeshow test needs at least 3 non-empty groups for its G - 2 "
                        f"degrees of freedom, but the predictions fall into 2 (tied predictions merge groups): use more "
                        f"--n-bins or more distinct predictions\n")


def test_tcal_spiegelhalter_on_the_binary_sample():
    doc = run_json("tcal", BINARY, "--test", "spiegelhalter")
    entry = doc["files"][0]
    assert entry["mode"] == "binary"
    assert entry["result"]["statistic_name"] == "Z"
    assert 0.0 <= entry["result"]["p_value"] <= 1.0


def test_tcal_test_table_states_the_decision_and_the_groups():
    r = run("tcal", MULTI, "--test", "hosmer-lemeshow", "--n-bins", "4")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "calibcli tcal --test hosmer-lemeshow: alpha 0.05" in out
    # top-label naive Bayes: most predictions are exactly 1, so one group misses with certainty
    assert "C-hat inf, chi-square, 1 df: p-value 0 at alpha 0.05: REJECT perfect calibration" in out
    assert "1 group(s) have E_g (1 - E_g / n_g) = 0" in out
    assert "observed O_g" in out and "expected E_g" in out
    r = run("tcal", BINARY, "--test", "spiegelhalter")
    assert r.exit_code == 0, r.stderr
    assert "Z 30.47, N(0, 1), two-sided: p-value 7.133e-204 at alpha 0.05: REJECT perfect calibration" in r.stdout


def test_small_states_keep_their_rows_and_give_the_dense_sums(rows):
    """A state of few rows (a small group) holds them, not 2^15-cell arrays; its sums are the dense ones."""
    p, y, w = rows
    small = GridSums().add_rows(p[:300], y[:300], w[:300])
    assert small.cells.count is None and small.tail.count is None
    dense = GridSums()
    dense.cells._densify()
    dense.tail._densify()
    dense.add_rows(p[:300], y[:300], w[:300])
    for a, b in zip(small.cox_rows(), dense.cox_rows()):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(small.uniform_cells(), dense.uniform_cells()):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # a small state merged into a dense one, through JSON, equals all rows at once
    rest = [np.tile(a[300:], 3) for a in (p, y, w)]  # 5100 rows: more than an eighth of the 2^15 cells
    big = GridSums().add_rows(*rest)
    assert big.cells.count is not None
    merged = GridSums.from_dict(json.loads(json.dumps(big.to_dict()))).merge(GridSums.from_dict(small.to_dict()))
    whole = GridSums().add_rows(*(np.concatenate([a[:300], r]) for a, r in zip((p, y, w), rest)))
    for a, b in zip(merged.cox_rows(), whole.cox_rows()):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_coefficient_equal_to_its_null_up_to_rounding_is_its_null():
    """No digits of noise: a fit 4e-16 away from its null reports the null, z 0 and p 1 (another machine's BLAS
    moves those digits), while a real difference of 1e-9 is kept."""
    from calibcli.clinical.cox import WaldEstimate

    noisy = WaldEstimate.of(1.0 + 4.4e-16, 0.086, null=1.0, alpha=0.05)
    assert (noisy.estimate, noisy.z, noisy.p_value) == (1.0, 0.0, 1.0)
    assert WaldEstimate.of(-9.3e-16, 0.22, null=0.0, alpha=0.05).z == 0.0
    real = WaldEstimate.of(1e-9, 0.22, null=0.0, alpha=0.05)
    assert real.estimate == 1e-9 and real.z == pytest.approx(1e-9 / 0.22)
