"""The work of ``calibcli recalibrate apply``: a saved calibrator applied to one file batch by batch (memory
flat in the rows), the recalibrated probability columns (and Venn-Abers' interval columns) written to the
output in its format, and the summary document. The command (:mod:`calibcli.cli.commands.recalibrate`)
checks the options and renders the summary (on stderr when stdout carries the rows).
"""

from __future__ import annotations

import numpy as np

from calibcli.calibrators.document import invalid_probability_rows, load_calibrator
from calibcli.calibrators.multiclass import top_label_problem
from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError, warn
from calibcli.core.modes import sigmoid, softmax
from calibcli.io import converted, formats
from calibcli.io.arrow_values import column_to_numpy
from calibcli.io.columns import _split_list, expand_columns, vector_column
from calibcli.io.footers import _guarded
from calibcli.io.formats import no_rows
from calibcli.io.fragments import _guarded_iter
from calibcli.io.resolve import resolve_datasets
from calibcli.io.writers import output_format as pick_format
from calibcli.io.writers import write_table_output


def apply_document(
    calibrator: str, file: str, *, output: str, output_format, given_columns: tuple, reading: dict
) -> dict:
    """Apply the calibrator saved at ``calibrator`` to ``file``, write the result to ``output`` ('-':
    stdout) and return the summary document. ``given_columns``: (--prob-col, --prob-cols), the file's probability
    columns when they are not the calibrator's; ``reading``: input_format, drop_invalid, batch_rows."""
    prob_col, prob_cols = given_columns
    input_format, drop_invalid, batch_rows = reading["input_format"], reading["drop_invalid"], reading["batch_rows"]
    to_stdout = output == "-"
    doc, cal = load_calibrator(calibrator)
    _check_confidence_rule(doc, file, calibrator)
    if output_format is not None:
        pick_format(output, output_format, "csv")  # a bad --output-format fails before the input is read
    dataset, location, in_fmt, display, schema = _open_apply_input(file, input_format)
    layout, columns = _apply_columns(schema, doc, prob_col=prob_col, prob_cols=prob_cols, display=display)
    out_fmt = pick_format(output, output_format, "csv" if to_stdout else in_fmt)
    if to_stdout and out_fmt in ("parquet", "feather") and _stdout_is_terminal():
        raise CalibcliError(
            f"stdout is a terminal: {out_fmt} is binary; pipe it to the next command or write a file with --output"
        )
    extra = venn_abers_columns(cal, layout, columns)
    types = None
    if in_fmt in formats.TEXT_FORMATS:  # typed as the first lines say, the probability columns as float64
        schema = _apply_schema_text(schema, tuple(columns))
        types = {f.name: f.type for f in schema}
    out_schema = _apply_schema(
        schema,
        layout,
        columns,
        extra,
        display,
        list_extra=layout == "vector" and getattr(cal, "mode", "binary") == "marginal",
    )
    run = _ApplyRun(cal, doc, layout, columns, extra, out_schema, display, drop_invalid)
    tables = _guarded_iter(display, in_fmt, formats.iter_full_tables(location, in_fmt, batch_rows, types))
    write_table_output(output, out_fmt, run.batches(tables), schema=out_schema)
    del dataset  # the temporary copy of stdin can go

    def mean(s):
        return (s / run.rows_out).tolist() if isinstance(s, np.ndarray) else float(s / run.rows_out)

    rep = new_document("recalibrate apply", {"calibrator": calibrator, "method": doc["method"], "mode": doc["mode"]})
    rep["files"].append(
        {
            "input": {
                "path": display,
                "format": in_fmt,
                "rows": run.rows_in,
                "rows_dropped": run.n_dropped,
                "columns": columns,
            },
            "output": {
                "path": "<stdout>" if to_stdout else output,
                "format": out_fmt,
                "rows": run.rows_out,
                "interval_columns": [name for _, name in extra],
            },
            "method": doc["method"],
            "mode": doc["mode"],
            "fitted_on": doc.get("fitted_on"),
            **({"llm": doc["llm"]} if doc.get("llm") else {}),
            "mean_probability_before": mean(run.sum_before),
            "mean_probability_after": mean(run.sum_after),
        }
    )
    if doc["columns"]["logits"]:
        where = "the output" if to_stdout else output
        warn(f"the columns {', '.join(columns)} held logits; in {where} they hold recalibrated probabilities")
    return rep


