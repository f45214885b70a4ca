"""Start-up cost: ``calibcli --help`` and ``calibcli ece`` must not import matplotlib, scipy.stats,
pandas or numba (HELPERS_COMMON: scipy is imported lazily inside functions); ``smece`` and ``diagram`` neither
pandas nor scipy.optimize (each costs 0.2-0.5 s per run). Checked in fresh interpreters; and the
installed ``calibcli`` console script runs for real, with ``--json`` parsed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_data"
FORBIDDEN = ("matplotlib", "scipy.stats", "pandas", "numba")

# Runs the CLI as the console script does (calibcli.cli.entry:main with sys.argv), catches its SystemExit,
# then writes the exit code and every imported module name to the file named by argv[1].
PROBE = """
import json, sys
out, args = sys.argv[1], sys.argv[2:]
sys.argv = ["calibcli", *args]
from calibcli.cli.entry import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
with open(out, "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""


def imported_modules(tmp_path, *args: str) -> tuple[int, list[str]]:
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.exists(), proc.stderr
    doc = json.loads(out.read_text())
    return doc["code"], doc["modules"]


def forbidden_in(modules: list[str], forbidden=FORBIDDEN) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden)]


def test_probe_sees_imports(tmp_path):
    # the probe itself works: the CLI's own modules are listed
    code, modules = imported_modules(tmp_path, "--help")
    assert code == 0
    assert "calibcli.cli.app" in modules and "typer" in modules


def test_help_imports_neither_matplotlib_nor_scipy_stats(tmp_path):
    code, modules = imported_modules(tmp_path, "--help")
    assert code == 0
    assert forbidden_in(modules) == []


def test_ece_help_imports_neither_matplotlib_nor_scipy_stats(tmp_path):
    code, modules = imported_modules(tmp_path, "ece", "--help")
    assert code == 0
    assert forbidden_in(modules) == []


@pytest.mark.parametrize(
    "args",
    [
        ["breast_cancer_nb.csv"],
        ["digits_nb.parquet", "--mode", "marginal"],
    ],
    ids=["binary-csv", "marginal-parquet"],
)
def test_ece_run_imports_neither_matplotlib_nor_scipy_stats(tmp_path, args):
    code, modules = imported_modules(tmp_path, "ece", str(SAMPLES / args[0]), *args[1:], "--n-boot", "10", "--json")
    assert code == 0
    assert "calibcli.binned.estimators" in modules  # it really computed
    assert forbidden_in(modules) == []


@pytest.mark.parametrize(
    "args",
    [
        ["smece", "breast_cancer_nb.parquet", "--n-boot", "5"],
        ["diagram", "breast_cancer_nb.parquet", "--n-boot", "5", "--kind", "smooth", "-o", "{tmp}/fig.png"],
    ],
    ids=["smece", "diagram"],
)
def test_smooth_commands_import_neither_pandas_nor_scipy_optimize(tmp_path, args):
    args = [str(SAMPLES / a) if a.endswith(".parquet") else a.replace("{tmp}", str(tmp_path)) for a in args]
    code, modules = imported_modules(tmp_path, *args, "--json")
    assert code == 0
    assert "calibcli.smooth.estimator" in modules
    assert forbidden_in(modules, ("pandas", "scipy.optimize")) == []


def test_report_of_the_sample_imports_no_scipy_optimize(tmp_path):
    # its isotonic recalibration fits 131 distinct scores: pava's Python loop, not scipy.optimize (0.25 s of a
    # 2-3 s page)
    page = str(tmp_path / "r.html")
    code, modules = imported_modules(tmp_path, "report", str(SAMPLES / "breast_cancer_nb.csv"), "-o", page)
    assert code == 0
    assert "calibcli.calibrators.isotonic" in modules  # it really fitted
    assert forbidden_in(modules, ("pandas", "scipy.optimize")) == []


def console_script() -> str:
    path = shutil.which("calibcli", path=os.path.dirname(sys.executable)) or shutil.which("calibcli")
    assert path is not None, "the calibcli console script is not installed (pip install -e .)"
    return path


def test_console_script_json():
    sample = SAMPLES / "breast_cancer_nb.csv"
    proc = subprocess.run(
        [console_script(), "ece", str(sample), "--n-boot", "10", "--seed", "3", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["command"] == "ece"
    assert doc["parameters"]["n_boot"] == 10 and doc["parameters"]["seed"] == 3
    (entry,) = doc["files"]
    assert entry["input"]["path"] == str(sample)
    assert entry["input"]["rows_used"] == 569
    m = entry["problems"][0]["metrics"]["ece_l1_plugin"]
    assert m["ci_low"] <= m["estimate"] <= m["ci_high"]


def test_console_script_bad_input_one_line_exit_2(tmp_path):
    missing = tmp_path / "missing.csv"
    proc = subprocess.run([console_script(), "ece", str(missing)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == f"Error: {missing}: no such file: check the path\n"


# ---------------------------------------------------------------------------------------------
# `calibcli --help` in well under a second: importing the CLI loads no command and no numerical library


HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "matplotlib")


def test_importing_the_cli_imports_no_numerical_library():
    proc = subprocess.run(
        [sys.executable, "-c", "import json, sys; import calibcli.cli.app; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout)
    assert "calibcli.cli.app" in modules and "typer" in modules
    assert forbidden_in(modules, HEAVY) == []
    assert [m for m in modules if m.startswith("calibcli.cli.commands.")] == []  # no command loaded to list them


def test_root_help_imports_no_numerical_library_and_lists_every_command(tmp_path):
    code, modules = imported_modules(tmp_path, "--help")
    assert code == 0
    assert forbidden_in(modules, (*HEAVY, "rich")) == []  # the root help is Click's plain layout
    proc = subprocess.run([console_script(), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    from calibcli.cli.app import COMMANDS

    listed = proc.stdout.split("Commands:", 1)[1]
    assert [line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line[2] != " "] == list(COMMANDS)


def test_a_command_is_loaded_when_it_runs(tmp_path):
    code, modules = imported_modules(tmp_path, "ece", "--help")
    assert code == 0
    assert "calibcli.cli.commands.ece" in modules and "calibcli.cli.commands.tcal" not in modules
