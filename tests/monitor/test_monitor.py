"""`calibcli monitor`: windows as groups (each window's numbers are the commands' on its rows alone), every source
kind, the reference, the alerts (a planted drift alerted from its first window on, calibrated series calm at the
stated rate), the outputs and the gate."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from _cli import SAMPLE, run, run_json  # noqa: E402  (tests/ is on sys.path)

MONITOR = SAMPLE / "monitor"
SCORES = str(MONITOR / "scores.parquet")
DAILY = str(MONITOR / "daily")
VALIDATION = str(MONITOR / "validation.csv")
WEEKLY = ("--time-col", "ts", "--every", "W")
FAST = ("--n-boot", "50", "--n-null", "50")


def _close(a, b, rel=1e-12, abs_=1e-15):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def _calibrated(tmp_path, name, n, *, days=56, seed=0, drift_from=None, shift=1.5):
    """A calibrated series of ``n`` rows over ``days`` days from 2024-01-01 (naive timestamps, unsorted), whose
    predictions are tempered by ``shift`` on the logit scale from ``drift_from`` (a day number) on."""
    rng = np.random.default_rng(seed)
    day = rng.integers(0, days, n)
    ts = pd.Timestamp("2024-01-01") + pd.to_timedelta(day * 86400 + rng.integers(0, 86400, n), unit="s")
    p = rng.beta(2, 3, n)
    y = (rng.random(n) < p).astype(int)
    prob = p.copy()
    if drift_from is not None:
        late = day >= drift_from
        logit = np.log(p[late] / (1 - p[late]))
        prob[late] = 1 / (1 + np.exp(-(logit * shift + 0.6)))
    path = tmp_path / name
    pd.DataFrame({"ts": ts, "prob": prob, "label": y}).to_parquet(path, index=False)
    return str(path)


# ---------------------------------------------------------------------------------------------
# Windows are groups: the commands' own numbers


def test_each_window_equals_the_commands_on_its_rows_alone(tmp_path):
    doc = run_json("monitor", SCORES, *WEEKLY, *FAST, "--reference-windows", "4")
    scores = pd.read_parquet(SCORES)
    wall = scores["ts"].dt.tz_localize(None)
    assert len(doc["windows"]) == 12 and sum(w["rows"] for w in doc["windows"]) == len(scores)
    for w in doc["windows"][::3]:
        rows = scores[(wall >= pd.Timestamp(w["start"])) & (wall < pd.Timestamp(w["end"]))]
        path = tmp_path / "window.parquet"
        rows.to_parquet(path, index=False)
        assert len(rows) == w["rows"]
        ece = run_json("ece", path, "--n-boot", "0")["files"][0]["problems"][0]
        smece = run_json("smece", path, "--n-boot", "0")["files"][0]["problems"][0]
        assert _close(w["metrics"]["smece"]["estimate"], smece["metrics"]["smece"]["estimate"])
        for name in ("calibration_in_the_large", "cox_slope", "cox_intercept"):
            mine, theirs = w["metrics"][name], ece["metrics"][name]
            assert _close(mine["estimate"], theirs["estimate"]), name
            assert _close(mine["ci_low"], theirs["ci_low"]) and _close(mine["ci_high"], theirs["ci_high"])
        assert _close(w["test"]["p_value"], ece["metrics"]["ecce_r"]["ecce_r_pvalue"])


def _numbers(doc):
    """What does not depend on the rows' global indices (bootstrap draws do): estimates, Wald intervals, tests."""
    out = []
    for w in doc["windows"]:
        wald = {k: (m["estimate"], m["ci_low"], m["ci_high"]) for k, m in w["metrics"].items() if k != "smece"}
        out.append((w["start"], w["end"], w["rows"], w["metrics"]["smece"]["estimate"], wald, w["test"]["p_value"]))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x[:3] == y[:3]
        assert _close(x[3], y[3]) and _close(x[5], y[5])
        for name in x[4]:
            assert all(_close(u, v) for u, v in zip(x[4][name], y[4][name], strict=True))


def test_shuffled_rows_daily_partitions_globs_and_stdin_give_the_same_windows():
    args = (*WEEKLY, "--n-boot", "0", "--n-null", "50", "--reference-windows", "4")
    shuffled = run_json("monitor", SCORES, *args)
    daily = run_json("monitor", DAILY, *args)
    globbed = run_json("monitor", str(MONITOR / "daily" / "date=2024-*" / "*.parquet"), *args)
    with open(SCORES, "rb") as fh:
        r = run("monitor", "-", *args, "--input-format", "parquet", "--json", input=fh.read())
    assert r.exit_code == 0, r.stderr
    stdin = json.loads(r.stdout)
    for doc in (daily, globbed, stdin):
        _same(_numbers(shuffled), _numbers(doc))
        assert [w["alert"] for w in doc["windows"]] == [w["alert"] for w in shuffled["windows"]]
    assert daily["input"]["files"] == 84


