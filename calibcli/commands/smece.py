"""``calibcli smece``: SmoothECE, the binning-free calibration error (SPEC 3; seed 003)."""

from __future__ import annotations

from typing import Annotated, Optional

import numpy as np
import typer

from calibcli import cli_common as cc
from calibcli.modes import CLASS_WEIGHTS, MODES, binary_problems, class_weights, default_mode
from calibcli.report import GateSpec, check_gate, emit_with_gates, fmt_interval, fmt_number, new_document
from calibcli.validation import check_option

Sigma = Annotated[
    Optional[float],
    typer.Option(
        "--sigma",
        help="Kernel bandwidth: report smECE at this sigma. Default: the fixed point sigma* = smECE_sigma* "
        "(solved to 1e-7), the SmoothECE proper.",
    ),
]

ESTIMATORS = {
    "smece": "SmoothECE (Blasiok & Nakkiran 2023): smECE at the fixed point sigma* = smECE_sigma*, "
    "reflected Gaussian kernel on [0, 1]",
    "smece_at_sigma": "smECE_sigma = int_0^1 |(1/W) sum_i w_i K_sigma(t, z_i) (y_i - z_i)| dt at the given sigma, "
    "reflected Gaussian kernel on [0, 1]",
}


def _problem_json(problem, result, metric: str, ci_method: str | None) -> dict:
    return {
        "name": problem.name,
        "class_index": problem.class_index,
        "n": result.n,
        "weight_total": result.weight_total,
        "sigma": result.sigma,
        "sigma_is_fixed_point": result.sigma_is_fixed_point,
        "fixed_point_gap": result.fixed_point_gap,
        "grid_cells": result.grid_size,
        "metrics": {
            metric: {"estimate": result.smece, "ci_low": result.ci_low, "ci_high": result.ci_high, "ci_method": ci_method}
        },
    }


def smece(
    files: cc.Files,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: cc.Mode = None,
    class_weights_scheme: cc.ClassWeights = "uniform",
    sigma: Sigma = None,
    n_boot: cc.NBoot = 1000,
    alpha: cc.Alpha = 0.05,
    seed: cc.Seed = 0,
    as_json: cc.Json = False,
    output: cc.Output = None,
    fail_above: cc.FailAbove = None,
    fail_above_upper: cc.FailAboveUpper = None,
) -> None:
    """SmoothECE: the calibration error of the kernel-smoothed residual at the bandwidth where
    smECE_sigma = sigma (no bins, no bandwidth to choose), with a bootstrap interval in which the
    bandwidth is re-solved on every resample; binary, top-label or marginal mode."""
    if mode is not None:
        cc.check_choice(mode, MODES, "--mode")
    cc.check_choice(class_weights_scheme, CLASS_WEIGHTS, "--class-weights")
    check_option(
        sigma is None or (np.isfinite(sigma) and sigma > 0),
        f"--sigma is {sigma}: expected a positive bandwidth, or no --sigma for the fixed point",
    )
    check_option(n_boot >= 0, f"--n-boot is {n_boot}: expected 0 (no intervals) or a positive count")
    check_option(0.0 < alpha < 1.0, f"--alpha is {alpha}: expected a number strictly between 0 and 1")
    metric = "smece" if sigma is None else "smece_at_sigma"
    gate = GateSpec(metric, fail_above, fail_above_upper)
    if gate.fail_above_upper is not None:
        check_option(n_boot > 0, "--fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0")

    from calibcli.smooth import FIXED_POINT_TOL, percentile_interval, smooth_ece

    ci_method = (
        f"percentile bootstrap, {n_boot} resamples"
        + (", bandwidth re-solved on each" if sigma is None else ", fixed sigma")
        if n_boot
        else None
    )
    spec = cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits)
    doc = new_document(
        "smece",
        {
            "sigma": "fixed point" if sigma is None else sigma,
            "fixed_point_tolerance": FIXED_POINT_TOL if sigma is None else None,
            "kernel": "reflected Gaussian on [0, 1] (every reflection; predictions at 0 or 1 carry full weight)",
            "mode": mode or "auto",
            "class_weights": class_weights_scheme,
            "marginal_aggregate": "sum_k v_k smECE_k (the lp rule with p = 1)",
            "n_boot": n_boot,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "estimators": {metric: ESTIMATORS[metric]},
            "weights": "frequency weights" if weight_col else None,
            "gate": gate.describe() if gate.active else None,
        },
    )
    for loaded in cc.load_inputs(files, spec, input_format=input_format, drop_invalid=drop_invalid):
        file_mode = mode or default_mode(loaded.n_classes)
        problems = binary_problems(
            loaded.labels, loaded.probs, mode=file_mode, sample_weight=loaded.sample_weight,
            class_names=list(loaded.class_names),
        )
        results = []
        with cc.progress_bar(n_boot * len(problems), f"bootstrap {loaded.path}") as advance:
            for problem in problems:
                # One generator per problem, all seeded alike: every class sees the same resampled
                # rows, so the marginal aggregate's interval is joint.
                results.append(
                    smooth_ece(
                        problem.y, problem.z, sample_weight=problem.sample_weight, sigma=sigma,
                        n_boot=n_boot, alpha=alpha, rng=np.random.default_rng(seed), progress=advance,
                    )
                )
        entry = {
            "input": loaded.describe(),
            "mode": file_mode,
            "problems": [_problem_json(p, r, metric, ci_method) for p, r in zip(problems, results)],
        }
        headline = entry["problems"][0]["metrics"][metric]
        if file_mode == "marginal":
            v = class_weights(loaded.labels, loaded.n_classes, scheme=class_weights_scheme,
                              sample_weight=loaded.sample_weight)
            estimate = float(np.dot(v, [r.smece for r in results]))
            low = high = None
            if n_boot:
                low, high = percentile_interval(np.stack([r.replicates for r in results]).T @ v, alpha)
            headline = {
                "estimate": estimate, "ci_low": low, "ci_high": high,
                "ci_method": None if ci_method is None else ci_method + ", classes resampled jointly",
                "note": "marginal aggregate sum_k v_k smECE_k",
            }
            entry["aggregate"] = {
                "class_weights": class_weights_scheme,
                "class_weight_values": v.tolist(),
                "metrics": {metric: headline},
            }
        if gate.active:
            entry["gate"] = check_gate(gate, loaded.path, headline)
        doc["files"].append(entry)

    emit_with_gates(doc, gate, as_json=as_json, output=output, render=render_smece)


