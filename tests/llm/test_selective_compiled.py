"""selective's bootstrap by its compiled loops (calibcli.llm.kernels) against the NumPy form of the definitions
(calibcli.llm.accumulator.evaluate on the blocks' sums of the drawn multiplicities): every replicate's every metric
within 1e-12 relative, on rows with ties, whole weights, blocks of more than four units, replicates with no rows
and levels at 1; and the command's report the same whichever form runs."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.llm import accumulator, curves
from tests._cli import run_json, write_csv

OPTIONS = accumulator.SelectiveOptions((0.3, 0.5, 0.9, 1.0), (0.05, 0.2, 0.5, 1.0), 80, 0.05, 11)


def _case(name: str):
    rng = np.random.default_rng(5)
    n = {"ties": 600, "no_ties": 400, "tiny": 4, "one_block": 200}[name]
    conf = rng.random(n)
    if name in ("ties", "tiny"):
        conf = np.round(conf, 1)  # blocks of ~60 rows (dozens of units under a replicate)
    if name == "one_block":
        conf = np.full(n, 0.7)
    correct = (rng.random(n) < conf).astype(np.int8)
    weight = rng.integers(1, 4, n).astype(np.float64) if name in ("ties", "one_block") else np.ones(n)
    index = rng.permutation(3 * n)[:n]  # global row indices, not 0..n-1
    return conf, correct, weight, index


@pytest.mark.parametrize("name", ["ties", "no_ties", "tiny", "one_block"])
def test_compiled_replicates_equal_the_numpy_form(name):
    conf, correct, weight, index = _case(name)
    blocks = curves.tie_blocks(conf)
    wrong = weight * (1 - correct)
    ref = accumulator.numpy_replicates(blocks, index, weight, wrong, OPTIONS)
    got = accumulator.compiled_replicates(blocks, index, weight, wrong, OPTIONS)
    assert list(got) == list(ref) == accumulator.metric_names(OPTIONS)
    for metric, want in ref.items():
        have = got[metric]
        assert np.array_equal(np.isfinite(have), np.isfinite(want)), metric
        finite = np.isfinite(want)
        np.testing.assert_allclose(have[finite], want[finite], rtol=1e-12, atol=0, err_msg=metric)
    if name == "tiny":  # some replicates draw no row: every metric undefined there, in both forms
        assert not np.isfinite(ref["aurc"]).all()


def test_the_command_reports_the_same_numbers_by_either_form(tmp_path, monkeypatch):
    rng = np.random.default_rng(8)
    z = np.round(rng.random(1000), 2)
    y = (rng.random(1000) < z).astype(int)
    path = write_csv(tmp_path, "stated.csv", z, y, w=rng.integers(1, 3, 1000))
    args = ("selective", path, "--mode", "binary", "--weight-col", "w", "--n-boot", "60", "--risk", "0.1,0.3")
    monkeypatch.setattr(accumulator, "_COMPILED_CELLS", 1 << 62)
    ref = run_json(*args)
    monkeypatch.setattr(accumulator, "_COMPILED_CELLS", 0)
    got = run_json(*args)
    want, have = (d["files"][0]["problems"][0]["metrics"] for d in (ref, got))
    assert list(have) == list(want)
    for metric, m in want.items():
        for key in ("estimate", "ci_low", "ci_high"):
            assert have[metric][key] == pytest.approx(m[key], rel=1e-12, abs=0), (metric, key)
    assert got["files"][0]["ties"] == ref["files"][0]["ties"] and ref["files"][0]["ties"]["tie_blocks"] > 0