def test_batch_sizes_agree_and_chunk_rows_follow_the_row_order(tmp_path):
    a = run_json("monitor", DAILY, *WEEKLY, *FAST)
    b = run_json("monitor", DAILY, *WEEKLY, *FAST, "--batch-rows", "37")
    for x, y in zip(a["windows"], b["windows"], strict=True):
        for name, m in x["metrics"].items():
            assert all(_close(m[k], y["metrics"][name][k]) for k in ("estimate", "ci_low", "ci_high")), name
    c = run_json("monitor", DAILY, "--chunk-rows", "1000", *FAST)
    assert [(w["start"], w["end"], w["rows"]) for w in c["windows"]] == [
        ("0", "1000", 1000),
        ("1000", "2000", 1000),
        ("2000", "3000", 1000),
        ("3000", "4000", 1000),
        ("4000", "5000", 200),
    ]
    assert c["parameters"]["windows"]["by"] == "rows" and c["window_key"] == "chunk"


def test_time_zones_are_windowed_on_their_wall_clock_and_stated(tmp_path):
    ts = pd.to_datetime(["2024-03-01 23:30", "2024-03-02 00:30"] * 150).tz_localize("Europe/Berlin")
    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 0.9, 300)
    frame = pd.DataFrame({"ts": ts, "prob": p, "label": (rng.random(300) < p).astype(int)})
    path = tmp_path / "berlin.parquet"
    frame.to_parquet(path, index=False)
    doc = run_json("monitor", path, "--time-col", "ts", "--every", "1D", *FAST)
    assert [(w["start"], w["rows"]) for w in doc["windows"]] == [("2024-03-01T00:00:00", 150), ("2024-03-02T00:00:00", 150)]
    assert "Europe/Berlin" in doc["parameters"]["windows"]["time_zone"]
    frame["ts"] = frame["ts"].dt.tz_localize(None)
    frame.to_csv(tmp_path / "naive.csv", index=False)
    naive = run_json("monitor", tmp_path / "naive.csv", "--time-col", "ts", "--every", "1D", *FAST)
    assert [w["rows"] for w in naive["windows"]] == [150, 150]
    assert "naive" in naive["parameters"]["windows"]["time_zone"]


# ---------------------------------------------------------------------------------------------
# Reference and alerts


def test_the_planted_drift_of_the_sample_is_alerted_from_its_first_window_on():
    for reference in (("--reference-windows", "4"), ("--reference", VALIDATION), ("--reference-until", "2024-01-29")):
        doc = run_json("monitor", SCORES, *WEEKLY, *FAST, *reference)
        alerts = [w["alert"] for w in doc["windows"]]
        first = [w["start"] for w in doc["windows"]].index("2024-02-26T00:00:00")
        assert all(a is True for a in alerts[first:]), reference
        assert not any(alerts[:first]), reference
        assert doc["drift"][0]["from"] == "2024-02-26T00:00:00"
        assert all(w["reasons"] for w in doc["windows"][first:])
    assert doc["reference"][0]["windows"] == [
        ["2024-01-01T00:00:00", "2024-01-08T00:00:00"],
        ["2024-01-08T00:00:00", "2024-01-15T00:00:00"],
        ["2024-01-15T00:00:00", "2024-01-22T00:00:00"],
        ["2024-01-22T00:00:00", "2024-01-29T00:00:00"],
    ]


def test_a_simulated_drift_is_alerted_and_the_windows_before_it_are_not(tmp_path):
    path = _calibrated(tmp_path, "drift.parquet", 8000, drift_from=35, seed=3)
    doc = run_json("monitor", path, *WEEKLY, *FAST, "--reference-windows", "2")
    starts = [w["start"] for w in doc["windows"]]
    first = starts.index("2024-02-05T00:00:00")
    assert [w["alert"] for w in doc["windows"]] == [None, None] + [False] * (first - 2) + [True] * (len(starts) - first)
    assert doc["drift"][0]["window"] == first


def test_calibrated_series_raise_a_false_alarm_at_most_at_the_stated_rate(tmp_path):
    """The small version of benchmarks/studies/monitor_false_alarms.py: 20 calibrated series of 8 weekly windows;
    with a family-wise rate of at most 5%, five or more alerted series have probability 0.003 (binomial)."""
    alerted = 0
    for seed in range(20):
        path = _calibrated(tmp_path, f"calm{seed}.parquet", 2400, seed=100 + seed)
        doc = run_json("monitor", path, *WEEKLY, "--n-boot", "0", "--n-null", "40", "--reference-windows", "2")
        alerted += doc["alerts"] > 0
    assert alerted <= 4