def render_smece(doc: dict, console) -> None:
    """The rich table of a ``smece`` report: one row per file and problem (and the aggregate)."""
    from rich.table import Table

    p = doc["parameters"]
    level = f"{100 * (1 - p['alpha']):g}%"
    bandwidth = "sigma* = fixed point" if p["sigma"] == "fixed point" else f"sigma = {p['sigma']:g}"
    boot = (
        f"{p['n_boot']} bootstrap resamples ({'bandwidth re-solved on each' if p['sigma'] == 'fixed point' else 'fixed sigma'}), "
        f"{level} percentile intervals, seed {p['seed']}"
        if p["n_boot"]
        else "no bootstrap"
    )
    table = Table(title=f"calibcli smece: {bandwidth}; {boot}", title_justify="left")
    for col, just in (("file", "left"), ("problem", "left"), ("metric", "left"), ("estimate", "right"),
                      (f"{level} CI", "right"), ("sigma", "right"), ("n", "right")):
        table.add_column(col, justify=just, overflow="fold")
    for f in doc["files"]:
        path = f["input"]["path"]
        rows = []
        if "aggregate" in f:
            for name, m in f["aggregate"]["metrics"].items():
                rows.append(("aggregate", name, m, "-", f["input"]["rows_used"]))
        for q in f["problems"]:
            for name, m in q["metrics"].items():
                rows.append((q["name"], name, m, fmt_number(q["sigma"]), q["n"]))
        for i, (problem, name, m, sig, n) in enumerate(rows):
            table.add_row(path if i == 0 else "", problem, name, fmt_number(m["estimate"]),
                          fmt_interval(m["ci_low"], m["ci_high"]), sig, str(n))
        table.add_section()
    console.print(table)
    for f in doc["files"]:
        i = f["input"]
        cols = i["columns"]
        dropped = (
            f", dropped {i['rows_dropped']} ({', '.join(f'{k}: {v}' for k, v in i['dropped_reasons'].items())})"
            if i["rows_dropped"]
            else ""
        )
        aggregate = ""
        if "aggregate" in f:
            aggregate = f"; aggregate = sum_k v_k smECE_k with {f['aggregate']['class_weights']} class weights"
        console.print(
            f"{i['path']}: {i['rows_used']} rows{dropped}; mode {f['mode']}; K={i['n_classes']}; "
            f"probabilities {', '.join(cols['probabilities'])}{' (logits)' if cols['logits'] else ''}, labels {cols['label']}"
            f"{', weights ' + cols['weight'] if cols['weight'] else ''} (columns chosen by {cols['chosen_by']}){aggregate}"
        )
    if "gate" in doc:
        g = doc["gate"]
        console.print(f"gate on {g['metric']}: {'passed' if g['passed'] else 'FAILED'}")


def register(app: typer.Typer) -> None:
    app.command("smece")(cc.command(smece))