def _check_confidence_rule(doc: dict, file: str, calibrator: str) -> None:
    """A map fitted on an LLM dump's probabilities under one ``--confidence`` rule applies to dumps read with that
    rule only (another rule gives other probabilities of the same answers)."""
    fitted = (doc.get("llm") or {}).get("confidence")
    for entry in converted.lookup(file) or []:
        read_with = (entry.described.get("llm") or {}).get("confidence")
        if fitted and read_with and read_with != fitted:
            raise CalibcliError(
                f"{entry.name}: read with --confidence {read_with}, but {calibrator} was fitted on probabilities "
                f"from --confidence {fitted}: pass --confidence {fitted}, or fit a map on this rule"
            )


def _fmt_row(v) -> str:
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    body = ", ".join(f"{x:.6g}" for x in a[:6])
    return body if a.size == 1 else f"[{body}{', ...' if a.size > 6 else ''}]"


def _apply_columns(schema, doc: dict, *, prob_col, prob_cols, display: str) -> tuple[str, list[str]]:
    """The layout (``single``, ``columns``, ``vector``) and the probability columns of the file to recalibrate.

    The columns are the calibrator's unless --prob-col / --prob-cols name others (names, comma-separated
    lists or patterns such as 'p_*'). One list column or K numeric columns give an (n, K) array, one numeric
    column a 1-D array; the form must be the one the calibrator was fitted on.
    """
    import pyarrow as pa

    K = doc["n_classes"]
    expected = list(doc["columns"]["probabilities"])
    if prob_col and prob_cols:
        raise CalibcliError(
            "pass either --prob-col (one binary column) or --prob-cols (one column per class), not both"
        )
    names = list(schema.names)
    columns = expected
    if prob_col:
        columns = [prob_col]
    elif prob_cols:
        columns = expand_columns(
            _split_list(prob_cols),
            names,
            missing=lambda item: (
                f"{display}: --prob-cols pattern {item!r} matches no column; the file has columns {names}"
            ),
        )
    missing = [c for c in columns if c not in names]
    if missing:
        raise CalibcliError(
            f"{display}: no column {missing[0]!r}, which the calibrator expects (fitted on columns "
            f"{', '.join(expected)}, classes {doc['class_names']}); the file has columns {names}: "
            "pass --prob-col/--prob-cols to map them"
        )
    one_d = doc["columns"]["layout"] == "single"
    if len(columns) == 1:
        t = schema.field(columns[0]).type
        layout = (
            "vector"
            if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))
            else "single"
        )
    else:
        layout = "columns"
    if (layout == "single") != one_d or (layout == "columns" and len(columns) != K):
        fitted = "one probability column" if one_d else f"{K} class probabilities"
        given = {
            "single": "one probability column",
            "vector": f"the vector column {columns[0]!r}",
            "columns": f"{len(columns)} columns",
        }[layout]
        raise CalibcliError(
            f"{display}: the calibrator was fitted on {fitted} ({', '.join(expected)}) but {given} "
            f"were given: pass --prob-col/--prob-cols naming {fitted}"
        )
    if layout != "vector":
        for c in columns:
            t = schema.field(c).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)):
                raise CalibcliError(f"{display}: probability column {c!r} has type {t}: expected numbers")
    return layout, columns


def _batch_probs(table, doc: dict, layout: str, columns: list[str], display: str, first_row: int) -> np.ndarray:
    """The probabilities of one batch: (n,) for one column, (n, K) otherwise; logits turned into probabilities."""
    if layout == "vector":
        probs = vector_column(table, columns[0], display, first_row=first_row)
        if probs.shape[1] != doc["n_classes"]:
            raise CalibcliError(
                f"{display}: column {columns[0]!r} holds vectors of length {probs.shape[1]}, but the "
                f"calibrator was fitted on {doc['n_classes']} classes"
            )
    else:
        arrays = [np.asarray(column_to_numpy(table, c), dtype=np.float64) for c in columns]
        probs = arrays[0] if layout == "single" else np.column_stack(arrays)
    if doc["columns"]["logits"]:
        with np.errstate(invalid="ignore", over="ignore"):
            probs = sigmoid(probs) if probs.ndim == 1 else softmax(probs)
    return probs


