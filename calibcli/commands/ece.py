"""``calibcli ece``: binned calibration errors, proper scores, intervals and bounds (SPEC 2)."""

from __future__ import annotations

from typing import Annotated

import typer

from calibcli import cli_common as cc
from calibcli.binning import EDGE_CONVENTION, STRATEGIES
from calibcli.estimators import LOG_LOSS_EPS
from calibcli.modes import CLASS_WEIGHTS, MODES, default_mode
from calibcli.report import GateSpec, check_gate, emit_with_gates, fmt_interval, fmt_number, metric_json, new_document
from calibcli.validation import check_option

#: Metrics shown per class in marginal mode (the aggregate shows every metric).
PER_CLASS_TABLE = ("ece_l1_plugin", "ece_l2_plugin", "ece_max_plugin", "ece_l2_sq_debiased_kumar", "ece_l2_sq_debiased_dpe")


def _problem_json(p) -> dict:
    r = p.result
    s = r.bin_stats
    ne = s.nonempty
    bounds = r.bin_bounds
    return {
        "name": p.name,
        "class_index": p.class_index,
        "n": r.n,
        "weight_total": r.weight_total,
        "bins": {
            "strategy": r.strategy,
            "n_bins": r.n_bins,
            "n_bins_nonempty": r.n_bins_nonempty,
            "edges_convention": EDGE_CONVENTION,
            "per_bin": [
                {
                    "lower": float(bounds[j]),
                    "upper": float(bounds[j + 1]),
                    "count": int(s.count[j]),
                    "weight": float(s.weight[j]),
                    "mean_confidence": float(s.sum_z[j] / s.weight[j]),
                    "accuracy": float(s.sum_y[j] / s.weight[j]),
                }
                for j in range(len(s.count))
                if ne[j] and s.weight[j] > 0
            ],
        },
        "metrics": {k: metric_json(m) for k, m in r.metrics.items()},
    }


def ece(
    files: cc.Files,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: cc.Mode = None,
    class_weights: cc.ClassWeights = "uniform",
    n_bins: cc.NBins = 15,
    strategy: cc.Strategy = "uniform",
    n_boot: cc.NBoot = 1000,
    alpha: cc.Alpha = 0.05,
    seed: cc.Seed = 0,
    as_json: cc.Json = False,
    output: cc.Output = None,
    fail_above: cc.FailAbove = None,
    fail_above_upper: cc.FailAboveUpper = None,
    metric: Annotated[str, typer.Option("--metric", help="Metric the gates look at (a name from the report).")] = "ece_l1_plugin",
) -> None:
    """Binned calibration errors (l1, l2, max; plugin and debiased), Brier and log-loss, bootstrap
    intervals and distribution-free bounds, in binary, top-label or marginal mode."""
    if mode is not None:
        cc.check_choice(mode, MODES, "--mode")
    cc.check_choice(strategy, STRATEGIES, "--strategy")
    cc.check_choice(class_weights, CLASS_WEIGHTS, "--class-weights")
    check_option(n_bins >= 1, f"--n-bins is {n_bins}: expected a positive number of bins")
    check_option(n_boot >= 0, f"--n-boot is {n_boot}: expected 0 (no intervals) or a positive count")
    check_option(0.0 < alpha < 1.0, f"--alpha is {alpha}: expected a number strictly between 0 and 1")
    gate = GateSpec(metric, fail_above, fail_above_upper)
    if gate.fail_above_upper is not None:
        check_option(n_boot > 0, "--fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0")

    from calibcli.evaluation import evaluate_binned

    spec = cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits)
    doc = new_document(
        "ece",
        {
            "n_bins": n_bins,
            "strategy": strategy,
            "edges_convention": EDGE_CONVENTION,
            "mode": mode or "auto",
            "class_weights": class_weights,
            "n_boot": n_boot,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "bound_delta": alpha,
            "log_loss_eps": LOG_LOSS_EPS,
            "estimators": {
                "ece_l1_plugin": "sum_b (n_b/n) |acc_b - conf_b| (Guo et al. 2017)",
                "ece_l2_plugin": "sqrt(sum_b (n_b/n) (acc_b - conf_b)^2)",
                "ece_max_plugin": "max_b |acc_b - conf_b| over non-empty bins",
                "ece_l2_sq_debiased_kumar": "Kumar et al. 2019 debiased squared l2 (can be < 0)",
                "ece_l2_sq_debiased_dpe": "T-Cal debiased plug-in estimator of the squared l2 (can be < 0)",
                "ece_l2_sq_debiased_sun": "Sun et al. 2024 debiased squared l2, 1/(n_b-1) form (can be < 0)",
                "ece_l2_sq_sun_interval": "Sun et al. 2024 confidence interval for the squared l2-ECE",
                "dce": "distance to calibration estimate on n_bins equal-width bins (seed 002)",
            },
            "weights": "frequency weights" if weight_col else None,
            "gate": gate.describe() if gate.active else None,
        },
    )
    for loaded in cc.load_inputs(files, spec, input_format=input_format, drop_invalid=drop_invalid):
        file_mode = mode or default_mode(loaded.n_classes)
        total = n_boot * (loaded.n_classes if file_mode == "marginal" else 1)
        with cc.progress_bar(total, f"bootstrap {loaded.path}") as advance:
            report = evaluate_binned(
                loaded.labels,
                loaded.probs,
                mode=file_mode,
                sample_weight=loaded.sample_weight,
                class_names=list(loaded.class_names),
                n_bins=n_bins,
                strategy=strategy,
                n_boot=n_boot,
                alpha=alpha,
                seed=seed,
                class_weight_scheme=class_weights,
                progress=advance,
            )
        entry = {
            "input": loaded.describe(),
            "mode": file_mode,
            "problems": [_problem_json(p) for p in report.problems],
        }
        if report.aggregate is not None:
            entry["aggregate"] = {
                "class_weights": class_weights,
                "class_weight_values": report.class_weight_values,
                "metrics": {k: metric_json(m) for k, m in report.aggregate.items()},
            }
        if report.multiclass_scores is not None:
            entry["multiclass_scores"] = {k: metric_json(m) for k, m in report.multiclass_scores.items()}
        if gate.active:
            headline = {k: metric_json(m) for k, m in report.headline().items()}
            entry["gate"] = check_gate(gate, loaded.path, headline.get(metric))
        doc["files"].append(entry)

    emit_with_gates(doc, gate, as_json=as_json, output=output, render=render_ece)


