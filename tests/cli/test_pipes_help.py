"""Pipes and help (issue 13): ``recalibrate apply`` writes to stdout in every format and ``calibcli ece -``
reads it back, through a real shell pipe too; Venn-Abers' interval columns; choices and an example in every
command's help; a bad choice is one ``Error:`` line with exit 2."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from calibcli.calibrators import fit_multiclass
from calibcli.calibrators.isotonic import fit_venn_abers
from calibcli.cli.app import COMMANDS, SUMMARIES, app, load_command

from _cli import SAMPLE, run, runner  # tests/ is on sys.path

ROOT = Path(__file__).resolve().parents[2]
BINARY = str(SAMPLE / "breast_cancer_nb.csv")
BINARY_PQ = str(SAMPLE / "breast_cancer_nb.parquet")
MULTI = str(SAMPLE / "digits_nb.parquet")


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    return r


def console_script() -> str:
    path = shutil.which("calibcli", path=os.path.dirname(sys.executable)) or shutil.which("calibcli")
    assert path is not None, "the calibcli console script is not installed (pip install -e .)"
    return path


@pytest.fixture(scope="module")
def venn_abers(tmp_path_factory) -> str:
    cal = tmp_path_factory.mktemp("cal") / "va.json"
    ok("recalibrate", "fit", BINARY, "--method", "venn-abers", "-o", cal)
    return str(cal)


def read_back(data: bytes, fmt: str) -> pd.DataFrame:
    """What another program would parse from apply's stdout."""
    if fmt == "parquet":
        return pq.read_table(pa.BufferReader(data)).to_pandas()
    if fmt == "feather":  # the Arrow IPC *stream* format: a pipe has no footer to seek to
        with ipc.open_stream(pa.BufferReader(data)) as reader:
            return reader.read_all().to_pandas()
    if fmt == "jsonl":
        return pd.read_json(io.BytesIO(data), lines=True, precise_float=True)
    return pd.read_csv(io.BytesIO(data), sep="\t" if fmt == "tsv" else ",")


# --------------------------------------------------------------------------- apply to stdout


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "feather", "jsonl"])
def test_apply_writes_every_format_to_stdout(venn_abers, fmt):
    r = ok("recalibrate", "apply", venn_abers, BINARY_PQ, "--output-format", fmt)
    got = read_back(r.stdout_bytes, fmt)
    df = pd.read_csv(BINARY)
    cal = fit_venn_abers(df["label"], df["prob"])
    p0, p1 = cal.predict_interval(df["prob"])
    assert list(got.columns) == ["prob", "prob_p0", "prob_p1", "label"]
    assert_allclose(got["prob"], cal.predict(df["prob"]), rtol=1e-15)
    assert_allclose(got["prob_p0"], p0, rtol=1e-15)
    assert_allclose(got["prob_p1"], p1, rtol=1e-15)
    assert_array_equal(got["label"], df["label"])
    assert np.all((got["prob_p0"] <= got["prob"]) & (got["prob"] <= got["prob_p1"]))
    # every message on stderr: the summary line, naming stdout and the format
    assert r.stderr.startswith("calibcli recalibrate apply: venn-abers (binary) on ")
    assert f"written to <stdout> ({fmt})" in " ".join(r.stderr.split())


def test_apply_stdout_is_the_default_and_dash_is_stdout(venn_abers):
    default = ok("recalibrate", "apply", venn_abers, BINARY).stdout_bytes
    dash = ok("recalibrate", "apply", venn_abers, BINARY, "-o", "-").stdout_bytes
    assert default == dash
    assert default.startswith(b"prob,prob_p0,prob_p1,label\n")


def test_apply_to_a_file_takes_the_format_from_the_extension_or_the_option(venn_abers, tmp_path):
    ok("recalibrate", "apply", venn_abers, BINARY, "-o", tmp_path / "out.parquet")
    assert pq.read_table(tmp_path / "out.parquet").column_names == ["prob", "prob_p0", "prob_p1", "label"]
    ok("recalibrate", "apply", venn_abers, BINARY, "-o", tmp_path / "out.data", "--output-format", "feather")
    with ipc.open_file(str(tmp_path / "out.data")) as reader:  # a file gets the IPC file format (Feather v2)
        assert reader.read_all().num_rows == 569
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.data", "out.parquet"]  # no temporary files left


def test_apply_streams_in_batches_with_the_same_bytes(venn_abers):
    whole = ok("recalibrate", "apply", venn_abers, BINARY).stdout_bytes
    for fmt in ("csv", "parquet"):
        a = ok("recalibrate", "apply", venn_abers, BINARY, "--output-format", fmt).stdout_bytes
        b = ok("recalibrate", "apply", venn_abers, BINARY, "--output-format", fmt, "--batch-rows", "50").stdout_bytes
        pd.testing.assert_frame_equal(read_back(a, fmt), read_back(b, fmt))
    small = ok("recalibrate", "apply", venn_abers, BINARY, "--batch-rows", "7").stdout_bytes
    assert small == whole  # CSV: the header once, then the rows, whatever the batches


