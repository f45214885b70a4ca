"""The columnar reader of lm-evaluation-harness samples: a whole file parsed by pyarrow's JSON reader into the
columns calibcli needs (SPEC 8's "read with pyarrow straight into NumPy"), the probabilities computed on arrays.

It applies where the file has the layout of its first line (lm-eval 0.4's: ``filtered_resps`` as pairs of strings,
``arguments`` as ``gen_args_i`` objects, a numeric target, the same number of requests on every line). Anything
else, and every malformed line, returns None: :func:`calibcli.llm.lm_eval.read` then reads the file line by
line, which names the line at fault. The two readers give the same items (the tests read the samples both ways).
"""

from __future__ import annotations

import numpy as np

from calibcli.llm.items import Items
from calibcli.llm.texts import open_binary

_SCALARS = {str: "string", int: "int64", float: "float64", bool: "bool"}


def _schema(first: dict, *, requests: bool = True):
    """The explicit schema of the columns read, from the first record; None when the layout is not the columnar one.

    ``requests``: read ``arguments`` (the choices' texts, which only the length-normalized and mutual-information
    rules use). Without it pyarrow still parses the requests but builds no column of their texts, a fifth of the
    read of a file whose prompts repeat in every request."""
    import pyarrow as pa

    resps = first.get("filtered_resps")
    if not isinstance(resps, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(v, str) for v in r) for r in resps
    ):
        return None
    target = first.get("target")
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        return None
    args = first.get("arguments")
    if not isinstance(args, dict) or len(args) != len(resps):
        return None
    names = [f"gen_args_{k}" for k in range(len(resps))]
    if sorted(args) != sorted(names):
        return None
    doc = first.get("doc")
    doc_fields = []
    for key, value in doc.items() if isinstance(doc, dict) else []:
        if type(value) in _SCALARS:
            doc_fields.append(pa.field(key, getattr(pa, _SCALARS[type(value)])()))
        elif value is None or isinstance(value, dict):
            return None  # a type the first line does not tell, or a nested object: the line reader
    request = pa.struct([("arg_0", pa.string()), ("arg_1", pa.string())])
    fields = [
        pa.field("doc_id", pa.int64()),
        pa.field("target", pa.int64() if isinstance(target, int) else pa.string()),
        pa.field("doc_hash", pa.string()),
        pa.field("filtered_resps", pa.list_(pa.list_(pa.string()))),
    ]
    if requests:
        fields.append(pa.field("arguments", pa.struct([pa.field(n, request) for n in names])))
    if doc_fields:
        fields.append(pa.field("doc", pa.struct(doc_fields)))
    return pa.schema(fields)


def read_columns(path: str, first: dict, *, rule, task: str, delimiter: str, mutual: bool) -> Items | None:
    """The items of the file by the columnar reader, or None where it does not apply."""
    import pyarrow as pa
    import pyarrow.json as pjson

    schema = _schema(first, requests=mutual or rule.name == "length-normalized")
    if schema is None:
        return None
    try:
        with open_binary(path) as stream:
            table = pjson.read_json(
                stream,
                parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
            )
        return _items(table, path, rule, task, delimiter, mutual)
    except (pa.ArrowException, ValueError, KeyError, TypeError):
        return None  # the line reader says which line


def _items(table, path: str, rule, task: str, delimiter: str, mutual: bool) -> Items | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    if n == 0 or any(table[c].null_count for c in ("doc_id", "target", "doc_hash", "filtered_resps")):
        return None
    resps = table["filtered_resps"].combine_chunks()
    m = len(first_width := pc.list_value_length(resps).unique()) == 1 and first_width[0].as_py()
    if not m:
        return None
    pairs = pc.list_flatten(resps)
    if pc.min_max(pc.list_value_length(pairs)).as_py() != {"min": 2, "max": 2}:
        return None
    lls = pc.cast(pc.list_element(pairs, 0), pa.float64()).to_numpy().reshape(n, m)  # each pair's log-likelihood
    if not np.isfinite(lls).all():
        return None
    k = m // 2 if mutual else m
    if k < 2 or (mutual and m != 2 * k):
        return None
    conts = []
    if "arguments" in table.column_names:
        args = table["arguments"].combine_chunks()
        conts = [pc.struct_field(pc.struct_field(args, [i]), [1]) for i in range(m)]
    if mutual:
        for i in range(k, m):
            ctx = pc.struct_field(pc.struct_field(args, [i]), [0])
            if not pc.all(pc.equal(ctx, "")).as_py() or not pc.all(pc.equal(conts[i], conts[i - k])).as_py():
                return None
    target = table["target"].combine_chunks()
    if target.type == pa.string():
        if not pc.all(pc.match_substring_regex(target, r"^\s*-?\d+\s*$")).as_py():
            return None  # choice texts as targets: the line reader
        target = pc.cast(pc.utf8_trim_whitespace(target), pa.int64())
    targets = target.to_numpy()
    if targets.min() < 0 or targets.max() >= k:
        return None
    scores = lls[:, :k]
    if rule.name == "length-normalized":
        lengths = np.column_stack(
            [
                pc.subtract(
                    pc.utf8_length(c), pc.multiply(pc.cast(pc.starts_with(c, delimiter), pa.int32()), len(delimiter))
                ).to_numpy(zero_copy_only=False)
                for c in conts[:k]
            ]
        ).astype(np.float64)
        scores = scores / np.maximum(lengths, 1.0)
    elif rule.name == "mutual-info":
        scores = scores - lls[:, k:]
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    probs = e / e.sum(axis=1, keepdims=True)
    columns: dict = {"task": pa.array([task] * n, pa.string()), "doc_id": table["doc_id"].combine_chunks()}
    if "doc" in table.column_names:
        doc = table["doc"].combine_chunks()
        for i, field in enumerate(doc.type):
            columns[f"doc.{field.name}"] = pc.struct_field(doc, [i])
    items = Items(path, "lm-eval", rule, keys=table["doc_hash"].combine_chunks(), probs=probs, targets=targets)
    items.columns = columns
    return items
