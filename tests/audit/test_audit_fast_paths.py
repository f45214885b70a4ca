"""The audit's fast paths give the numbers of the plain ones, exactly: text segment columns read as codes
(``CodedText``) rather than Python objects, quantile edges by selection rather than a full sort, the rows sorted
once with their codes packed, and the partitions computed on two threads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import calibcli.cumulative.ecce as cumulative
from calibcli.audit.accumulator import SegmentAuditAccumulator, _joined
from calibcli.audit.options import Options
from calibcli.audit.segment_tests import audit_arrays, in_score_order
from calibcli.core.binning import quantile_edges_sorted
from calibcli.io.columns import CodedText, segment_values
from calibcli.audit.segments import code_values, partitions, quantile_edges_selected


def test_coded_text_reads_codes_and_decodes_to_the_values():
    col = pa.chunked_array([["b", None, "a"], ["b", "c", None]])
    coded = segment_values(col, "str", "x", "f", 0)
    assert isinstance(coded, CodedText) and len(coded) == 6
    assert coded.decode().tolist() == ["b", None, "a", "b", "c", None]
    assert coded[np.array([True, False, True, False, False, True])].decode().tolist() == ["b", "a", None]
    # integers without empty cells stay numbers (not objects)
    ints = segment_values(pa.chunked_array([[3, 1, 2]]), "int", "n", "f", 0)
    assert ints.dtype == np.int64 and ints.tolist() == [3, 1, 2]


def test_batches_with_their_own_dictionaries_join_into_one():
    a = CodedText(np.array([0, 1, -1, 0], dtype=np.int32), ("x", "y"))
    b = CodedText(np.array([1, 0, 2], dtype=np.int32), ("z", "y", "x"))
    joined = _joined([a, b])
    assert isinstance(joined, CodedText)
    assert joined.decode().tolist() == ["x", "y", None, "x", "y", "z", "x"]
    mixed = _joined([a, np.array(["q", None], dtype=object)])  # e.g. a partition key's constant: decoded
    assert mixed.tolist() == ["x", "y", None, "x", "q", None]


@pytest.mark.parametrize("max_values", [1, 2, 10])
def test_coding_text_codes_equals_coding_the_strings(max_values):
    rng = np.random.default_rng(0)
    words = np.array(["de", "fr", "br", "us", "in", None], dtype=object)
    values = words[rng.choice(6, 5000, p=[0.3, 0.25, 0.2, 0.15, 0.05, 0.05])]
    coded = segment_values(pa.chunked_array([values[:2000], values[2000:]]), "str", "c", "f", 0)
    fast = code_values("c", coded, max_values=max_values, segment_bins=4)
    plain = code_values("c", values, max_values=max_values, segment_bins=4)
    assert fast[0] == plain[0]
    np.testing.assert_array_equal(fast[1], plain[1])


@pytest.mark.parametrize("n", [1, 2, 7, 100, 10_001])
@pytest.mark.parametrize("bins", [2, 4, 9])
def test_quantile_edges_by_selection_equal_the_sorted_ones(n, bins):
    rng = np.random.default_rng(n * bins)
    for x in (rng.normal(size=n), rng.integers(0, 6, n).astype(float), np.round(rng.lognormal(size=n), 1)):
        np.testing.assert_array_equal(quantile_edges_selected(x.copy(), bins), quantile_edges_sorted(np.sort(x), bins))


def test_numeric_column_beyond_the_probe_is_coded_as_after_a_full_sort(monkeypatch):
    import calibcli.audit.segments as segments

    rng = np.random.default_rng(4)
    x = np.where(rng.uniform(size=3000) < 0.02, np.nan, rng.lognormal(size=3000))
    fast = code_values("v", x, max_values=10, segment_bins=4)
    monkeypatch.setattr(segments, "_PROBE", 0)  # no probe: the sorting path
    slow = code_values("v", x, max_values=10, segment_bins=4)
    assert fast[0] == slow[0] and fast[0].kind == "numeric" and fast[0].missing
    np.testing.assert_array_equal(fast[1], slow[1])


def _rows(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, n)
    y = (rng.uniform(size=n) < s).astype(np.int64)
    codes = [rng.integers(0, 4, n), rng.integers(0, 3, n), rng.integers(0, 300, n)]  # the last needs 2 bytes
    return y, s, codes


def test_sorting_once_with_packed_codes_keeps_every_row_with_its_codes():
    y, s, codes = _rows(5000)
    y2, s2, w2, codes2 = in_score_order(y, s, np.ones(len(s)), codes)
    assert np.all(s2[1:] >= s2[:-1])
    order = np.argsort(s)
    np.testing.assert_array_equal(y2, y[order])
    for a, b in zip(codes2, codes, strict=True):
        np.testing.assert_array_equal(np.asarray(a, dtype=np.int64), b[order])


def test_two_threads_give_the_one_thread_numbers(monkeypatch):
    from calibcli.audit.segments import ColumnCoding

    y, s, codes = _rows(20_000, seed=1)
    codings = [ColumnCoding(f"c{j}", "categorical", values=tuple(range(int(c.max()) + 1))) for j, c in enumerate(codes)]
    options = Options(segment_cols=",".join(c.column for c in codings), min_segment=20)
    monkeypatch.setattr(cumulative, "THREAD_ROWS", 10**12)
    one = audit_arrays(y, s, np.ones(len(s)), codes, codings, partitions(codings, 2), options)
    monkeypatch.setattr(cumulative, "THREAD_ROWS", 1)
    two = audit_arrays(y, s, np.ones(len(s)), codes, codings, partitions(codings, 2), options)
    assert one.to_dict() == two.to_dict()
    shuffled = np.random.default_rng(2).permutation(len(s))  # and the order of the rows does not matter
    three = audit_arrays(
        y[shuffled],
        s[shuffled],
        np.ones(len(s)),
        [c[shuffled] for c in codes],
        codings,
        partitions(codings, 2),
        options,
    )
    _close(three.to_dict(), one.to_dict())  # the per-segment sums add in the rows' order: equal to rounding


def _close(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, z in zip(a, b, strict=True):
            _close(x, z)
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)
    else:
        assert a == b


def test_accumulator_with_text_batches_out_of_order_equals_in_order():
    rng = np.random.default_rng(5)
    n = 3000
    s = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < s).astype(int)
    words = np.array(["a", "b", "c", None], dtype=object)[rng.integers(0, 4, n)]
    probs = np.c_[1 - s, s]

    def run(batches):
        acc = SegmentAuditAccumulator(
            mode="binary", n_classes=2, class_names=("0", "1"), options=Options(segment_cols="w", min_segment=10)
        )
        for part in batches:
            coded = segment_values(pa.chunked_array([words[part]]), "str", "w", "f", 0)
            acc.update(np.arange(n)[part], probs[part], y[part], columns=(coded,))
        return acc.result().to_dict()

    in_order = run([slice(0, 1000), slice(1000, 2000), slice(2000, n)])
    assert run([slice(2000, n), slice(0, 1000), slice(1000, 2000)]) == in_order
    whole = SegmentAuditAccumulator(
        mode="binary", n_classes=2, class_names=("0", "1"), options=Options(segment_cols="w", min_segment=10)
    )
    whole.update(np.arange(n), probs, y, columns=(segment_values(pa.chunked_array([words]), "str", "w", "f", 0),))
    back = SegmentAuditAccumulator.from_dict(whole.to_dict())  # the state's JSON round trip (the Dask engine's) too
    assert back.result().to_dict() == in_order
