"""The benchmarks stay runnable: the asv suite's configuration and modules load, every bar states its bar, the shared
data are what their docstring says, a failed command is never timed, and docs/benchmarks.md names every bar.

The benchmarks themselves (speed, the studies' Monte Carlo runs) are not run here: speed targets live in the
benchmarks, never in unit tests (docs/contributing.md)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _asv_conf() -> dict:
    # asv's configuration allows // comments (asv.util.load_json strips them)
    text = re.sub(r"^\s*//.*$", "", (BENCH / "asv.conf.json").read_text(), flags=re.M)
    return json.loads(text)


@pytest.fixture(scope="module")
def suite():
    """Every module of the asv suite, imported as asv imports them (``benchmarks`` from benchmarks/)."""
    sys.path.insert(0, str(BENCH))
    try:
        package = importlib.import_module("benchmarks")
        modules = [
            importlib.import_module(info.name) for info in pkgutil.walk_packages(package.__path__, prefix="benchmarks.")
        ]
    finally:
        sys.path.remove(str(BENCH))
    return modules


def _bars(modules) -> dict[str, object]:
    out = {}
    for module in modules:
        for cname, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for fname, fn in inspect.getmembers(cls, inspect.isfunction):
                if fname.startswith("track_bar_"):
                    out[f"{module.__name__.removeprefix('benchmarks.')}.{cname}.{fname}"] = fn
    return out


def test_the_asv_configuration_builds_this_repository():
    conf = _asv_conf()
    assert conf["repo"] == ".." and (BENCH / conf["repo"] / ".git").exists()
    assert conf["environment_type"] == "virtualenv" and conf["pythons"] == ["3.11"]
    assert (BENCH / conf["benchmark_dir"] / "__init__.py").is_file()
    assert any("pip wheel" in command for command in conf["build_command"])


def test_the_suite_is_laid_out_like_the_package(suite):
    names = {m.__name__.removeprefix("benchmarks.") for m in suite}
    for package in ("binned.ece", "smooth", "tcal", "compare", "report", "startup"):
        assert package in names, f"benchmarks/benchmarks/{package.replace('.', '/')}.py is missing"


def test_every_bar_states_its_bar(suite):
    bars = _bars(suite)
    assert len(bars) >= 10
    for name, fn in bars.items():
        assert "bar" in getattr(fn, "unit", ""), f"{name}: its unit states no bar"
        assert re.search(r"Bar[^.]*: (at most|under|<=|<|≥|>=)\s", fn.__doc__ or ""), f"{name}: its docstring states no bar"


def test_docs_name_every_bar(suite):
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    # a pair's CPU twin (``_cpu``) is named beside its wall-clock ratio (``_wall``)
    stems = {name.rsplit(".", 1)[1].removesuffix("_cpu").removesuffix("_wall") for name in _bars(suite)}
    missing = [stem for stem in stems if stem not in page]
    assert not missing, f"docs/benchmarks.md does not name {missing}"


def test_the_shared_data_are_seeded_and_distinct(tmp_path, monkeypatch, suite):
    import pyarrow.parquet as pq

    common = importlib.import_module("benchmarks._common")
    monkeypatch.setenv("CALIBCLI_BENCH_CACHE", str(tmp_path))
    path = common.rows(1e4)
    assert path.parent == tmp_path
    table = pq.read_table(path)
    assert table.num_rows == 10_000 and set(table.column_names) == {"prob", "label", "g", "g100"}
    prob = table["prob"].to_numpy()
    assert len(set(prob.tolist())) == prob.size, "every score distinct (issue 37's file)"
    assert table["g"].to_numpy().max() < 1000 and table["g100"].to_numpy().max() < 100
    before = path.read_bytes()
    path.unlink()
    assert common.rows(1e4).read_bytes() == before, "the same seed writes the same file"
    import numpy as np

    rng = np.random.default_rng(1)
    tied = common.distinct_scores(rng, 5)
    assert len(set(tied.tolist())) == 5


def test_a_failed_command_is_never_timed(tmp_path, suite):
    common = importlib.import_module("benchmarks._common")
    with pytest.raises(RuntimeError, match="exited 2: Error: "):
        common.run("ece", str(tmp_path / "missing.csv"))
    ok = common.run("ece", str(ROOT / "sample_data" / "breast_cancer_nb.csv"), "--n-boot", "20")
    assert json.loads(ok.stdout)["command"] == "ece" and ok.wall > 0 and ok.cpu > 0 and ok.peak_mb > 10


STUDIES = sorted(p for p in (BENCH / "studies").glob("*.py"))


@pytest.mark.parametrize("script", STUDIES, ids=lambda p: p.name)
def test_every_study_takes_a_seed_and_its_repetitions(script):
    import subprocess

    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--seed" in proc.stdout and "--reps" in proc.stdout, f"{script.name} lacks --seed or --reps"
    assert script.name in (ROOT / "docs" / "benchmarks.md").read_text(), (
        f"docs/benchmarks.md does not name {script.name}"
    )


def test_no_script_is_left_in_the_old_layout():
    assert not list(BENCH.glob("bench_*.py")), "speed goes into benchmarks/benchmarks/, statistics into studies/"


def test_a_bar_records_its_runs(tmp_path, monkeypatch, suite):
    common = importlib.import_module("benchmarks._common")
    monkeypatch.setenv("CALIBCLI_BENCH_CACHE", str(tmp_path))
    monkeypatch.setenv("ASV_COMMIT", "abc123")
    runs = {"ece": common.Run(1.5, 2.0, 150.0, "{}")}
    assert common.record("test", runs) is runs
    (line,) = (tmp_path / "bars.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert entry["bar"] == "test" and entry["commit"] == "abc123"
    assert entry["runs"]["ece"] == {"wall": 1.5, "cpu": 2.0, "peak_mb": 150.0, "stdout": None}
