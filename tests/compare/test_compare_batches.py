"""compare beyond the kept rows gives the same paired intervals whatever the batch size (SPEC 8.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from _cli import run_json
from _tolerance import assert_within_rule


def test_joint_per_bin_intervals_do_not_depend_on_the_batch_size(tmp_path):
    # beyond the 2^17 kept rows the paired intervals come from the joint cells (calibcli.compare.paired_bootstrap),
    # whose covariances' small eigenvalues are differences of large sums: the batch's sums are exact, so two batch
    # sizes give the same intervals within the tolerance rule (they moved by 3.5e-9 relative with plain sums)
    rng = np.random.default_rng(37)
    n = (1 << 17) + 9_000
    z = rng.beta(2, 5, n)
    y = (rng.random(n) < z**1.1).astype(int)
    paths = []
    for name, prob in (("a.parquet", z), ("b.parquet", z**0.9)):
        paths.append(str(tmp_path / name))
        pd.DataFrame({"prob": prob, "label": y}).to_parquet(paths[-1])
    docs = [run_json("compare", *paths, "--n-boot", "200", "--batch-rows", str(b)) for b in (1 << 17, 40_000)]
    assert docs[0]["parameters"]["batch_rows"] != docs[1]["parameters"]["batch_rows"]
    joint = [name for name, c in docs[0]["comparison"].items() if "joint per-bin" in (c.get("ci_method") or "")]
    assert {"ece_l1_plugin", "brier_score", "brier_within_bin"} <= set(joint)
    for name in joint:
        a, b = docs[0]["comparison"][name], docs[1]["comparison"][name]
        for key in ("baseline", "candidate", "difference", "ci_low", "ci_high"):
            assert_within_rule(a[key], b[key], f"{name}.{key}")
