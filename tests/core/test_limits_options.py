"""Limits, option validation, flags and calibrator versions (issue 12, part B).

Every size option is checked against what it will allocate before anything is allocated, every numeric
option is finite and in range (one place: :func:`calibcli.core.validation.check_options`), flags take no
value, an out-of-memory failure names the option that caused it, and a calibrator this version does not
fully understand is refused. Each CLI case asserts: exit 2, exactly one ``Error:`` line on stderr naming
the option, no traceback, and no output file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests._cli import BINARY, MULTI, run

HUGE = str(10**22)  # beyond int64


def _error_line(r) -> str:
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    return lines[0]


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "1G")


# ---------------------------------------------------------------------------------------------
# Size options: refused before allocating, naming the option, the bytes and the largest value that fits


SIZE_CASES = [
    (("ece", BINARY, "--n-bins", "1000000000"), "--n-bins", "json"),
    (("ece", BINARY, "--n-bins", HUGE), "--n-bins", "json"),
    (("ece", BINARY, "--n-boot", HUGE), "--n-boot", "json"),
    (("ece", BINARY, "--n-boot", "100000000"), "--n-boot", "json"),
    (("ece", BINARY, "--batch-rows", HUGE), "--batch-rows", "json"),
    (("smece", BINARY, "--n-boot", HUGE), "--n-boot", "json"),
    (("tcal", BINARY, "--max-rows", HUGE), "--max-rows", "json"),
    (("tcal", BINARY, "--n-boot", HUGE), "--n-boot", "json"),
    (("diagram", BINARY, "--n-bins", HUGE), "--n-bins", "png"),
    (("diagram", MULTI, "--max-classes", "100000000"), "--max-classes", "png"),
    (("recalibrate", "fit", BINARY, "--method", "histogram", "--n-bins", HUGE), "--n-bins", "json"),
    (("recalibrate", "fit", BINARY, "--method", "platt", "--max-rows", "100000000000"), "--max-rows", "json"),
    (
        ("recalibrate", "evaluate", BINARY, "--method", "platt", "--holdout", "0.5", "--ece-n-bins", HUGE),
        "--ece-n-bins",
        "json",
    ),
    (("ece", BINARY, "--engine", "dask", "--workers", "1000000"), "--workers", "json"),
]


@pytest.mark.parametrize("args, flag, ext", SIZE_CASES, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in SIZE_CASES])
def test_size_option_beyond_the_budget_names_the_option(tmp_path, small_budget, args, flag, ext):
    out = tmp_path / f"out.{ext}"
    r = run(*args, "-o", out)
    line = _error_line(r)
    assert line.startswith(f"Error: {flag} "), line
    assert "would need" in line and "use at most" in line and "memory budget is 1.0 GB" in line, line
    assert not out.exists()


def test_limit_is_the_budget_divided_by_the_unit(tmp_path, small_budget):
    from calibcli.core.validation import BYTES_PER_BIN

    most = 2**30 // BYTES_PER_BIN
    line = _error_line(run("ece", BINARY, "--n-bins", most + 1, "--n-boot", 0))
    assert f"use at most {most} " in line
    r = run("ece", BINARY, "--n-bins", 2000, "--n-boot", 0, "--json")  # well within: runs
    assert r.exit_code == 0, r.stderr


#: Runs the command given as arguments and prints, as JSON, its exit code, stdout, stderr and peak resident memory
#: in kB (its process is this one's only child, so RUSAGE_CHILDREN's maximum is the command's own).
PEAK_RSS = """
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
json.dump({"code": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
           "peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}, sys.stdout)
"""


def test_huge_n_bins_subprocess_answers_without_allocating(tmp_path):
    """The installed command, a real process: 1e9 bins is refused before allocating anything for them (it used
    to grow to 24 GB): its peak memory stays that of a run that reads a small file, under 1 GB."""
    exe = shutil.which("calibcli") or pytest.skip("calibcli is not installed")
    out = tmp_path / "report.json"
    r = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, exe, "ece", BINARY, "--n-bins", "1000000000", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    p = json.loads(r.stdout)
    assert p["code"] == 2, p["stderr"]
    lines = p["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --n-bins 1000000000 would need "), p["stderr"]
    assert "GB for the bin arrays; use at most" in lines[0]
    assert p["stdout"] == "" and not out.exists()
    peak_kb = p["peak_kb"]
    assert peak_kb < 1_000_000, f"peak memory {peak_kb} kB"


def test_per_bin_bootstrap_beyond_the_budget_names_n_boot(monkeypatch):
    """Beyond the rows kept, the bootstrap draws every (resample, cell) at once: checked before drawing."""
    from calibcli.binned.accumulator import BinnedAccumulator
    from calibcli.core.errors import OptionError

    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "10M")
    rng = np.random.default_rng(0)
    z = rng.uniform(size=400)
    y = (rng.uniform(size=400) < z).astype(np.int64)
    acc = BinnedAccumulator(n_bins=1000, row_limit=50).update(np.arange(400), z, y)
    with pytest.raises(OptionError) as info:
        acc.result(n_boot=1000)
    assert info.value.parameter == "n_boot"
    text = str(info.value)
    assert text.startswith("n_boot 1000 would need ") and "2000 (bin, label) cells" in text
    assert "fewer n_bins" in text and "--" not in text
    assert "--n-boot 1000 would need" in info.value.for_cli()
    assert acc.result(n_boot=20).n_boot == 20  # what fits still runs


def test_tcal_smoothness_that_needs_too_many_cells(monkeypatch):
    from calibcli.core.errors import OptionError
    from calibcli.tcal.procedure import tcal_test

    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "100M")

    rng = np.random.default_rng(1)
    z = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < z).astype(np.int64)
    with pytest.raises(OptionError) as info:
        tcal_test(y, z, smoothness=0.001, n_boot=10)
    text = str(info.value)
    assert info.value.parameter == "smoothness" and text.startswith("smoothness 0.001 gives m* = ")
    least = float(text.split("use smoothness ")[1].split(" ")[0])
    tcal_test(y, z, smoothness=least, n_boot=10)  # the value the message offers fits


# ---------------------------------------------------------------------------------------------
# Library: the same checks, in the parameter's name (the CLI shows the flag)


def test_library_messages_name_the_parameter(small_budget):
    from calibcli import metrics
    from calibcli.binned.accumulator import BinnedAccumulator
    from calibcli.binned.estimators import binned_calibration
    from calibcli.calibrators import fit_calibrator
    from calibcli.core.errors import OptionError

    y, z = [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.4]
    for call, parameter in [
        (lambda: metrics.ece(y, z, n_bins=10**12), "n_bins"),
        (lambda: metrics.ece(y, z, n_bins=10**22), "n_bins"),
        (lambda: metrics.ece(y, z, n_boot=10**9), "n_boot"),
        (lambda: metrics.ece(y, z, alpha=float("nan")), "alpha"),
        (lambda: metrics.smooth_ece(y, z, sigma=float("inf")), "sigma"),
        (lambda: BinnedAccumulator(n_bins=10**12), "n_bins"),
        (lambda: binned_calibration(y, z, n_bins=10**12), "n_bins"),
        (lambda: binned_calibration(y, z, n_boot=10**22), "n_boot"),
        (lambda: fit_calibrator("histogram", y, z, n_bins=10**12), "n_bins"),
        (lambda: fit_calibrator("histogram", y, z, n_bins=0), "n_bins"),
        (lambda: fit_calibrator("scaling-binning", y, z, n_bins=10**22, rng=np.random.default_rng(0)), "n_bins"),
    ]:
        with pytest.raises(OptionError) as info:
            call()
        assert info.value.parameter == parameter
        text = str(info.value)
        assert text.startswith(f"{parameter} ") and "--" not in text, text
        assert info.value.for_cli().startswith("--" + parameter.replace("_", "-") + " ")


def test_memory_budget_and_bytes():
    from calibcli.core.errors import CalibcliError
    from calibcli.core.validation import format_bytes, memory_budget

    assert format_bytes(8 * 2**30) == "8.0 GB" and format_bytes(512) == "512 B"
    os.environ.pop("CALIBCLI_MEMORY_BUDGET", None)
    assert 0 < memory_budget() <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for text, expected in [("4G", 4 * 2**30), ("100M", 100 * 2**20), ("12345", 12345)]:
        os.environ["CALIBCLI_MEMORY_BUDGET"] = text
        try:
            assert memory_budget() == expected
        finally:
            del os.environ["CALIBCLI_MEMORY_BUDGET"]
    os.environ["CALIBCLI_MEMORY_BUDGET"] = "lots"
    try:
        with pytest.raises(CalibcliError, match="CALIBCLI_MEMORY_BUDGET is 'lots'"):
            memory_budget()
    finally:
        del os.environ["CALIBCLI_MEMORY_BUDGET"]


# ---------------------------------------------------------------------------------------------
# Floats: finite and in range, in one place


FLOAT_CASES = [
    (("ece", BINARY, "--n-boot", "0", "--fail-above", "nan"), "--fail-above is nan: expected a finite number"),
    (("ece", BINARY, "--n-boot", "0", "--fail-above", "inf"), "--fail-above is inf: expected a finite number"),
    (("ece", BINARY, "--fail-above-upper", "nan"), "--fail-above-upper is nan"),
    (("smece", BINARY, "--n-boot", "0", "--fail-above", "nan"), "--fail-above is nan"),
    (("ece", BINARY, "--alpha", "nan"), "--alpha is nan"),
    (("ece", BINARY, "--alpha", "1.5"), "--alpha is 1.5: expected a number strictly between 0 and 1"),
    (("smece", BINARY, "--sigma", "nan"), "--sigma is nan"),
    (("smece", BINARY, "--sigma", "-0.1"), "--sigma is -0.1: expected a positive bandwidth"),
    (("tcal", BINARY, "--smoothness", "inf"), "--smoothness is inf"),
    (("tcal", BINARY, "--alpha", "nan"), "--alpha is nan"),
    (("diagram", BINARY, "--dpi", "nan"), "--dpi is nan"),
    (("recalibrate", "fit", BINARY, "--method", "platt", "--clip", "nan"), "--clip is nan"),
    (
        ("recalibrate", "fit", BINARY, "--method", "platt", "--clip", "0.7"),
        "--clip is 0.7: expected a number in (0, 0.5)",
    ),
    (("recalibrate", "fit", BINARY, "--method", "histogram", "--alpha", "-inf"), "--alpha is -inf"),
    (("recalibrate", "evaluate", BINARY, "--method", "platt", "--holdout", "nan"), "--holdout is nan"),
    (("recalibrate", "evaluate", BINARY, "--method", "platt", "--holdout", "0.5", "--alpha", "nan"), "--alpha is nan"),
    (
        ("recalibrate", "fit", BINARY, "--method", "polynomial", "--degree", "50"),
        "--degree is 50: expected an integer in 0..20",
    ),
    (("ece", BINARY, "--seed", "-1"), "--seed is -1: expected a non-negative integer below 2^64"),
    (("ece", BINARY, "--seed", HUGE), f"--seed is {HUGE}: expected a non-negative integer below 2^64"),
]


@pytest.mark.parametrize("args, expected", FLOAT_CASES, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in FLOAT_CASES])
def test_numeric_options_are_finite_and_in_range(tmp_path, args, expected):
    out = tmp_path / ("out.png" if args[0] == "diagram" else "out.json")
    r = run(*args, "-o", out)
    assert _error_line(r).startswith(f"Error: {expected}"), r.stderr
    assert not out.exists()


def _commands():
    """(command path, click parameters) of every command of the app."""
    import typer

    from calibcli.cli.app import app

    root = typer.main.get_command(app)
    out = []

    def walk(cmd, path):
        if hasattr(cmd, "list_commands"):
            ctx = cmd.context_class(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + (name,))
        else:
            out.append((" ".join(path), cmd.params))

    walk(root, ())
    return out


def test_every_numeric_option_has_a_rule():
    """A new int or float option cannot skip the checks: each one has a range rule or a size rule by name
    (floats are also checked for finiteness by type, whatever their name)."""
    from calibcli.core.validation import _RULES, _SIZES

    missing = []
    for path, params in _commands():
        for p in params:
            annotation = p.type_descriptor.annotation
            if annotation in (int, float) and p.name not in _RULES and p.name not in _SIZES:
                missing.append(f"{path} {p.opts[0]} ({p.name})")
    assert not missing, missing


#: The least arguments each command runs with, before the option under test (``{out}``: a file in tmp_path).
MINIMAL_ARGS = {
    "ece": (BINARY,),
    "smece": (BINARY,),
    "tcal": (BINARY,),
    "compare": (BINARY, BINARY),
    "audit": (BINARY, "--segment-cols", "label"),
    "recalibrate fit": (BINARY, "--method", "platt", "-o", "{out}.json"),
    "recalibrate evaluate": (BINARY, "--method", "platt"),
    "diagram": (BINARY, "-o", "{out}.png"),
    "report": (BINARY, "-o", "{out}.html"),
    "regression": (BINARY,),  # the options are checked before the file is read
    "selective": (BINARY,),
    "monitor": (BINARY, "--chunk-rows", "100"),
}
RANGE_CASES = [
    ("n_bins", 0),
    ("n_bins", -3),
    ("n_boot", -1),
    ("alpha", 1.5),
    ("alpha", 0.0),
    ("dpi", 5.0),
    ("dpi", 1201.0),
    ("max_classes", 0),
]


@pytest.mark.parametrize("name, value", RANGE_CASES, ids=[f"{n}={v}" for n, v in RANGE_CASES])
def test_an_option_range_is_stated_once(tmp_path, name, value):
    """Every command with the option refuses a value out of range with the shared rule's words
    (:data:`calibcli.core.validation._RULES`), none with a check of its own."""
    from calibcli.core.errors import OptionError, flag_of
    from calibcli.core.validation import check_options

    with pytest.raises(OptionError) as info:
        check_options(**{name: value})
    expected = f"Error: {info.value.for_cli(flag_of)}\n"
    paths = [path for path, params in _commands() if any(p.name == name for p in params)]
    assert paths, name
    for path in paths:
        out = tmp_path / path.replace(" ", "_")
        args = [a.format(out=out) for a in MINIMAL_ARGS[path]]
        r = run(*path.split(), *args, flag_of(name), str(value))
        assert (r.exit_code, r.stderr) == (2, expected), path
        assert list(tmp_path.iterdir()) == [], path


# ---------------------------------------------------------------------------------------------
# Flags take no value


def test_help_shows_flags_without_a_value():
    for path, params in _commands():
        for p in params:
            if getattr(p, "is_flag", False):
                assert p.metavar == "", (path, p.opts)
    for args in (
        ("ece",),
        ("smece",),
        ("tcal",),
        ("diagram",),
        ("recalibrate", "fit"),
        ("recalibrate", "apply"),
        ("recalibrate", "evaluate"),
    ):
        r = run(*args, "--help")
        assert r.exit_code == 0 and "--drop-invalid" in r.stdout
        assert "<bool>" not in r.stdout, args


@pytest.mark.parametrize(
    "args, flag, word",
    [
        (("ece", BINARY, "--logits", "false"), "--logits", "false"),
        (("smece", BINARY, "--drop-invalid", "yes"), "--drop-invalid", "yes"),
        (("tcal", BINARY, "--fail-on-reject", "True"), "--fail-on-reject", "True"),
        (("diagram", BINARY, "-o", "fig.png", "--pool", "0"), "--pool", "0"),
    ],
)
def test_a_word_after_a_flag_is_not_read_as_a_file(tmp_path, monkeypatch, args, flag, word):
    monkeypatch.chdir(tmp_path)
    line = _error_line(run(*args))
    assert line == (
        f"Error: {flag} is a flag and takes no value; '{word}' was read as an input file: remove it "
        f"(a flag is on when given, off when left out)"
    )
    assert not (tmp_path / "fig.png").exists()


def test_a_file_named_like_a_flag_word_is_still_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(BINARY, tmp_path / "false")
    r = run("ece", "--logits", "false", "--input-format", "csv", "--n-boot", 0, "--json")
    assert "a flag and takes no value" not in r.stderr  # the file exists: it is read (and fails on logits)


# ---------------------------------------------------------------------------------------------
# Out of memory: the message names the option that caused it, never one at 0


def _raise_memory_error(*args, **kwargs):
    raise MemoryError


def test_out_of_memory_does_not_blame_an_unused_option(monkeypatch, small_budget):
    from calibcli.ece_family import accumulator as evaluation

    monkeypatch.setattr(evaluation.InputAccumulator, "__init__", _raise_memory_error)
    line = _error_line(run("ece", BINARY, "--n-boot", 0))
    assert "--n-boot" not in line and line.startswith("Error: out of memory while reading and reducing the input")
    line = _error_line(run("ece", BINARY, "--n-boot", 0, "--n-bins", 1000000))
    assert line.startswith(
        "Error: out of memory: the largest allocation asked for is --n-bins 1000000 (about 976.6 MB for the bin arrays)"
    ), line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS")
def test_out_of_memory_subprocess_names_n_bins(tmp_path):
    """A real MemoryError: the address space is capped below what --n-bins asks (the budget set above it)."""
    import resource

    exe = shutil.which("calibcli") or pytest.skip("calibcli is not installed")

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    out = tmp_path / "r.json"
    p = subprocess.run(
        [exe, "ece", BINARY, "--n-bins", "300000000", "--n-boot", "0", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
        env={**os.environ, "CALIBCLI_MEMORY_BUDGET": "1T"},
    )
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "Error: out of memory: the largest allocation asked for is --n-bins 300000000"
    ), p.stderr
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# Calibrators: a newer schema, or fields this version does not know, are refused


@pytest.fixture(scope="module")
def calibrator_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "cal.json"
    r = run("recalibrate", "fit", BINARY, "--method", "platt", "-o", path)
    assert r.exit_code == 0, r.stderr
    return path


def _edited(tmp_path, source, edit) -> str:
    doc = json.loads(source.read_text())
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda d: d.update(schema_version=2, version="9.0.0"),
            "calibrator schema version 2 is not supported by calibcli",
        ),
        (lambda d: d["calibrator"]["params"].update(shift=0.5), "calibrator: unknown field 'params.shift': calibcli"),
        (
            lambda d: d["calibrator"]["options"].update(clip_high=0.9, prior=1),
            "calibrator: unknown fields 'options.clip_high', 'options.prior': calibcli",
        ),
        (lambda d: d.update(future_field=1), "calibrator: unknown field 'future_field'"),
        (lambda d: d["columns"].update(offset_col="o"), "calibrator: unknown field 'columns.offset_col'"),
    ],
)
def test_apply_refuses_a_calibrator_it_does_not_fully_know(tmp_path, calibrator_file, edit, message):
    path = _edited(tmp_path, calibrator_file, edit)
    out = tmp_path / "out.csv"
    line = _error_line(run("recalibrate", "apply", path, BINARY, "-o", out))
    assert line.startswith(f"Error: {path}: {message}"), line
    assert not out.exists()


def test_apply_warns_when_a_newer_calibcli_wrote_a_known_schema(tmp_path, calibrator_file):
    from calibcli._version import __version__

    path = _edited(tmp_path, calibrator_file, lambda d: d.update(version="99.0.0"))
    out = tmp_path / "out.csv"
    r = run("recalibrate", "apply", path, BINARY, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert f"Warning: {path} was written by calibcli 99.0.0, newer than this calibcli {__version__}" in r.stderr
    assert out.exists()
    r = run("recalibrate", "apply", str(calibrator_file), BINARY, "-o", out)  # this version's own: no warning
    assert r.exit_code == 0 and "Warning" not in r.stderr


def test_library_refuses_unknown_calibrator_fields():
    from calibcli.calibrators import calibrator_from_dict, fit_calibrator, fit_multiclass
    from calibcli.core.errors import CalibcliError

    rng = np.random.default_rng(2)
    z = rng.uniform(size=200)
    y = (rng.uniform(size=200) < z).astype(np.int64)
    for method in ("platt", "histogram", "isotonic", "polynomial", "beta", "venn-abers", "temperature"):
        d = fit_calibrator(method, y, z).to_dict()
        assert calibrator_from_dict(d).to_dict() == d  # what this version writes, it reads
        d["params"]["unknown"] = 1
        with pytest.raises(CalibcliError, match="unknown field 'params.unknown'"):
            calibrator_from_dict(d)
    P = np.column_stack([1 - z, z])
    d = fit_multiclass("platt", y, P, mode="marginal").to_dict()
    assert calibrator_from_dict(d).to_dict() == d
    d["calibrators"][1]["options"]["extra"] = True
    with pytest.raises(CalibcliError, match=r"unknown field 'calibrators\[1\]\.options\.extra'"):
        calibrator_from_dict(d)


def test_a_huge_sigma_is_the_flat_kernel_not_an_internal_error():
    """Any finite positive sigma is a bandwidth: beyond a few units the reflected kernel is flat on [0, 1]
    and smECE_sigma is |mean residual| (it used to be 'internal error (negative shift count)')."""
    values = []
    for sigma in ("3", "1000", "1e300", "1e308"):
        r = run("smece", BINARY, "--sigma", sigma, "--n-boot", "0", "--json")
        assert r.exit_code == 0 and r.stderr == "", r.stderr
        values.append(json.loads(r.stdout)["files"][0]["problems"][0]["metrics"]["smece_at_sigma"]["estimate"])
    import pandas as pd

    df = pd.read_csv(BINARY)
    flat = abs(float((df["label"] - df["prob"]).mean()))
    assert values == pytest.approx([flat] * 4, abs=1e-12)


def test_marginal_mode_counts_the_bins_of_every_class(tmp_path, small_budget):
    """10 classes of 200000 bins: each fits the budget, all ten do not (checked when the classes are known)."""
    out = tmp_path / "r.json"
    line = _error_line(run("ece", MULTI, "--mode", "marginal", "--n-bins", 200000, "--n-boot", 0, "-o", out))
    assert "--n-bins 200000 would need 1.9 GB for the bin arrays of 10 classes; use at most 104857 " in line, line
    assert not out.exists()
    r = run("ece", MULTI, "--mode", "top-label", "--n-bins", 200000, "--n-boot", 0, "--json")
    assert r.exit_code == 0, r.stderr


# ---------------------------------------------------------------------------------------------
# Levels at the ends of (0, 1) (issue 33): alpha 1e-17 is a level like any other (its normal quantile is 8.6, found
# by symmetry: 1 - 1e-17 rounds to 1), and compare's alpha 0.9999999999999999 has intervals of width ~0


@pytest.mark.parametrize(
    "command",
    [
        ("ece", "--n-boot", "20"),
        ("diagram", "--n-boot", "20", "-o", "{tmp}/d.png"),
        ("report", "-o", "{tmp}/r.html"),
        ("compare", BINARY, "--n-boot", "20"),
    ],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("alpha", ["1e-17", "0.9999999999999999"])
def test_alpha_at_the_ends_of_its_range_gives_clean_numbers(tmp_path, command, alpha):
    name, *rest = command
    args = [a.replace("{tmp}", str(tmp_path)) for a in rest]
    r = run(name, BINARY, *args, "--alpha", alpha)
    assert r.exit_code == 0, r.stderr
    assert "Error" not in r.stderr and "internal error" not in r.stderr


def test_compare_at_alpha_near_one_has_finite_ordered_intervals(tmp_path):
    import pandas as pd

    frame = pd.read_csv(BINARY)
    frame["prob"] = frame["prob"] ** 1.3  # another model of the same rows
    candidate = tmp_path / "candidate.csv"
    frame.to_csv(candidate, index=False)
    r = run("compare", BINARY, candidate, "--n-boot", "20", "--alpha", "0.9999999999999999", "--json")
    assert r.exit_code == 0, r.stderr
    shown = [e for e in json.loads(r.stdout)["comparison"].values() if e.get("ci_low") is not None]
    assert shown
    for entry in shown:
        assert np.isfinite(entry["ci_low"]) and entry["ci_low"] <= entry["ci_high"]


def test_the_upper_normal_quantile_at_a_tiny_alpha():
    from calibcli.binned.estimators import ece_l2_sq_sun_interval  # z_half = 8.6 at alpha 1e-17
    from calibcli.diagram.bands import wilson_interval

    low, high = wilson_interval(np.array([5.0]), np.array([10.0]), alpha=1e-17)
    assert 0.0 < low[0] < 0.5 < high[0] < 1.0
    assert callable(ece_l2_sq_sun_interval)


# ---------------------------------------------------------------------------------------------
# Sizes known before any work (issue 33): resamples x bins of one group's bootstrap, and a budget too small for
# anything is named as such (never "use at most 1", which fails again)


def test_resamples_times_bins_beyond_the_budget_name_both_and_the_advice_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "100M")
    r = run("ece", BINARY, "--n-boot", "100000", "--n-bins", "100")
    line = _error_line(r)
    assert line == (
        "Error: --n-boot 100000 with --n-bins 100 would need 4.8 GB for one group's bootstrap statistics (every "
        "resample of every bin at once), beyond half the memory budget (100.0 MB, CALIBCLI_MEMORY_BUDGET): use "
        "--n-boot 1024 or less at --n-bins 100, or --n-bins 1 or less at --n-boot 100000"
    )
    assert run("ece", BINARY, "--n-boot", "1024", "--n-bins", "100", "--json").exit_code == 0


def test_the_grouped_bootstrap_is_checked_the_same_way(monkeypatch, tmp_path):
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "100M")
    rng = np.random.default_rng(0)
    path = tmp_path / "g.csv"
    p = rng.uniform(0.05, 0.95, 300)
    import pandas as pd

    pd.DataFrame(
        {"prob": p, "label": (rng.uniform(size=300) < p).astype(int), "g": rng.choice(["a", "b"], 300)}
    ).to_csv(path, index=False)
    line = _error_line(run("ece", path, "--group-by", "g", "--n-boot", "100000", "--n-bins", "100"))
    assert line.startswith("Error: --n-boot 100000 with --n-bins 100 would need 4.8 GB")


@pytest.mark.parametrize("budget", ["0.5", "100"])
def test_a_budget_too_small_for_anything_says_so(monkeypatch, budget):
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", budget)
    line = _error_line(run("ece", BINARY, "--n-boot", "10"))
    assert line.startswith("Error: the memory budget (")
    assert line.endswith(": set CALIBCLI_MEMORY_BUDGET to at least 64M")
    assert "use at most" not in line
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", "64M")
    assert run("ece", BINARY, "--n-boot", "10", "--json").exit_code == 0


def test_an_out_of_memory_failure_without_a_culprit_never_blames_the_input():
    from calibcli.cli.options import out_of_memory_message

    text = out_of_memory_message({"batch_rows": 131072})
    assert "smaller input" not in text
    assert text == (
        "out of memory while reading and reducing the input, with no option planning that much: hold fewer rows at "
        "a time with --batch-rows (now 131072), e.g. --batch-rows 32768, or give the run more memory"
    )