def test_apply_invalid_row_in_a_later_batch_counts_them_all_and_writes_no_file(venn_abers, tmp_path):
    df = pd.read_csv(BINARY)
    df.loc[300, "prob"] = 1.5
    df.loc[500, "prob"] = np.nan
    src = tmp_path / "bad.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "o.parquet"
    r = run("recalibrate", "apply", venn_abers, src, "-o", out, "--batch-rows", "100")
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {src}: row 301, column prob: probabilities 1.5 are not valid (finite, within [0, 1], "
                        f"summing to 1 per row); 2 such row(s): fix the file or pass --drop-invalid to leave them out "
                        f"of the output\n")
    assert not out.exists() and list(tmp_path.iterdir()) == [src]
    r = ok("recalibrate", "apply", venn_abers, src, "--drop-invalid", "--batch-rows", "100")
    assert len(read_back(r.stdout_bytes, "csv")) == 567


def test_apply_json_report_cannot_share_stdout_with_the_rows(venn_abers, tmp_path):
    r = run("recalibrate", "apply", venn_abers, BINARY, "--json")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == ("Error: --json prints the report on stdout, which carries the recalibrated rows: write the rows "
                        "to a file with --output, or the report with --report\n")
    rep = tmp_path / "rep.json"
    r = ok("recalibrate", "apply", venn_abers, BINARY, "--report", rep)
    doc = json.loads(rep.read_text())
    assert doc["files"][0]["output"] == {"path": "<stdout>", "format": "csv", "rows": 569,
                                         "interval_columns": ["prob_p0", "prob_p1"]}


def test_apply_vector_column_to_csv_on_stdout_names_the_option(tmp_path):
    cal = tmp_path / "t.json"
    ok("recalibrate", "fit", SAMPLE / "digits_svm.parquet", "--logits", "--method", "temperature", "-o", cal)
    r = run("recalibrate", "apply", cal, SAMPLE / "digits_svm.parquet")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == ("Error: stdout: column 'logits' holds a vector per row, which CSV cannot store: write "
                        "--output-format parquet, feather or jsonl instead\n")
    got = read_back(ok("recalibrate", "apply", cal, SAMPLE / "digits_svm.parquet", "--output-format", "parquet")
                    .stdout_bytes, "parquet")
    assert_allclose(np.stack(got["logits"].to_numpy()).sum(axis=1), 1.0, rtol=1e-12)


# --------------------------------------------------------------------------- stdin reads what apply writes


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "feather", "jsonl"])
def test_ece_reads_apply_output_from_stdin_in_every_format(venn_abers, tmp_path, fmt):
    data = ok("recalibrate", "apply", venn_abers, BINARY, "--output-format", fmt).stdout_bytes
    reference = tmp_path / "ref.csv"
    ok("recalibrate", "apply", venn_abers, BINARY, "-o", reference)
    want = json.loads(ok("ece", reference, "--n-boot", "0", "--json").stdout)
    sniffed = run("ece", "-", "--n-boot", "0", "--json", input=data)
    assert sniffed.exit_code == 0, sniffed.stderr
    doc = json.loads(sniffed.stdout)
    assert doc["files"][0]["problems"] == want["files"][0]["problems"]
    assert doc["files"][0]["input"]["columns"]["probabilities"] == ["prob"]  # not the interval columns
    named = run("ece", "-", "--n-boot", "0", "--json", "--input-format", fmt, input=data)
    assert named.exit_code == 0, named.stderr
    assert json.loads(named.stdout)["files"][0]["problems"] == want["files"][0]["problems"]


