"""``calibcli audit`` end to end: the JSON scripts rely on, the gates, streams and shards, errors (SPEC 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests._cli import SAMPLE, run

ADS = str(SAMPLE / "ads_segments.csv")
COLS = ["--segment-cols", "country,device,age"]


def _json(*args) -> dict:
    r = run("audit", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _strip(doc: dict) -> dict:
    """The numbers of a document, without what names the input (its path, its files)."""
    doc = json.loads(json.dumps(doc))
    for entry in doc["files"]:
        entry["input"] = {k: v for k, v in entry["input"].items() if k in ("rows_used", "rows_read")}
    doc.pop("input", None)
    for k in ("batch_rows", "pool"):
        doc["parameters"].pop(k)
    return doc


def _close(a, b, rel=1e-12):
    """Equal documents, numbers to ``rel`` (the Dask tests' comparison)."""
    from tests.engines.test_engine_dask import _compare

    _compare(a, b, rel, "$")


def test_the_json_names_scripts_rely_on_and_the_planted_segment_first():
    doc = _json(ADS, *COLS)
    assert doc["command"] == "audit"
    for key in ("mce_sigma", "mce_pvalue", "mce_relative", "n_segments_tested", "segments"):
        assert key in doc and doc[key] == doc["files"][0][key]
    worst = doc["segments"][0]
    assert worst["definition"] == {"country": "BR", "device": "android"}
    for key in (
        "definition",
        "rows",
        "ecce_r",
        "ecce_r_sigma",
        "p_value",
        "p_adjusted",
        "mde",
        "o_e",
        "o_e_ci_low",
        "o_e_ci_high",
        "ece_l1_plugin",
        "observed_rate",
        "mean_prediction",
        "tested",
    ):
        assert key in worst
    assert doc["mce_sigma"] == worst["ecce_r_sigma"] > 5
    whole = next(s for s in doc["segments"] if s["definition"] == {})
    assert whole["rows"] == 20000 and whole["p_value"] > 0.05  # the global ECCE does not see it
    assert doc["n_segments_tested"] == 60
    stats = [s["ecce_r_sigma"] for s in doc["segments"] if s["tested"]]
    assert stats == sorted(stats, reverse=True)
    p = doc["parameters"]
    assert (p["depth"], p["max_values"], p["segment_bins"], p["min_segment"], p["adjust"]) == (2, 10, 4, 100, "holm")
    assert p["segment_columns"] == ["country", "device", "age"]


def test_gates_exit_1_naming_the_segments_and_0_when_they_pass():
    r = run("audit", ADS, *COLS, "--fail-if-any-segment")
    assert r.exit_code == 1
    assert "3 segment(s) miscalibrated at alpha 0.05 (--fail-if-any-segment): country=BR, device=android" in r.stderr
    assert "gate --fail-if-any-segment: FAILED" in r.stdout
    r = run("audit", ADS, *COLS, "--fail-above-sigma", "10")
    assert r.exit_code == 0, r.stderr
    assert "gate --fail-above-sigma: passed" in r.stdout
    r = run("audit", ADS, *COLS, "--fail-above-sigma", "5", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["gate"]["passed"] is False
    assert doc["gate"]["failures"] == [
        f"{ADS}: MCE = 7.296 sigma > 5 (--fail-above-sigma), worst segment country=BR, device=android"
    ]


def test_shards_batches_and_row_order_do_not_change_the_audit(tmp_path):
    one = _strip(_json(ADS, *COLS))
    data = pd.read_csv(ADS)
    shards = tmp_path / "shards"
    shards.mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(data)), 4)):
        pq.write_table(pa.Table.from_pandas(data.iloc[part], preserve_index=False), shards / f"part-{k}.parquet")
    _close(_strip(_json(str(shards), *COLS, "--batch-rows", "777")), one)


def test_missing_segment_values_are_a_segment_of_their_own(tmp_path):
    data = pd.read_csv(ADS)
    data.loc[data.index % 7 == 0, "device"] = None
    data.loc[data.index % 11 == 0, "age"] = np.nan
    path = tmp_path / "holes.csv"
    data.to_csv(path, index=False)
    doc = _json(str(path), *COLS)
    labels = {c["column"]: c["labels"] for c in doc["files"][0]["segment_columns"]}
    assert labels["device"][-1] == "missing" and labels["age"][-1] == "missing"
    missing = next(s for s in doc["segments"] if s["definition"] == {"device": "missing"})
    assert missing["rows"] == int((data.index % 7 == 0).sum())


@pytest.mark.parametrize("fmt", ["markdown", "csv"])
def test_markdown_and_csv(fmt):
    r = run("audit", ADS, *COLS, "--format", fmt, "--top", "3")
    assert r.exit_code == 0, r.stderr
    if fmt == "markdown":
        assert "| country=BR, device=android | 1236 |" in r.stdout
        assert r.stdout.count("\n| country=") + r.stdout.count("\n| device=") + r.stdout.count("\n| age=") == 3
    else:
        rows = [line for line in r.stdout.splitlines() if "country=BR, device=android" in line]
        assert any(",ecce_r_sigma," in line for line in rows)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "Error: --segment-cols names no column: name the columns that define the segments, e.g. --segment-cols "
            "country,device\n",
        ),
        (["--segment-cols", "nope"], None),
        (["--segment-cols", "country", "--depth", "0"], None),
        (["--segment-cols", "country", "--adjust", "fdr"], None),
        (["--segment-cols", "country", "--power", "1"], None),
    ],
)
def test_bad_options_are_one_error_line(args, message):
    r = run("audit", ADS, *args)
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    if message:
        assert r.stderr == message
    if "nope" in args:
        assert "no column 'nope' (given by --segment-cols)" in r.stderr


def test_dask_gives_the_local_engine_audit(tmp_path):
    pytest.importorskip("distributed")
    local = _json(ADS, *COLS)
    exe = os.path.join(os.path.dirname(sys.executable), "calibcli")
    p = subprocess.run(
        [exe, "audit", ADS, *COLS, "--engine", "dask", "--workers", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CALIBCLI_TASK_ROWS": "5000"},
    )
    assert p.returncode == 0, p.stderr
    remote = json.loads(p.stdout)
    assert remote["parameters"].pop("engine") == "dask" and local["parameters"].pop("engine") == "local"
    remote["parameters"].pop("workers"), local["parameters"].pop("workers")
    _close(remote, local)


@pytest.mark.parametrize("columns", ["60", "80", "100"])
def test_the_segment_table_never_breaks_a_number_on_a_narrow_terminal(monkeypatch, columns):
    """The detail tables folded their cells at any character to fit the terminal: at 100 columns a p-value of
    2.849e-11 read "2.849e-1" with a "1" on the line below, at 80 every number was broken. Cells now wrap between
    words only and the table is printed wider than the terminal when it must be."""
    from calibcli.core.documents import fmt_number

    doc = _json(ADS, "--segment-cols", "country,device")
    monkeypatch.setenv("COLUMNS", columns)
    r = run("audit", ADS, "--segment-cols", "country,device")
    assert r.exit_code == 0, r.stderr
    words = set(r.stdout.replace("│", " ").split())
    shown = doc["files"][0]["segments"][:10]  # the table's ten worst
    assert len(shown) == 10
    for s in shown:
        assert fmt_number(s["ecce_r_sigma"]) in words
        assert fmt_number(s["p_adjusted"]) in words, s["p_adjusted"]