def venn_abers_columns(cal, layout: str, columns: list[str]) -> list[tuple[str, str]]:
    """The interval columns a Venn-Abers calibrator adds, as ``(after column, new name)``: ``{col}_p0`` and
    ``{col}_p1`` beside the probability column they bracket (Vovk & Petej 2014, the isotonic fits with the
    test label 0 and 1; the merged probability is ``p1 / (1 - p0 + p1)``).

    One column: ``prob_p0, prob_p1``. K columns: marginal gives every class column its pair (the interval of
    that class's one-vs-rest map, before the rows are renormalised), binary the second (positive) class column;
    a vector column gets ``{col}_p0, {col}_p1`` (per-class lists in marginal mode). Top-label brackets the
    recalibrated confidence of each row's top class: ``confidence_p0, confidence_p1`` after the last column.
    Empty for any other method.
    """
    if cal.method != "venn-abers":
        return []
    mode = getattr(cal, "mode", "binary")
    if layout == "single":
        return [(columns[0], f"{columns[0]}_{p}") for p in ("p0", "p1")]
    if mode == "top-label":
        return [(columns[-1], f"confidence_{p}") for p in ("p0", "p1")]
    if layout == "vector" or mode == "binary":
        col = columns[0] if layout == "vector" else columns[1]
        return [(col, f"{col}_{p}") for p in ("p0", "p1")]
    return [(c, f"{c}_{p}") for c in columns for p in ("p0", "p1")]


def _venn_abers_values(cal, probs: np.ndarray, layout: str) -> list[np.ndarray]:
    """The interval values in the order of :func:`venn_abers_columns` (1-D arrays, or (n, K) for lists)."""
    if probs.ndim == 1:
        return list(cal.predict_interval(probs))
    mode = cal.mode
    if mode == "binary":
        return list(cal.calibrators[0].predict_interval(probs[:, 1]))
    if mode == "top-label":
        _, conf = top_label_problem(np.zeros(len(probs), dtype=np.int64), probs)
        return list(cal.calibrators[0].predict_interval(conf))
    pairs = [c.predict_interval(probs[:, k]) for k, c in enumerate(cal.calibrators)]
    if layout == "vector":
        return [np.column_stack([p[0] for p in pairs]), np.column_stack([p[1] for p in pairs])]
    return [v for pair in pairs for v in pair]


def _apply_schema(
    schema, layout: str, columns: list[str], extra: list[tuple[str, str]], display: str, *, list_extra: bool
):
    """The output's schema: the probability columns as float64 (lists of float64 for a vector column), the
    Venn-Abers interval columns inserted after the column they bracket."""
    import pyarrow as pa

    prob_type = pa.list_(pa.float64()) if layout == "vector" else pa.float64()
    clash = [name for _, name in extra if name in schema.names]
    if clash:
        raise CalibcliError(
            f"{display}: already has a column {clash[0]!r}, where the Venn-Abers interval would go: rename it first"
        )
    fields = []
    for f in schema:
        fields.append(pa.field(f.name, prob_type) if f.name in columns else f)
        for after, name in extra:
            if after == f.name:
                fields.append(pa.field(name, prob_type if list_extra else pa.float64()))
    return pa.schema(fields)


