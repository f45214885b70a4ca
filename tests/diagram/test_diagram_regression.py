"""`calibcli diagram` on regression dumps: the calibration curve with its bootstrap band and the PIT histogram
with the uniform band, whose numbers are `calibcli regression --json`'s (within 1e-12), the figure inspected
(the curve's points, the diagonal, the band, the bars), every output format, reproducible bytes, and the error
paths (one `Error:` line, exit 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _cli import run, run_json  # (tests/ is on sys.path)

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data" / "regression"
GP = str(SAMPLES / "diabetes_gp.csv")


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-12, atol=1e-15)


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_the_band_and_the_histogram_are_calibcli_regressions_numbers(out, figures):
    args = ("--n-boot", "150", "--seed", "7", "--pit-bins", "8")
    reg = run_json("regression", GP, *args)["files"][0]["problems"][0]
    doc = run_json("diagram", GP, *args, "-o", out / "gp.png")
    entry = doc["files"][0]
    drawn = entry["regression_curve"]
    curve, band = reg["calibration_curve"], reg["calibration_curve"]["band"]
    close(drawn["calibration_curve"]["expected"], curve["expected"])
    close(drawn["calibration_curve"]["observed"], curve["observed"])
    close(drawn["calibration_curve"]["band_low"], band["low"])
    close(drawn["calibration_curve"]["band_high"], band["high"])
    assert drawn["calibration_curve"]["band"]["n_boot"] == 150
    close(drawn["pit_histogram"]["density"], reg["pit_histogram"]["density"])
    for name, m in reg["metrics"].items():  # the table's numbers too
        got = entry["problems"][0]["metrics"][name]
        for k in ("estimate", "ci_low", "ci_high"):
            assert (got[k] is None) == (m[k] is None)
            if m[k] is not None:
                close(got[k], m[k])
    # the uniform band: Binomial(n, 1/8)'s 2.5% and 97.5% quantiles over n/8
    n, bins = reg["n"], 8
    u = drawn["pit_histogram"]["uniform_band"]
    close([u["low"], u["high"]], stats.binom.ppf([0.025, 0.975], n, 1 / bins) * bins / n)
    # every parameter echoed
    p = doc["parameters"]
    assert (p["n_boot"], p["seed"], p["pit_bins"], p["kind"], p["alpha"]) == (150, 7, 8, "regression", 0.05)
    assert doc["diagram"]["panels"] == ["calibration curve", "PIT histogram"]
    # the figure: the curve's points are the observed proportions, the diagonal is drawn, the bars are the density
    (fig,) = figures
    curve_ax, pit_ax = fig.axes
    lines = [line for line in curve_ax.get_lines() if len(line.get_xdata()) == len(curve["expected"])]
    assert len(lines) == 1
    close(lines[0].get_ydata(), curve["observed"])
    assert any(list(line.get_xdata()) == [0, 1] and list(line.get_ydata()) == [0, 1] for line in curve_ax.get_lines())
    assert len(curve_ax.collections) == 2  # the band and the area to the diagonal
    (bars,) = [p for p in pit_ax.patches if hasattr(p, "get_data")]
    close(bars.get_data().values, reg["pit_histogram"]["density"])
    assert pit_ax.get_xlabel() == "PIT value" and curve_ax.get_ylabel() == "observed proportion"
    assert sorted(q.name for q in out.iterdir()) == ["gp.png"]


@pytest.mark.parametrize(
    "name, panels",
    [
        ("diabetes_quantiles.csv", 2),
        ("diabetes_quantiles_long.csv", 2),
        ("diabetes_ensemble.csv", 2),
        ("diabetes_conformal.csv", 1),
        ("diabetes_forest.csv", 2),
    ],
)
def test_every_kind_is_recognised_and_drawn(out, figures, name, panels):
    doc = run_json("diagram", str(SAMPLES / name), "--n-boot", "20", "-o", out / "f.svg")
    reg = run_json("regression", str(SAMPLES / name), "--n-boot", "20")["files"][0]["problems"][0]
    assert doc["diagram"]["n_panels"] == panels == len(figures[0].axes)
    drawn = doc["files"][0]["regression_curve"]
    assert drawn["kind"] == reg["kind"]
    close(drawn["calibration_curve"]["band_low"], reg["calibration_curve"]["band"]["low"])
    assert (out / "f.svg").read_bytes().startswith(b"<?xml")


def test_explicit_columns_several_files_and_formats(out, tmp_path):
    rng = np.random.default_rng(3)
    paths = []
    for k, scale in enumerate((1.0, 0.6)):
        x = rng.uniform(-1, 1, 400)
        pd.DataFrame({"m": x, "s": 0.5 * scale + 0 * x, "obs": x + rng.normal(size=400) * 0.5}).to_csv(
            tmp_path / f"model{k}.csv", index=False
        )
        paths.append(str(tmp_path / f"model{k}.csv"))
    cols = ("--mean", "m", "--std", "s", "--target", "obs", "--n-boot", "10")
    for ext in ("png", "svg", "pdf"):
        doc = run_json("diagram", *paths, *cols, "-o", out / f"two.{ext}")
        assert doc["diagram"]["format"] == ext and doc["diagram"]["n_curves_per_panel"] == 2
        assert [f["name"] for f in doc["files"]] == ["model0.csv", "model1.csv"]
    first = (out / "two.png").read_bytes()
    run_json("diagram", *paths, *cols, "-o", out / "two.png")
    assert (out / "two.png").read_bytes() == first  # the same inputs and seed: the same bytes
    # the overconfident model (std 0.3 for noise 0.5) covers less than its nominal levels
    reg = run_json("regression", paths[1], *cols)["files"][0]["problems"][0]
    assert reg["metrics"]["picp_0.9"]["estimate"] < 0.8


def test_without_bootstrap_no_band_is_drawn(out, figures):
    doc = run_json("diagram", GP, "--n-boot", "0", "-o", out / "f.png")
    drawn = doc["files"][0]["regression_curve"]["calibration_curve"]
    assert drawn["band_low"] is None and drawn["band"] is None
    assert len(figures[0].axes[0].collections) == 1  # the area to the diagonal only


@pytest.mark.parametrize(
    "rows, flags, message",
    [
        ("mean,std,y\n1,0.5,1\n2,-1,2\n", (), "std not positive"),
        ("mean,std,y\n1,0.5,1\n2,1,\n", (), "empty target"),
        ("mean,std,y\n1,0.5,1\n2,1,3\n", ("--level", "1.5"), "--level 1.5 is outside (0, 1)"),
        ("lower_0.9,upper_0.9,y\n1,2,1\n3,2,2\n", (), "lower above upper"),
        ("mean,std\n1,0.5\n", ("--mean", "mean", "--std", "std"), "target"),
    ],
)
def test_bad_input_is_one_error_line_and_nothing_is_written(out, tmp_path, rows, flags, message):
    path = tmp_path / "bad.csv"
    path.write_text(rows)
    r = run("diagram", path, *flags, "--n-boot", "0", "-o", out / "f.png")
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], r.stderr
    assert list(out.iterdir()) == []


def test_a_classifier_file_is_still_a_reliability_diagram(out):
    from _cli import BINARY

    doc = run_json("diagram", BINARY, "--n-boot", "0", "-o", out / "f.png")
    assert doc["diagram"]["mode"] == "binary" and "regression_curve" not in doc["files"][0]


@pytest.mark.parametrize(
    "flags, flag",
    [
        (("--band", "clopper-pearson"), "--band"),
        (("--kind", "binned"), "--kind"),
        (("--min-count", "5"), "--min-count"),
        (("--hist-scale", "log"), "--hist-scale"),
        (("--n-bins", "10"), "--n-bins"),
        (("--strategy", "quantile"), "--strategy"),
        (("--mode", "top-label"), "--mode"),
        (("--max-classes", "3"), "--max-classes"),
    ],
)
def test_a_classifier_diagram_option_on_a_regression_dump_is_one_error_line(out, flags, flag):
    r = run("diagram", GP, *flags, "--n-boot", "0", "-o", out / "f.png")
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {flag} {flags[1]} was given with a regression dump"), lines
    assert "applies to classifier diagrams" in lines[0] and lines[0].endswith(f"drop {flag}"), lines
    assert list(out.iterdir()) == []


def test_a_classifier_option_at_its_default_changes_nothing_and_passes(out):
    doc = run_json("diagram", GP, "--band", "wilson", "--kind", "both", "--n-boot", "0", "-o", out / "f.png")
    assert doc["diagram"]["panels"] == ["calibration curve", "PIT histogram"]


def test_the_same_classifier_options_still_draw_a_classifier_diagram(out):
    from _cli import BINARY

    flags = ("--band", "clopper-pearson", "--kind", "binned", "--min-count", "5", "--hist-scale", "log")
    doc = run_json("diagram", BINARY, *flags, "--n-boot", "0", "-o", out / "f.png")
    assert doc["diagram"]["mode"] == "binary" and "regression_curve" not in doc["files"][0]


@pytest.mark.parametrize(
    "header, regression",
    [
        ("mean,std,y", True),
        ("q0.05,q0.5,q0.95,target", True),
        ("quantile_0.1,quantile_0.9,y", True),
        ("s0,s1,s2,y", True),
        ("lower_0.9,upper_0.9,y", True),
        ("prob,mean,std,y", False),  # a probability column: the classifier's file
        ("p_10,p_50,p_90,y", False),  # read as three class probabilities, as before
    ],
)
def test_a_regression_dump_is_told_from_its_column_names(tmp_path, header, regression):
    from calibcli.cli.regression_input import is_regression
    from calibcli.io.columns import recognises_probabilities

    n = len(header.split(","))
    path = tmp_path / "d.csv"
    path.write_text(header + "\n" + ",".join(["0.2"] * (n - 1) + ["1"]) + "\n")
    options = {
        "input_format": None,
        "drop_invalid": False,
        "batch_rows": 1000,
        **dict.fromkeys(("prob_col", "prob_cols", "label_col", "weight_col", "logits")),
    }
    from calibcli.cli.regression_input import COLUMN_NAMES

    options.update(dict.fromkeys(COLUMN_NAMES))
    assert is_regression([str(path)], options) is regression
    assert recognises_probabilities(header.split(","), {}, __import__("calibcli").io.ColumnSpec()) is not regression


def test_a_file_neither_reader_recognises_is_the_classifiers_error(out, tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("alpha,beta,y\n1,2,1\n")
    r = run("diagram", path, "--n-boot", "0", "-o", out / "f.png")
    assert r.exit_code == 2 and "no probability column recognised" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and list(out.iterdir()) == []