def test_windows_too_small_are_reported_not_calm(tmp_path):
    path = _calibrated(tmp_path, "small.parquet", 3000, days=21, seed=4)
    frame = pd.read_parquet(path)
    extra = frame.iloc[:30].assign(ts=pd.Timestamp("2024-01-29 10:00"))
    frame = pd.concat([frame, extra])
    frame.to_parquet(path, index=False)
    doc = run_json("monitor", path, *WEEKLY, *FAST, "--min-rows", "100")
    last = doc["windows"][-1]
    assert (last["rows"], last["too_small"], last["alert"]) == (30, True, None)
    assert last["reasons"] == ["too small to test: 30 rows, below --min-rows 100"]


def test_holm_bonferroni_bh_adjust():
    from calibcli.monitor.alerts import adjusted, persisting_from

    p = [0.01, 0.04, 0.03, 0.005]
    assert adjusted(p, "bonferroni") == [0.04, 0.16, 0.12, 0.02]
    assert adjusted(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjusted(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjusted(p, "none") == p
    assert persisting_from([False, True, None, True, True]) == 1
    assert persisting_from([True, False, True, None]) == 2
    assert persisting_from([True, True, False]) is None


# ---------------------------------------------------------------------------------------------
# Outputs


def test_json_markdown_csv_output_gate_and_plot(tmp_path, figures):
    out, png = tmp_path / "m.json", tmp_path / "m.png"
    r = run("monitor", SCORES, *WEEKLY, *FAST, "--reference-windows", "4", "--output", out, "--plot", png,
            "--fail-on-alert")
    assert r.exit_code == 1
    assert "Gate failed: 4 window(s) alerted (--fail-on-alert)" in r.stderr
    assert "ALERT" in r.stdout and "drift: alerted from 2024-02-26T00:00:00 on" in r.stdout
    doc = json.loads(out.read_text())
    w = doc["windows"][-1]
    assert {"start", "end", "rows", "metrics", "alert", "reasons"} <= set(w)
    assert set(w["metrics"]["smece"]) == {"estimate", "ci_low", "ci_high"}
    assert doc["parameters"]["adjust"] == "holm" and doc["parameters"]["test"] == "ecce_r"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (fig,) = figures
    axes = fig.get_axes()
    assert [a.get_ylabel() for a in axes] == ["smece", "calibration_in_the_large"]
    assert len(axes[0].collections) >= 3  # the windows' band, the alerts, the untested windows
    md = run("monitor", SCORES, *WEEKLY, *FAST, "--reference-windows", "4", "--format", "markdown")
    assert md.exit_code == 0 and md.stdout.startswith("| start | end | rows |")
    csv = run("monitor", SCORES, *WEEKLY, *FAST, "--reference-windows", "4", "--format", "csv")
    lines = csv.stdout.splitlines()
    assert lines[0] == "start,end,group,rows,role,metric,estimate,ci_low,ci_high,p_value,p_adjusted,alert"
    assert len(lines) == 1 + 12 * 3


def test_group_by_monitors_each_group_over_time(tmp_path):
    frame = pd.read_parquet(SCORES)
    frame["site"] = np.where(np.arange(len(frame)) % 2 == 0, "north", "south")
    path = tmp_path / "sites.parquet"
    frame.to_parquet(path, index=False)
    doc = run_json("monitor", path, *WEEKLY, *FAST, "--group-by", "site", "--reference-windows", "4")
    assert len(doc["windows"]) == 24 and {json.dumps(r["group"]) for r in doc["reference"]} == {
        '{"site": "north"}',
        '{"site": "south"}',
    }
    assert [d["from"] for d in doc["drift"]] == ["2024-02-26T00:00:00"] * 2


def test_the_library_gives_the_commands_document():
    from calibcli.metrics import monitor

    frame = pd.read_parquet(SCORES)
    lib = monitor(frame, time_col="ts", every="W", reference_windows=4, n_boot=50, n_null=50)
    cli = run_json("monitor", SCORES, *WEEKLY, *FAST, "--reference-windows", "4")
    _same(_numbers(lib), _numbers(cli))
    assert [w["alert"] for w in lib["windows"]] == [w["alert"] for w in cli["windows"]]
    with_ref = monitor(frame, time_col="ts", every="W", reference_data=pd.read_csv(VALIDATION), n_boot=0, n_null=50)
    assert with_ref["drift"][0]["from"] == "2024-02-26T00:00:00"


def test_the_dask_engine_gives_the_local_windows():
    pytest.importorskip("distributed")
    args = (DAILY, *WEEKLY, *FAST, "--reference-windows", "4")
    local = run_json("monitor", *args)
    dask = run_json("monitor", *args, "--engine", "dask", "--workers", "1")
    for x, y in zip(local["windows"], dask["windows"], strict=True):
        assert (x["start"], x["rows"], x["alert"]) == (y["start"], y["rows"], y["alert"])
        for name, m in x["metrics"].items():
            assert all(_close(m[k], y["metrics"][name][k]) for k in ("estimate", "ci_low", "ci_high")), name


# ---------------------------------------------------------------------------------------------
# Bad input: one Error line, exit 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--time-col", "when", "--every", "7D"), "no column 'when' (given by --time-col)"),
        (("--time-col", "prob", "--every", "7D"), "time column 'prob' holds double: expected timestamps"),
        (("--time-col", "ts", "--every", "0D"), "--every is '0D': expected a positive window length"),
        (("--time-col", "ts", "--every", "fortnight"), "--every is 'fortnight': expected a pandas offset alias"),
        (("--time-col", "ts", "--every", "2MS"), "calendar windows are one week"),
        (("--time-col", "ts"), "--time-col needs --every"),
        ((), "windows need --time-col with --every, or --chunk-rows"),
        (("--chunk-rows", "0"), "--chunk-rows is 0: expected a positive number of rows per window"),
        ((*WEEKLY, "--reference-until", "2023-06-01"), "the reference has no rows: no window starts before"),
        ((*WEEKLY, "--reference-until", "someday"), "--reference-until is 'someday': expected a date"),
        ((*WEEKLY, "--reference-windows", "2", "--reference-until", "2024-02-01"), "each choose the reference"),
        ((*WEEKLY, "--metrics", "ece"), "--metrics names 'ece': expected some of smece"),
        ((*WEEKLY, "--reference-windows", "0"), "--reference-windows is 0: expected at least 1 window"),
        ((*WEEKLY, "--plot", "m.gif"), "--plot is 'm.gif': expected a file name ending in .png, .svg or .pdf"),
        ((*WEEKLY, "--weight-col", "prob"), "--weight-col is not taken by monitor"),
    ],
)
def test_bad_options_and_columns(args, message):
    r = run("monitor", SCORES, *args)
    assert r.exit_code == 2, r.stdout
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], r.stderr


