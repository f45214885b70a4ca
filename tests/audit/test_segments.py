"""Segment columns coded and crossed for the audit (calibcli.audit.segments, SPEC 9)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from calibcli.core.errors import CalibcliError
from calibcli.audit.segments import (
    ColumnCoding,
    categorical_coding,
    code_column,
    definition,
    numeric_coding,
    partitions,
)


def test_a_categorical_column_keeps_its_most_frequent_values_and_pools_the_rest():
    values = pa.array(["fr", "de", "fr", "us", None, "fr", "de", "it"])
    coding = code_column("country", values, max_values=2, segment_bins=10)
    assert coding.kind == "categorical"
    assert coding.values == ("de", "fr")  # the two most frequent, in value order
    assert coding.labels == ("de", "fr", "other", "missing")
    assert coding.encode(values).tolist() == [1, 0, 1, 2, 3, 1, 0, 2]
    assert [coding.definition(c) for c in range(4)] == ["de", "fr", "other", "missing"]


def test_ties_in_frequency_keep_the_smaller_value():
    coding = categorical_coding("c", {"b": 2, "a": 2, "c": 2}, 0, max_values=2)
    assert coding.values == ("a", "b") and coding.other and not coding.missing


def test_few_distinct_numbers_are_categories_and_many_are_quantile_bins():
    small = code_column("n_devices", np.array([1, 2, 2, 3, 1]), max_values=10, segment_bins=4)
    assert small.kind == "categorical" and small.values == (1, 2, 3)
    assert small.definition(0) == 1 and type(small.definition(0)) is int  # plain Python, not np.int64
    x = np.arange(100, dtype=float)
    big = code_column("age", x, max_values=10, segment_bins=4)
    assert big.kind == "numeric"
    assert big.edges == (24.5, 49.5, 74.5)  # SPEC 2.1: midpoints at ranks round(j n / B)
    assert big.labels == ("[-inf, 24.5)", "[24.5, 49.5)", "[49.5, 74.5)", "[74.5, inf)")
    codes = big.encode(x)
    assert np.bincount(codes).tolist() == [25, 25, 25, 25]
    assert big.encode(np.array([24.5, 0.0])).tolist() == [1, 0]  # a value equal to an edge goes above


def test_numeric_missing_values_have_their_own_code():
    x = np.r_[np.arange(20, dtype=float), np.nan]
    coding = code_column("age", x, max_values=5, segment_bins=2)
    assert coding.kind == "numeric" and coding.missing
    assert coding.encode(x)[-1] == coding.n_codes - 1 == 2
    assert coding.labels[-1] == "missing"


def test_encoding_a_value_never_seen_is_other_or_an_error():
    coding = categorical_coding("c", {"a": 3, "b": 1}, 0, max_values=1)
    assert coding.encode(pa.array(["a", "z"])).tolist() == [0, 1]  # z: other
    closed = categorical_coding("c", {"a": 3}, 0, max_values=5)
    with pytest.raises(CalibcliError, match="has a value its coding did not see"):
        closed.encode(pa.array(["a", "z"]))
    with pytest.raises(CalibcliError, match="missing values its coding did not see"):
        closed.encode(pa.array(["a", None]))


def test_batches_of_another_integer_width_or_dictionary_encoded_code_alike():
    coding = categorical_coding("c", {1: 2, 2: 1}, 0, max_values=5)
    assert coding.encode(pa.array([2, 1], type=pa.int32())).tolist() == [1, 0]
    strings = categorical_coding("s", {"x": 2, "y": 1}, 0, max_values=5)
    assert strings.encode(pa.array(["y", "x"]).dictionary_encode()).tolist() == [1, 0]


def test_partitions_are_the_population_then_every_combination_up_to_the_depth():
    codings = [categorical_coding(name, {"a": 1, "b": 1}, 0, max_values=5) for name in "xyz"]
    parts = partitions(codings, depth=2)
    assert [p.columns for p in parts] == [(), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    assert [p.n_segments for p in parts] == [1, 2, 2, 2, 4, 4, 4]
    assert len(partitions(codings, depth=5)) == 1 + 3 + 3 + 1
    with pytest.raises(CalibcliError, match="depth"):
        partitions(codings, depth=0)


def test_segment_ids_are_the_mixed_radix_of_the_codes_and_invert():
    codings = [
        categorical_coding("x", {"a": 1, "b": 1, "c": 1}, 0, max_values=5),
        categorical_coding("y", {0: 1, 1: 1}, 0, max_values=5),
    ]
    part = partitions(codings, depth=2)[-1]
    codes = [np.array([0, 1, 2, 2]), np.array([1, 0, 1, 0])]
    ids = part.segment_ids(codes, 4)
    assert ids.tolist() == [1, 2, 5, 4]
    assert [part.codes_of(int(i)) for i in ids] == [(0, 1), (1, 0), (2, 1), (2, 0)]
    assert definition(codings, part, 5) == {"x": "c", "y": 1}
    assert definition(codings, partitions(codings, 1)[0], 0) == {}


def test_option_ranges_are_checked():
    with pytest.raises(CalibcliError, match="max_values"):
        categorical_coding("c", {"a": 1}, 0, max_values=0)
    with pytest.raises(CalibcliError, match="segment_bins"):
        numeric_coding("x", np.arange(5.0), 0, segment_bins=1)
    assert ColumnCoding("x", "numeric", edges=(0.5,)).n_codes == 2


@pytest.mark.parametrize(
    "values",
    [
        np.array(["fr", "de", None, "fr", "us", "it", "fr", "de"], dtype=object),
        np.array([3, 1, 2, 2, None, 1, 7, 1], dtype=object),
        np.array([3, 1, 2, 2, 5, 1, 7, 1], dtype=object),
        np.array([0.5, np.nan, 0.25, 0.5, 0.75, 0.5, 1.0, 0.25]),
        np.random.default_rng(0).normal(size=200),
        np.where(
            np.random.default_rng(1).uniform(size=300) < 0.1, np.nan, np.random.default_rng(2).integers(0, 50, 300)
        ),
        np.array([True, False, None, True], dtype=object),
    ],
)
def test_coding_the_values_at_once_equals_coding_then_encoding(values):
    from calibcli.audit.segments import code_values

    for max_values, bins in ((2, 3), (10, 4), (1, 2)):
        expected = code_column("c", pa.array(list(values), from_pandas=True), max_values=max_values, segment_bins=bins)
        coding, codes = code_values("c", values, max_values=max_values, segment_bins=bins)
        assert coding.labels == expected.labels and coding.kind == expected.kind
        assert coding.values == expected.values and coding.edges == expected.edges
        assert [type(v) for v in coding.values] == [type(v) for v in expected.values]
        assert codes.tolist() == expected.encode(pa.array(list(values), from_pandas=True)).tolist()
