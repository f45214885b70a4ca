"""The report's JSON text: :func:`calibcli.core.documents.to_json` writes what ``json.dumps(jsonable(doc), indent=2,
allow_nan=False)`` writes, byte for byte (the standard library's indenting encoder, in one pass)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibcli.core.documents import jsonable, to_json


def _reference(doc) -> str:
    return json.dumps(jsonable(doc), indent=2, allow_nan=False)


@pytest.mark.parametrize(
    "doc",
    [
        {},
        [],
        {"a": [], "b": {}, "c": [[]], "d": [{}]},
        {"x": [1, 2.5, None, True, False, "s"], "y": {"z": {"w": [0.1, -0.0, 1e-05, 1e300, 2**70]}}},
        {
            "nan": float("nan"),
            "inf": np.inf,
            "-inf": -np.inf,
            "f32": np.float32(0.1),
            "i64": np.int64(-3),
            "u8": np.uint8(7),
            "b": np.bool_(False),
            "arr": np.array([[1.0, np.nan], [2.0, 3.0]]),
            "empty": np.array([]),
        },
        {"tuple": (1, '\u00e9\n"\\\t\x01'), "str_": np.str_("x"), "unicode": "\u2603 \U0001f600"},
        {2: "int key", 1.5: "float key", True: "bool key", None: "none key", "k": "str key"},
        {1: "first", "1": "second"},  # keys equal once made strings: the later value in the first one's place
        "just a string",
        3,
        None,
    ],
)
def test_to_json_is_the_standard_librarys_indented_text(doc):
    assert to_json(doc) == _reference(doc)


def test_to_json_refuses_what_json_refuses():
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        to_json({"x": [object()]})


def test_a_grouped_report_is_the_same_text(tmp_path):
    """A whole ``ece --group-by`` document (per-bin lists, metrics, nulls, the groups' summary)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests._cli import run_json

    rng = np.random.default_rng(2)
    z = rng.beta(2.0, 5.0, 3000)
    y = (rng.random(3000) < z**1.1).astype(np.int64)
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"prob": z, "label": y, "g": rng.integers(0, 12, 3000)}), path)
    doc = run_json("ece", path, "--group-by", "g", "--n-boot", 20)
    assert len(doc["files"]) == 12
    assert to_json(doc) == _reference(doc)
