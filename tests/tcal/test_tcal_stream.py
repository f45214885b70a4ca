"""`calibcli tcal` on streams (SPEC 8): directories of shards, --pool, globs, --batch-rows, --group-by and stdin
give the whole file's report; beyond --max-rows T-Cal runs on a bottom-k sample that does not depend on how the
data were split; the binomial test counts every row; the accumulator's state round-trips and merges."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibcli.tcal.accumulator import TcalInputAccumulator, ValueCounts, tcal_reports
from calibcli.tcal.options import Options as TcalOptions
from calibcli.core.errors import OptionError
from calibcli.io.columns import ColumnSpec
from calibcli.io.loaded import read_input
from calibcli.core.resampling import row_hash
from calibcli.tcal.binomial import binomial_test
from calibcli.tcal.procedure import tcal_test

from _cli import MULTI, run, run_json

N = 3000
K_SAMPLE = 1000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A whole table, the same rows in 4 Parquet shards (several row groups each) and hive partitions by model.

    Model a is calibrated, model b is not; ``bins`` is a histogram-binned predictor with 5 values."""
    root = tmp_path_factory.mktemp("tcal")
    rng = np.random.default_rng(11)
    z = rng.beta(2, 3, N)
    model = np.where(rng.random(N) < 0.5, "a", "b")
    truth = np.where(model == "a", z, np.clip(z + 0.25, 0, 1))
    y = (rng.random(N) < truth).astype(np.int64)
    bins = np.round(np.floor(z * 5) / 5 + 0.1, 2)
    yb = (rng.random(N) < np.clip(bins + 0.03, 0, 1)).astype(np.int64)
    whole = pa.table({"prob": z, "label": y, "model": model, "binned": bins, "binned_label": yb})
    pq.write_table(whole, root / "whole.parquet")
    (root / "shards").mkdir()
    for k, part in enumerate(np.array_split(np.arange(N), 4)):
        pq.write_table(whole.take(part), root / "shards" / f"part-{k:02d}.parquet", row_group_size=250)
    for name in ("a", "b"):
        (root / "hive" / f"model={name}").mkdir(parents=True)
        sel = np.flatnonzero(model == name)
        pq.write_table(whole.take(sel).drop(["model"]), root / "hive" / f"model={name}" / "part-0.parquet")
    return root


def _entries(doc):
    """The report entries without their input section (which names the path and the number of files)."""
    return [{k: v for k, v in f.items() if k != "input"} for f in doc["files"]]


def _whole(data):
    return pq.read_table(data / "whole.parquet").to_pandas()


BASE = ("--n-boot", "200", "--combine", "min-p")


def test_directory_of_shards_gives_the_whole_files_report(data):
    shards = run_json("tcal", data / "shards", *BASE)
    whole = run_json("tcal", data / "whole.parquet", *BASE)
    assert shards["files"][0]["input"]["rows_read"] == N and shards["files"][0]["input"]["files"] == 4
    assert _entries(shards) == _entries(whole)
    (f,) = whole["files"]
    assert f["sample"] == {
        "method": "all rows",
        "n": N,
        "n_tested": N,
        "k": 1_000_000,
        "seed": 0,
        "description": f"all {N} rows",
    }
    df = _whole(data)
    ref = tcal_test(
        df["label"].to_numpy(), df["prob"].to_numpy(), n_boot=200, combine="min-p", rng=np.random.default_rng(0)
    )
    assert f["result"]["p_value"] == ref.p_value
    assert [lv["statistic"] for lv in f["result"]["levels"]] == [lv.statistic for lv in ref.levels]


@pytest.mark.parametrize("batch_rows", ["7", "1000"])
def test_batch_size_does_not_change_the_report(data, batch_rows):
    a = run_json("tcal", data / "shards", *BASE, "--batch-rows", batch_rows)
    b = run_json("tcal", data / "whole.parquet", *BASE)
    assert _entries(a) == _entries(b)


def _bottom_k(n, k, seed):
    """The rows of the bottom-k sample: the k smallest hashes of (seed, row), in row order."""
    return np.sort(np.argsort(row_hash(seed, np.arange(n)), kind="stable")[:k])


