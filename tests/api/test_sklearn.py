"""calibcli.sklearn: the Recalibrator meta-estimator (scikit-learn's estimator checks, prefit and cross-fitted,
every method, pipelines, the calibrator document both ways through the CLI) and the calibration scorers."""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_iris  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate, train_test_split  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import calibcli.sklearn as sk_module  # noqa: E402
from _cli import run  # noqa: E402  (tests/ is on sys.path)
from calibcli.calibrators import METHODS, fit_calibrator, fit_multiclass  # noqa: E402
from calibcli.metrics import compute, ece  # noqa: E402
from calibcli.sklearn import Recalibrator, make_calibration_scorer  # noqa: E402

PYTHON_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "python.md"


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def cancer():
    """Breast cancer: a naive Bayes model fitted on 40%, the rest split into calibration and test halves."""
    X, y = load_breast_cancer(return_X_y=True)
    X_fit, X_rest, y_fit, y_rest = train_test_split(X, y, test_size=0.6, random_state=0, stratify=y)
    X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0, stratify=y_rest)
    return GaussianNB().fit(X_fit, y_fit), X_cal, y_cal, X_test, y_test


@pytest.fixture(scope="module")
def iris():
    """Iris with text labels: a logistic regression on half, the other half to recalibrate on."""
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    X_fit, X_cal, y_fit, y_cal = train_test_split(X, names, test_size=0.5, random_state=0, stratify=names)
    return LogisticRegression(C=0.05, max_iter=1000).fit(X_fit, y_fit), X_cal, y_cal


# --------------------------------------------------------------------------- scikit-learn's estimator checks


# Venn-Abers takes no sample weights (its validity guarantee is for exchangeable, unweighted rows: the
# calibrators refuse them), so the checks that fit with sample_weight fail by design.
VENN_ABERS_REFUSES_WEIGHTS = {
    name: "venn-abers takes no sample weights (its validity guarantee needs exchangeable unweighted rows)"
    for name in ("check_sample_weights_pandas_series", "check_sample_weights_not_an_array", "check_sample_weights_list",
                 "check_all_zero_sample_weights_error", "check_sample_weights_shape",
                 "check_sample_weights_not_overwritten", "check_sample_weight_equivalence_on_dense_data",
                 "check_sample_weight_equivalence_on_sparse_data", "check_classifiers_one_label_sample_weights")
}


def expected_failed_checks(estimator):
    return VENN_ABERS_REFUSES_WEIGHTS if estimator.method == "venn-abers" else {}


