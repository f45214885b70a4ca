"""Regenerate ``sample_data/monitor/``: a real model's scores over twelve weeks, with a drift induced from week 9.

The task is the 8x8 digits that ship inside scikit-learn (1,797 images), binary: is the digit 5 or more? The
features are the 16 sums of 2x2 pixel blocks (a coarse 4x4 image, divided by 4), the model a logistic
regression Platt-recalibrated by :class:`sklearn.calibration.CalibratedClassifierCV` (sigmoid, 3 folds): a
model that is calibrated at launch, right about 78% of the time. Every image is scored once, out of fold
(5-fold cross-fitting, so no image is scored by a model that saw it). A fifth of the images, drawn at random,
is the validation set the model ships with; the other 1,437 images are the production population: 50 a day
are drawn from it (with replacement) at random times over the 84 days 2024-01-01 .. 2024-03-24. From 2024-02-26
(week 9) on, an upstream feature pipeline changes the scale of feature 8 (the block the model weighs most): it
arrives multiplied by 3. The labels are the images' own; only the model's inputs drift, so its probabilities stop meaning
what they say.

Files (pandas/pyarrow):

- ``scores.parquet``: the production rows, columns ``ts`` (timestamp, UTC), ``prob`` (P(digit >= 5)),
  ``label``; in a random order (the monitor needs none).
- ``daily/date=YYYY-MM-DD/part-0.parquet``: the same rows as a date-partitioned table, one directory a day
  (what a daily scoring job writes), each day's rows in time order.
- ``validation.csv``: the validation fifth, ``prob`` and ``label``: the reference the model shipped with.

Run: ``python sample_data/monitor/make_monitor_data.py`` (seeded: the same files up to the writers' versions).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

HERE = Path(__file__).resolve().parent
SEED = 20240101
DAYS = 84
START = pd.Timestamp("2024-01-01", tz="UTC")
DRIFT_FROM = pd.Timestamp("2024-02-26", tz="UTC")
DRIFTING_FEATURE = 8
FACTOR = 3.0
ROWS_PER_DAY = 50


def main() -> None:
    digits = load_digits()
    X = digits.images.reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(-1, 16) / 4.0
    y = (digits.target >= 5).astype(np.int64)
    rng = np.random.default_rng(SEED)
    n = len(y)
    validation = np.zeros(n, dtype=bool)
    validation[rng.choice(n, n // 5, replace=False)] = True
    production = np.flatnonzero(~validation)
    ts = START + pd.to_timedelta(np.sort(rng.integers(0, DAYS * 86400, DAYS * ROWS_PER_DAY)), unit="s")
    order = rng.choice(production, len(ts))  # which image arrives at each time (with replacement)
    late = np.asarray(ts >= DRIFT_FROM)

    prob, prob_drifted = np.empty(n), np.empty(n)
    for fit, held in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        model = CalibratedClassifierCV(LogisticRegression(C=0.05, max_iter=5000), method="sigmoid", cv=3)
        model.fit(X[fit], y[fit])
        prob[held] = model.predict_proba(X[held])[:, 1]
        seen = X[held].copy()
        seen[:, DRIFTING_FEATURE] *= FACTOR
        prob_drifted[held] = model.predict_proba(seen)[:, 1]

    scores = pd.DataFrame({"ts": ts, "prob": np.where(late, prob_drifted[order], prob[order]), "label": y[order]})
    scores.sample(frac=1.0, random_state=SEED).reset_index(drop=True).to_parquet(HERE / "scores.parquet", index=False)
    daily = HERE / "daily"
    shutil.rmtree(daily, ignore_errors=True)
    for date, rows in scores.groupby(scores["ts"].dt.strftime("%Y-%m-%d")):
        folder = daily / f"date={date}"
        folder.mkdir(parents=True)
        rows.reset_index(drop=True).to_parquet(folder / "part-0.parquet", index=False)
    pd.DataFrame({"prob": prob[validation], "label": y[validation]}).to_csv(
        HERE / "validation.csv", index=False, float_format="%.12g"
    )
    print(f"{len(scores)} production rows over {DAYS} days, drift from {DRIFT_FROM.date()}; "
          f"{int(validation.sum())} validation rows")


if __name__ == "__main__":
    main()
