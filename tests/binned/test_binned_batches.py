"""ece beyond the kept rows (the binned cells, the clinical grid) gives the same numbers whatever the batch size
(SPEC 8.1): the batches' per-cell sums are exact, so the per-bin bootstrap's intervals (whose within-bin Brier
term is a difference of large sums) and Emax do not move with --batch-rows (1e-11 relative with plain sums)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from _cli import run_json
from _tolerance import assert_within_rule


def test_ece_beyond_the_kept_rows_does_not_depend_on_the_batch_size(tmp_path):
    rng = np.random.default_rng(37)
    n = (1 << 17) + 60_000
    z = rng.beta(2, 5, n)  # continuous: every score distinct
    y = (rng.random(n) < z**1.1).astype(int)
    path = str(tmp_path / "rows.parquet")
    pd.DataFrame({"prob": z, "label": y}).to_parquet(path)
    docs = [run_json("ece", path, "--n-boot", "200", "--batch-rows", str(b)) for b in (n, 3_000)]
    metrics = [d["files"][0]["problems"][0]["metrics"] for d in docs]
    assert {"brier_within_bin", "emax", "cox_intercept"} <= metrics[0].keys()
    for name, m in metrics[0].items():
        for key in ("estimate", "ci_low", "ci_high"):
            if isinstance(m.get(key), float):
                assert_within_rule(metrics[1][name][key], m[key], f"{name}.{key}")
    cox = [d["files"][0]["problems"][0]["clinical"]["cox"] for d in docs]
    for part in ("slope", "intercept", "calibration_in_the_large"):
        assert_within_rule(cox[1][part]["p_value"], cox[0][part]["p_value"], f"cox.{part}.p_value")