# Temperature scaling is left out: on the checks' random data the probabilities carry no information about
# the labels, where the log-loss has no minimiser with T > 0 and the fit refuses by design
# (tests/calibrators/test_calibrators.py covers that message).
@parametrize_with_checks(
    [
        Recalibrator(LogisticRegression(), cv=3),
        Recalibrator(LogisticRegression(), method="platt", cv=3, ensemble=True),
        Recalibrator(LogisticRegression(), method="venn-abers", cv=3),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- fitting


def test_prefit_fits_the_map_the_cli_fits(cancer):
    model, X_cal, y_cal, X_test, _ = cancer
    for estimator in (model, FrozenEstimator(model)):
        recal = Recalibrator(estimator, method="isotonic").fit(X_cal, y_cal)
        ref = fit_calibrator("isotonic", y_cal, model.predict_proba(X_cal)[:, 1])
        g = ref.predict(model.predict_proba(X_test)[:, 1])
        assert_array_equal(recal.predict_proba(X_test), np.column_stack([1 - g, g]))
        assert recal.estimator_ is estimator and recal.calibrator_.to_dict() == ref.to_dict()
        assert_array_equal(recal.classes_, [0, 1]) and recal.n_features_in_ == 30


def test_prefit_needs_a_fitted_estimator_and_no_fit_params(cancer):
    with pytest.raises(sklearn.exceptions.NotFittedError, match="GaussianNB is not fitted: with cv=None"):
        Recalibrator(GaussianNB()).fit([[0.0], [1.0]], [0, 1])
    model, X_cal, y_cal, _, _ = cancer
    with pytest.raises(ValueError, match=re.escape("fit parameters ['var_smoothing'] are for the estimator's fit")):
        Recalibrator(model).fit(X_cal, y_cal, var_smoothing=1e-9)


def test_cross_fitting_one_map_on_out_of_fold_probabilities(cancer):
    model, X_cal, y_cal, X_test, _ = cancer
    X = np.vstack([X_cal, X_test])
    y = np.concatenate([y_cal, cancer[4]])
    recal = Recalibrator(GaussianNB(), method="platt", cv=4).fit(X, y)
    oof = np.empty(len(y))
    for train, test in StratifiedKFold(4).split(X, y):
        oof[test] = GaussianNB().fit(X[train], y[train]).predict_proba(X[test])[:, 1]
    assert recal.calibrator_.to_dict()["params"] == fit_calibrator("platt", y, oof).to_dict()["params"]
    assert_allclose(recal.estimator_.theta_, GaussianNB().fit(X, y).theta_)
    ensemble = Recalibrator(GaussianNB(), method="platt", cv=4, ensemble=True).fit(X, y)
    assert len(ensemble.calibrated_classifiers_) == 4 and not hasattr(ensemble, "calibrator_")
    mean = np.mean([np.column_stack([1 - c.predict(e.predict_proba(X)[:, 1]), c.predict(e.predict_proba(X)[:, 1])])
                    for e, c in ensemble.calibrated_classifiers_], axis=0)
    assert_allclose(ensemble.predict_proba(X), mean)
    with pytest.raises(ValueError, match="to_json saves one map"):
        ensemble.to_json()


@pytest.mark.parametrize("method", METHODS)
def test_every_method_binary_and_multiclass(method, cancer, iris):
    model, X_cal, y_cal, X_test, _ = cancer
    recal = Recalibrator(model, method=method).fit(X_cal, y_cal)
    P = recal.predict_proba(X_test)
    assert P.shape == (len(X_test), 2) and rows_are_probabilities(P)
    clf, X3, y3 = iris
    for mode in (None, "marginal"):
        recal = Recalibrator(clf, method=method, mode=mode).fit(X3, y3)
        P = recal.predict_proba(X3)
        assert P.shape == (len(X3), 3) and rows_are_probabilities(P)
        assert set(recal.predict(X3)) <= {"setosa", "versicolor", "virginica"}
        c = np.searchsorted(clf.classes_, y3)
        expected = fit_multiclass(method, c, clf.predict_proba(X3), mode=mode or "top-label",
                                  rng=np.random.default_rng(0)).predict(clf.predict_proba(X3))
        assert_allclose(P, expected, rtol=1e-12, atol=1e-15)


def rows_are_probabilities(P):
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    return bool(np.all((P >= 0) & (P <= 1)))


def test_method_options_and_their_errors(cancer):
    model, X_cal, y_cal, X_test, _ = cancer
    recal = Recalibrator(model, method="histogram", n_bins=5).fit(X_cal, y_cal)
    assert len(np.unique(recal.predict_proba(X_test)[:, 1])) <= 5
    with pytest.raises(ValueError, match=re.escape("degree does not apply to method 'platt': it is an option of polynomial")):
        Recalibrator(model, method="platt", degree=2).fit(X_cal, y_cal)
    with pytest.raises(ValueError, match="method is 'magic': expected one of platt"):
        Recalibrator(model, method="magic").fit(X_cal, y_cal)
    with pytest.raises(ValueError, match="method 'venn-abers' does not take sample weights"):
        Recalibrator(model, method="venn-abers").fit(X_cal, y_cal, sample_weight=np.ones(len(y_cal)))
    with pytest.raises(ValueError, match=re.escape("y holds the label 7, which is not one of the estimator's classes [0, 1]")):
        Recalibrator(model).fit(X_cal[:3], [0, 1, 7])
    weighted = Recalibrator(model, method="platt").fit(X_cal, y_cal, sample_weight=np.full(len(y_cal), 3.0))
    assert_allclose(weighted.predict_proba(X_test), Recalibrator(model, method="platt").fit(X_cal, y_cal).predict_proba(X_test))


def test_venn_abers_intervals(cancer, iris):
    model, X_cal, y_cal, X_test, _ = cancer
    va = Recalibrator(model, method="venn-abers").fit(X_cal, y_cal)
    p0, p1 = va.predict_interval(X_test)
    p = va.predict_proba(X_test)[:, 1]
    assert np.all(p0 <= p + 1e-12) and np.all(p <= p1 + 1e-12)
    ref0, ref1 = va.calibrator_.predict_interval(model.predict_proba(X_test)[:, 1])
    assert_array_equal(p0, ref0)
    assert_array_equal(p1, ref1)
    clf, X3, y3 = iris
    lo, hi = Recalibrator(clf, method="venn-abers", mode="marginal").fit(X3, y3).predict_interval(X3)
    assert lo.shape == hi.shape == (len(X3), 3) and np.all(lo <= hi)
    lo, hi = Recalibrator(clf, method="venn-abers").fit(X3, y3).predict_interval(X3)
    assert lo.shape == (len(X3),)
    with pytest.raises(ValueError, match="predict_interval is Venn-Abers' interval"):
        Recalibrator(model, method="platt").fit(X_cal, y_cal).predict_interval(X_test)


# --------------------------------------------------------------------------- scikit-learn's machinery


def test_params_clone_pipeline_and_grid_search(cancer):
    model, X_cal, y_cal, X_test, y_test = cancer
    est = Recalibrator(LogisticRegression(max_iter=2000), method="beta", cv=3, clip=1e-9, seed=4)
    params = est.get_params()
    assert params["method"] == "beta" and params["clip"] == 1e-9 and params["estimator__max_iter"] == 2000
    copy = clone(est)
    assert copy.get_params()["seed"] == 4 and copy.estimator is not est.estimator
    est.set_params(method="platt", clip=None, estimator__C=0.5)
    assert est.method == "platt" and est.estimator.C == 0.5
    X = np.vstack([X_cal, X_test])
    y = np.concatenate([y_cal, y_test])
    inner = make_pipeline(StandardScaler(), Recalibrator(LogisticRegression(), cv=3)).fit(X, y)
    outer = Recalibrator(make_pipeline(StandardScaler(), LogisticRegression()), cv=3).fit(X, y)
    for fitted in (inner, outer):
        assert rows_are_probabilities(fitted.predict_proba(X))
    search = GridSearchCV(Recalibrator(GaussianNB(), cv=3), {"method": ["isotonic", "platt", "beta"]}, cv=3,
                          scoring=make_calibration_scorer("ece_l1_plugin", n_bins=10)).fit(X, y)
    assert search.best_params_["method"] in ("isotonic", "platt", "beta")
    assert np.all(search.cv_results_["mean_test_score"] <= 0)


def test_dataframe_features_keep_their_names():
    data = load_breast_cancer(as_frame=True)
    recal = Recalibrator(GaussianNB(), cv=3).fit(data.data, data.target)
    assert list(recal.feature_names_in_) == list(data.data.columns)
    assert recal.predict_proba(data.data.iloc[:5]).shape == (5, 2)


# --------------------------------------------------------------------------- scorers


def test_scorer_equals_the_metric_negated(cancer, iris):
    model, X_cal, y_cal, X_test, y_test = cancer
    scorer = make_calibration_scorer("ece_l2_debiased_dpe", n_bins=10)
    expected = ece(y_test, model.predict_proba(X_test)[:, 1], n_bins=10, norm="l2", estimator="debiased_dpe").estimate
    assert scorer(model, X_test, y_test) == -expected
    clf, X3, y3 = iris  # text labels, three classes: mapped through classes_
    c = np.searchsorted(clf.classes_, y3)
    assert make_calibration_scorer("smece", mode="marginal")(clf, X3, y3) == -compute(
        "smece", c, clf.predict_proba(X3), mode="marginal").estimate
    assert make_calibration_scorer("brier_score_multiclass")(clf, X3, y3) < 0
    p = make_calibration_scorer("tcal_p_value", n_boot=400)(model, X_test, y_test)
    assert 0 < p <= 1  # higher is better: returned as it is
    assert repr(scorer) == "make_calibration_scorer('ece_l2_debiased_dpe', n_bins=10)"
    slope = compute("cox_slope", y_test, model.predict_proba(X_test)[:, 1]).estimate
    assert make_calibration_scorer("cox_slope")(model, X_test, y_test) == -abs(slope - 1.0)  # best at 1
    with pytest.raises(ValueError, match="brier_uncertainty is a part of a decomposition"):
        make_calibration_scorer("brier_uncertainty")
    with pytest.raises(ValueError, match="unknown metric 'ece'"):
        make_calibration_scorer("ece")


def test_scorers_in_cross_validate(cancer):
    X, y = load_breast_cancer(return_X_y=True)
    scoring = {"ece": make_calibration_scorer(), "smece": make_calibration_scorer("smece"),
               "brier": make_calibration_scorer("brier_score")}
    scores = cross_validate(GaussianNB(), X, y, cv=3, scoring=scoring)
    for name in scoring:
        assert scores[f"test_{name}"].shape == (3,) and np.all(scores[f"test_{name}"] < 0)
    assert make_calibration_scorer is sk_module.make_calibration_scorer
    import calibcli.metrics

    assert calibcli.metrics.make_calibration_scorer is make_calibration_scorer


def test_scorer_weighs_rows_with_metadata_routing():
    X, y = load_breast_cancer(return_X_y=True)
    w = np.random.default_rng(0).random(len(y)) * 3
    scorer = make_calibration_scorer("ece_l1_plugin")
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_validate(GaussianNB().set_fit_request(sample_weight=False), X, y, cv=3, scoring=scorer,
                                params={"sample_weight": w})["test_score"]
    for score, (train, test) in zip(scores, StratifiedKFold(3).split(X, y)):
        p = GaussianNB().fit(X[train], y[train]).predict_proba(X[test])[:, 1]
        assert score == -ece(y[test], p, sample_weight=w[test]).estimate


# --------------------------------------------------------------------------- the calibrator document, both ways


def test_map_fitted_in_python_is_applied_by_the_cli(tmp_path, cancer):
    model, X_cal, y_cal, X_test, y_test = cancer
    recal = Recalibrator(FrozenEstimator(model), method="beta").fit(X_cal, y_cal)
    text = recal.to_json(tmp_path / "cal.json")
    assert json.loads((tmp_path / "cal.json").read_text()) == json.loads(text)
    pd.DataFrame({"prob": model.predict_proba(X_test)[:, 1], "label": y_test}).to_parquet(tmp_path / "test.parquet")
    ok("recalibrate", "apply", tmp_path / "cal.json", tmp_path / "test.parquet", "-o", tmp_path / "out.parquet")
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert_array_equal(out["prob"].to_numpy(), recal.predict_proba(X_test)[:, 1])
    assert_array_equal(out["label"], y_test)


def test_map_fitted_by_the_cli_is_applied_in_python(tmp_path, cancer):
    model, X_cal, y_cal, X_test, _ = cancer
    pd.DataFrame({"prob": model.predict_proba(X_cal)[:, 1], "label": y_cal}).to_csv(tmp_path / "cal.csv", index=False)
    ok("recalibrate", "fit", tmp_path / "cal.csv", "--method", "scaling-binning", "--n-bins", "6", "--seed", "3",
       "-o", tmp_path / "cal.json")
    loaded = Recalibrator.from_json(tmp_path / "cal.json", model)
    assert (loaded.method, loaded.n_bins, loaded.seed) == ("scaling-binning", 6, 3)
    refit = Recalibrator(model, method="scaling-binning", n_bins=6, seed=3).fit(X_cal, y_cal)
    assert_array_equal(loaded.predict_proba(X_test), refit.predict_proba(X_test))
    pd.DataFrame({"prob": model.predict_proba(X_test)[:, 1]}).to_parquet(tmp_path / "test.parquet")
    ok("recalibrate", "apply", tmp_path / "cal.json", tmp_path / "test.parquet", "-o", tmp_path / "out.parquet")
    assert_array_equal(pd.read_parquet(tmp_path / "out.parquet")["prob"].to_numpy(), loaded.predict_proba(X_test)[:, 1])
    same = Recalibrator.from_json((tmp_path / "cal.json").read_text(), model)
    assert json.loads(same.to_json())["calibrator"] == json.loads((tmp_path / "cal.json").read_text())["calibrator"]


@pytest.mark.parametrize(("method", "mode"), [("temperature", None), ("isotonic", "marginal"), ("platt", "top-label")])
def test_multiclass_documents_both_ways(tmp_path, iris, method, mode):
    clf, X3, y3 = iris
    recal = Recalibrator(clf, method=method, mode=mode).fit(X3, y3)
    recal.to_json(tmp_path / "cal.json")
    doc = json.loads((tmp_path / "cal.json").read_text())
    assert doc["columns"]["probabilities"] == ["p_setosa", "p_versicolor", "p_virginica"]
    assert doc["class_names"] == ["setosa", "versicolor", "virginica"] and doc["n"] == len(y3)
    P = clf.predict_proba(X3)
    pd.DataFrame({**{f"p_{c}": P[:, k] for k, c in enumerate(clf.classes_)}, "label": y3}).to_csv(
        tmp_path / "data.csv", index=False)
    ok("recalibrate", "apply", tmp_path / "cal.json", tmp_path / "data.csv", "-o", tmp_path / "out.parquet")
    out = pd.read_parquet(tmp_path / "out.parquet")[["p_setosa", "p_versicolor", "p_virginica"]].to_numpy()
    assert_allclose(out, recal.predict_proba(X3), rtol=1e-15, atol=0)
    # and the reverse: the CLI fits on the same file, Python applies its map
    args = ["--mode", mode] if mode else []
    ok("recalibrate", "fit", tmp_path / "data.csv", "--method", method, *args, "-o", tmp_path / "cli.json")
    loaded = Recalibrator.from_json(tmp_path / "cli.json", clf)
    assert_allclose(loaded.predict_proba(X3), recal.predict_proba(X3), rtol=1e-12, atol=1e-15)


def test_from_json_checks_the_document_and_the_classes(tmp_path, cancer, iris):
    model, X_cal, y_cal, _, _ = cancer
    text = Recalibrator(model, method="platt").fit(X_cal, y_cal).to_json()
    clf = iris[0]
    with pytest.raises(ValueError, match=re.escape("the calibrator was fitted on 2 classes (['0', '1']) but "
                                                   "LogisticRegression has 3")):
        Recalibrator.from_json(text, clf)
    with pytest.raises(Exception, match="not a calibrator"):
        Recalibrator.from_json('{"kind": "something else"}', model)
    with pytest.raises(Exception, match="calibrator: missing field 'params'"):
        doc = json.loads(text)
        del doc["calibrator"]["params"]
        Recalibrator.from_json(doc, model)


# --------------------------------------------------------------------------- docs


def test_doctests_of_calibcli_sklearn():
    result = doctest.testmod(sk_module)
    assert result.attempted >= 20 and result.failed == 0


def test_readme_from_python_section_runs(tmp_path, monkeypatch):
    """The "From Python" guide's example (docs/guides/python.md), run as written (in a scratch directory, headless)."""
    import matplotlib

    matplotlib.use("Agg")
    text = PYTHON_GUIDE.read_text()
    start = text.index("# From Python\n")
    section = text[start: text.index("\n## Library\n", start)]
    code = "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.S))
    assert "Recalibrator" in code and "plot_diagram" in code
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "docs/guides/python.md: From Python", "exec"), namespace)
    assert (tmp_path / "reliability.png").stat().st_size > 10_000
    table = namespace["table"]
    assert list(table["model"].unique()) == ["naive Bayes", "naive Bayes + isotonic"]
