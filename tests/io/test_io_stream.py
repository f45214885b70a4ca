"""The streaming reader (SPEC 8): datasets of several files, row identity, batches of any size giving
the same rows, fragments, standard input read twice, and the messages that name file and row.

Every test writes real files under ``tmp_path``; the expected arrays are built from the tables written.
"""

from __future__ import annotations

import gc
import gzip
import io
import os
import pickle
import sys

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from calibcli.core.errors import CalibcliError
from calibcli.io.resolve import resolve_datasets
from calibcli.io.sources import DEFAULT_BATCH_ROWS
from calibcli.io.columns import ColumnSpec
from calibcli.io.fragments import RowCounts
from calibcli.io.loaded import read_input

HUGE = 1 << 40


def read_all(stream):
    """Every batch of a stream, concatenated: probs, labels, weights, row_index, groups, sources."""
    batches = list(stream.batches())
    return collect(batches)


def collect(batches):
    cat = lambda xs: np.concatenate(xs) if xs else np.empty(0)  # noqa: E731
    out = {
        "probs": cat([b.probs for b in batches]),
        "labels": cat([b.labels for b in batches]),
        "row_index": cat([b.row_index for b in batches]),
        "sources": [s for b in batches for s in [b.source] * len(b)],
    }
    if batches and batches[0].sample_weight is not None:
        out["weights"] = cat([b.sample_weight for b in batches])
    if batches and batches[0].groups is not None:
        out["groups"] = [cat([b.groups[j] for b in batches]) for j in range(len(batches[0].groups))]
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if key == "groups":
            for x, y in zip(a[key], b[key]):
                assert x.dtype == y.dtype and np.array_equal(x, y)
        elif key == "sources":
            assert a[key] == b[key]
        else:
            assert a[key].dtype == b[key].dtype
            np.testing.assert_array_equal(a[key], b[key])


def one(path, **kwargs):
    (dataset,) = resolve_datasets([str(path)])
    return dataset


@pytest.fixture
def shards(tmp_path):
    """Three Parquet shards (one in a subdirectory), several row groups each, written out of name order."""
    rng = np.random.default_rng(7)
    root = tmp_path / "shards"
    tables = {}
    for name, n in (("b.parquet", 95), ("a.parquet", 60), ("sub/c.parquet", 41)):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.table({"prob": rng.random(n), "label": rng.integers(0, 2, n), "w": rng.integers(1, 4, n).astype(float)})
        pq.write_table(table, path, row_group_size=16)
        tables[name] = table
    (root / "_SUCCESS").write_text("")  # writers' markers and hidden files are skipped
    (root / ".hidden.parquet").write_bytes(b"not parquet")
    ordered = [tables[k] for k in ("a.parquet", "b.parquet", "sub/c.parquet")]
    return root, pa.concat_tables(ordered), [str(root / k) for k in ("a.parquet", "b.parquet", "sub/c.parquet")]


# ---------------------------------------------------------------------------------------------
# Row identity across files


def test_directory_of_shards_is_one_dataset_in_sorted_path_order(shards):
    root, table, files = shards
    dataset = one(root)
    assert dataset.name == str(root) and dataset.files == files
    stream = dataset.open(ColumnSpec(weight_col="w"), batch_rows=10)
    got = read_all(stream)
    np.testing.assert_array_equal(got["probs"], table["prob"].to_numpy())
    np.testing.assert_array_equal(got["labels"], table["label"].to_numpy())
    np.testing.assert_array_equal(got["weights"], table["w"].to_numpy())
    np.testing.assert_array_equal(got["row_index"], np.arange(table.num_rows))
    assert got["sources"] == [f for f, t in zip(files, (60, 95, 41)) for _ in range(t)]
    assert all(len(b) <= 10 for b in stream.batches())
    described = stream.describe()
    assert described["files"] == 3 and described["rows_read"] == described["rows_used"] == table.num_rows
    assert described["path"] == str(root) and described["format"] == "parquet" and described["group_by"] == []


@pytest.mark.parametrize("batch_rows", [1, 7, 16, 1000])
def test_any_batch_size_gives_the_same_rows(shards, batch_rows):
    root, _, _ = shards
    dataset = one(root)
    assert_same(read_all(dataset.open(batch_rows=batch_rows)), read_all(dataset.open(batch_rows=HUGE)))