class _ApplyRun:
    """Recalibrates the batches of one input as they are read; counts rows and sums for the report."""

    def __init__(
        self, cal, doc: dict, layout: str, columns: list[str], extra, schema, display: str, drop_invalid: bool
    ):
        self.cal, self.doc, self.layout, self.columns, self.extra = cal, doc, layout, columns, extra
        self.schema, self.display, self.drop_invalid = schema, display, drop_invalid
        self.rows_in = self.rows_out = self.n_dropped = 0
        self.first_bad: tuple[int, np.ndarray] | None = None
        self.sum_before = self.sum_after = 0.0

    def batches(self, tables):
        """The recalibrated tables; invalid probabilities stop the run (after counting them all) unless dropped."""
        import pyarrow as pa

        for table in tables:
            first_row = self.rows_in
            self.rows_in += table.num_rows
            probs = _batch_probs(table, self.doc, self.layout, self.columns, self.display, first_row)
            bad = invalid_probability_rows(probs)
            if bad.any():
                self.n_dropped += int(bad.sum())
                if self.first_bad is None:
                    row = int(np.flatnonzero(bad)[0])
                    self.first_bad = (first_row + row, probs[row])
                if not self.drop_invalid:
                    continue  # keep counting: the message says how many rows are invalid
                keep = ~bad
                table, probs = table.filter(pa.array(keep)), probs[keep]
            if (self.first_bad is not None and not self.drop_invalid) or len(probs) == 0:
                continue
            out = self.cal.predict(probs)
            self.sum_before = self.sum_before + probs.sum(axis=0)
            self.sum_after = self.sum_after + out.sum(axis=0)
            self.rows_out += len(out)
            yield self._table(table, probs, out)
        if self.rows_in == 0:
            raise no_rows(self.display)
        if self.first_bad is not None and not self.drop_invalid:
            row, values = self.first_bad
            raise CalibcliError(
                f"{self.display}: row {row + 1}, column {', '.join(self.columns)}: probabilities {_fmt_row(values)} "
                f"are not valid (finite, within [0, 1], summing to 1 per row); {self.n_dropped} such row(s): fix the "
                f"file or pass --drop-invalid to leave them out of the output"
            )
        if self.rows_out == 0:
            raise CalibcliError(f"{self.display}: every row has invalid probabilities: nothing to recalibrate")

    def _table(self, table, probs: np.ndarray, out: np.ndarray):
        import pyarrow as pa

        new = {}
        if self.layout == "vector":
            new[self.columns[0]] = _list_array(out)
        else:
            cols = out[:, None] if out.ndim == 1 else out
            for k, name in enumerate(self.columns):
                new[name] = pa.array(cols[:, k], type=pa.float64())
        values = _venn_abers_values(self.cal, probs, self.layout) if self.extra else []
        for (_, name), v in zip(self.extra, values, strict=True):
            new[name] = _list_array(v) if v.ndim == 2 else pa.array(v, type=pa.float64())
        arrays = [new[f.name] if f.name in new else table.column(f.name) for f in self.schema]
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _list_array(values: np.ndarray):
    import pyarrow as pa

    K = values.shape[1]
    offsets = pa.array(np.arange(0, values.size + 1, K, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(values.ravel(), type=pa.float64()))


def _open_apply_input(path: str, input_format: str | None):
    """The one file to recalibrate: ``(dataset, location, format, display name, schema)``; standard input
    is spooled to a temporary file (kept while ``dataset`` lives) and its format sniffed."""
    (dataset,) = resolve_datasets([path])
    if dataset.kind == "directory":
        raise CalibcliError(f"{path}: is a directory: expected a file of predictions")
    if len(dataset.files) != 1:
        raise CalibcliError(f"{path}: names {len(dataset.files)} files: expected one file")
    display = "<stdin>" if path == "-" else dataset.files[0]
    (fmt,) = dataset.file_formats(input_format)  # standard input and pipes (<(cmd)): by their first bytes
    (location,) = dataset.locations()
    schema = _guarded(display, fmt, formats.read_schema, location, fmt)
    return dataset, location, fmt, display, schema


def _stdout_is_terminal() -> bool:
    import sys

    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stdout
        return False


def _apply_schema_text(schema, numeric: tuple[str, ...]):
    """A CSV file's schema as the apply reader types it: the probability columns float64, a column empty
    in the first lines as text (pyarrow's "null" type would reject a later value)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field(f.name, pa.float64())
            if f.name in numeric
            else pa.field(f.name, pa.string())
            if pa.types.is_null(f.type)
            else f
            for f in schema
        ]
    )
