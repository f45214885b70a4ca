"""`calibcli monitor --segment-cols`: the segment audit of every window (calibcli audit's own accumulator per
window), so a window's segments, tests and adjusted p-values are `calibcli audit`'s on that window's rows alone;
a window whose worst segment departs is alerted, with the segment named in its reasons."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from _cli import run, run_json  # noqa: E402  (tests/ is on sys.path)

WEEKLY = ("--time-col", "ts", "--every", "W", "--reference-windows", "2")
FAST = ("--n-boot", "0", "--n-null", "40")


def _series(tmp_path, *, n=12_000, days=42, seed=5, planted_from=28):
    """Six weeks of calibrated predictions over a region and a device column (unsorted, naive timestamps); from
    day ``planted_from`` on, region=south on android is predicted 0.15 too low (the rest stays calibrated)."""
    rng = np.random.default_rng(seed)
    day = rng.integers(0, days, n)
    ts = pd.Timestamp("2024-01-01") + pd.to_timedelta(day * 86400 + rng.integers(0, 86400, n), unit="s")
    p = rng.beta(2, 3, n)
    y = (rng.random(n) < p).astype(int)
    region = rng.choice(["north", "south", "east"], n)
    device = rng.choice(["ios", "android"], n)
    prob = p.copy()
    planted = (day >= planted_from) & (region == "south") & (device == "android")
    prob[planted] = np.clip(p[planted] - 0.15, 0.01, 0.99)
    path = tmp_path / "segments.parquet"
    pd.DataFrame({"ts": ts, "prob": prob, "label": y, "region": region, "device": device}).to_parquet(
        path, index=False
    )
    return str(path)


def _close(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, z) for x, z in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    path = _series(tmp_path_factory.mktemp("monitor_segments"))
    return path, run_json("monitor", path, *WEEKLY, *FAST, "--segment-cols", "region,device")


def test_each_windows_segments_are_the_audit_of_its_rows_alone(tmp_path, audited):
    path, doc = audited
    frame = pd.read_parquet(path)
    assert doc["parameters"]["audit"]["segment_columns"] == ["region", "device"]
    for w in doc["windows"]:
        rows = frame[(frame["ts"] >= pd.Timestamp(w["start"])) & (frame["ts"] < pd.Timestamp(w["end"]))]
        window = tmp_path / "window.parquet"
        rows.to_parquet(window, index=False)
        theirs = run_json("audit", window, "--segment-cols", "region,device")["files"][0]
        assert len(rows) == w["rows"] == theirs["population"]["rows"]
        assert _close(w["segments"], theirs["segments"])
        for key in ("mce_sigma", "mce_pvalue", "mce_relative", "n_segments", "n_segments_tested", "population"):
            assert _close(w["audit"][key], theirs[key]), key


def test_the_planted_segment_is_alerted_from_its_first_window_on_and_named(audited):
    _, doc = audited
    alerted = [w["start"][:10] for w in doc["windows"] if w["alert"]]
    assert alerted == ["2024-01-29", "2024-02-05"]  # days 28 to 41: the last two weeks (weeks start on Monday)
    assert doc["drift"][0]["from"] == "2024-01-29T00:00:00"
    for w in doc["windows"]:
        if w["alert"]:
            (reason,) = [r for r in w["reasons"] if r.startswith("segment ")]
            assert reason.startswith("segment region=south, device=android is miscalibrated: ECCE-R ")
            assert w["segments"][0]["definition"] == {"region": "south", "device": "android"}
            assert w["audit"]["p_adjusted"] < 0.05
        elif w["role"] == "monitored":
            assert w["audit"]["p_adjusted"] >= 0.05


def test_segments_need_no_group_by_and_take_the_audits_rules(audited):
    path, _ = audited
    r = run("monitor", path, *WEEKLY, "--segment-cols", "region", "--group-by", "device")
    assert (r.exit_code, r.stderr) == (
        2,
        "Error: --segment-cols audits each window of one series: it does not take --group-by (add the group "
        "columns to --segment-cols, whose intersections are audited too)\n",
    )
    r = run("monitor", path, *WEEKLY, "--segment-cols", "nope")
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and "'nope'" in r.stderr


def test_batch_sizes_chunk_rows_and_the_dask_engine_give_the_same_audits(audited):
    path, doc = audited
    small = run_json("monitor", path, *WEEKLY, *FAST, "--segment-cols", "region,device", "--batch-rows", "1000")
    assert [w["segments"] for w in small["windows"]] == [w["segments"] for w in doc["windows"]]
    chunks = run_json("monitor", path, "--chunk-rows", "3000", *FAST, "--segment-cols", "region")
    frame = pd.read_parquet(path)
    assert [w["rows"] for w in chunks["windows"]] == [3000] * 4
    for number in (0, 3):  # row-count windows in file order: the audit of those rows alone
        part = frame.iloc[3000 * number : 3000 * (number + 1)]
        theirs = run_json("audit", _written(path, part), "--segment-cols", "region")["files"][0]
        assert _close(chunks["windows"][number]["segments"], theirs["segments"])
    pytest.importorskip("distributed")
    dask = run_json(
        "monitor", path, *WEEKLY, *FAST, "--segment-cols", "region,device", "--engine", "dask", "--workers", "1"
    )
    for x, y in zip(doc["windows"], dask["windows"], strict=True):
        assert _close(x["segments"], y["segments"]) and x["alert"] == y["alert"]


def _written(path: str, frame) -> str:
    out = path.replace(".parquet", "_part.parquet")
    frame.to_parquet(out, index=False)
    return out