def test_read_input_of_a_directory_is_the_concatenated_stream(shards):
    root, table, _ = shards
    loaded = read_input(str(root), ColumnSpec(weight_col="w"))
    np.testing.assert_array_equal(loaded.probs, table["prob"].to_numpy())
    np.testing.assert_array_equal(loaded.row_index, np.arange(table.num_rows))
    stream = one(root).open(ColumnSpec(weight_col="w"))
    list(stream.batches())
    described = stream.describe()
    assert loaded.describe() == {k: v for k, v in described.items() if k not in ("files", "group_by")}


def test_quoted_glob(shards, tmp_path):
    root, table, files = shards
    (dataset,) = resolve_datasets([str(root / "*.parquet")])
    assert dataset.name == str(root / "*.parquet") and dataset.files == files[:2]
    np.testing.assert_array_equal(read_all(dataset.open())["probs"], table["prob"].to_numpy()[:155])
    (deep,) = resolve_datasets([str(root / "**" / "*.parquet")])
    assert deep.files == files
    pattern = str(tmp_path / "nothing" / "*.csv")
    with pytest.raises(CalibcliError) as err:
        resolve_datasets([pattern])
    assert err.value.for_cli() == (
        f"{pattern}: no file of a known format matches the pattern: check it (and quote it, so that the shell passes it on)"
    )


def test_pool_orders_files_by_path_whatever_the_argument_order(shards):
    _, table, files = shards
    (pooled,) = resolve_datasets([files[1], files[0]], pool=True)
    assert pooled.name == f"{files[1]}, {files[0]}" and pooled.files == files[:2]
    got = read_all(pooled.open(batch_rows=9))
    np.testing.assert_array_equal(got["probs"], table["prob"].to_numpy()[:155])
    np.testing.assert_array_equal(got["row_index"], np.arange(155))
    separate = resolve_datasets([files[1], files[0]])
    assert [d.name for d in separate] == [files[1], files[0]]
    with pytest.raises(CalibcliError, match="is named more than once in the pooled inputs"):
        resolve_datasets([files[0], files[0]], pool=True)


def test_fragments_give_the_streams_rows_and_counts(shards):
    root, table, _ = shards
    stream = one(root).open(batch_rows=40)
    fragments = stream.fragments()
    # Parquet files split into runs of row groups of at most batch_rows rows; offsets from the footers
    assert [(f.row_offset, f.n_rows, f.row_groups, f.first_file_row) for f in fragments[:3]] == [
        (0, 32, (0, 1), 0), (32, 28, (2, 3), 32), (60, 32, (0, 1), 0)]
    assert sum(f.n_rows for f in fragments) == table.num_rows
    counts = [RowCounts() for _ in fragments]
    from_fragments = collect([b for f, c in zip(fragments, counts) for b in f.batches(c)])
    assert_same(from_fragments, read_all(stream))
    merged = counts[0]
    for c in counts[1:]:
        merged = merged.merge(c)
    assert stream.describe(merged) == stream.describe()
    assert stream.describe(RowCounts.from_dict(merged.to_dict())) == stream.describe()
    whole = stream.fragments(split_row_groups=False)
    assert [(f.path, f.row_offset, f.row_groups) for f in whole] == [(p, o, None) for p, o in zip(stream.files, (0, 60, 155))]


def test_fragments_pickle(shards):
    root, _, _ = shards
    stream = one(root).open(batch_rows=16)
    fragments = stream.fragments()
    shipped = [pickle.loads(pickle.dumps(f)) for f in fragments]
    assert shipped == fragments
    assert_same(collect([b for f in shipped for b in f.batches()]), read_all(stream))


def test_csv_fragment_offsets_are_counted(tmp_path):
    for name, rows in (("x1.csv", "0.1,0\n0.2,1\n0.3,0\n"), ("x2.csv", "0.4,1\n0.5,0\n")):
        (tmp_path / "d").mkdir(exist_ok=True)
        (tmp_path / "d" / name).write_text("prob,label\n" + rows)
    stream = one(tmp_path / "d").open(batch_rows=2)
    assert [(f.row_offset, f.n_rows) for f in stream.fragments()] == [(0, 3), (3, 2)]
    assert_same(collect([b for f in stream.fragments() for b in f.batches()]), read_all(stream))


