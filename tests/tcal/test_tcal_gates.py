"""T-Cal where its quantity is undefined or its sums cannot resolve the weights (issue 33): one Error line, never a
gate that passes because the test reported null or could not reject."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibcli.core.errors import CalibcliError
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


def test_weights_the_running_sums_cannot_resolve_are_refused_not_null(tmp_path):
    w = np.ones(N)
    w[: N // 10] = 1e-16
    path = _file(tmp_path, w)
    r = run("tcal", path, "--weight-col", "w", "--fail-on-reject")
    assert r.exit_code == 2, r.stdout
    assert r.stderr == (
        f"Error: {path}: T-Cal cannot resolve these weights: rows weighing 1e-16 sit among running sums of 1.8e+03, "
        "below their rounding, so the test's bin sums would cancel: give the rows weighing less than 2.5e-06 a "
        "weight of 0 (their share of the total is negligible), or drop them\n"
    )
    assert r.stdout == ""


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
    tiny = w.copy()
    tiny[: N // 10] = 1e-16
    with pytest.raises(CalibcliError, match="cannot resolve these weights"):
        tcal_test(y, p, sample_weight=tiny, n_boot=10)


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
