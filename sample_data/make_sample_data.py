"""Regenerate the bundled sample data: real model outputs on datasets that ship inside scikit-learn.

- ``breast_cancer_nb.{csv,parquet}``: binary. Gaussian naive Bayes on the Wisconsin breast cancer
  data (569 rows), out-of-fold probabilities from 5-fold cross-validation (naive Bayes is famously
  overconfident). Columns: ``prob`` (P(benign)), ``label`` (1 = benign).
- ``digits_nb.{csv,parquet}``: 10 classes. Gaussian naive Bayes on the 8x8 digits (1797 rows),
  out-of-fold. Columns ``p_0`` .. ``p_9``, ``label``.
- ``eval_shards/``: the layout an evaluation job writes, hive-partitioned by model: the breast cancer
  data scored out-of-fold by naive Bayes (``model=nb``) and by a logistic regression
  (``model=logreg``), each model's rows in Parquet shards ``part-0.parquet`` .. ``part-2.parquet``.
  Read as one dataset (``calibcli ece sample_data/eval_shards``), compared per model with
  ``--group-by model``.
- ``digits_svm.parquet``: 10 classes, a linear SVM's decision values as logits (``--logits``),
  out-of-fold, in one list column ``logits`` (the Parquet list layout).
- ``ads_segments.csv``: binary, for the segment audit (``calibcli audit``). 20,000 simulated ad impressions
  (``country``, ``device``, ``age``; ``label`` = clicked) whose click rate has an interaction the model lacks:
  Brazilian Android users click far more than country and device alone say. The predictions ``prob`` are a
  logistic regression on the main effects (one-hot country and device, age), out-of-fold: calibrated on
  average and in every single column, miscalibrated in one intersection (``country=BR, device=android``,
  about 5% of the rows), which the global ECE does not flag and the audit finds.

Run: ``python sample_data/make_sample_data.py`` (needs scikit-learn; seeded, so the files are
reproduced byte for byte up to the writers' versions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

HERE = Path(__file__).resolve().parent
SEED = 0


def main() -> None:
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)

    X, y = load_breast_cancer(return_X_y=True)
    p = cross_val_predict(GaussianNB(), X, y, cv=cv, method="predict_proba")[:, 1]
    binary = pd.DataFrame({"prob": np.round(p, 10), "label": y})
    binary.to_csv(HERE / "breast_cancer_nb.csv", index=False)
    binary.to_parquet(HERE / "breast_cancer_nb.parquet", index=False)

    logreg = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
    q = cross_val_predict(logreg, X, y, cv=cv, method="predict_proba")[:, 1]
    for model, scores in (("nb", p), ("logreg", q)):
        folder = HERE / "eval_shards" / f"model={model}"
        folder.mkdir(parents=True, exist_ok=True)
        for k, rows in enumerate(np.array_split(np.arange(len(y)), 3)):
            shard = pa.table({"prob": np.round(scores[rows], 10), "label": y[rows]})
            pq.write_table(shard, folder / f"part-{k}.parquet")

    X, y = load_digits(return_X_y=True)
    P = cross_val_predict(GaussianNB(), X, y, cv=cv, method="predict_proba")
    P = np.round(P, 10)
    P /= P.sum(axis=1, keepdims=True)
    multi = pd.DataFrame({f"p_{k}": P[:, k] for k in range(P.shape[1])})
    multi["label"] = y
    multi.to_csv(HERE / "digits_nb.csv", index=False)
    multi.to_parquet(HERE / "digits_nb.parquet", index=False)

    svm = make_pipeline(StandardScaler(), LinearSVC(C=0.1, random_state=SEED, max_iter=5000))
    D = cross_val_predict(svm, X, y, cv=cv, method="decision_function")
    table = pa.table({"logits": pa.array(list(np.round(D, 8)), type=pa.list_(pa.float64())), "label": y})
    pq.write_table(table, HERE / "digits_svm.parquet")
    ads_segments()


def ads_segments(n: int = 20_000) -> None:
    """``ads_segments.csv`` (see the module docstring): a model without an interaction the clicks have."""
    rng = np.random.default_rng(SEED)
    country = rng.choice(np.array(["US", "DE", "FR", "BR", "IN"]), n, p=[0.4, 0.2, 0.15, 0.15, 0.1])
    device = rng.choice(np.array(["ios", "android", "web"]), n, p=[0.35, 0.4, 0.25])
    age = rng.integers(18, 76, n)
    base = {"US": -1.6, "DE": -1.9, "FR": -1.8, "BR": -1.4, "IN": -1.5}
    shift = {"ios": 0.2, "android": 0.0, "web": -0.3}
    logit = (np.vectorize(base.get)(country) + np.vectorize(shift.get)(device) - 0.015 * (age - 40)
             + 0.9 * ((country == "BR") & (device == "android")))  # the interaction the model lacks
    label = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    X = pd.get_dummies(pd.DataFrame({"country": country, "device": device}), dtype=float)
    X["age"] = (age - 40) / 15.0
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)
    p = cross_val_predict(LogisticRegression(C=1.0, max_iter=1000), X.to_numpy(), label, cv=cv,
                          method="predict_proba")[:, 1]
    pd.DataFrame({"prob": np.round(p, 6), "label": label, "country": country, "device": device,
                  "age": age}).to_csv(HERE / "ads_segments.csv", index=False)


if __name__ == "__main__":
    main()