# ---------------------------------------------------------------------------------------------
# Hive partitions and groups


def test_hive_partitions_are_group_columns(tmp_path):
    root = tmp_path / "hive"
    expected_groups, probs = [], []
    for model, fold, n in (("b", 1, 4), ("a", 2, 3), ("a", 1, 5)):
        path = root / f"model={model}" / f"fold={fold}" / "part-0.parquet"
        path.parent.mkdir(parents=True)
        p = np.linspace(0.1, 0.9, n)
        pq.write_table(pa.table({"prob": p, "label": np.arange(n) % 2}), path)
    for model, fold, n in sorted((("b", 1, 4), ("a", 2, 3), ("a", 1, 5))):
        expected_groups += [(model, fold)] * n
        probs.append(np.linspace(0.1, 0.9, n))
    dataset = one(root)
    assert dataset.partition_kinds == {"model": "str", "fold": "int"}
    got = read_all(dataset.open(group_by=("model", "fold"), batch_rows=2))
    model, fold = got["groups"]
    assert model.dtype == object and fold.dtype == np.int64
    assert list(zip(model.tolist(), fold.tolist())) == expected_groups
    np.testing.assert_array_equal(got["probs"], np.concatenate(probs))
    # partition keys are not data columns unless grouped by
    stream = dataset.open()
    assert read_all(stream).keys() == {"probs", "labels", "row_index", "sources"}
    assert stream.prob_columns == ("prob",)
    with pytest.raises(CalibcliError) as err:
        dataset.open(group_by=("region",))
    # the library names the parameter; the command line shows its flag
    assert err.value.for_cli() == (
        f"{dataset.files[0]}: no column 'region' (given by --group-by); the file has columns ['prob', 'label'] "
        f"and the partition keys ['model', 'fold']"
    )
    assert str(err.value) == (
        f"{dataset.files[0]}: no column 'region' (given by group_by); the file has columns ['prob', 'label'] "
        f"and the partition keys ['model', 'fold']")


