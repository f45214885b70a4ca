"""calibcli.metrics as a library: hand-worked numbers, the CLI's JSON on the same rows, every input type,
results that concatenate into tables, messages by parameter name, and no import of what the user did not import."""

from __future__ import annotations

import doctest
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from _cli import SAMPLE, run_json  # tests/ is on sys.path
import calibcli
import calibcli.api as metrics_module  # the metric functions (and their doctests) live in calibcli.api
from calibcli.api import CLASSIFICATION_FAMILIES
from calibcli.core.errors import CalibcliError
from calibcli.metrics import (
    REGISTRY,
    MetricResult,
    brier_decomposition,
    brier_score,
    compute,
    dce,
    ece,
    log_loss,
    smooth_ece,
    sun_interval,
    tcal_test,
)

# Eight predictions worked out by hand with 5 equal-width bins:
# [0, .2): z=.1 y=0 (gap .1); [.2, .4): z=.2,.3 y=0,1 (acc .5, conf .25); [.4, .6): z=.4 y=0 (gap .4);
# [.6, .8): z=.6,.7 y=1,1 (gap .35); [.8, 1]: z=.8,.9 y=1,1 (gap .15).
Y8 = [0, 1, 1, 0, 1, 1, 0, 1]
Z8 = [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3]


def synthetic(n=3000, seed=0, k=None):
    """Miscalibrated predictions: binary (P(y=1|z) = z^1.5) or k classes (sharpened true probabilities)."""
    rng = np.random.default_rng(seed)
    if k is None:
        z = rng.random(n)
        return (rng.random(n) < z**1.5).astype(np.int64), z
    logits = rng.normal(size=(n, k)) * 2.0
    true = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in true])
    sharp = np.exp(1.6 * logits)
    return y, sharp / sharp.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- hand-worked


def test_hand_worked_binned_errors():
    r = ece(Y8, Z8, n_bins=5)
    assert (r.name, r.n, r.mode) == ("ece_l1_plugin", 8, "binary")
    assert r.estimate == pytest.approx((0.1 + 2 * 0.25 + 0.4 + 2 * 0.35 + 2 * 0.15) / 8)
    assert r.upper_bound == pytest.approx(0.25 + math.sqrt(2 * math.log(1 / 0.05) / 8))
    assert ece(Y8, Z8, n_bins=5, norm="max").estimate == pytest.approx(0.4)
    l2 = math.sqrt((0.1**2 + 2 * 0.25**2 + 0.4**2 + 2 * 0.35**2 + 2 * 0.15**2) / 8)
    assert ece(Y8, Z8, n_bins=5, norm="l2").estimate == pytest.approx(l2)
    assert r.details == {"n_bins_nonempty": 5, "weight_total": 8.0}
    assert (r.ci_low, r.ci_high) == (None, None)
    assert float(r) == r.estimate


def test_debiased_error_reports_the_signed_square_beside_its_root():
    r = ece(Y8, Z8, n_bins=5, norm="l2", estimator="debiased_kumar")
    sq = r.related["ece_l2_sq_debiased_kumar"].estimate
    assert r.name == "ece_l2_debiased_kumar" and sq < 0 and r.estimate == 0.0
    r = compute("ece_l2_sq_debiased_dpe", Y8, Z8, n_bins=5)
    assert r.related["ece_l2_debiased_dpe"].estimate == math.sqrt(max(r.estimate, 0.0))


def test_brier_decomposition_adds_up_and_equals_the_score():
    r = brier_decomposition(Y8, Z8, n_bins=5)
    parts = {k: m.estimate for k, m in r.related.items()}
    assert r.estimate == pytest.approx(np.mean((np.array(Z8) - np.array(Y8)) ** 2))
    assert r.estimate == pytest.approx(parts["brier_reliability"] - parts["brier_resolution"]
                                       + parts["brier_uncertainty"] + parts["brier_within_bin"])
    assert brier_score(Y8, Z8).estimate == pytest.approx(r.estimate)


def test_log_loss_and_brier_match_scikit_learn():
    from sklearn.metrics import brier_score_loss
    from sklearn.metrics import log_loss as sk_log_loss

    y, z = synthetic(500)
    assert log_loss(y, z).estimate == pytest.approx(sk_log_loss(y, z))
    assert brier_score(y, z).estimate == pytest.approx(brier_score_loss(y, z))
    c, P = synthetic(500, k=4)
    r = log_loss(c, P)
    assert r.name == "log_loss_multiclass" and r.estimate == pytest.approx(sk_log_loss(c, P))
    assert brier_score(c, P).estimate == pytest.approx(np.mean(((P - np.eye(4)[c]) ** 2).sum(axis=1)))


