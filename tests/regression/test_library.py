"""The library's regression functions: the command's numbers on array-likes, hand-worked cases, recalibrators."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from _cli import run
from _data import gaussian
from scipy import stats

from calibcli.core.errors import CalibcliError
from calibcli.regression import recalibrators
from calibcli.regression.library import regression_metrics


def test_hand_worked_gaussian_and_sample_scores():
    r = regression_metrics([0.0], mean=[0.0], std=[1.0])
    assert r["crps"].estimate == pytest.approx(2 * stats.norm.pdf(0) - 1 / math.sqrt(math.pi), rel=1e-12)
    assert r["nll"].estimate == pytest.approx(0.5 * math.log(2 * math.pi), rel=1e-12)
    # two members at -1 and 1, y = 0: mean |x - y| = 1, sum_jk |x_j - x_k| = 4
    s = regression_metrics([0.0, 0.0], samples=[[-1.0, 1.0], [-1.0, 1.0]])
    assert s["crps"].estimate == pytest.approx(1 - 4 / 8)
    fair = regression_metrics([0.0, 0.0], samples=[[-1.0, 1.0], [-1.0, 1.0]], crps_estimator="fair")
    assert fair["crps"].estimate == pytest.approx(1 - 4 / 4)


def test_interval_score_by_hand():
    # [0, 1] at 0.8 (a = 0.2): y = 2 is 1 above: 1 + (2 / 0.2) * 1 = 11; y = 0.5 inside: 1
    r = regression_metrics([2.0, 0.5], lower=[0.0, 0.0], upper=[1.0, 1.0], level=0.8)
    assert r["interval_score_0.8"].estimate == pytest.approx((11 + 1) / 2)
    assert r["picp_0.8"].estimate == 0.5


def test_quantile_pit_interpolates_between_levels():
    from calibcli.regression.scores import quantile_pit

    q = np.array([[0.0, 1.0, 3.0]])
    assert quantile_pit(np.array([2.0]), q, np.array([0.1, 0.5, 0.9]), np.array([0.5]))[0] == pytest.approx(0.7)
    assert quantile_pit(np.array([-5.0]), q, np.array([0.1, 0.5, 0.9]), np.array([0.5]))[0] == pytest.approx(0.05)


def test_library_equals_the_command(tmp_path):
    mu, s, y = gaussian(n=600, seed=11)
    path = tmp_path / "g.csv"
    frame = pd.DataFrame({"mean": mu, "std": s, "y": y})
    frame.to_csv(path, index=False)
    r = run("regression", path, "--n-boot", "25", "--seed", "4", "--json")
    cli = json.loads(r.stdout)["files"][0]["problems"][0]["metrics"]
    lib = regression_metrics(frame["y"], mean=frame["mean"], std=frame["std"], n_boot=25, seed=4)
    for name, m in cli.items():
        assert lib[name].estimate == pytest.approx(m["estimate"], rel=1e-12)
        if m["ci_low"] is not None:
            assert lib[name].ci_low == pytest.approx(m["ci_low"], rel=1e-12)


def test_library_refuses_bad_input():
    with pytest.raises(CalibcliError, match="std holds values <= 0"):
        regression_metrics([0.0], mean=[0.0], std=[0.0])
    with pytest.raises(CalibcliError, match="give one kind of prediction"):
        regression_metrics([0.0])
    with pytest.raises(CalibcliError, match="lower is above upper"):
        regression_metrics([0.0], lower=[1.0], upper=[0.0], level=0.9)


def test_std_scaling_is_the_nll_optimum_and_calibrates_an_overconfident_std():
    mu, s, y = gaussian(n=4000, seed=12, scale=0.6)
    fitted = recalibrators.StdScaling.fit(y, mu, s)
    nll = [
        regression_metrics(y, mean=mu, std=s * f)["nll"].estimate
        for f in (fitted.factor * 0.97, fitted.factor, fitted.factor * 1.03)
    ]
    assert nll[1] < nll[0] and nll[1] < nll[2]
    before = regression_metrics(y, mean=mu, std=s)["picp_0.9"].estimate
    after = regression_metrics(y, mean=mu, std=fitted.std(s))["picp_0.9"].estimate
    assert before < 0.85 and abs(after - 0.9) < 0.03
    assert recalibrators.from_dict(json.loads(json.dumps(fitted.to_dict()))) == fitted


def test_isotonic_pit_makes_held_out_quantiles_cover_their_levels():
    mu, s, y = gaussian(n=6000, seed=13, scale=0.6)
    fit, test = slice(0, 3000), slice(3000, None)
    cal = recalibrators.IsotonicPIT.fit(stats.norm.cdf((y[fit] - mu[fit]) / s[fit]))
    levels = np.array([0.1, 0.5, 0.9])
    q = cal.gaussian_quantiles(mu[test], s[test], levels)
    covered = (y[test][:, None] <= q).mean(axis=0)
    assert np.all(np.abs(covered - levels) < 0.03)  # (Monte Carlo sd about 0.005 at n = 3000)
    assert recalibrators.from_dict(cal.to_dict()) == cal


def test_conformal_reaches_the_nominal_coverage_on_held_out_rows():
    mu, s, y = gaussian(n=6000, seed=14, scale=0.5)
    half = stats.norm.ppf(0.95) * s
    fit, test = slice(0, 3000), slice(3000, None)
    cal = recalibrators.Conformal.fit(y[fit], mu[fit] - half[fit], mu[fit] + half[fit], 0.9)
    lo, hi = cal.interval(mu[test] - half[test], mu[test] + half[test])
    coverage = np.mean((lo <= y[test]) & (y[test] <= hi))
    assert abs(coverage - 0.9) < 0.02  # (Monte Carlo sd about 0.0055)
    with pytest.raises(CalibcliError, match="needs at least 9 calibration rows"):
        recalibrators.Conformal.fit(y[:5], lo[:5], hi[:5], 0.9)


def test_the_99_level_gaussian_scores_in_closed_form_are_their_definitions_row_by_row():
    """check_score and the 99-level interval score, one search per row, against the 99 losses of each row summed
    as defined: every row within 1e-13 relative, including a target at the mean and at an interval's end."""
    from scipy.special import ndtri

    from calibcli.regression import scores

    mu, s, y = gaussian(n=20_017, seed=3)
    y[:3] = mu[:3]
    y[3:6] = mu[3:6] + s[3:6] * ndtri(0.5 + scores.UCT_LEVELS[40] / 2.0)
    y[6:9] = mu[6:9] + s[6:9] * ndtri(scores.UCT_LEVELS[10])
    y[9:12] = mu[9:12] + 50.0 * s[9:12]  # beyond every level
    levels = scores.UCT_LEVELS
    defined_pinball = scores.pinball(y, mu[:, None] + s[:, None] * ndtri(levels)[None, :], levels)
    half = ndtri(0.5 + levels / 2.0)
    lower, upper = mu[:, None] - s[:, None] * half, mu[:, None] + s[:, None] * half
    defined_interval = np.mean(scores.interval_score(y[:, None], lower, upper, levels[None, :]), axis=1)
    np.testing.assert_allclose(scores.gaussian_pinball(y, mu, s), defined_pinball, rtol=1e-13, atol=0)
    np.testing.assert_allclose(scores.gaussian_interval_score_mean(y, mu, s), defined_interval, rtol=1e-13, atol=0)