def test_group_by_a_data_column(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("prob,label,site,year\n0.1,0,x,2020\n0.7,1,y,2021\n0.4,1,x,2020\n")
    got = read_all(one(path).open(group_by=("site", "year"), batch_rows=1))
    site, year = got["groups"]
    assert site.tolist() == ["x", "y", "x"] and site.dtype == object
    assert year.tolist() == [2020, 2021, 2020] and year.dtype == np.int64


def test_empty_group_value_is_an_error_naming_file_row_and_column(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("prob,label,site\n0.1,0,x\n0.7,1,\n")
    with pytest.raises(CalibcliError) as err:
        read_all(one(path).open(group_by=("site",)))
    assert err.value.for_cli() == (
        f"{path}: row 2, column site: the group-by value is empty: expected a value on every row (fill it in, or "
        f"leave this column out of --group-by)"
    )


# ---------------------------------------------------------------------------------------------
# Text formats streamed in small batches


CSV_ROWS = [
    ("0.1", "0", "1"), ("0.9", "true", "2"), ("nan", "1", "1"), ("0.3", "", "1"), (" 0.5 ", "1", "0"),
    ("abc", "0", "1"), ("1.5", "1", "1"), ("0.2", "2", "1"), ("0.6", "1.0", "-1"), ("0.7", "0", ""),
    ("0.8", "1", "3"), ("", "1", "1"), ("0.25", "0.5", "1"), ("0.35", "False", "1"), ("inf", "1", "1"),
]


def write_csv(path, rows, header=("prob", "label", "w"), sep=","):
    path.write_text(sep.join(header) + "\n" + "".join(sep.join(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("batch_rows", [1, 2, 7])
def test_csv_small_batches_equal_one_batch_with_drop_invalid(tmp_path, batch_rows):
    path = write_csv(tmp_path / "mixed.csv", CSV_ROWS * 3)
    dataset = one(path)
    spec = ColumnSpec(weight_col="w")
    small = dataset.open(spec, drop_invalid=True, batch_rows=batch_rows)
    whole = dataset.open(spec, drop_invalid=True, batch_rows=HUGE)
    assert_same(read_all(small), read_all(whole))
    assert small.describe() == whole.describe()
    d = whole.describe()
    assert d["rows_read"] == d["rows_used"] + d["rows_dropped"] == 45
    assert d["dropped_reasons"] == {
        "empty probability cell": 3, "probability not a number": 3, "non-finite probability": 6,
        "probability outside [0, 1]": 3, "label outside the classes": 9, "invalid sample weight": 6,
    }
    assert whole.describe()["rows_used"] == 15  # 5 good rows per copy
    # the kept rows keep their global index
    np.testing.assert_array_equal(read_all(whole)["row_index"][:5], [0, 1, 4, 10, 13])


def test_tsv_gzip_streams_like_csv(tmp_path):
    rows = [("0.1", "0", "1"), ("0.7", "1", "2"), ("0.4", "1", "1")] * 5
    plain = write_csv(tmp_path / "p.csv", rows)
    tsv = tmp_path / "p.tsv.gz"
    tsv.write_bytes(gzip.compress(("prob\tlabel\tw\n" + "".join("\t".join(r) + "\n" for r in rows)).encode()))
    a = read_all(one(plain).open(ColumnSpec(weight_col="w"), batch_rows=4))
    b = read_all(one(tsv).open(ColumnSpec(weight_col="w"), batch_rows=4))
    assert a["row_index"].tolist() == list(range(15))
    assert_same({**a, "sources": []}, {**b, "sources": []})


def test_arrow_ipc_and_jsonl_batches(tmp_path):
    table = pa.table({"p_0": [0.2, 0.5, 0.1, 0.6, 0.3], "p_1": [0.8, 0.5, 0.9, 0.4, 0.7], "label": [1, 0, 1, 0, 1]})
    feather.write_feather(table, tmp_path / "t.feather", chunksize=2)
    (tmp_path / "t.jsonl").write_text("".join(
        f'{{"p_0": {a}, "p_1": {b}, "label": {y}}}\n' for a, b, y in zip(*(table[c].to_pylist() for c in table.column_names))))
    reference = read_all(one(tmp_path / "t.feather").open(batch_rows=HUGE))
    np.testing.assert_array_equal(reference["probs"], np.column_stack([table["p_0"], table["p_1"]]))
    for name in ("t.feather", "t.jsonl"):
        got = read_all(one(tmp_path / name).open(batch_rows=3))
        assert_same({**got, "sources": []}, {**reference, "sources": []})


def test_vector_column_streams_and_checks_lengths_across_batches(tmp_path):
    # the classes come from the first rows; a batch that starts with longer vectors is still caught
    vectors = [[0.2, 0.8]] * 1030 + [[0.1, 0.2, 0.7], [0.5, 0.5]]
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"probs": vectors, "label": [1] * len(vectors)}), path)
    stream = one(path).open(batch_rows=2)
    assert (stream.n_classes, stream.class_names) == (2, ("0", "1"))
    with pytest.raises(CalibcliError) as err:
        read_all(stream)
    assert err.value.for_cli() == (
        f"{path}: column 'probs' holds vectors of length 2 and 3 (row 1031): expected one probability per class on every row"
    )


# ---------------------------------------------------------------------------------------------
# Messages name the file and the row within it


def test_bad_row_in_the_second_shard_names_that_shard_and_its_row(shards):
    root, _, files = shards
    table = pq.read_table(files[1])
    probs = table["prob"].to_numpy().copy()
    probs[[40, 70]] = 1.5
    pq.write_table(table.set_column(0, "prob", pa.array(probs)), files[1], row_group_size=16)
    expected = (f"{files[1]}: row 41, column prob: probability is 1.5, outside [0, 1] (pass --logits if the columns hold "
                f"logits); 2 such row(s): fix the file or pass --drop-invalid to drop them")
    with pytest.raises(CalibcliError) as err:
        read_input(str(root))
    assert err.value.for_cli() == expected
    # in small batches the count is the batch's, and says so
    with pytest.raises(CalibcliError) as err:
        read_all(one(root).open(batch_rows=32))
    assert err.value.for_cli() == expected.replace("2 such row(s)", "1 such row(s) in rows 33-64")
    # dropped instead: counted, and the other rows keep their global index
    stream = one(root).open(drop_invalid=True, batch_rows=32)
    got = read_all(stream)
    assert stream.describe()["dropped_reasons"] == {"probability outside [0, 1]": 2}
    assert 60 + 40 not in got["row_index"] and 60 + 70 not in got["row_index"] and len(got["row_index"]) == 194


def test_a_later_file_without_a_column_is_named(shards):
    root, _, files = shards
    pq.write_table(pa.table({"prob": [0.5], "y": [1]}), files[2])
    with pytest.raises(CalibcliError) as err:
        read_all(one(root).open())
    assert err.value.for_cli() == (
        f"{files[2]}: no column 'label', the label column of the dataset (as in {files[0]}); the file has columns ['prob', 'y']"
    )


def test_end_of_dataset_checks(tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    write_csv(root / "a.csv", [("nan", "0", "0")])
    write_csv(root / "b.csv", [("1.5", "1", "0"), ("0.5", "1", "0")])
    with pytest.raises(CalibcliError) as err:
        read_all(one(root).open(ColumnSpec(weight_col="w"), drop_invalid=True, batch_rows=1))
    assert err.value.for_cli() == f"{root}: sample weights sum to 0: expected a positive total weight"
    write_csv(root / "b.csv", [("1.5", "1", "1")])
    with pytest.raises(CalibcliError) as err:
        read_all(one(root).open(drop_invalid=True))
    assert err.value.for_cli() == (
        f"{root}: every row was invalid and dropped ({{'non-finite probability': 1, 'probability outside [0, 1]': 1}}): "
        f"nothing left to evaluate"
    )
    for name in ("a.csv", "b.csv"):
        write_csv(root / name, [])
    with pytest.raises(CalibcliError) as err:
        read_all(one(root).open())
    assert err.value.for_cli() == f"{root}: none of its 2 files has data rows: expected at least one prediction"


def test_directories_without_prediction_files(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CalibcliError) as err:
        resolve_datasets([str(empty)])
    assert err.value.for_cli() == f"{empty}: is a directory: expected a file of predictions"
    (empty / "notes.txt").write_text("x")
    (dataset,) = resolve_datasets([str(empty)])  # files without a known extension: read with an input format
    with pytest.raises(CalibcliError) as err:
        dataset.open()
    assert str(err.value).endswith(", or pass input_format to read all 1 file(s) in that format")
    assert str(err.value).startswith(f"{empty}: is a directory without prediction files (1 other file(s), such as 'notes.txt'): "
                                     f"expected files ending in .arrow, .csv, ")


# ---------------------------------------------------------------------------------------------
# Standard input and URIs


class FakeStdin:
    """What sys.stdin offers: a text wrapper whose ``buffer`` holds the bytes."""

    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_stdin_is_spooled_once_and_iterated_twice(monkeypatch):
    text = "prob,label\n" + "".join(f"{i / 20:.2f},{i % 2}\n" for i in range(20))
    monkeypatch.setattr(sys, "stdin", FakeStdin(gzip.compress(text.encode())))
    (dataset,) = resolve_datasets(["-"])
    assert dataset.name == "<stdin>" and dataset.files == ["<stdin>"]
    stream = dataset.open(batch_rows=6)
    first, second = read_all(stream), read_all(stream)
    assert_same(first, second)
    np.testing.assert_allclose(first["probs"], np.arange(20) / 20)
    assert first["sources"] == ["<stdin>"] * 20
    assert stream.describe()["path"] == "<stdin>" and stream.format == "csv"
    (spool,) = dataset._spools.values()
    assert os.path.exists(spool) and spool.endswith(".gz")
    fragments = stream.fragments()
    assert_same(collect([b for f in fragments for b in f.batches()]), first)
    del stream, dataset, fragments
    gc.collect()
    assert not os.path.exists(spool)
    with pytest.raises(CalibcliError, match="standard input can be read only once"):
        resolve_datasets(["-", "-"])


def test_file_uri(shards):
    root, table, files = shards
    (dataset,) = resolve_datasets([root.as_uri()])
    assert dataset.files == [f"{root.as_uri()}/{name}" for name in ("a.parquet", "b.parquet", "sub/c.parquet")]
    np.testing.assert_array_equal(read_all(dataset.open(batch_rows=50))["probs"], table["prob"].to_numpy())
    (single,) = resolve_datasets([f"{root.as_uri()}/b.parquet"])
    assert single.files == [f"{root.as_uri()}/b.parquet"]
    (globbed,) = resolve_datasets([f"{root.as_uri()}/*.parquet"])
    assert globbed.files == dataset.files[:2]
    with pytest.raises(CalibcliError) as err:
        resolve_datasets([f"{root.as_uri()}/missing.parquet"])
    assert err.value.for_cli() == f"{root.as_uri()}/missing.parquet: no such file: check the path"


def test_scheme_pyarrow_lacks_goes_through_fsspec(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    root = f"/calibcli-test-{tmp_path.name}"
    try:
        for name, probs in (("model=x/b.parquet", [0.5, 0.6]), ("model=x/a.parquet", [0.1, 0.2, 0.3])):
            buf = io.BytesIO()
            pq.write_table(pa.table({"prob": probs, "label": [1] * len(probs)}), buf)
            memory.pipe(f"{root}/{name}", buf.getvalue())
        memory.pipe(f"{root}/model=y/c.csv", b"prob,label\n0.9,1\n")
        (dataset,) = resolve_datasets([f"memory://{root}"])
        assert dataset.files == [f"memory://{root}/{n}" for n in ("model=x/a.parquet", "model=x/b.parquet", "model=y/c.csv")]
        stream = dataset.open(group_by=("model",), batch_rows=2)
        got = read_all(stream)
        np.testing.assert_array_equal(got["probs"], [0.1, 0.2, 0.3, 0.5, 0.6, 0.9])
        assert got["groups"][0].tolist() == ["x"] * 5 + ["y"]
        assert stream.format == "parquet, csv"
    finally:
        memory.rm(root, recursive=True)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_is_spooled(tmp_path):
    import threading

    fifo = tmp_path / "preds.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("prob,label\n0.1,0\n0.9,1\n"), daemon=True)
    writer.start()
    (dataset,) = resolve_datasets([str(fifo)])
    stream = dataset.open()
    writer.join(timeout=10)
    assert_same(read_all(stream), read_all(stream))
    assert read_all(stream)["probs"].tolist() == [0.1, 0.9] and stream.describe()["path"] == str(fifo)


def test_unknown_uri_scheme_names_what_is_missing():
    try:
        import fsspec  # noqa: F401
    except ImportError:
        with pytest.raises(CalibcliError) as err:
            resolve_datasets(["nosuchfs://bucket/preds.parquet"])
        assert str(err.value).startswith(
            "nosuchfs://bucket/preds.parquet: cannot open nosuchfs:// URIs: pyarrow has no filesystem for them and the "
            "package fsspec is not installed: pip install fsspec")
    else:
        with pytest.raises(CalibcliError, match="cannot open nosuchfs:// URIs"):
            resolve_datasets(["nosuchfs://bucket/preds.parquet"])


# ---------------------------------------------------------------------------------------------
# Memory and start-up


def test_memory_stays_flat_in_the_number_of_rows(tmp_path, monkeypatch):
    # pyarrow's CSV reader reads about 40 blocks ahead: with small blocks, a file of many blocks shows
    # that what the stream holds does not grow with the number of rows.
    from calibcli.io import formats

    monkeypatch.setattr(formats, "CSV_BLOCK_BYTES", 1 << 16)
    rng = np.random.default_rng(1)
    block = "".join(f"{p:.6f},{y}\n" for p, y in zip(rng.random(10_000), rng.integers(0, 2, 10_000)))
    peaks = {}
    for copies in (25, 100):
        path = tmp_path / f"big{copies}.csv"
        path.write_text("prob,label\n" + block * copies)
        stream = one(path).open(batch_rows=10_000)
        start = pa.total_allocated_bytes()
        peak = rows = 0
        for batch in stream.batches():
            peak = max(peak, pa.total_allocated_bytes() - start)
            rows += len(batch)
        assert rows == 10_000 * copies
        peaks[copies] = peak
    assert peaks[100] < 1.5 * peaks[25] + (1 << 20)
    assert peaks[100] < os.path.getsize(tmp_path / "big100.csv") / 2


def test_default_batch_rows():
    assert DEFAULT_BATCH_ROWS == 1 << 17  # benchmarks io.stream: memory flat in n within 1.25x, throughput within 1.5x of a bare read
