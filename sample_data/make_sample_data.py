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


if __name__ == "__main__":
    main()