@pytest.mark.parametrize("seed", [0, 3])
def test_beyond_max_rows_the_bottom_k_sample_does_not_depend_on_batches_or_file_order(data, seed):
    args = (*BASE, "--max-rows", str(K_SAMPLE), "--seed", str(seed))
    parts = sorted(str(p) for p in (data / "shards").iterdir())
    shuffled = [parts[i] for i in (2, 0, 3, 1)]
    runs = [
        run_json("tcal", data / "whole.parquet", *args),
        run_json("tcal", data / "shards", *args, "--batch-rows", "7"),
        run_json("tcal", *shuffled, "--pool", *args, "--batch-rows", "333"),
        run_json("tcal", *reversed(parts), "--pool", *args),
        run_json("tcal", str(data / "shards" / "part-*.parquet"), *args, "--batch-rows", "1000"),
    ]
    for other in runs[1:]:
        assert _entries(other) == _entries(runs[0])
    (f,) = runs[0]["files"]
    assert f["sample"] == {
        "method": "bottom-k",
        "n": N,
        "n_tested": K_SAMPLE,
        "k": K_SAMPLE,
        "seed": seed,
        "description": f"bottom-k sample of {K_SAMPLE} of {N} rows, hash of (seed, row index) with seed {seed}",
    }
    # the sample is the k rows of smallest hash of (seed, global row index), tested in row order
    df = _whole(data)
    rows = _bottom_k(N, K_SAMPLE, seed)
    ref = tcal_test(
        df["label"].to_numpy()[rows],
        df["prob"].to_numpy()[rows],
        n_boot=200,
        combine="min-p",
        rng=np.random.default_rng(seed),
    )
    assert f["result"]["n"] == K_SAMPLE and f["result"]["p_value"] == ref.p_value
    assert [lv["statistic"] for lv in f["result"]["levels"]] == [lv.statistic for lv in ref.levels]
    # the discreteness check still counts every row
    assert f["discrete_check"]["n"] == N and f["discrete_check"]["n_distinct"] == N


def test_table_states_the_sample(data):
    r = run("tcal", data / "whole.parquet", *BASE, "--max-rows", str(K_SAMPLE))
    assert r.exit_code == 0, r.stderr
    assert f"rows tested: bottom-k sample of {K_SAMPLE} of {N} rows, hash of (seed, row index) with seed 0" in r.stdout
    r = run("tcal", data / "whole.parquet", *BASE)
    assert f"rows tested: all {N} rows" in r.stdout


def test_binomial_counts_use_every_row_beyond_max_rows(data):
    args = ("--prob-col", "binned", "--label-col", "binned_label", "--max-rows", "100")
    whole = run_json("tcal", data / "whole.parquet", *args)
    shards = run_json("tcal", data / "shards", *args, "--batch-rows", "7")
    assert _entries(shards) == _entries(whole)
    (f,) = whole["files"]
    assert f["test"] == "binomial" and f["discrete_check"]["used"] == "binomial"
    assert f["sample"]["method"] == "all rows" and f["sample"]["n_tested"] == N
    assert f["sample"]["description"] == f"all {N} rows (exact per-value counts)"
    df = _whole(data)
    z, y = df["binned"].to_numpy(), df["binned_label"].to_numpy()
    values, counts = np.unique(z, return_counts=True)
    positives = [int(y[z == v].sum()) for v in values]
    rows = f["result"]["per_value"]
    assert [r["value"] for r in rows] == values.tolist()
    assert [r["n"] for r in rows] == counts.tolist() and [r["positives"] for r in rows] == positives
    ref = binomial_test(y, z)
    assert f["result"]["p_value"] == ref.p_value and f["result"]["n"] == N
    assert [r["p_value"] for r in rows] == [row.p_value for row in ref.rows]
    assert f["discrete_check"] == {
        "discrete": True,
        "n_distinct": len(values),
        "n": N,
        "threshold": N**0.5,
        "rule": whole["parameters"]["discrete_rule"],
        "choice": "auto",
        "used": "binomial",
    }


def test_group_by_entries_equal_each_groups_rows_alone(data, tmp_path):
    by_column = run_json("tcal", data / "whole.parquet", "--group-by", "model", *BASE)
    by_partition = run_json("tcal", data / "hive", "--group-by", "model", *BASE, "--batch-rows", "7")
    assert [f["group"] for f in by_column["files"]] == [{"model": "a"}, {"model": "b"}]
    df = _whole(data)
    for k, name in enumerate("ab"):
        alone = tmp_path / f"{name}.csv"
        df[df["model"] == name][["prob", "label"]].to_csv(alone, index=False)
        (ref,) = _entries(run_json("tcal", alone, *BASE))
        for doc in (by_column, by_partition):
            entry = _entries(doc)[k]
            assert entry.pop("group") == {"model": name}
            assert entry.pop("rows_in_group") == int((df["model"] == name).sum())
            assert entry == ref
    groups = by_column["groups"]
    a, b = (f["result"]["p_value"] for f in by_column["files"])
    assert groups["by"] == ["model"] and groups["n_groups"] == 2
    label = f"{data / 'whole.parquet'} [model=b]"
    assert groups["metrics"]["tcal_p_value"] == {"worst_group": label, "worst": b, "best": a, "spread": a - b}
    assert groups["rejecting"] == [label]


