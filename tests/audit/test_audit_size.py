"""The size of an audit, checked before any work (issue 33): partitions from the columns and the depth, segments from
the columns' codes, against --max-segments and the memory budget; the message names what makes it large and a value
that fits, and the advised value runs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from calibcli.audit.segments import Partition, counts_by_depth
from calibcli.core.errors import CalibcliError
from tests._cli import run

N = 2000


def _wide(tmp_path, n_columns: int, n_values: int, name: str = "wide.parquet") -> tuple[str, str]:
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, N)
    frame = pd.DataFrame({"prob": p, "label": (rng.uniform(size=N) < p).astype(int)})
    for j in range(n_columns):
        frame[f"c{j}"] = rng.integers(0, n_values, N).astype(str)
    path = tmp_path / name
    frame.to_parquet(path)
    return str(path), ",".join(f"c{j}" for j in range(n_columns))


def test_partitions_beyond_max_segments_are_refused_before_reading(tmp_path):
    path, cols = _wide(tmp_path, 30, 2)
    r = run("audit", path, "--segment-cols", cols, "--depth", "8")
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: --depth 8 over 30 --segment-cols forms 8,656,937 partitions of the rows, so at least as many segments, "
        "more than --max-segments 100,000: use --depth 3 or less (at least 34,281 segments with two values per "
        "column), or fewer --segment-cols; or raise --max-segments\n"
    )


def test_segments_beyond_max_segments_name_a_depth_that_fits_and_it_runs(tmp_path):
    path, cols = _wide(tmp_path, 30, 2)
    r = run("audit", path, "--segment-cols", cols, "--depth", "4")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: {path}: the audit would form 472,761 segments (30 --segment-cols of 2 codes each, with their "
        "intersections up to --depth 4), more than --max-segments 100,000: use --depth 3 (34,281 segments), or "
        "fewer --segment-cols, or raise --max-segments\n"
    )
    assert run("audit", path, "--segment-cols", cols, "--depth", "3", "--json").exit_code == 0


def test_segment_ids_past_2_to_the_64_are_an_error_not_a_crash(tmp_path):
    path, cols = _wide(tmp_path, 8, 300)
    r = run("audit", path, "--segment-cols", cols, "--depth", "8", "--max-values", "300")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"Error: {path}: the audit would form 6.6")
    assert "internal error" not in r.stderr and r.stderr.count("\n") == 1
    assert "use --depth 1 (" in r.stderr and "or --max-values 2 at --depth 8" in r.stderr
    ok = run("audit", path, "--segment-cols", cols, "--depth", "8", "--max-values", "2", "--json")
    assert ok.exit_code == 0, ok.stderr


def test_the_memory_budget_limits_segments_too(tmp_path, monkeypatch):
    path, cols = _wide(tmp_path, 6, 10)
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "50M")
    r = run("audit", path, "--segment-cols", cols, "--depth", "3", "--max-segments", "10000000")
    assert r.exit_code == 2
    assert "beyond the memory budget (50.0 MB, CALIBCLI_MEMORY_BUDGET): use --depth 2 (" in r.stderr
    assert run("audit", path, "--segment-cols", cols, "--depth", "2", "--max-segments", "10000000").exit_code == 0


def test_max_segments_is_a_positive_count():
    r = run("audit", "x.csv", "--segment-cols", "a", "--max-segments", "0")
    assert r.exit_code == 2
    assert r.stderr == "Error: --max-segments is 0: expected a positive number of segments\n"


@pytest.mark.parametrize("sizes", [[2, 3, 5], [1, 1, 4, 7], [300] * 8, []])
@pytest.mark.parametrize("depth", [1, 2, 3, 8])
def test_counts_by_depth_are_the_enumerated_combinations(sizes, depth):
    counts = counts_by_depth(sizes, depth)
    for d, (parts, segments) in enumerate(counts):
        combos = list(itertools.combinations(sizes, d))
        assert parts == len(combos)
        assert segments == sum(math.prod(c) for c in combos)
    assert len(counts) == min(depth, len(sizes)) + 1


def test_a_partition_past_2_to_the_64_refuses_ids():
    part = Partition(tuple(range(8)), (300,) * 8)
    with pytest.raises(CalibcliError, match="past 2\\^64"):
        part.segment_ids([np.zeros(3, dtype=np.int64)] * 8, 3)
