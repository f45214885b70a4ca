"""T-Cal where its quantity is undefined (one Error line) or its weights span many orders of magnitude (computed: the
prefix sums are compensated), never a gate that passes because the test reported null or could not reject (issue 33)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibcli.tcal.procedure import tcal_test
from tests._cli import run

N = 2000


def _rows(seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, N)
    y = (rng.uniform(size=N) < p**1.3).astype(np.int64)  # miscalibrated: unit weights reject
    return p, y


def _file(tmp_path, w, name="w.csv"):
    p, y = _rows()
    path = tmp_path / name
    pd.DataFrame({"prob": p, "label": y, "w": w}).to_csv(path, index=False)
    return str(path)


def test_rows_of_tiny_weight_are_tested_and_the_gate_fails_as_with_unit_weights(tmp_path):
    """10% of the rows weighing 1e-16 (compensated prefix sums, not a refusal): the miscalibrated model is rejected,
    as with those rows' weight 0 and as with unit weights."""
    outcomes = {}
    for name, tiny in (("tiny", 1e-16), ("zero", 0.0), ("unit", 1.0)):
        w = np.ones(N)
        w[: N // 10] = tiny
        path = _file(tmp_path, w, f"{name}.csv")
        r = run("tcal", path, "--weight-col", "w", "--fail-on-reject", "--json")
        assert r.exit_code == 1, r.stderr
        doc = json.loads(r.stdout)
        (result,) = [f["result"] for f in doc["files"]]
        assert doc["gate"]["passed"] is False
        assert all(level["statistic"] is not None for level in result["levels"])
        outcomes[name] = result
    assert outcomes["tiny"]["reject"] and outcomes["zero"]["reject"] and outcomes["unit"]["reject"]
    # (the rows of weight 0 are dropped, so fewer levels there: the levels of both compared)
    for a, b in zip(outcomes["tiny"]["levels"], outcomes["zero"]["levels"], strict=False):
        assert a["n_bins"] == b["n_bins"]
        assert a["statistic"] == pytest.approx(b["statistic"], rel=1e-12, abs=1e-15)  # their share: 1e-16


def test_the_advised_zero_weights_give_the_test_of_the_other_rows():
    p, y = _rows()
    w = np.ones(N)
    w[: N // 10] = 0.0
    zeroed = tcal_test(y, p, sample_weight=w, rng=np.random.default_rng(1), n_boot=200)
    dropped = tcal_test(
        y[N // 10 :], p[N // 10 :], sample_weight=np.ones(N - N // 10), rng=np.random.default_rng(1), n_boot=200
    )
    for a, b in zip(zeroed.levels, dropped.levels, strict=True):
        assert a.statistic == pytest.approx(b.statistic, rel=1e-12, abs=1e-15)
    assert zeroed.p_value == dropped.p_value
    # rows of weight 1e-16 (or 1e-300) kept: the statistics of the other rows (the tiny rows' share of each is
    # below 1e-15), so the same decision
    decided = tcal_test(y[N // 10 :], p[N // 10 :], rng=np.random.default_rng(1), n_boot=1000)
    for scale in (1e-16, 1e-300):
        tiny = w.copy()
        tiny[: N // 10] = scale
        kept = tcal_test(y, p, sample_weight=tiny, rng=np.random.default_rng(1), n_boot=1000)
        assert kept.reject and decided.reject
        for a, b in zip(kept.levels, dropped.levels, strict=False):  # (the levels of both: n differs)
            assert a.n_bins == b.n_bins
            assert a.statistic == pytest.approx(b.statistic, rel=1e-12, abs=1e-15)


def test_a_gate_on_a_test_that_cannot_reject_is_an_error(tmp_path):
    path = _file(tmp_path, np.ones(N))
    r = run("tcal", path, "--alpha", "1e-17", "--fail-on-reject")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: --fail-on-reject: {path}: the test cannot decide, so the gate would pass whatever the data (with "
        "--n-boot 1000 the smallest attainable p-value is 1/1001 = 0.000999, too large for alpha/L = 5e-19: the "
        "test cannot reject; use --alpha 0.02 or more (at --n-boot 1000))\n"
    )


@pytest.mark.parametrize(("alpha", "n_boot"), [("1e-17", "10"), ("1e-17", "1000"), ("0.001", "100")])
def test_the_advice_of_a_test_that_cannot_reject_is_a_value_that_can(tmp_path, alpha, n_boot):
    """The warning's advice, followed, gives a test that can reject (never --alpha 1.8, never 10^18 resamples)."""
    path = _file(tmp_path, np.ones(N))
    r = run("tcal", path, "--alpha", alpha, "--n-boot", n_boot, "--json")
    assert r.exit_code == 0
    (line,) = [x for x in r.stderr.splitlines() if "cannot reject" in x]
    advice = line.split("cannot reject; use ")[1].split(" (at")[0].split()
    settings = (
        dict(zip(advice[0::2], advice[1::2], strict=False))
        if "with" not in advice
        else {advice[0]: advice[1], advice[3]: advice[4]}
    )
    args = {"--alpha": alpha, "--n-boot": n_boot, **{k: v.rstrip(",") for k, v in settings.items()}}
    assert 0 < float(args["--alpha"]) < 1 and int(args["--n-boot"]) <= 10_000_000
    again = run("tcal", path, "--alpha", args["--alpha"], "--n-boot", min(int(args["--n-boot"]), 20_000), "--json")
    assert again.exit_code == 0 and "cannot reject" not in again.stderr