def test_group_gate_names_the_failing_group(data):
    r = run("tcal", data / "whole.parquet", "--group-by", "model", *BASE, "--fail-on-reject", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    label = f"{data / 'whole.parquet'} [model=b]"
    assert [f["gate"]["passed"] for f in doc["files"]] == [True, False]
    assert doc["gate"]["passed"] is False and len(doc["gate"]["failures"]) == 1
    assert r.stderr.splitlines()[-1].startswith(f"Gate failed: {label}: tcal rejects perfect calibration (p-value ")
    table = run("tcal", data / "whole.parquet", "--group-by", "model", *BASE)
    assert f"2 groups by model: 1 reject perfect calibration; smallest tcal_p_value" in table.stdout


def test_stdin_is_streamed(data, tmp_path):
    csv = tmp_path / "w.csv"
    _whole(data)[["prob", "label"]].to_csv(csv, index=False)
    r = subprocess.run(
        [sys.executable, "-m", "calibcli", "tcal", "-", *BASE, "--max-rows", str(K_SAMPLE), "--json"],
        stdin=open(csv, "rb"),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    ref = run_json("tcal", csv, *BASE, "--max-rows", str(K_SAMPLE))
    assert _entries(json.loads(r.stdout)) == _entries(ref)
    assert json.loads(r.stdout)["files"][0]["input"]["path"] == "<stdin>"


def test_canonical_mode_streams_the_probability_vectors():
    args = ("--mode", "canonical", "--n-boot", "60", "--max-rows", "1000", "--seed", "2")
    one = run_json("tcal", MULTI, *args)
    small = run_json("tcal", MULTI, *args, "--batch-rows", "7")
    assert _entries(small) == _entries(one)
    (f,) = one["files"]
    assert f["mode"] == "canonical" and "discrete_check" not in f
    assert f["sample"]["method"] == "bottom-k" and f["sample"]["n"] == 1797 and f["result"]["n"] == 1000
    loaded = read_input(MULTI, ColumnSpec())
    rows = _bottom_k(1797, 1000, 2)
    ref = tcal_test(loaded.labels[rows], loaded.probs[rows], n_boot=60, rng=np.random.default_rng(2))
    assert f["result"]["p_value"] == ref.p_value
    assert [lv["statistic"] for lv in f["result"]["levels"]] == [lv.statistic for lv in ref.levels]


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--max-rows", "1"],
            "Error: --max-rows is 1: expected at least 2 rows (T-Cal compares predictions that share a bin)\n",
        ),
        (["--n-boot", "0"], "Error: --n-boot is 0: expected at least 1 resample for the y-bootstrap null\n"),
        (["--smoothness", "-1"], "Error: --smoothness is -1.0: expected a positive Holder exponent\n"),
        (["--discrete", "maybe"], "Error: --discrete is 'maybe': expected one of auto, yes, no\n"),
        (["--batch-rows", "0"], "Error: --batch-rows is 0: expected a positive number of rows per batch\n"),
    ],
)
def test_option_errors_name_the_flag(data, args, message):
    r = run("tcal", data / "whole.parquet", *args)
    assert r.exit_code == 2
    assert r.stderr == message


# ---------------------------------------------------------------------------------------------
# The accumulator


RNG = np.random.default_rng(5)
Z = RNG.beta(2, 2, 2000)
Y = (RNG.random(2000) < Z).astype(np.int64)
ROWS = np.arange(2000)


def _fed(options, parts, mode="binary", weights=None):
    """One accumulator per part of the rows, sent through JSON and merged in reverse order."""
    states = []
    for part in parts:
        acc = TcalInputAccumulator(mode=mode, n_classes=2, class_names=("0", "1"), options=options)
        for chunk in np.array_split(part, 3):
            acc.update(ROWS[chunk], Z[chunk], Y[chunk], None if weights is None else weights[chunk])
        states.append(TcalInputAccumulator.from_dict(json.loads(json.dumps(acc.to_dict()))))
    merged = states[-1]
    for other in reversed(states[:-1]):
        merged.merge(other)
    return merged