def test_permutation_and_duplication_invariance():
    y, z = synthetic(400)
    order = np.random.default_rng(1).permutation(400)
    for name in ("ece_l1_plugin", "ece_l2_plugin", "dce", "brier_score", "smece"):
        a = compute(name, y, z).estimate
        assert compute(name, y[order], z[order]).estimate == pytest.approx(a, rel=1e-9, abs=1e-12)
        if name != "smece":
            assert compute(name, np.tile(y, 2), np.tile(z, 2)).estimate == pytest.approx(a, rel=1e-9)
        assert compute(name, y, z, sample_weight=np.full(400, 2.0)).estimate == pytest.approx(a, rel=1e-6)


@pytest.mark.filterwarnings("ignore:with n_boot 50:UserWarning")
def test_compute_reaches_every_metric_of_the_registry():
    y, z = synthetic(600)
    c, P = synthetic(600, k=3)
    for name, info in REGISTRY.items():
        if info.family not in CLASSIFICATION_FAMILIES:  # regression predictions: calibcli regression's
            with pytest.raises(CalibcliError, match=f"^{name} is a metric of {info.family} predictions, which "
                               "compute does not take"):
                compute(name, y, z)
            continue
        options = {"sigma": 0.05} if name == "smece_at_sigma" else {}
        if info.family == "tcal":
            options["n_boot"] = 50
        binary = compute(name, y, z, **options)
        assert binary.name == name and np.isfinite(binary.estimate), name
    assert compute("brier_score_multiclass", c, P).estimate == brier_score(c, P).estimate
    assert compute("binomial_p_value", y, np.round(z, 1)).details["test"] == "binomial"
    assert compute("tcal_statistic", y, z, n_boot=50).related["tcal_p_value"].estimate > 0


# --------------------------------------------------------------------------- the CLI's numbers


def _problem_metrics(doc):
    (entry,) = doc["files"]
    return entry


def _same(result: MetricResult, cli_metric: dict) -> None:
    """The result's entry equals the CLI's JSON entry of the metric, key by key."""
    mine = result.to_dict()
    assert {k: mine[k] for k in cli_metric} == cli_metric


def test_binned_metrics_equal_the_cli_json_binary(tmp_path):
    y, z = synthetic(2500)
    w = np.random.default_rng(2).random(2500) * 2
    path = tmp_path / "preds.csv"
    pd.DataFrame({"prob": z, "label": y, "w": w}).to_csv(path, index=False)
    for strategy in ("uniform", "quantile"):
        doc = run_json("ece", path, "--n-boot", "40", "--seed", "7", "--n-bins", "12", "--strategy", strategy)
        cli = _problem_metrics(doc)["problems"][0]["metrics"]
        for name in ("ece_l1_plugin", "ece_l2_plugin", "ece_max_plugin", "ece_l2_debiased_kumar",
                     "ece_l2_sq_debiased_dpe", "dce", "brier_score", "log_loss", "ece_l2_sq_sun_interval"):
            _same(compute(name, y, z, n_bins=12, strategy=strategy, n_boot=40, seed=7), cli[name])
    doc = run_json("ece", path, "--weight-col", "w", "--n-boot", "30", "--seed", "1")
    cli = _problem_metrics(doc)["problems"][0]["metrics"]
    _same(ece(y, z, sample_weight=w, n_boot=30, seed=1), cli["ece_l1_plugin"])
    _same(ece("label", "prob", sample_weight="w", data=pd.read_csv(path), n_boot=30, seed=1), cli["ece_l1_plugin"])