def test_a_real_shell_pipe_from_apply_to_ece(venn_abers, tmp_path):
    exe = console_script()
    reference = tmp_path / "ref.parquet"
    ok("recalibrate", "apply", venn_abers, BINARY_PQ, "-o", reference)
    want = json.loads(ok("ece", reference, "--n-boot", "50", "--json").stdout)["files"][0]["problems"]
    for extra in ("", "--output-format feather", "--output-format parquet"):
        proc = subprocess.run(
            ["bash", "-o", "pipefail", "-c",
             f"'{exe}' recalibrate apply '{venn_abers}' '{BINARY_PQ}' {extra} | '{exe}' ece - --n-boot 50 --json"],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["files"][0]["problems"] == want
        assert proc.stderr.startswith("calibcli recalibrate apply: venn-abers (binary)")  # apply's summary: stderr


def test_a_real_pipe_of_a_feather_stream_with_the_input_format_named(venn_abers):
    exe = console_script()
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c",
         f"'{exe}' recalibrate apply '{venn_abers}' '{BINARY}' --output-format feather 2>/dev/null "
         f"| '{exe}' ece - --input-format feather --n-boot 0 --json"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"][0]["input"]["rows_used"] == 569


# --------------------------------------------------------------------------- Venn-Abers interval columns


def test_venn_abers_marginal_gives_every_class_column_its_interval(tmp_path):
    cal = tmp_path / "m.json"
    ok("recalibrate", "fit", MULTI, "--method", "venn-abers", "--mode", "marginal", "-o", cal)
    got = read_back(ok("recalibrate", "apply", cal, MULTI, "--output-format", "parquet").stdout_bytes, "parquet")
    cols = [f"p_{k}" for k in range(10)]
    assert list(got.columns) == [c for k in cols for c in (k, f"{k}_p0", f"{k}_p1")] + ["label"]
    df = pd.read_parquet(MULTI)
    P = df[cols].to_numpy()
    ref = fit_multiclass("venn-abers", df["label"], P, mode="marginal")
    assert_allclose(got[cols].to_numpy(), ref.predict(P), rtol=1e-12)
    for k, c in enumerate(ref.calibrators):
        p0, p1 = c.predict_interval(P[:, k])
        assert_allclose(got[f"p_{k}_p0"], p0, rtol=1e-15)
        assert_allclose(got[f"p_{k}_p1"], p1, rtol=1e-15)


def test_venn_abers_top_label_brackets_the_confidence(tmp_path):
    cal = tmp_path / "t.json"
    ok("recalibrate", "fit", MULTI, "--method", "venn-abers", "--mode", "top-label", "-o", cal)
    got = read_back(ok("recalibrate", "apply", cal, MULTI).stdout_bytes, "csv")
    assert list(got.columns)[-3:] == ["confidence_p0", "confidence_p1", "label"]
    cols = [f"p_{k}" for k in range(10)]
    P = pd.read_parquet(MULTI)[cols].to_numpy()
    rows = np.arange(len(P))
    confidence = got[cols].to_numpy()[rows, P.argmax(axis=1)]  # the input's top class, recalibrated
    assert np.all(got["confidence_p0"] <= confidence + 1e-12) and np.all(confidence <= got["confidence_p1"] + 1e-12)
    assert np.any(got["confidence_p0"] < got["confidence_p1"])


def test_other_methods_add_no_columns(tmp_path):
    cal = tmp_path / "p.json"
    ok("recalibrate", "fit", BINARY, "--method", "platt", "-o", cal)
    assert ok("recalibrate", "apply", cal, BINARY).stdout.split("\n")[0] == "prob,label"


def test_venn_abers_column_clash_is_an_error(venn_abers, tmp_path):
    src = tmp_path / "clash.csv"
    pd.read_csv(BINARY).assign(prob_p1=0.5).to_csv(src, index=False)
    r = run("recalibrate", "apply", venn_abers, src)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (f"Error: {src}: already has a column 'prob_p1', where the Venn-Abers interval would go: "
                        f"rename it first\n")


# --------------------------------------------------------------------------- help


HELP_COMMANDS = [*(c for c in COMMANDS if c != "recalibrate"), "recalibrate", "recalibrate fit",
                 "recalibrate apply", "recalibrate evaluate"]

CHOICES = {
    "ece": ["--mode [binary|top-label|marginal]", "--strategy [uniform|quantile]", "--format [table|json|markdown|csv]",
            "--engine [local|dask]", "--input-format [csv|tsv|parquet|feather|jsonl]", "--class-weights [uniform|prior]"],
    "smece": ["--mode [binary|top-label|marginal]", "--engine [local|dask]"],
    "tcal": ["--mode [binary|top-label|canonical]", "--null [y-bootstrap|consistency|chebyshev]",
             "--combine [bonferroni|min-p]", "--discrete [auto|yes|no]"],
    "diagram": ["--kind [binned|smooth|both]", "--strategy [uniform|quantile]", "--mode [binary|top-label|marginal]"],
    "recalibrate fit": ["--method [platt|temperature|histogram|isotonic|scaling-binning|polynomial|beta|venn-abers|"
                        "std-scaling|isotonic-pit|conformal]",
                        "--strategy [uniform|quantile]", "--interpolation [step|linear]"],
    "recalibrate apply": ["--output-format [csv|tsv|parquet|feather|jsonl]"],
    "recalibrate evaluate": ["--ece-strategy [uniform|quantile]", "--discrete [auto|yes|no]"],
    "report": ["--method [platt|temperature|histogram|isotonic|scaling-binning|polynomial|beta|venn-abers]"],
    "compare": ["--pairing [auto|order|none]", "--mode [binary|top-label|marginal]"],
}


def help_text(command: str) -> str:
    r = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "320"})
    assert r.exit_code == 0, r.stderr
    return " ".join(r.stdout.split())  # the panels' borders and wrapping aside