def test_unparsable_and_empty_timestamps_name_their_row(tmp_path):
    frame = pd.DataFrame({"ts": ["2024-01-01", "2024-01-02", "not a date"], "prob": [0.2, 0.5, 0.7], "label": [0, 1, 1]})
    frame.to_csv(tmp_path / "bad.csv", index=False)
    r = run("monitor", tmp_path / "bad.csv", *WEEKLY)
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: ") and "row 3, time column 'ts': 'not a date' is not a timestamp" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    frame.loc[2, "ts"] = None
    frame.to_csv(tmp_path / "empty.csv", index=False)
    r = run("monitor", tmp_path / "empty.csv", *WEEKLY)
    assert r.exit_code == 2 and "row 3, time column 'ts': the timestamp is empty" in r.stderr


def test_a_reference_file_without_rows_is_an_error(tmp_path):
    (tmp_path / "empty.csv").write_text("prob,label\n")
    r = run("monitor", SCORES, *WEEKLY, "--reference", tmp_path / "empty.csv")
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and len(r.stderr.splitlines()) == 1, r.stderr


def test_the_library_docstring_example_runs(monkeypatch):
    import doctest

    import calibcli.monitor.frame as frame

    monkeypatch.chdir(SAMPLE.parent)
    result = doctest.testmod(frame)
    assert result.attempted >= 4 and result.failed == 0


@pytest.mark.parametrize("columns", ["60", "80", "200"])
def test_a_narrow_terminal_gets_every_date_number_and_alert_whole(monkeypatch, columns):
    """At 80 columns the window table cut its dates and interval bounds short with an ellipsis and could lose the
    alert column: cells now wrap between words only, and a table that cannot fit is printed wider than it."""
    from calibcli.core.documents import fmt_interval, fmt_number

    doc = run_json("monitor", SCORES, *WEEKLY, *FAST)
    monkeypatch.setenv("COLUMNS", columns)
    r = run("monitor", SCORES, *WEEKLY, *FAST)
    assert r.exit_code == 0, r.stderr
    assert "…" not in r.stdout
    words = set(r.stdout.replace("│", " ").replace("┃", " ").split())
    for w in doc["windows"]:
        assert {w["start"], w["end"], str(w["rows"])} <= words
        m = w["metrics"]["smece"]
        assert fmt_number(m["estimate"]) in words
        assert set(fmt_interval(m["ci_low"], m["ci_high"]).split()) <= words
    assert "alert" in words