def test_binned_metrics_equal_the_cli_json_multiclass(tmp_path):
    c, P = synthetic(1500, k=4)
    path = tmp_path / "multi.parquet"
    pd.DataFrame({**{f"p_{k}": P[:, k] for k in range(4)}, "label": c}).to_parquet(path)
    doc = run_json("ece", path, "--n-boot", "25", "--seed", "3")
    entry = _problem_metrics(doc)
    _same(ece(c, P, n_boot=25, seed=3), entry["problems"][0]["metrics"]["ece_l1_plugin"])
    _same(brier_score(c, P, n_boot=25, seed=3), entry["multiclass_scores"]["brier_score_multiclass"])
    _same(log_loss(c, P, n_boot=25, seed=3), entry["multiclass_scores"]["log_loss_multiclass"])
    doc = run_json("ece", path, "--mode", "marginal", "--class-weights", "prior", "--n-boot", "25", "--seed", "3")
    entry = _problem_metrics(doc)
    r = ece(c, P, mode="marginal", class_weights="prior", n_boot=25, seed=3)
    _same(r, entry["aggregate"]["metrics"]["ece_l1_plugin"])
    assert list(r.per_class) == [q["name"] for q in entry["problems"]] == [f"class {k}" for k in range(4)]
    for q in entry["problems"]:
        assert r.per_class[q["name"]].to_dict() == q["metrics"]["ece_l1_plugin"]
    r = ece(c, pd.DataFrame({f"p_{k}": P[:, k] for k in range(4)}), norm="l2", estimator="debiased_dpe",
            mode="marginal", class_weights="prior", n_boot=25, seed=3)
    _same(r, entry["aggregate"]["metrics"]["ece_l2_debiased_dpe"])


def test_smooth_ece_equals_the_cli_json(tmp_path):
    y, z = synthetic(2000, seed=4)
    path = tmp_path / "preds.csv"
    pd.DataFrame({"prob": z, "label": y}).to_csv(path, index=False)
    doc = run_json("smece", path, "--n-boot", "20", "--seed", "5")
    (problem,) = _problem_metrics(doc)["problems"]
    r = smooth_ece(y, z, n_boot=20, seed=5)
    _same(r, problem["metrics"]["smece"])
    assert r.details["sigma"] == problem["sigma"] and r.details["grid_cells"] == problem["grid_cells"]
    doc = run_json("smece", path, "--sigma", "0.05")
    assert smooth_ece(y, z, sigma=0.05).to_dict()["estimate"] == _problem_metrics(doc)["problems"][0]["metrics"][
        "smece_at_sigma"]["estimate"]
    c, P = synthetic(1200, k=3, seed=5)
    path = tmp_path / "multi.csv"
    pd.DataFrame({**{f"p_{k}": P[:, k] for k in range(3)}, "label": c}).to_csv(path, index=False)
    doc = run_json("smece", path, "--mode", "marginal", "--n-boot", "10")
    r = smooth_ece(c, P, mode="marginal", n_boot=10)
    _same(r, _problem_metrics(doc)["aggregate"]["metrics"]["smece"])
    assert len(r.per_class) == 3


def test_tcal_test_equals_the_cli_json(tmp_path):
    y, z = synthetic(1500, seed=6)
    path = tmp_path / "preds.csv"
    pd.DataFrame({"prob": z, "label": y}).to_csv(path, index=False)
    doc = run_json("tcal", path, "--n-boot", "150", "--seed", "2")
    cli = _problem_metrics(doc)["result"]
    with pytest.warns(UserWarning, match="smallest attainable p-value"):
        r = tcal_test(y, z, n_boot=150, seed=2)
    assert (r.name, r.estimate, r.details["reject"]) == ("tcal_p_value", cli["p_value"], cli["reject"])
    assert r.details["levels"] == cli["levels"]
    assert r.related["tcal_statistic"].estimate == min(cli["levels"], key=lambda lv: lv["p_value"])["statistic"]
    discrete = np.round(z, 1)
    pd.DataFrame({"prob": discrete, "label": y}).to_csv(path, index=False)
    cli = _problem_metrics(run_json("tcal", path))["result"]
    r = tcal_test(y, discrete)
    assert (r.name, r.estimate, r.details["per_value"]) == ("binomial_p_value", cli["p_value"], cli["per_value"])


# --------------------------------------------------------------------------- input types


class ArrayOnly:
    """A tensor-like object that only exposes ``__array__`` (as torch or JAX do), imported from nowhere."""

    __module__ = "torchlike"

    def __init__(self, a):
        self._a = np.asarray(a)

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)

    def __len__(self):
        return len(self._a)