def test_the_prediction_keywords_are_declared_once_and_listed_in_each_signature():
    import inspect

    from calibcli.regression.library import PREDICTION_KEYWORDS, prediction_matrix

    assert PREDICTION_KEYWORDS == (
        "mean", "std", "var", "quantiles", "quantile_levels", "lower", "upper", "level", "samples"
    )  # fmt: skip
    assert tuple(inspect.signature(prediction_matrix).parameters) == PREDICTION_KEYWORDS
    names = tuple(inspect.signature(regression_metrics).parameters)
    assert names[:10] == ("y_true", *PREDICTION_KEYWORDS) and names[10] == "sample_weight"
    kind, preds, levels = prediction_matrix(quantiles=[[0.0, 1.0]], quantile_levels=[0.25, 0.75])
    assert kind == "quantiles" and preds.tolist() == [[0.0, 1.0]] and levels == (0.25, 0.75)
    with pytest.raises(TypeError, match="unexpected keyword argument 'prediction'"):
        regression_metrics([0.0], prediction=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'stdev'"):
        regression_metrics([0.0], mean=[0.0], stdev=[1.0])


def test_isotonic_pit_relabelled_levels_by_hand():
    cal = recalibrators.IsotonicPIT((0.0, 0.5, 1.0), (0.0, 0.25, 1.0))
    assert cal.relabelled_levels([0.5, 0.75]) == (0.25, 0.625)
    assert recalibrators.member_levels(3).tolist() == [0.25, 0.5, 0.75]
    assert recalibrators.level_text(1e-05) == "0.00001" and recalibrators.level_text(1 / 3) == "0.333333"
    with pytest.raises(CalibcliError, match="maps the quantile levels 0.5 and 0.5000001 to one level 0.25"):
        cal.relabelled_levels([0.5, 0.5000001])


def test_the_state_sums_are_the_same_floats_however_the_rows_are_split():
    """The accumulator's column sums, weight and bins' weights are exact pairs: one batch, batches of 7 rows, and two
    parts merged in either order hold the same floats (a spread across groups, a small difference of two means,
    showed the plain sums' last bits between the local engine's batches and the Dask engine's fragments)."""
    from calibcli.regression.accumulator import RegressionAccumulator
    from calibcli.regression.kinds import Prediction, RegressionOptions

    mu, s, y = gaussian(2001, seed=4)
    preds = np.column_stack([mu, s])
    w = np.random.default_rng(5).uniform(0.1, 10.0, len(y))
    for weights in (None, w):
        def fed(*parts):
            acc = RegressionAccumulator(Prediction("gaussian", (), RegressionOptions(n_boot=0)))
            for part in parts:
                acc.update(part, preds[part], y[part], None if weights is None else weights[part])
            return acc

        rows = np.arange(len(y))
        whole = fed(rows)
        batched = fed(*np.array_split(rows, len(y) // 7))
        a, b = fed(rows[1000:]), fed(rows[:1000])
        merged = a.merge(b)
        for other in (batched, merged, fed(rows[:1000]).merge(fed(rows[1000:]))):
            assert np.array_equal(other.totals, whole.totals) and other.weight == whole.weight
            for binned in ("curve", "pit_fine", "pit_coarse"):  # (the bins' weights: exact pairs too)
                assert np.array_equal(getattr(other, binned), getattr(whole, binned)), binned
        # each sum the exact sum of the rows' values, correctly rounded (math.fsum), to its last bit or one unit
        prediction = whole.prediction
        values = prediction.derive(preds, y, rows).values * (1.0 if weights is None else weights[:, None])
        exact = np.array([math.fsum(values[:, j]) for j in range(values.shape[1])])
        assert np.all(np.abs(whole.totals - exact) <= np.spacing(np.abs(exact)))
        assert whole.weight == (len(y) if weights is None else math.fsum(w))


def test_weights_read_by_the_command_are_the_library_s_sample_weight(tmp_path):
    """``regression --weight-col`` reads the weights (the command once failed with an internal error: its reading
    plan had no weight scale) and gives the library's numbers with ``sample_weight``; with ``--group-by`` the
    groups' numbers do not depend on the batch size."""
    mu, s, y = gaussian(n=600, seed=12)
    w = np.random.default_rng(3).uniform(0.2, 5.0, len(y))
    path = tmp_path / "g.csv"
    frame = pd.DataFrame({"mean": mu, "std": s, "y": y, "w": w, "g": np.where(np.arange(len(y)) % 3, "a", "b")})
    frame.to_csv(path, index=False)
    r = run("regression", path, "--weight-col", "w", "--n-boot", "25", "--seed", "4", "--json")
    assert r.exit_code == 0, r.stderr
    cli = json.loads(r.stdout)["files"][0]["problems"][0]["metrics"]
    lib = regression_metrics(frame["y"], mean=frame["mean"], std=frame["std"], sample_weight=w, n_boot=25, seed=4)
    unweighted = regression_metrics(frame["y"], mean=frame["mean"], std=frame["std"])
    assert cli["mace"]["estimate"] != pytest.approx(unweighted["mace"].estimate, rel=1e-6)
    for name, m in cli.items():
        assert lib[name].estimate == pytest.approx(m["estimate"], rel=1e-12), name
    grouped = [
        json.loads(run("regression", path, "--weight-col", "w", "--group-by", "g", "--json", *rows).stdout)
        for rows in ((), ("--batch-rows", "7"))
    ]
    for doc in grouped:
        doc["parameters"].pop("batch_rows")
    assert grouped[0] == grouped[1]
