"""Segment names that cannot be mistaken (issue 33): real values spelled like the pooled 'other' and the nulls'
'missing', infinite values and bins, and names from the data that a markdown renderer would run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tests._cli import run

N = 1200


def _frame(**columns) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, N)
    return pd.DataFrame({"prob": p, "label": (rng.uniform(size=N) < p).astype(int), **columns})


def _names(doc: dict) -> list[str]:
    return [json.dumps(s["definition"], sort_keys=True) for s in doc["files"][0]["segments"]]


def test_real_other_and_missing_values_and_the_pooled_and_null_segments_have_distinct_names(tmp_path):
    values = np.array(["other", "other", "missing", "missing", "a", "a", "b", "c", "d", "e"] * (N // 10), dtype=object)
    values[::7] = None
    path = tmp_path / "names.parquet"
    _frame(seg=values).to_parquet(path)
    r = run("audit", path, "--segment-cols", "seg", "--max-values", "3", "--min-segment", "10", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    (column,) = doc["files"][0]["segment_columns"]
    assert column["labels"] == ["a", "missing", "other", "(other)", "(missing)"]
    names = _names(doc)
    assert len(names) == len(set(names)) == 6  # the population and five segments, no name twice
    table = run("audit", path, "--segment-cols", "seg", "--max-values", "3", "--min-segment", "10", "--top", "10")
    shown = [line for line in table.stdout.splitlines() if "seg=" in line]
    assert len({line.split()[1] for line in shown}) == len(shown) == 5


def test_gate_messages_name_the_pooled_segment_apart_from_the_value(tmp_path):
    rng = np.random.default_rng(1)
    frame = _frame(
        seg=np.array(["other"] * (N // 2) + list(rng.choice(["x", "y", "z", "w"], N - N // 2)), dtype=object)
    )
    frame.loc[frame.seg.isin(["z", "w"]), "label"] = 1  # the pooled values are badly off
    path = tmp_path / "gate.parquet"
    frame.to_parquet(path)
    r = run("audit", path, "--segment-cols", "seg", "--max-values", "3", "--fail-if-any-segment")
    assert r.exit_code == 1
    assert "seg=(other)" in r.stderr


def test_infinite_values_are_distinct_segments_and_bins_are_labelled_sanely(tmp_path):
    x = np.where(np.arange(N) % 3 == 0, np.inf, np.random.default_rng(2).normal(size=N))
    infs = np.where(np.arange(N) % 2 == 0, np.inf, -np.inf)
    path = tmp_path / "inf.parquet"
    _frame(infs=infs, x=x).to_parquet(path)
    doc = json.loads(run("audit", path, "--segment-cols", "infs,x", "--depth", "1", "--json").stdout)
    labels = {c["column"]: c["labels"] for c in doc["files"][0]["segment_columns"]}
    assert labels["infs"] == ["-inf", "inf"]
    assert labels["x"][-1] == "inf" and "[inf, inf)" not in labels["x"]
    names = _names(doc)
    assert '{"infs": "-inf"}' in names and '{"infs": "inf"}' in names and '{"infs": null}' not in names
    assert len(names) == len(set(names))


def test_markdown_carries_no_raw_html_from_the_data(tmp_path):
    evil = '<img src=x onerror="alert(1)">'
    path = tmp_path / "html.parquet"
    _frame(g=np.where(np.arange(N) % 2 == 0, evil, "plain")).to_parquet(path)
    audit = run("audit", path, "--segment-cols", "g", "--format", "markdown")
    grouped = run("ece", path, "--group-by", "g", "--format", "markdown", "--n-boot", "0")
    for r in (audit, grouped):
        assert r.exit_code == 0, r.stderr
        assert "<img" not in r.stdout and "&lt;img src=x onerror=&quot;" not in r.stdout
        assert "&lt;img src=x onerror=" in r.stdout
