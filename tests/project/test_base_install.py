"""Every command of ``calibcli --help`` runs on the base install (issue 24): the package installed into a fresh
virtual environment without any extra, then each command run on the sample data through its console script.

The checkout is copied (package, ``pyproject.toml``, README) so that building the wheel leaves nothing in the
working tree; pip resolves the base dependencies as a new user's ``pip install calibcli`` would (its cache makes
that quick after the first time). Optional extras are for engines and integrations only (Dask, scikit-learn,
DataSketches): the test checks they are absent, so a command that quietly needs one fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_data"
BINARY_CSV = SAMPLES / "breast_cancer_nb.csv"
BINARY_PARQUET = SAMPLES / "breast_cancer_nb.parquet"
MULTI = SAMPLES / "digits_nb.parquet"

#: Packages of the optional extras (and of the test extra): none may be in the base environment.
EXTRAS_ONLY = ("sklearn", "distributed", "dask", "datasketches", "polars", "statsmodels", "fsspec")

#: One run per command and subcommand of ``calibcli --help``, on the sample data ({cal} is a calibrator the
#: ``recalibrate fit`` run writes first). A command missing here fails the test: add its run.
RUNS: dict[str, list[str]] = {
    "ece": ["ece", str(BINARY_CSV), str(MULTI), "--n-boot", "20", "--json"],
    "smece": ["smece", str(BINARY_CSV), "--n-boot", "20", "--json"],
    "tcal": ["tcal", str(BINARY_CSV), "--n-boot", "20", "--json"],
    "audit": ["audit", str(SAMPLES / "ads_segments.csv"), "--segment-cols", "country,device,age", "--json"],
    "diagram": ["diagram", str(BINARY_CSV), "--n-boot", "20", "-o", "diagram.png"],
    "recalibrate fit": ["recalibrate", "fit", str(BINARY_CSV), "--method", "isotonic", "-o", "cal.json"],
    "recalibrate apply": ["recalibrate", "apply", "cal.json", str(BINARY_PARQUET), "-o", "recalibrated.parquet"],
    "recalibrate evaluate": ["recalibrate", "evaluate", str(BINARY_CSV), "--method", "platt", "--holdout", "0.5",
                             "--n-boot", "20", "--json"],
    "report": ["report", str(BINARY_CSV), "--n-boot", "20", "-o", "report.html"],
    "compare": ["compare", str(BINARY_CSV), str(BINARY_PARQUET), "--n-boot", "20", "--json"],
    "regression": ["regression", str(SAMPLES / "regression" / "diabetes_gp.csv"), "--n-boot", "20", "--json"],
    "selective": ["selective", str(SAMPLES / "llm" / "lm_eval" / "samples_calib_mc_2026-12-02T00-00-00.000000.jsonl"),
                  "--n-boot", "20", "--json"],
    "monitor": ["monitor", str(SAMPLES / "monitor" / "scores.parquet"), "--time-col", "ts", "--every", "W",
                "--n-boot", "20", "--plot", "monitor.png", "--json"],
}

#: The files the runs above write, and how each must start.
WRITTEN = {"monitor.png": b"\x89PNG",
           "diagram.png": b"\x89PNG", "cal.json": b"{", "recalibrated.parquet": b"PAR1", "report.html": b"<!doctype html>"}


def _copy_checkout(dest: Path) -> Path:
    """The files a wheel is built from, copied (the build writes build/ and *.egg-info beside them)."""
    dest.mkdir()
    shutil.copytree(ROOT / "calibcli", dest / "calibcli", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def base_env(tmp_path_factory) -> Path:
    """A fresh virtual environment with calibcli installed from this checkout, base dependencies only."""
    root = tmp_path_factory.mktemp("base-install")
    src = _copy_checkout(root / "src")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    r = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(src)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    return venv


def _commands(exe: Path, *prefix: str) -> list[str]:
    """The command names ``calibcli [prefix] --help`` lists (Click's plain help: an indented name, two spaces,
    the description)."""
    r = subprocess.run([str(exe), *prefix, "--help"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    section = r.stdout.split("Commands", 1)[1]
    return re.findall(r"^[\s│]+([a-z][a-z-]*)\s{2,}", section, flags=re.M)


@pytest.mark.slow  # building the wheel and installing the base dependencies: about a minute
def test_every_command_runs_on_the_base_install(base_env, tmp_path):
    python, exe = base_env / "bin" / "python", base_env / "bin" / "calibcli"
    r = subprocess.run([str(python), "-c", "import importlib.util, json, sys; "
                        f"print(json.dumps([m for m in {EXTRAS_ONLY!r} if importlib.util.find_spec(m)]))"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert json.loads(r.stdout) == [], "an optional extra is installed in the base environment"

    listed = []
    for name in _commands(exe):
        subcommands = _commands(exe, name) if name == "recalibrate" else []
        listed.extend(f"{name} {sub}" for sub in subcommands) if subcommands else listed.append(name)
    assert sorted(listed) == sorted(RUNS), "every command of `calibcli --help` has a run here, and no more"

    for name, args in RUNS.items():  # in order: `recalibrate fit` writes the calibrator `apply` reads
        r = subprocess.run([str(exe), *args], capture_output=True, timeout=600, cwd=tmp_path)
        assert r.returncode in (0, 1), f"calibcli {name}: exit {r.returncode}: {r.stderr.decode()}"  # 1: a gate
        assert b"Error:" not in r.stderr and b"pip install" not in r.stderr, f"calibcli {name}: {r.stderr.decode()}"
        if "--json" in args:
            assert json.loads(r.stdout)["command"].startswith(name.split()[0])
    for name, head in WRITTEN.items():
        assert (tmp_path / name).read_bytes().startswith(head), name


def test_help_does_not_import_jinja2(tmp_path):
    """Jinja2 is a base dependency but only ``report`` renders a page: start-up never imports it."""
    probe = ("import sys; sys.argv = ['calibcli', '--help']\n"
             "from calibcli.cli.entry import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('jinja2' in sys.modules, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.stderr.strip().splitlines()[-1] == "False"


def test_jinja2_is_a_base_dependency():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(re.match(r"jinja2\b", dep, flags=re.I) for dep in project["dependencies"])
    extras = project["optional-dependencies"]
    assert extras["report"] == ["jinja2>=3"]  # kept for `pip install 'calibcli[report]'`; adds nothing now