@pytest.mark.parametrize("command", HELP_COMMANDS)
def test_every_command_help_has_one_example(command):
    text = help_text(command)
    assert text.count("Example: calibcli ") == 1, text[:400]


@pytest.mark.parametrize("command", sorted(CHOICES))
def test_choice_options_list_their_choices(command):
    text = help_text(command)
    for option in CHOICES[command]:
        flag, metavar = option.split(" ")
        assert f"{flag} {metavar}" in text, option


def test_choices_in_help_are_the_ones_the_commands_accept():
    from calibcli.core.binning import STRATEGIES
    from calibcli.calibrators import METHODS
    from calibcli.engines.base import ENGINES
    from calibcli.io.formats import FORMATS
    from calibcli.io.writers import OUTPUT_FORMATS
    from calibcli.core.modes import MODES
    from calibcli.report.emit import FORMATS as REPORT_FORMATS

    assert CHOICES["ece"][0].endswith("[" + "|".join(MODES) + "]")
    assert CHOICES["ece"][1].endswith("[" + "|".join(STRATEGIES) + "]")
    assert CHOICES["ece"][2].endswith("[" + "|".join(REPORT_FORMATS) + "]")
    assert CHOICES["ece"][3].endswith("[" + "|".join(ENGINES) + "]")
    assert CHOICES["ece"][4].endswith("[" + "|".join(FORMATS) + "]")
    from calibcli.regression.recalibration import REGRESSION_METHODS

    assert CHOICES["recalibrate fit"][0].endswith("[" + "|".join(METHODS + REGRESSION_METHODS) + "]")
    assert CHOICES["recalibrate apply"][0].endswith("[" + "|".join(OUTPUT_FORMATS) + "]")


@pytest.mark.parametrize(
    "args, message",
    [
        (["ece", BINARY, "--mode", "canonical"], "Error: --mode is 'canonical': expected one of binary, top-label, marginal\n"),
        (["ece", BINARY, "--engine", "spark"], "Error: --engine is 'spark': expected one of local, dask\n"),
        (["diagram", BINARY, "--kind", "hexbin", "-o", "{tmp}/d.png"], "Error: --kind is 'hexbin': expected one of binned, smooth, both\n"),
        (["recalibrate", "apply", "{cal}", BINARY, "--output-format", "xml"],
         "Error: --output-format is 'xml': expected one of csv, tsv, parquet, feather, jsonl\n"),
    ],
    ids=["mode", "engine", "kind", "output-format"],
)
def test_a_bad_choice_is_one_error_line_exit_2(venn_abers, tmp_path, args, message):
    args = [venn_abers if a == "{cal}" else a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run([console_script(), *args], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", message)


# --------------------------------------------------------------------------- the root help, without the commands


def test_every_command_has_a_summary_for_the_root_help():
    assert set(SUMMARIES) == set(COMMANDS)
    for name in COMMANDS:
        command = load_command(name)
        assert command is not None and command.short_help == SUMMARIES[name]


def test_root_help_lists_the_commands_as_when_they_are_all_loaded():
    from typer._click import Context
    from typer.main import get_command

    group = get_command(app)
    ctx = Context(group, info_name="calibcli")
    lazy = group.get_help(ctx)
    assert not group.commands  # listing loaded none of them
    for name in COMMANDS:
        group.commands[name] = load_command(name)
    assert group.get_help(ctx) == lazy
    for name in COMMANDS:
        assert f"  {name} " in lazy


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_gzipped_text_on_stdin_is_sniffed_too(venn_abers, fmt):
    import gzip

    data = ok("recalibrate", "apply", venn_abers, BINARY, "--output-format", fmt).stdout_bytes
    r = run("ece", "-", "--n-boot", "0", "--json", input=gzip.compress(data))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)["files"][0]
    assert doc["input"]["format"] == fmt and doc["input"]["rows_used"] == 569


def test_binary_output_to_a_terminal_is_refused(venn_abers):
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([console_script(), "recalibrate", "apply", venn_abers, BINARY, "--output-format", "parquet"],
                              stdout=follower, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2
    assert proc.stderr == ("Error: stdout is a terminal: parquet is binary; pipe it to the next command or write a file "
                           "with --output\n")


def test_arrow_to_a_fifo_is_the_stream_format(venn_abers, tmp_path):
    got = tmp_path / "copied.arrows"
    proc = subprocess.run(
        ["bash", "-c", f"'{console_script()}' recalibrate apply '{venn_abers}' '{BINARY}' --output-format feather "
                       f"-o >(cat > '{got}'); wait $!"],  # $!: the process substitution's cat
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with ipc.open_stream(pa.BufferReader(got.read_bytes())) as reader:
        assert reader.read_all().column_names == ["prob", "prob_p0", "prob_p1", "label"]