@pytest.mark.parametrize("max_rows", [2000, 700])
def test_split_merged_and_restored_states_give_the_one_pass_result(max_rows):
    options = TcalOptions(n_boot=100, seed=4, max_rows=max_rows)
    one = _fed(options, [ROWS]).result().to_dict()
    split = _fed(options, np.array_split(RNG.permutation(2000), 4)).result().to_dict()
    assert split == one
    assert one["sample"]["n_tested"] == min(max_rows, 2000) and one["discrete_check"]["n"] == 2000


def test_reports_computed_together_equal_each_result():
    # the held-out comparison's tests (recalibrated predictions of the same rows, a discrete one taking the
    # binomial test, other options, a bottom-k sample) computed together: each entry as its own result() gives
    options, other = TcalOptions(n_boot=120, seed=4), TcalOptions(n_boot=60, seed=9, combine="min-p")
    sampled = TcalOptions(n_boot=50, seed=4, max_rows=700)
    predictions = [Z, Z**0.8, np.clip(np.round(Z * 4) / 4, 0.05, 0.95), 1 - Z]
    accs = []
    for o, z in [(options, p) for p in predictions] + [(other, Z), (sampled, Z), (sampled, Z**0.8)]:
        acc = TcalInputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=o)
        for chunk in np.array_split(ROWS, 3):
            acc.update(ROWS[chunk], z[chunk], Y[chunk])
        accs.append(acc)
    together = [r.to_dict() for r in tcal_reports(accs)]
    assert [r["test"] for r in together] == ["tcal", "tcal", "binomial", "tcal", "tcal", "tcal", "tcal"]
    assert together == [acc.result().to_dict() for acc in accs]
    assert together[5]["sample"]["n_tested"] == 700


def test_value_counts_merge_exactly_and_overflow_beyond_the_cap():
    z = RNG.choice([0.1, 0.25, 0.5, 0.9], size=5000)
    y = (RNG.random(5000) < z).astype(np.int64)
    parts = [ValueCounts().update(z[i::3], y[i::3]) for i in range(3)]
    merged = ValueCounts.from_dict(json.loads(json.dumps(parts[2].to_dict()))).merge(parts[0]).merge(parts[1])
    values, n, m = merged.arrays()
    assert values.tolist() == [0.1, 0.25, 0.5, 0.9] and merged.n == 5000 and merged.n_distinct == 4
    assert n.tolist() == [int((z == v).sum()) for v in values] and m.tolist() == [int(y[z == v].sum()) for v in values]
    capped = ValueCounts(cap=3).update(z[:10], y[:10])
    for i in range(10, 5000, 10):
        capped.update(z[i : i + 10], y[i : i + 10])
    assert capped.overflowed and capped.n_distinct is None and capped.n == 5000
    assert ValueCounts(cap=4).update(z, y).merge(ValueCounts(cap=4).update(Z, Y)).n_distinct is None


def test_many_distinct_values_are_continuous_and_discrete_yes_then_refused():
    options = TcalOptions(n_boot=50, max_distinct=100)
    acc = _fed(options, [ROWS])
    report = acc.result()
    assert report.test == "tcal"
    assert report.discrete_check["n_distinct"] is None and report.discrete_check["n_distinct_more_than"] == 100
    forced = _fed(TcalOptions(n_boot=50, max_distinct=100, discrete="yes"), [ROWS])
    with pytest.raises(OptionError, match="discrete yes: the predictor takes more than 100 distinct values"):
        forced.result()


def test_weighted_discrete_predictor_keeps_tcal_with_a_warning():
    z = np.where(Z < 0.5, 0.3, 0.7)
    acc = TcalInputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=TcalOptions(n_boot=50))
    acc.update(ROWS, z, Y, np.full(2000, 2.0))
    report = acc.result()
    assert report.test == "tcal" and report.discrete_check["discrete"] and report.discrete_check["used"] == "tcal"
    assert report.warnings[0].startswith("the predictor is discrete but has sample weights")
    forced = TcalInputAccumulator(
        mode="binary", n_classes=2, class_names=("0", "1"), options=TcalOptions(n_boot=50, discrete="yes")
    )
    with pytest.raises(OptionError, match="cannot use sample weights"):
        forced.update(ROWS, z, Y, np.full(2000, 2.0))


def test_headline_metrics():
    report = _fed(TcalOptions(n_boot=100), [ROWS]).result()
    head = report.headline()
    assert set(head) == {"tcal_p_value", "tcal_statistic"}
    assert head["tcal_p_value"].estimate == report.result.p_value
    deciding = min(report.result.levels, key=lambda lv: lv.p_value)
    assert head["tcal_statistic"].estimate == deciding.statistic