class DLPackOnly:
    """An array-API object that only speaks DLPack (``__dlpack__``/``__dlpack_device__``), like a CPU tensor."""

    def __init__(self, a):
        self._a = np.ascontiguousarray(a)

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def _input_types():
    y, z = synthetic(300, seed=8)
    z = z.astype(np.float32).astype(np.float64)  # exact in float32 too, so a float32 input is the same data
    pl = None
    try:
        import polars as pl
    except ImportError:
        pass
    cases = {
        "numpy": (y, z),
        "list": (y.tolist(), z.tolist()),
        "numpy float32 and bool": (y.astype(bool), z.astype(np.float32)),
        "pandas series": (pd.Series(y), pd.Series(z)),
        "pandas categorical labels": (pd.Series(pd.Categorical(y)), pd.Series(z)),
        "pandas dataframe (one column)": (pd.Series(y), pd.DataFrame({"prob": z})),
        "pyarrow array": (pa.array(y), pa.array(z)),
        "pyarrow chunked array": (pa.chunked_array([y[:100], y[100:]]), pa.chunked_array([z[:150], z[150:]])),
        "pyarrow table (one column)": (pa.array(y), pa.table({"prob": z})),
        "__array__ only": (ArrayOnly(y), ArrayOnly(z)),
        "__dlpack__ only": (DLPackOnly(y), DLPackOnly(z)),
        "two columns (pandas)": (pd.Series(y), pd.DataFrame({"p_0": 1 - z, "p_1": z})),
        "two columns (arrow list column)": (y, pa.array([[1 - v, v] for v in z])),
    }
    if pl is not None:
        cases["polars series"] = (pl.Series(y), pl.Series(z))
        cases["polars dataframe (two columns)"] = (pl.Series(y), pl.DataFrame({"p_0": 1 - z, "p_1": z}))
        cases["polars list column"] = (pl.Series(y), pl.Series([[1 - v, v] for v in z]))
    return y, z, cases


@pytest.mark.parametrize("kind", list(_input_types()[2]))
def test_every_input_type_gives_the_numpy_numbers(kind):
    y, z, cases = _input_types()
    yt, zt = cases[kind]
    ref = ece(y, z, n_boot=20, seed=1)
    got = ece(yt, zt, n_boot=20, seed=1)
    assert (got.estimate, got.ci_low, got.ci_high) == pytest.approx((ref.estimate, ref.ci_low, ref.ci_high), rel=1e-12)
    assert smooth_ece(yt, zt).estimate == pytest.approx(smooth_ece(y, z).estimate, rel=1e-12)


def test_dataframes_select_columns_by_name_and_labels_by_class_name():
    c, P = synthetic(500, k=3, seed=9)
    names = np.array(["cat", "dog", "owl"])
    df = pd.DataFrame({"p_cat": P[:, 0], "p_dog": P[:, 1], "p_owl": P[:, 2], "label": names[c], "w": 1.0})
    ref = ece(c, P, mode="marginal")
    by_name = ece("label", ["p_cat", "p_dog", "p_owl"], data=df, mode="marginal", sample_weight="w")
    assert by_name.estimate == pytest.approx(ref.estimate)
    assert list(by_name.per_class) == ["class cat", "class dog", "class owl"]
    assert ece("label", "p_*", data=df, mode="marginal").estimate == pytest.approx(ref.estimate)
    assert ece(df["label"], df[["p_cat", "p_dog", "p_owl"]]).estimate == ece(c, P).estimate
    mapping = {"label": c.tolist(), **{f"p_{k}": P[:, k].tolist() for k in range(3)}}
    assert ece("label", "p_*", data=mapping).estimate == ece(c, P).estimate
    assert ece("label", "p_*", data=pa.table(mapping)).estimate == ece(c, P).estimate
    # integer class names that are not 0..K-1 map integer labels by name, as the CLI does
    shifted = pd.DataFrame({"p_1": P[:, 0], "p_2": P[:, 1], "p_3": P[:, 2]})
    assert ece(c + 1, shifted).estimate == ece(c, P).estimate


def test_polars_dataframe_as_data():
    pl = pytest.importorskip("polars")
    c, P = synthetic(400, k=3, seed=10)
    df = pl.DataFrame({"y": c, **{f"prob_{k}": P[:, k] for k in range(3)}})
    assert smooth_ece("y", "prob_*", data=df).estimate == smooth_ece(c, P).estimate
    assert ece("y", ["prob_0", "prob_1", "prob_2"], data=df.lazy()).estimate == ece(c, P).estimate


def test_logits_are_turned_into_probabilities():
    y, z = synthetic(300)
    logit = np.log(z) - np.log1p(-z)
    assert ece(y, logit, logits=True).estimate == pytest.approx(ece(y, z).estimate, rel=1e-9)
    c, P = synthetic(300, k=3)
    assert ece(c, np.log(P) + 5.0, logits=True).estimate == pytest.approx(ece(c, P).estimate, rel=1e-9)


# --------------------------------------------------------------------------- results as tables


