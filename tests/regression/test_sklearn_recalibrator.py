"""``calibcli.sklearn.RegressionRecalibrator``: the CLI's fit and apply on arrays (the same numbers, the same
document), and scikit-learn's parameter conventions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli import run
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from calibcli.sklearn import RegressionRecalibrator

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data" / "regression"
CAL, TEST = SAMPLES / "diabetes_forest_cal.csv", SAMPLES / "diabetes_forest.csv"
QUANTILES, ENSEMBLE, INTERVALS = (
    SAMPLES / "diabetes_quantiles.csv",
    SAMPLES / "diabetes_ensemble.csv",
    SAMPLES / "diabetes_conformal.csv",
)


def _cli(tmp_path, method, train, test, *fit_args):
    cal, out = tmp_path / "cal.json", tmp_path / "out.csv"
    r = run("recalibrate", "fit", train, "--method", method, "-o", cal, *fit_args)
    assert r.exit_code == 0, r.stderr
    r = run("recalibrate", "apply", cal, test, "-o", out)
    assert r.exit_code == 0, r.stderr
    return json.loads(cal.read_text()), pd.read_csv(out)


def _written(out: pd.DataFrame) -> tuple[list[float], np.ndarray]:
    names = [c for c in out.columns if c.startswith("q")]
    return [float(c[1:]) for c in names], out[names].to_numpy()


def test_std_scaling_is_the_clis_fit_and_apply(tmp_path):
    doc, out = _cli(tmp_path, "std-scaling", CAL, TEST)
    cal, test = pd.read_csv(CAL), pd.read_csv(TEST)
    recal = RegressionRecalibrator("std-scaling").fit(cal[["mean", "std"]], cal["y"])
    assert recal.calibrator_.factor == pytest.approx(doc["factor"], rel=1e-15)
    Z = recal.transform(test[["mean", "std"]])
    assert Z[:, 1] == pytest.approx(out["std"].to_numpy(), rel=1e-15)
    assert Z[:, 0].tolist() == test["mean"].tolist() and recal.kind_out_ == "gaussian"


@pytest.mark.parametrize(("source", "kind"), [(QUANTILES, "quantiles"), (ENSEMBLE, "samples")])
def test_isotonic_pit_on_quantiles_and_samples_is_the_clis(tmp_path, source, kind):
    doc, out = _cli(tmp_path, "isotonic-pit", source, source, "--seed", "2")
    frame = pd.read_csv(source)
    X = frame.drop(columns="y")
    levels = [float(c[1:]) for c in X.columns] if kind == "quantiles" else None
    recal = RegressionRecalibrator("isotonic-pit", kind=kind, quantile_levels=levels, seed=2).fit(X, frame["y"])
    assert list(recal.calibrator_.p) == doc["p"] and list(recal.calibrator_.r) == doc["r"]
    written_levels, written = _written(out)
    assert list(recal.levels_out_) == written_levels and recal.kind_out_ == "quantiles"
    assert recal.transform(X) == pytest.approx(written, rel=1e-15)


def test_conformal_on_an_interval_and_on_a_gaussian_is_the_clis(tmp_path):
    doc, out = _cli(tmp_path, "conformal", INTERVALS, INTERVALS, "--alpha", "0.1")
    frame = pd.read_csv(INTERVALS)
    X = frame[["lower_0.9", "upper_0.9"]]
    recal = RegressionRecalibrator("conformal", kind="intervals", level=0.9).fit(X, frame["y"])
    assert recal.calibrator_.margin == pytest.approx(doc["margin"], rel=1e-15)
    assert recal.transform(X) == pytest.approx(out[["lower_0.9", "upper_0.9"]].to_numpy(), rel=1e-15)
    doc, out = _cli(tmp_path, "conformal", CAL, TEST, "--alpha", "0.2")
    cal, test = pd.read_csv(CAL), pd.read_csv(TEST)
    recal = RegressionRecalibrator("conformal", level=0.8).fit(cal[["mean", "std"]], cal["y"])
    assert recal.kind_out_ == "intervals" and recal.levels_out_ == (0.8,)
    assert recal.transform(test[["mean", "std"]]) == pytest.approx(out[["lower_0.8", "upper_0.8"]].to_numpy())


def test_the_document_goes_both_ways(tmp_path):
    cal, test = pd.read_csv(CAL), pd.read_csv(TEST)
    recal = RegressionRecalibrator("isotonic-pit").fit(cal[["mean", "std"]].to_numpy(), cal["y"].to_numpy())
    path = tmp_path / "py.json"
    recal.to_json(path)
    out = tmp_path / "out.csv"
    assert run("recalibrate", "apply", path, TEST, "-o", out).exit_code == 0
    assert recal.transform(test[["mean", "std"]]) == pytest.approx(_written(pd.read_csv(out))[1], rel=1e-15)
    doc, _ = _cli(tmp_path, "isotonic-pit", QUANTILES, QUANTILES)
    loaded = RegressionRecalibrator.from_json(tmp_path / "cal.json")
    assert loaded.kind == "quantiles" and loaded.quantile_levels == [0.05, 0.25, 0.5, 0.75, 0.95]
    X = pd.read_csv(QUANTILES).drop(columns="y")
    assert loaded.transform(X) == pytest.approx(np.sort(X.to_numpy(), axis=1), rel=1e-15)
    assert RegressionRecalibrator.from_json(json.dumps(doc)).levels_out_ == loaded.levels_out_


def test_scikit_learns_parameter_conventions():
    recal = RegressionRecalibrator("conformal", kind="quantiles", quantile_levels=[0.1, 0.9], level=0.8, seed=4)
    params = recal.get_params()
    assert params == {"method": "conformal", "kind": "quantiles", "quantile_levels": [0.1, 0.9], "level": 0.8, "seed": 4}
    twin = clone(recal)
    assert twin is not recal and twin.get_params() == params
    assert twin.set_params(method="isotonic-pit").method == "isotonic-pit" and recal.method == "conformal"
    with pytest.raises(NotFittedError):
        recal.transform([[0.0, 1.0]])
    rng = np.random.default_rng(0)
    q = np.sort(rng.normal(size=(50, 2)), axis=1)
    fitted = recal.fit(q, rng.normal(size=50))
    assert fitted is recal and recal.n_features_in_ == 2
    with pytest.raises(AttributeError):
        clone(recal).calibrator_  # noqa: B018 (a clone is unfitted)


def test_bad_input_is_a_value_error():
    cal = pd.read_csv(CAL)
    X, y = cal[["mean", "std"]].to_numpy(), cal["y"].to_numpy()
    with pytest.raises(ValueError, match="std column holds values <= 0"):
        RegressionRecalibrator().fit(np.column_stack([X[:, 0], -X[:, 1]]), y)
    with pytest.raises(ValueError, match="--method std-scaling needs gaussian predictions, but the file holds quantiles"):
        RegressionRecalibrator(kind="quantiles", quantile_levels=[0.1, 0.9]).fit(np.sort(X, axis=1), y)
    with pytest.raises(ValueError, match="method is 'platt'"):
        RegressionRecalibrator("platt").fit(X, y)
    with pytest.raises(ValueError, match="y has 3 values for 100 rows"):
        RegressionRecalibrator().fit(X, y[:3])
    fitted = RegressionRecalibrator().fit(X, y)
    with pytest.raises(ValueError, match="X has 3 columns: a gaussian prediction has 2"):
        fitted.transform(np.column_stack([X, X[:, 1]]))
