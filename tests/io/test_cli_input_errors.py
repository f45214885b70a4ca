"""The input layer through the CLI (``calibcli ece``): every error path with its exact message and
exit code 2 (and no ``--output`` file written), and every input layout that must be accepted.

Messages are SPEC 7's one line ``Error: ...`` on stderr; stdout stays empty on errors. Tests marked
``xfail(strict=True)`` state the message the input layer *should* print; they flip to XPASS (and fail)
once calibcli/io.py is fixed, so the marker can be removed.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import sys

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from _cli import SAMPLE, run
from calibcli.cli.app import app

runner = CliRunner()

BINARY_CSV = "prob,label\n0.1,0\n0.7,1\n0.4,1\n0.9,1\n0.2,0\n"
EXTENSIONS = ".arrow, .csv, .feather, .ipc, .jsonl, .ndjson, .parquet, .pq, .tab, .tsv"
FIX = "fix the file or pass --drop-invalid to drop them"


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def ece(*args, input=None):
    return runner.invoke(app, ["ece", *args, "--n-boot", "0"], input=input)


def assert_error(tmp_path, args: list[str], message: str, input=None) -> None:
    """Exit 2, exactly ``Error: message`` on stderr, nothing on stdout, no --output file."""
    out = tmp_path / "report.json"
    result = ece(*args, "--output", str(out), input=input)
    assert result.stderr == f"Error: {message}\n"
    assert result.exit_code == 2
    assert result.stdout == ""
    assert not out.exists()
    assert list(tmp_path.glob("report.json*")) == []  # no temporary file of the atomic write left either


def run_json(*args, input=None) -> dict:
    result = ece(*args, "--json", input=input)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def l1(doc: dict, file_index: int = 0) -> float:
    return doc["files"][file_index]["problems"][0]["metrics"]["ece_l1_plugin"]["estimate"]


# ---------------------------------------------------------------------------------------------
# Files and formats


def test_missing_file(tmp_path):
    path = str(tmp_path / "nope.csv")
    assert_error(tmp_path, [path], f"{path}: no such file: check the path")


def test_directory(tmp_path):
    path = tmp_path / "preds.csv"
    path.mkdir()
    assert_error(tmp_path, [str(path)], f"{path}: is a directory: expected a file of predictions")


def test_unknown_extension(tmp_path):
    path = write(tmp_path, "preds.txt", BINARY_CSV)
    assert_error(
        tmp_path,
        [path],
        f"{path}: cannot tell the format from the extension '.txt': expected one of {EXTENSIONS} "
        f"(optionally .gz for text formats), or pass --input-format",
    )


def test_unknown_extension_is_overridden_by_input_format(tmp_path):
    path = write(tmp_path, "preds.txt", BINARY_CSV)
    doc = run_json(path, "--input-format", "csv")
    assert doc["files"][0]["input"]["format"] == "csv"


def test_no_extension_message(tmp_path):
    path = write(tmp_path, "preds", BINARY_CSV)
    assert_error(
        tmp_path,
        [path],
        f"{path}: cannot tell the format: the file name has no extension: expected one of {EXTENSIONS} "
        f"(optionally .gz for text formats), or pass --input-format",
    )


def test_bad_input_format(tmp_path):
    path = write(tmp_path, "preds.csv", BINARY_CSV)
    assert_error(tmp_path, [path, "--input-format", "xls"], "--input-format is 'xls': expected one of csv, tsv, parquet, feather, jsonl")


def test_truncated_parquet(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"prob": [0.1, 0.5, 0.9], "label": [0, 1, 1]}), good)
    data = good.read_bytes()
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[: len(data) // 2])
    assert_error(
        tmp_path,
        [str(path)],
        f"{path}: cannot read as Parquet (Parquet magic bytes not found in footer. Either the file is corrupted or "
        f"this is not a parquet file.): check that the file is complete and in that format, or pass --input-format",
    )


def test_truncated_gzip_csv(tmp_path):
    text = "prob,label\n" + "".join(f"{i / 1000:.3f},{i % 2}\n" for i in range(1000))
    data = gzip.compress(text.encode())
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    assert_error(
        tmp_path,
        [str(path)],
        f"{path}: cannot read as CSV (Truncated compressed stream): check that the file is complete and in that "
        f"format, or pass --input-format",
    )


def test_header_only(tmp_path):
    path = write(tmp_path, "empty.csv", "prob,label\n")
    assert_error(tmp_path, [path], f"{path}: the file has no data rows: expected at least one prediction")


def test_zero_byte_file(tmp_path):
    path = write(tmp_path, "empty.csv", "")
    assert_error(
        tmp_path,
        [path],
        f"{path}: cannot read as CSV (Empty CSV file): check that the file is complete and in that format, or pass --input-format",
    )


def test_malformed_jsonl(tmp_path):
    path = write(tmp_path, "bad.jsonl", '{"prob": 0.1, "label": 0}\n{"prob": 0.6, "label"\n')
    result = ece(path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: cannot read as JSON Lines (JSON parse error: ")
    assert result.stderr.endswith("): check that the file is complete and in that format, or pass --input-format\n")


# ---------------------------------------------------------------------------------------------
# Values


def test_probability_outside_unit_interval(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n1.5,1\n0.4,1\n-0.2,0\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 2, column prob: probability is 1.5, outside [0, 1] (pass --logits if the columns hold logits); "
        f"2 such row(s): {FIX}",
    )


def test_rows_not_summing_to_one(tmp_path):
    path = write(tmp_path, "p.csv", "p_0,p_1,p_2,label\n0.2,0.3,0.5,1\n0.2,0.3,0.4,2\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 2, column p_0, p_1, p_2: class probabilities sum to 0.9, expected 1 within 0.0001 "
        f"(pass every class's column to --prob-cols, or --logits); 1 such row(s): {FIX}",
    )


def test_nan_probability(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\nnan,1\n0.4,1\n")
    assert_error(tmp_path, [path], f"{path}: row 2, column prob: probability is nan (not a finite number); 1 such row(s): {FIX}")


def test_empty_probability_cell(tmp_path):
    # the wording for the empty value itself is checked by test_empty_probability_cell_is_called_empty
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n0.3,1\n,1\n")
    out = tmp_path / "report.json"
    result = ece(path, "--output", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: row 3, column prob: probability is ")
    assert result.stderr.endswith(f"; 1 such row(s): {FIX}\n")
    assert not out.exists()


def test_inf_probability(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\ninf,1\n-inf,1\n")
    assert_error(tmp_path, [path], f"{path}: row 2, column prob: probability is inf (not a finite number); 2 such row(s): {FIX}")


def test_label_outside_classes(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n0.7,1\n0.4,2\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 3, column label: label in column 'label' is not one of the 2 classes "
        f"(found 2; classes: ['0', '1']); 1 such row(s): {FIX}",
    )


def test_label_outside_classes_exit_code_and_row(tmp_path):
    # what holds today, independent of how the found value is printed
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n0.7,1\n0.4,2\n")
    result = ece(path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: row 3, column label: label in column 'label' is not one of the 2 classes")
    assert result.stderr.endswith(f"1 such row(s): {FIX}\n")


def test_non_integer_label(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n0.7,0.5\n0.4,1\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 2, column label: label in column 'label' is not one of the 2 classes "
        f"(found 0.5; classes: ['0', '1']); 1 such row(s): {FIX}",
    )


def test_text_label_not_a_class_name(tmp_path):
    path = write(tmp_path, "p.csv", "p_cat,p_dog,p_bird,label\n0.7,0.2,0.1,cat\n0.1,0.8,0.1,cow\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 2, column label: label in column 'label' is not one of the 3 classes "
        f"(found 'cow'; classes: ['cat', 'dog', 'bird']); 1 such row(s): {FIX}",
    )


def test_text_labels_without_class_names(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,cat\n0.6,dog\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: labels in column 'label' are text (['cat', 'dog']) but the probabilities have no class names to "
        f"match: expected integer labels 0..1, booleans, or p_<class> columns",
    )


def test_non_numeric_probability_column(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\nabc,1\n0.4,1\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 2, column prob: column 'prob' holds 'abc', not a number; 1 such row(s): {FIX}",
    )


def test_negative_weight_exit_code_and_row(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label,w\n0.1,0,1\n0.7,1,-1\n0.4,1,2\n")
    result = ece(path, "--weight-col", "w")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: row 2, column w: weight in column 'w' is ")
    assert result.stderr.endswith(f", expected a finite number >= 0; 1 such row(s): {FIX}\n")


def test_negative_weight(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label,w\n0.1,0,1\n0.7,1,-1\n0.4,1,2\n")
    assert_error(
        tmp_path,
        [path, "--weight-col", "w"],
        f"{path}: row 2, column w: weight in column 'w' is -1, expected a finite number >= 0; 1 such row(s): {FIX}",
    )


def test_missing_weight(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label,w\n0.1,0,1\n0.7,1,\n0.4,1,2\n")
    assert_error(
        tmp_path,
        [path, "--weight-col", "w"],
        f"{path}: row 2, column w: weight in column 'w' is empty, expected a finite number >= 0; 1 such row(s): {FIX}",
    )


def test_non_numeric_weight_column(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label,w\n0.1,0,1\n0.7,1,abc\n0.4,1,2\n")
    assert_error(tmp_path, [path, "--weight-col", "w"], f"{path}: weight column 'w' has type string: expected numbers")


def test_weights_summing_to_zero(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label,w\n0.1,0,0\n0.7,1,0\n")
    assert_error(tmp_path, [path, "--weight-col", "w"], f"{path}: sample weights sum to 0: expected a positive total weight")


def test_multiclass_outside_unit_interval_grammar(tmp_path):
    path = write(tmp_path, "p.csv", "p_0,p_1,p_2,label\n0.2,0.3,0.5,1\n-2,1,2,0\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: row 2, column p_0, p_1, p_2: class probabilities are [-2, 1, 2], outside [0, 1] "
        f"(pass --logits if the columns hold logits); 1 such row(s): {FIX}",
    )


def test_non_finite_logits_name_the_logits(tmp_path):
    path = write(tmp_path, "p.csv", "logit_0,logit_1,label\n-2.0,1,0\ninf,1,1\n")
    assert_error(
        tmp_path,
        [path, "--logits"],
        f"{path}: row 2, column logit_0, logit_1: logits are [inf, 1] (not all finite numbers); 1 such row(s): {FIX}",
    )


def test_vector_column_with_missing_row(tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"probs": [[0.2, 0.3, 0.5], None, [0.1, 0.8, 0.1]], "label": [2, 0, 1]}), path)
    assert_error(tmp_path, [str(path)], f"{path}: column 'probs' is empty at row 2: expected a probability vector on every row")


def test_vector_column_with_ragged_rows(tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"probs": [[0.2, 0.3, 0.5], [0.5, 0.5], [0.1, 0.8, 0.1]], "label": [2, 0, 1]}), path)
    assert_error(
        tmp_path,
        [str(path)],
        f"{path}: column 'probs' holds vectors of length 3 and 2 (row 2): expected one probability per class on every row",
    )


# ---------------------------------------------------------------------------------------------
# Columns


def test_missing_prob_col(tmp_path):
    path = write(tmp_path, "p.csv", BINARY_CSV)
    assert_error(tmp_path, [path, "--prob-col", "score"], f"{path}: no column 'score' (given by --prob-col); the file has columns ['prob', 'label']")


def test_missing_label_col(tmp_path):
    path = write(tmp_path, "p.csv", BINARY_CSV)
    assert_error(tmp_path, [path, "--label-col", "y"], f"{path}: no column 'y' (given by --label-col); the file has columns ['prob', 'label']")


def test_missing_weight_col(tmp_path):
    path = write(tmp_path, "p.csv", BINARY_CSV)
    assert_error(tmp_path, [path, "--weight-col", "w"], f"{path}: no column 'w' (given by --weight-col); the file has columns ['prob', 'label']")


def test_prob_cols_pattern_matching_nothing(tmp_path):
    path = write(tmp_path, "p.csv", BINARY_CSV)
    assert_error(
        tmp_path, [path, "--prob-cols", "q_*"], f"{path}: --prob-cols pattern 'q_*' matches no column; the file has columns ['prob', 'label']"
    )


def test_prob_cols_naming_one_plain_column(tmp_path):
    path = write(tmp_path, "p.csv", BINARY_CSV)
    assert_error(
        tmp_path,
        [path, "--prob-cols", "prob"],
        f"{path}: --prob-cols names one column ('prob'): for a binary problem use --prob-col, for K classes name K columns",
    )


def test_prob_col_and_prob_cols_together(tmp_path):
    path = write(tmp_path, "p.csv", BINARY_CSV)
    assert_error(
        tmp_path,
        [path, "--prob-col", "prob", "--prob-cols", "p_*"],
        "pass either --prob-col (one binary column) or --prob-cols (one column per class), not both",
    )


def test_ambiguous_columns(tmp_path):
    path = write(tmp_path, "p.csv", "prob,p_0,p_1,label\n0.1,0.9,0.1,0\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: the probability columns are ambiguous (candidates: prob; p_0, p_1): pass --prob-col NAME for one "
        f"binary column or --prob-cols for one column per class",
    )
    doc = run_json(path, "--prob-col", "prob")  # the flag resolves it
    assert doc["files"][0]["input"]["columns"]["probabilities"] == ["prob"]
    assert doc["files"][0]["input"]["columns"]["chosen_by"] == "flags"


def test_no_probability_column(tmp_path):
    path = write(tmp_path, "p.csv", "margin,label\n0.1,0\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: no probability column recognised among ['margin', 'label']: expected a column named "
        f"prob/score/confidence, columns p_0..p_K-1, or a list column; pass --prob-col or --prob-cols",
    )


def test_no_label_column(tmp_path):
    path = write(tmp_path, "p.csv", "prob,truth\n0.1,0\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: no label column recognised among ['prob', 'truth']: expected one named "
        f"label/labels/y/y_true/target; pass --label-col NAME",
    )
    assert run_json(path, "--label-col", "truth")["files"][0]["input"]["columns"]["label"] == "truth"


def test_duplicate_column_names(tmp_path):
    path = write(tmp_path, "p.csv", "prob,prob,label\n0.1,0.2,0\n")
    assert_error(
        tmp_path,
        [path],
        f"{path}: column name 'prob' appears more than once in the header: expected unique column names; rename the duplicates",
    )


# ---------------------------------------------------------------------------------------------
# --drop-invalid


def test_drop_invalid_counts_by_reason(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label,w\n0.1,0,1\nnan,1,1\n1.5,1,1\n0.3,7,1\n0.5,1,-2\n0.8,1,1\n0.6,,1\n")
    doc = run_json(path, "--weight-col", "w", "--drop-invalid")
    i = doc["files"][0]["input"]
    assert i["rows_read"] == 7
    assert i["rows_used"] == 2
    assert i["rows_dropped"] == 5
    assert i["dropped_reasons"] == {
        "non-finite probability": 1,
        "probability outside [0, 1]": 1,
        "label outside the classes": 2,
        "invalid sample weight": 1,
    }
    # the kept rows alone give the same numbers as a clean file of those rows
    clean = write(tmp_path, "clean.csv", "prob,label,w\n0.1,0,1\n0.8,1,1\n")
    assert l1(doc) == l1(run_json(clean, "--weight-col", "w"))


def test_drop_invalid_multiclass_row_sums(tmp_path):
    path = write(tmp_path, "p.csv", "p_0,p_1,p_2,label\n0.2,0.3,0.5,1\n0.2,0.3,0.4,2\n0.6,0.2,0.2,0\n")
    i = run_json(path, "--drop-invalid")["files"][0]["input"]
    assert i["rows_used"] == 2
    assert i["dropped_reasons"] == {"probabilities not summing to 1": 1}


def test_drop_invalid_with_every_row_invalid(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\nnan,0\n1.5,1\n")
    assert_error(
        tmp_path,
        [path, "--drop-invalid"],
        f"{path}: every row was invalid and dropped ({{'non-finite probability': 1, 'probability outside [0, 1]': 1}}): "
        f"nothing left to evaluate",
    )


# ---------------------------------------------------------------------------------------------
# Standard input


def test_stdin_csv(tmp_path):
    doc = run_json("-", input=BINARY_CSV)
    i = doc["files"][0]["input"]
    assert (i["path"], i["format"], i["rows_used"]) == ("<stdin>", "csv", 5)
    assert l1(doc) == l1(run_json(write(tmp_path, "p.csv", BINARY_CSV)))


def test_stdin_gzip_csv(tmp_path):
    doc = run_json("-", input=gzip.compress(BINARY_CSV.encode()))
    assert doc["files"][0]["input"]["rows_used"] == 5


def test_stdin_parquet(tmp_path):
    buf = io.BytesIO()
    pq.write_table(pa.table({"prob": [0.1, 0.7, 0.4, 0.9, 0.2], "label": [0, 1, 1, 1, 0]}), buf)
    doc = run_json("-", "--input-format", "parquet", input=buf.getvalue())
    i = doc["files"][0]["input"]
    assert (i["path"], i["format"], i["rows_used"]) == ("<stdin>", "parquet", 5)
    assert l1(doc) == l1(run_json(write(tmp_path, "p.csv", BINARY_CSV)))


def test_stdin_bad_parquet(tmp_path):
    assert_error(
        tmp_path,
        ["-", "--input-format", "parquet"],
        "<stdin>: cannot read as Parquet (Parquet magic bytes not found in footer. Either the file is corrupted or "
        "this is not a parquet file.): check that the file is complete and in that format, or pass --input-format",
        input=BINARY_CSV,
    )


def test_stdin_twice(tmp_path):
    assert_error(tmp_path, ["-", "-"], "'-' (stdin) is given more than once: standard input can be read only once", input=BINARY_CSV)


# ---------------------------------------------------------------------------------------------
# Accepted layouts (each compared with the plain CSV it encodes)


@pytest.fixture
def reference_l1(tmp_path):
    return l1(run_json(write(tmp_path, "ref.csv", BINARY_CSV)))


def _binary_table():
    return pa.table({"prob": [0.1, 0.7, 0.4, 0.9, 0.2], "label": [0, 1, 1, 1, 0]})


def test_tsv(tmp_path, reference_l1):
    path = write(tmp_path, "p.tsv", BINARY_CSV.replace(",", "\t"))
    doc = run_json(path)
    assert doc["files"][0]["input"]["format"] == "tsv"
    assert l1(doc) == reference_l1


def test_gzip_csv(tmp_path, reference_l1):
    path = tmp_path / "p.csv.gz"
    path.write_bytes(gzip.compress(BINARY_CSV.encode()))
    doc = run_json(str(path))
    assert doc["files"][0]["input"]["format"] == "csv"
    assert l1(doc) == reference_l1


def test_feather(tmp_path, reference_l1):
    path = tmp_path / "p.feather"
    feather.write_feather(_binary_table(), path)
    doc = run_json(str(path))
    assert doc["files"][0]["input"]["format"] == "feather"
    assert l1(doc) == reference_l1


def test_jsonl(tmp_path, reference_l1):
    lines = "".join(json.dumps({"prob": p, "label": y}) + "\n" for p, y in zip([0.1, 0.7, 0.4, 0.9, 0.2], [0, 1, 1, 1, 0]))
    doc = run_json(write(tmp_path, "p.jsonl", lines))
    assert doc["files"][0]["input"]["format"] == "jsonl"
    assert l1(doc) == reference_l1


MULTI = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.5, 0.3, 0.2], [0.3, 0.3, 0.4]])
MULTI_LABELS = [0, 1, 2, 1, 0]


def _multi_csv(header: list[str], labels: list) -> str:
    rows = [",".join(f"{v:g}" for v in row) + f",{lab}" for row, lab in zip(MULTI, labels)]
    return ",".join(header) + ",label\n" + "\n".join(rows) + "\n"


def top_label(doc: dict) -> float:
    f = doc["files"][0]
    assert f["mode"] == "top-label"
    return f["problems"][0]["metrics"]["ece_l1_plugin"]["estimate"]


@pytest.fixture
def multi_reference(tmp_path):
    return top_label(run_json(write(tmp_path, "m.csv", _multi_csv(["p_0", "p_1", "p_2"], MULTI_LABELS))))


def test_parquet_list_column(tmp_path, multi_reference):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"probs": MULTI.tolist(), "label": MULTI_LABELS}), path)
    doc = run_json(str(path))
    i = doc["files"][0]["input"]
    assert i["columns"]["probabilities"] == ["probs"]
    assert (i["n_classes"], i["class_names"]) == (3, ["0", "1", "2"])
    assert top_label(doc) == multi_reference


def test_class_name_labels(tmp_path, multi_reference):
    names = ["cat", "dog", "bird"]
    path = write(tmp_path, "n.csv", _multi_csv([f"p_{n}" for n in names], [names[k] for k in MULTI_LABELS]))
    doc = run_json(path)
    assert doc["files"][0]["input"]["class_names"] == names
    assert top_label(doc) == multi_reference


def test_integer_labels_with_suffixes_one_to_k(tmp_path, multi_reference):
    path = write(tmp_path, "s.csv", _multi_csv(["p_1", "p_2", "p_3"], [k + 1 for k in MULTI_LABELS]))
    doc = run_json(path)
    assert doc["files"][0]["input"]["class_names"] == ["1", "2", "3"]
    assert top_label(doc) == multi_reference


def test_prob_cols_pattern_orders_by_numeric_suffix(tmp_path):
    # columns in the file out of order, p_10 after p_9 numerically
    k = 11
    P = np.full((2, k), 0.045)
    P[0, 10], P[1, 2] = 0.55, 0.55
    header = [f"p_{j}" for j in [10, *range(10)]]
    rows = [",".join(f"{P[r, j]:g}" for j in [10, *range(10)]) + f",{lab}" for r, lab in enumerate([10, 2])]
    path = write(tmp_path, "o.csv", ",".join(header) + ",label\n" + "\n".join(rows) + "\n")
    i = run_json(path, "--prob-cols", "p_*")["files"][0]["input"]
    assert i["columns"]["probabilities"] == [f"p_{j}" for j in range(11)]
    assert i["columns"]["chosen_by"] == "flags"


def test_boolean_labels(tmp_path, reference_l1):
    text = BINARY_CSV.replace(",0\n", ",false\n").replace(",1\n", ",True\n")
    assert l1(run_json(write(tmp_path, "b.csv", text))) == reference_l1
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"prob": [0.1, 0.7, 0.4, 0.9, 0.2], "label": [False, True, True, True, False]}), path)
    assert l1(run_json(str(path))) == reference_l1


def test_logits_binary(tmp_path):
    logits = [-2.0, 0.85, -0.4, 2.2, -1.4]
    labels = [0, 1, 1, 1, 0]
    path = write(tmp_path, "l.csv", "score,label\n" + "".join(f"{v},{y}\n" for v, y in zip(logits, labels)))
    doc = run_json(path, "--logits")
    assert doc["files"][0]["input"]["columns"]["logits"] is True
    probs = write(tmp_path, "p.csv", "prob,label\n" + "".join(f"{1 / (1 + math.exp(-v))!r},{y}\n" for v, y in zip(logits, labels)))
    assert l1(doc) == pytest.approx(l1(run_json(probs)), abs=1e-12)


def test_logits_multiclass(tmp_path):
    rng = np.random.default_rng(3)
    L = rng.normal(size=(6, 3)) * 2
    labels = [0, 1, 2, 2, 1, 0]
    P = np.exp(L - L.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    lpath = write(tmp_path, "l.csv", "logit_0,logit_1,logit_2,label\n" + "".join(",".join(map(repr, r)) + f",{y}\n" for r, y in zip(L.tolist(), labels)))
    ppath = write(tmp_path, "p.csv", "p_0,p_1,p_2,label\n" + "".join(",".join(map(repr, r)) + f",{y}\n" for r, y in zip(P.tolist(), labels)))
    assert top_label(run_json(lpath, "--logits")) == pytest.approx(top_label(run_json(ppath)), abs=1e-12)
    # without --logits the values are not probabilities, and the message says so
    result = ece(lpath)
    assert result.exit_code == 2
    assert "outside [0, 1] (pass --logits if the columns hold logits)" in result.stderr


def test_multiple_files_one_entry_each(tmp_path, reference_l1):
    csv = write(tmp_path, "a.csv", BINARY_CSV)
    tsv = write(tmp_path, "b.tsv", BINARY_CSV.replace(",", "\t"))
    multi = write(tmp_path, "m.csv", _multi_csv(["p_0", "p_1", "p_2"], MULTI_LABELS))
    out = tmp_path / "all.json"
    result = ece(csv, tsv, multi, "--json", "--output", str(out))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert json.loads(out.read_text()) == doc
    assert [f["input"]["path"] for f in doc["files"]] == [csv, tsv, multi]
    assert [f["mode"] for f in doc["files"]] == ["binary", "binary", "top-label"]
    assert l1(doc, 0) == l1(doc, 1) == reference_l1


def test_multiple_files_one_bad_writes_nothing(tmp_path):
    good = write(tmp_path, "a.csv", BINARY_CSV)
    bad = str(tmp_path / "missing.csv")
    assert_error(tmp_path, [good, bad], f"{bad}: no such file: check the path")


def _ipc_stream_bytes(table) -> bytes:
    import pyarrow.ipc as ipc

    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def test_arrow_ipc_stream_file(tmp_path, reference_l1):
    path = tmp_path / "p.arrow"
    path.write_bytes(_ipc_stream_bytes(_binary_table()))
    doc = run_json(str(path))
    assert doc["files"][0]["input"]["format"] == "feather"
    assert l1(doc) == reference_l1


def test_stdin_arrow_ipc_stream(reference_l1):
    doc = run_json("-", "--input-format", "arrow", input=_ipc_stream_bytes(_binary_table()))
    assert l1(doc) == reference_l1


def test_stdin_feather_file(reference_l1):
    buf = io.BytesIO()
    feather.write_feather(_binary_table(), buf)
    assert l1(run_json("-", "--input-format", "feather", input=buf.getvalue())) == reference_l1


def test_stdin_jsonl(reference_l1):
    lines = "".join(json.dumps({"prob": p, "label": y}) + "\n" for p, y in zip([0.1, 0.7, 0.4, 0.9, 0.2], [0, 1, 1, 1, 0]))
    assert l1(run_json("-", "--input-format", "jsonl", input=lines)) == reference_l1


# ---------------------------------------------------------------------------------------------
# Messages that could say more (strict xfail, checked by what they should contain, since the exact
# wording is the lead's choice)


def test_non_numeric_probability_names_row_and_value(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\nabc,1\n0.4,1\n")
    result = ece(path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: ")
    assert "row 2" in result.stderr and "'abc'" in result.stderr


def test_empty_label_cell_is_called_empty(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n0.7,\n0.4,1\n")
    result = ece(path)
    assert result.exit_code == 2
    assert f"Error: {path}: row 2, column label: " in result.stderr
    assert "(found empty; classes: ['0', '1'])" in result.stderr


def test_empty_probability_cell_is_called_empty(tmp_path):
    path = write(tmp_path, "p.csv", "prob,label\n0.1,0\n0.3,1\n,1\n")
    result = ece(path)
    assert result.exit_code == 2
    assert f"Error: {path}: row 3, column prob: probability is empty" in result.stderr


@pytest.mark.parametrize("command", [["ece"], ["smece"], ["tcal"], ["diagram"], ["recalibrate", "fit", "--method", "platt"]])
def test_output_that_is_a_directory_or_in_a_missing_folder_fails_before_any_work(command, tmp_path):
    sample = str(SAMPLE / "breast_cancer_nb.csv")
    missing = tmp_path / "nowhere" / "out.json"
    for target, message in ((tmp_path, "it is a directory"), (missing, f"the folder {missing.parent} does not exist")):
        result = run(*command, sample, "-o", str(target))
        assert result.exit_code == 2
        assert result.stderr.startswith(f"Error: --output {target}: {message}")
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_report_that_is_a_directory_fails_before_any_work(tmp_path):
    out = tmp_path / "cal.json"
    result = run("recalibrate", "fit", str(SAMPLE / "breast_cancer_nb.csv"), "--method", "platt", "-o", str(out),
                 "--report", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == f"Error: --report {tmp_path}: it is a directory: name a file (one inside it, for example)\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ece", "x.csv", "--n-bins", "abc"], "Error: Invalid value for '--n-bins'"),
        (["diagram", "x.csv"], "Error: Missing option '--output' / '-o'."),
        (["ece", "x.csv", "--bogus"], "Error: No such option: --bogus"),
        (["nosuch"], "Error: No such command 'nosuch'."),
    ],
)
def test_option_parser_errors_are_one_line_with_exit_2(argv, message, monkeypatch, capsys):
    from calibcli.cli.app import main

    monkeypatch.setattr(sys, "argv", ["calibcli", *argv])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "--help" in err