def test_results_concatenate_into_a_table_and_serialise():
    y, z = synthetic(400)
    a = ece(y, z, n_boot=20).to_frame(model="a")
    b = ece(y, np.clip(z * 0.9 + 0.05, 0, 1), n_boot=20).to_frame(model="b")
    table = pd.concat([a, b], ignore_index=True)
    assert list(table["model"]) == ["a", "b"] and list(table.columns[:4]) == ["model", "metric", "estimate", "ci_low"]
    assert (table["metric"] == "ece_l1_plugin").all() and (table["n_bins"] == 15).all()
    frame = brier_decomposition(y, z).to_frame()
    assert len(frame) == 1 and {"brier_reliability", "brier_resolution"} <= set(frame.columns)
    c, P = synthetic(300, k=3)
    marginal = ece(c, P, mode="marginal").to_frame()
    assert "ece_l1_plugin class 2" in marginal.columns and marginal["class_weights"].item() == "uniform"
    doc = tcal_test(y, z, n_boot=400).to_dict()
    assert json.loads(json.dumps(doc)) == doc and doc["metric"] == "tcal_p_value"
    r = sun_interval(y, z)
    assert r.ci_low <= max(r.estimate, 0.0) <= r.ci_high and "ece_l2_sq_debiased_sun" in r.related


def test_results_are_frozen():
    r = dce(Y8, Z8)
    with pytest.raises(AttributeError):
        r.estimate = 0.0


# --------------------------------------------------------------------------- errors name parameters


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ece(Y8, Z8, norm="l3"), "norm is 'l3': expected one of l1, l2, max"),
        (lambda: ece(Y8, Z8, estimator="debiased_kumar"), "the debiased_kumar estimator has no l1 form"),
        (lambda: ece(Y8, Z8, n_bins=0), "n_bins is 0: expected a positive number of bins"),
        (lambda: ece(Y8, Z8, alpha=1.5), "alpha is 1.5: expected a number strictly between 0 and 1"),
        (lambda: ece(Y8, Z8, mode="top-label"), "mode top-label needs one probability column per class"),
        (lambda: ece(Y8, [0.5] * 7), "inputs have different lengths (labels=8, predictions=7)"),
        (lambda: ece(Y8, [1.5] + Z8[1:]), "prediction at row 0 is 1.5, outside [0, 1]"),
        (lambda: ece(["a", "b"], [0.2, 0.7]), "y_true holds text labels (['a', 'b']) but y_prob has no class names"),
        (lambda: ece(["cat", "emu"], pd.DataFrame({"p_cat": [0.5, 0.4], "p_dog": [0.5, 0.6]})),
         "y_true at row 1 is 'emu', which names no class"),
        (lambda: ece("label", "prob", data=pd.DataFrame({"y": [1]})), "y_true: data has no column 'label'"),
        (lambda: brier_decomposition([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], mode="marginal"),
         "brier_score has no aggregate over classes"),
        (lambda: compute("ece", Y8, Z8), "unknown metric 'ece'"),
        (lambda: compute("smece_at_sigma", Y8, Z8), "smece_at_sigma needs sigma"),
        (lambda: smooth_ece(Y8, Z8, sigma=-1.0), "sigma is -1.0: expected a positive bandwidth"),
    ],
)
def test_errors_say_what_was_found_by_parameter_name(call, message):
    with pytest.raises(CalibcliError) as info:
        call()
    assert message in str(info.value)
    assert "--" not in str(info.value)


# --------------------------------------------------------------------------- docs and imports


def test_doctests_of_calibcli_metrics():
    result = doctest.testmod(metrics_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 30 and result.failed == 0


def test_top_level_exports():
    assert calibcli.ece is ece and calibcli.MetricResult is MetricResult
    assert calibcli.brier_decomposition is brier_decomposition
    assert calibcli.smooth_ece is not smooth_ece  # calibcli.smooth_ece stays the compute core


PROBE = """
import json, sys
from calibcli.metrics import ece, smooth_ece, brier_score
class T:
    def __init__(self, a): self.a = a
    def __array__(self, dtype=None, copy=None):
        import numpy
        return numpy.asarray(self.a, dtype=dtype)
y = [0, 1, 1, 0, 1, 1, 0, 1]
z = [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3]
ece(y, z, n_boot=5); smooth_ece(T(y), T(z)); brier_score(y, z)
print(json.dumps(sorted(sys.modules)))
"""


def test_metrics_import_none_of_the_libraries_the_user_did_not():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout)
    heavy = ("pandas", "polars", "pyarrow", "torch", "jax", "sklearn", "matplotlib", "scipy.stats")
    assert [m for m in modules if m.split(".")[0] in heavy or m in heavy] == []
