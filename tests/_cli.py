"""Shared helpers of the CLI tests: the sample files and in-process runs of the app."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from calibcli.cli.app import app

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
BINARY = str(SAMPLE / "breast_cancer_nb.csv")
MULTI = str(SAMPLE / "digits_nb.parquet")
runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def run_json(*args):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def write_csv(tmp_path, name, z, y, **extra):
    path = tmp_path / name
    pd.DataFrame({"prob": z, "label": y, **extra}).to_csv(path, index=False)
    return str(path)
