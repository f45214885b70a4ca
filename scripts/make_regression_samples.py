"""Regenerate sample_data/regression/: real regression dumps, made here offline from scikit-learn's diabetes data.

    python scripts/make_regression_samples.py

Each file holds the held-out rows (a seeded split of the 442 patients: 292 to fit, 150 to evaluate) with the
observed disease progression ``y`` and one kind of prediction:

- ``diabetes_forest.csv``: ``mean``, ``std`` of a RandomForestRegressor's 20 trees (their mean and spread): a
  heteroscedastic std that is overconfident, as a forest's spread is (the README's example);
- ``diabetes_forest_cal.csv``: the same forest's ``mean``, ``std`` on 100 other held-out rows (to fit a
  recalibration on);
- ``diabetes_gp.csv``: ``mean``, ``std`` of a GaussianProcessRegressor (constant x RBF + white noise);
- ``diabetes_quantiles.csv``: ``q0.05 ... q0.95`` of five GradientBoostingRegressor(loss="quantile") models;
- ``diabetes_quantiles_long.csv``: the same quantiles in long form (``id, quantile_level, value, y``, rows shuffled);
- ``diabetes_conformal.csv``: ``lower_0.9``, ``upper_0.9`` of MAPIE's split-conformal interval around a ridge
  regression (when MAPIE is installed; else the same split-conformal rule written out here);
- ``diabetes_ensemble.csv``: ``s0 ... s19``, the same 20 trees' predictions as samples.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

OUT = Path(__file__).resolve().parents[1] / "sample_data" / "regression"
LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)


def main() -> None:
    X, y = load_diabetes(return_X_y=True)
    X_fit, X_test, y_fit, y_test = train_test_split(X, y, test_size=150, random_state=0)
    X_train, X_cal, y_train, y_cal = train_test_split(X_fit, y_fit, test_size=100, random_state=0)
    OUT.mkdir(parents=True, exist_ok=True)
    scale = y_train.std()

    kernel = ConstantKernel(1.0) * RBF(length_scale=1.0) + WhiteKernel(noise_level=0.05, noise_level_bounds="fixed")
    gp = GaussianProcessRegressor(kernel=kernel, normalize_y=True, random_state=0).fit(X_train, y_train)
    mean, std = gp.predict(X_test, return_std=True)
    pd.DataFrame({"mean": mean.round(4), "std": std.round(4), "y": y_test}).to_csv(OUT / "diabetes_gp.csv", index=False)

    quantiles = {
        f"q{q}": GradientBoostingRegressor(loss="quantile", alpha=q, n_estimators=150, max_depth=2, random_state=0)
        .fit(X_fit, y_fit)
        .predict(X_test)
        .round(3)
        for q in LEVELS
    }
    pd.DataFrame({**quantiles, "y": y_test}).to_csv(OUT / "diabetes_quantiles.csv", index=False)
    _long_form(quantiles, y_test).to_csv(OUT / "diabetes_quantiles_long.csv", index=False)

    lower, upper = _conformal(X_train, y_train, X_cal, y_cal, X_test)
    pd.DataFrame({"lower_0.9": lower.round(3), "upper_0.9": upper.round(3), "y": y_test}).to_csv(
        OUT / "diabetes_conformal.csv", index=False
    )

    forest = RandomForestRegressor(n_estimators=20, min_samples_leaf=5, random_state=0).fit(X_train, y_train)
    for name, (X_part, y_part) in {
        "diabetes_forest.csv": (X_test, y_test),
        "diabetes_forest_cal.csv": (X_cal, y_cal),
    }.items():
        trees = np.stack([tree.predict(X_part) for tree in forest.estimators_], axis=1)
        frame = {"mean": trees.mean(axis=1).round(3), "std": trees.std(axis=1).round(3), "y": y_part}
        pd.DataFrame(frame).to_csv(OUT / name, index=False)
        if name == "diabetes_forest.csv":
            samples = {f"s{j}": trees[:, j].round(3) for j in range(trees.shape[1])}
            pd.DataFrame({**samples, "y": y_part}).to_csv(OUT / "diabetes_ensemble.csv", index=False)
    print(f"wrote {len(list(OUT.glob('*.csv')))} files to {OUT} (target scale {scale:.1f})")


def _long_form(quantiles: dict, y: np.ndarray) -> pd.DataFrame:
    """The same quantiles in long form (one row per id and level, ``id, quantile_level, value, y``), its rows
    shuffled (seeded): the pivot by id does not need them grouped."""
    wide = pd.DataFrame({"id": np.arange(len(y)), **quantiles, "y": y})
    long = wide.melt(id_vars=["id", "y"], var_name="quantile_level", value_name="value")
    long["quantile_level"] = long["quantile_level"].str[1:].astype(float)
    return long[["id", "quantile_level", "value", "y"]].sample(frac=1, random_state=0)


def _conformal(X_train, y_train, X_cal, y_cal, X_test) -> tuple[np.ndarray, np.ndarray]:
    """A 90% split-conformal interval around a ridge regression: MAPIE's SplitConformalRegressor when installed."""
    try:
        from mapie.regression import SplitConformalRegressor
    except ImportError:
        model = Ridge(alpha=0.1).fit(X_train, y_train)
        scores = np.abs(y_cal - model.predict(X_cal))
        k = int(np.ceil((len(scores) + 1) * 0.9))
        q = np.sort(scores)[k - 1]
        centre = model.predict(X_test)
        return centre - q, centre + q
    mapie = SplitConformalRegressor(Ridge(alpha=0.1), confidence_level=0.9, prefit=False)
    mapie.fit(X_train, y_train).conformalize(X_cal, y_cal)
    _, intervals = mapie.predict_interval(X_test)
    return intervals[:, 0, 0], intervals[:, 1, 0]


if __name__ == "__main__":
    main()