def render_ece(doc: dict, console) -> None:
    """The rich table of an ``ece`` report: one row per file, problem and metric."""
    from rich.table import Table

    p = doc["parameters"]
    level = f"{100 * (1 - p['alpha']):g}%"
    title = (
        f"calibcli ece: {p['n_bins']} {p['strategy']} bins, "
        + (f"{p['n_boot']} bootstrap resamples, {level} percentile intervals, seed {p['seed']}" if p["n_boot"] else "no bootstrap")
    )
    table = Table(title=title, title_justify="left")
    for col, just in (("file", "left"), ("problem", "left"), ("metric", "left"), ("estimate", "right"), (f"{level} CI", "right"), ("bound / note", "left")):
        table.add_column(col, justify=just, overflow="fold")
    for f in doc["files"]:
        path = f["input"]["path"]
        groups = []
        if "aggregate" in f:
            groups.append(("aggregate", f["aggregate"]["metrics"], None))
            groups.extend((q["name"], q["metrics"], PER_CLASS_TABLE) for q in f["problems"])
        else:
            groups.extend((q["name"], q["metrics"], None) for q in f["problems"])
        if "multiclass_scores" in f:
            groups.append(("multiclass", f["multiclass_scores"], None))
        first = True
        for problem, metrics, only in groups:
            for name, m in metrics.items():
                if only is not None and name not in only:
                    continue
                extra = ""
                if m.get("upper_bound") is not None:
                    extra = f"upper bound {fmt_number(m['upper_bound'])} (delta={p['bound_delta']:g})"
                elif name == "ece_l2_sq_sun_interval":
                    extra = "Sun et al. interval"
                ci = fmt_interval(m["ci_low"], m["ci_high"])
                table.add_row(path if first else "", problem, name, fmt_number(m["estimate"]), ci, extra)
                first = False
        table.add_section()
    console.print(table)
    for f in doc["files"]:
        i = f["input"]
        nonempty = sorted({q["bins"]["n_bins_nonempty"] for q in f["problems"]})
        bins_text = f"{nonempty[0]}" if len(nonempty) == 1 else f"{nonempty[0]}-{nonempty[-1]} (per class)"
        cols = i["columns"]
        dropped = f", dropped {i['rows_dropped']} ({', '.join(f'{k}: {v}' for k, v in i['dropped_reasons'].items())})" if i["rows_dropped"] else ""
        console.print(
            f"{i['path']}: {i['rows_used']} rows{dropped}; mode {f['mode']}; K={i['n_classes']}; "
            f"probabilities {', '.join(cols['probabilities'])}{' (logits)' if cols['logits'] else ''}, labels {cols['label']}"
            f"{', weights ' + cols['weight'] if cols['weight'] else ''} (columns chosen by {cols['chosen_by']}); "
            f"{bins_text} non-empty bins"
        )
    if "gate" in doc:
        g = doc["gate"]
        console.print(f"gate on {g['metric']}: {'passed' if g['passed'] else 'FAILED'}")


def register(app: typer.Typer) -> None:
    app.command("ece")(cc.command(ece))
