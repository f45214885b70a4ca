"""The regression page of ``calibcli report`` (SPEC 7, 10): a regression dump's verdict in the classifier page's
words (is it calibrated, how much, is it real, what recalibration would do), its calibration curve and PIT
histogram, every metric with its interval, and the held-out comparison of the recalibration methods.

:func:`regression_document` builds the page's JSON document from the regression family's own run (its document,
``calibcli regression --json``'s for the same options, is the document's ``regression`` section verbatim, and
every number of the page is read from it), the figure :func:`calibcli.diagram.regression.plot_regression_diagram`
draws, and :func:`recalibration` (fit on a seeded holdout split, measured on the other rows). The verdict is pure
(:func:`verdict`: JSON in, JSON out). :func:`calibcli.report.html.render_page` renders it with
``regression.html.j2``.

- Is it calibrated: the KS test of the PIT's uniformity (Gaussian, quantiles, samples) at alpha; an interval dump
  (no PIT) by the exact two-sided binomial test of each interval's coverage at its nominal level, Bonferroni over
  the levels.
- How much: MACE (uncertainty-toolbox's mean absolute calibration error, in proportion units) read against
  :data:`SIZE_WORDS` (the classifier page's bounds, in the same units), with RMSCE and the miscalibration area;
  each interval's coverage (PICP) against its nominal level, too narrow or too wide when the nominal level is
  outside its bootstrap interval; ENCE for a predicted std.
- What recalibration would do: every method of :data:`calibcli.regression.recalibration.REGRESSION_METHODS` the
  kind allows, fitted by :mod:`calibcli.regression.recalibrators` on the fit part (the ``round(holdout n)`` rows
  with the smallest hash of ``(seed, global row index)``, the classifier page's split) and measured with the
  regression family's accumulator on the other rows, beside the uncalibrated predictions on the same rows:
  std-scaling as a Gaussian (the std times the factor), isotonic-pit as quantiles at
  ``linspace(0.01, 0.99, 99)`` (the model's quantiles at the levels the PIT map gives), conformal as the widened
  interval at the report's first level.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from calibcli.core.documents import fmt_number
from calibcli.core.errors import CalibcliError
from calibcli.core.resampling import row_hash
from calibcli.diagram import plot as dg
from calibcli.diagram.regression import plot_regression_diagram, prepare_regression_diagram
from calibcli.engines.pipeline import run
from calibcli.regression import family as regression
from calibcli.regression import recalibrators
from calibcli.regression.accumulator import RegressionAccumulator
from calibcli.regression.kinds import Prediction, level_name
from calibcli.regression.recalibration import _KINDS as METHOD_KINDS
from calibcli.regression.recalibration import REGRESSION_METHODS, _interval
from calibcli.regression.scores import gaussian_pit
from calibcli.report.document import _versions, entry_head
from calibcli.report.html import svg_fragment
from calibcli.report.html.verdict import size_word

RULE = (
    "calibrated when the test (the KS test of the PIT's uniformity; for intervals, the exact binomial test of each "
    "interval's coverage at its level, Bonferroni) does not reject at alpha and MACE is small (below 0.03); size "
    "words from MACE: below 0.01 very small, 0.03 small, 0.07 moderate, else large; possibly miscalibrated when "
    "the test does not reject but MACE is not small"
)
BEST_RULE = (
    "methods measured on the held-out rows, ranked by the coverage error |PICP - L| of the central interval at the "
    "report's level L (the one number every method's output has: MACE is over 100 levels for a Gaussian, 99 for "
    "the isotonic map's quantiles, one for a conformal interval), lower first, ties by the interval score at L; the "
    "uncalibrated predictions are ranked with them"
)
#: The levels at which the isotonic PIT map's quantiles are measured.
ISOTONIC_LEVELS = tuple(float(f"{t:.2f}") for t in np.linspace(0.01, 0.99, 99))
#: The metrics of the recalibration table, in its order (those a kind has).
COMPARED = ("mace", "pit_ks_pvalue", "crps", "nll", "pinball")


def regression_document(
    sources,
    options: regression.Options,
    *,
    engine,
    methods,
    holdout: float,
    levels: tuple = (),
    title: str | None,
    command_line: str,
) -> dict:
    """The report document of regression inputs: ``regression`` (the regression family's document), ``files``
    (one entry per input or group: its verdict, figure and recalibration), the parameters and the rules."""
    reg = run(regression.FAMILY, sources, options, engine)
    entries = []
    for number, e in enumerate(reg["files"], start=1):
        problem = e["problems"][0]
        entry = {
            **entry_head(number, e),
            "kind": problem["kind"],
            "problem": problem,
            "figure": _figure(problem, prefix=f"r{number}-"),
            "recalibration": None,
        }
        if not sources.group_by:
            one = replace(sources, files=(e["input"]["path"],)) if len(sources.files) > 1 else sources
            entry["recalibration"] = recalibration(one, options, methods=methods, holdout=holdout, levels=levels)
        entry["verdict"] = verdict(entry, alpha=options.alpha)
        entries.append(entry)
    doc = {
        "tool": reg["tool"],
        "version": reg["version"],
        "schema_version": reg["schema_version"],
        "command": "report",
        "kind": "regression",
        "parameters": {
            **reg["parameters"],
            "methods": list(methods),
            "holdout": holdout,
            "isotonic_levels": "linspace(0.01, 0.99, 99)",
            "verdict_rule": RULE,
            "recalibration_rule": BEST_RULE,
        },
        "title": title or _title(entries),
        "command_line": command_line,
        "versions": _versions(),
        "regression": reg,
        "files": entries,
    }
    return doc


def _title(entries: list[dict]) -> str:
    paths = list(dict.fromkeys(e["input"]["path"] for e in entries))
    return f"Calibration report: {paths[0]}" if len(paths) == 1 else f"Calibration report: {len(paths)} inputs"


def _figure(problem: dict, *, prefix: str) -> dict:
    data = prepare_regression_diagram(problem, "")
    fig = plot_regression_diagram([data])
    panels = ["calibration curve"] + (["PIT histogram"] if data.pit_edges is not None else [])
    return {"svg": svg_fragment(dg.figure_bytes(fig, "svg").decode("utf-8"), prefix=prefix), "panels": panels}


# ---------------------------------------------------------------------------------------------
# The verdict


def _with_interval(m: dict, level: str) -> str:
    if m.get("ci_low") is None or m.get("ci_high") is None:
        return fmt_number(m.get("estimate"))
    return f"{fmt_number(m['estimate'])} ({level} CI {fmt_number(m['ci_low'])} to {fmt_number(m['ci_high'])})"


def _levels(problem: dict) -> list[str]:
    return [name[len("picp_") :] for name in problem["metrics"] if name.startswith("picp_")]


def _coverage_test(problem: dict, alpha: float) -> dict:
    """The exact two-sided binomial test of each interval's coverage at its level, Bonferroni over the levels."""
    from scipy.stats import binomtest

    n = int(problem["n"])
    p_values = []
    for s in _levels(problem):
        covered = int(round(problem["metrics"][f"picp_{s}"]["estimate"] * n))
        p_values.append(binomtest(covered, n, float(s)).pvalue)
    p = min(1.0, min(p_values) * len(p_values)) if p_values else None
    return {"test": "binomial coverage", "p_value": p, "reject": p is not None and p <= alpha}


def verdict(entry: dict, *, alpha: float) -> dict:
    """The verdict of one regression entry: a headline, a few sentences, the numbers they quote."""
    level = f"{100 * (1 - alpha):g}%"
    problem = entry["problem"]
    m = problem["metrics"]
    mace = m["mace"]
    if "pit_ks_pvalue" in m:
        p = m["pit_ks_pvalue"]["estimate"]
        test = {"test": "PIT KS test", "p_value": p, "reject": p is not None and p <= alpha}
        test_text = f"the KS test of the PIT's uniformity (n {problem['pit_ks']['n']:,})"
    else:
        test = _coverage_test(problem, alpha)
        test_text = "the exact binomial test of each interval's coverage at its level (Bonferroni)"
    size = size_word(mace["estimate"])
    small = size in ("very small", "small")
    if test["reject"]:
        status, headline = "miscalibrated", f"Miscalibrated: the calibration error is {size} and statistically real"
    elif small:
        status, headline = "calibrated", f"Calibrated: the calibration error is {size} and not statistically detectable"
    else:
        status = "uncertain"
        headline = (
            f"Possibly miscalibrated: the calibration error looks {size}, but the test cannot tell it from chance"
        )
    sentences = [
        f"How much: MACE {_with_interval(mace, level)}, RMSCE {_with_interval(m['rmsce'], level)} and "
        f"miscalibration area {_with_interval(m['miscalibration_area'], level)} "
        f"({problem['calibration_curve']['form']} form); the observed proportions are off from the expected ones "
        f"by about {100 * mace['estimate']:.1f} percentage points on average."
    ]
    for s in _levels(problem):
        c, nominal = m[f"picp_{s}"], float(s)
        low, high = c.get("ci_low"), c.get("ci_high")
        if low is not None and high is not None and high < nominal:
            how = "too narrow (overconfident)"
        elif low is not None and high is not None and low > nominal:
            how = "too wide (underconfident)"
        else:
            how = "consistent with its level"
        sentences.append(
            f"Coverage: the {100 * nominal:g}% interval holds {100 * c['estimate']:.1f}% of the targets"
            + (f" ({level} CI {100 * low:.1f}% to {100 * high:.1f}%)" if low is not None and high is not None else "")
            + f": {how}; mean width {fmt_number(m[f'mpiw_{s}']['estimate'])}."
        )
    if "ence" in m:
        sentences.append(
            f"Spread: ENCE {_with_interval(m['ence'], level)}: in bins of the predicted std, the root mean predicted "
            f"variance and the observed error differ by {100 * m['ence']['estimate']:.0f}% on average."
        )
    p = test["p_value"]
    sentences.append(
        f"Is it real: {test_text} rejects calibration (p-value {fmt_number(p)} <= alpha {alpha:g})."
        if test["reject"]
        else f"Is it real: {test_text} does not reject calibration (p-value {fmt_number(p)} > alpha {alpha:g})."
    )
    rec = entry.get("recalibration")
    if rec and rec.get("best"):
        best, before = rec["best"], rec["uncalibrated"]
        s = before["interval"]
        if best["method"] == "uncalibrated" or s is None:
            sentences.append(
                "Recalibration: no method brings the interval's coverage nearer its level on the held-out rows."
            )
        else:
            b, a = before["metrics"], best["metrics"]
            isc = f"interval_score_{s}"
            sentences.append(
                f"Recalibration: {best['method']} brings the {100 * float(s):g}% interval's coverage on the held-out "
                f"rows from {100 * b[f'picp_{s}']['estimate']:.1f}% to {100 * a[f'picp_{s}']['estimate']:.1f}% (width "
                f"{fmt_number(b[f'mpiw_{s}']['estimate'])} to {fmt_number(a[f'mpiw_{s}']['estimate'])}, interval score "
                f"{fmt_number(b[isc]['estimate'])} to {fmt_number(a[isc]['estimate'])})"
                + (
                    f"; MACE from {fmt_number(b['mace']['estimate'])} to {fmt_number(a['mace']['estimate'])}"
                    if best["levels"] > 1
                    else ""
                )
                + "."
            )
    numbers = {
        "mace": {k: mace.get(k) for k in ("estimate", "ci_low", "ci_high")},
        "test": test["test"],
        "p_value": p,
        "reject": bool(test["reject"]),
        "alpha": alpha,
        "size": size,
    }
    return {"status": status, "headline": headline, "sentences": sentences, "numbers": numbers}


# ---------------------------------------------------------------------------------------------
# What recalibration would do


def _read(sources) -> tuple:
    """One input's rows: the target (its kind and levels), the prediction matrix, y, weights, global row indices."""
    (stream,) = list(sources.open())
    batches = list(stream.batches())
    preds = np.concatenate([b.probs for b in batches]).reshape(sum(len(b) for b in batches), -1)
    y = np.concatenate([b.labels for b in batches]).astype(np.float64)
    w = None if stream.weight_column is None else np.concatenate([b.sample_weight for b in batches])
    rows = np.concatenate([b.row_index for b in batches])
    return stream.plan.target, preds, y, w, rows


def _measure(kind: str, kind_levels, at: float, preds, y, w, rows, options) -> dict:
    """The regression family's metrics of predictions of ``kind`` on these rows (its accumulator and options),
    with the central interval at ``at`` (an interval input's own)."""
    p = Prediction(kind, tuple(kind_levels), options.computed(() if kind == "intervals" else (at,)))
    problem = RegressionAccumulator(p).update(rows, preds, y, w).result().to_dict()["problems"][0]
    curve = problem["calibration_curve"]
    return {
        "kind": kind,
        "form": curve["form"],
        "levels": len(curve["expected"]),
        "interval": level_name(at) if f"picp_{level_name(at)}" in problem["metrics"] else None,
        "metrics": problem["metrics"],
    }


def recalibration(sources, options: regression.Options, *, methods, holdout: float, levels: tuple = ()) -> dict:
    """Fit each applicable method on the fit part and measure it, and the uncalibrated predictions, on the rest
    (``levels``: the ``--level`` values, whose first is the interval compared)."""
    target, preds, y, w, rows = _read(sources)
    n = len(y)
    n_fit = int(round(holdout * n))
    if n_fit < 9 or n - n_fit < 9:
        raise CalibcliError(
            f"--holdout {holdout} leaves {n_fit} of {n} rows to fit on and {n - n_fit} to measure on: the regression "
            "page's recalibration needs at least 9 in each (more rows, or --holdout nearer 0.5)"
        )
    order = np.argsort(row_hash(options.seed, rows), kind="stable")
    fit, test = np.sort(order[:n_fit]), np.sort(order[n_fit:])
    wf, wt = (None, None) if w is None else (w[fit], w[test])
    if target.kind in ("gaussian", "samples"):
        at = levels[0] if levels else 0.9
    else:  # (an interval input's first interval, the quantiles' widest symmetric pair: the one conformal adjusts)
        at = _interval(target, preds[:1], 0.9)[2]
    yt, rt = y[test], rows[test]
    out_rows = [
        {"method": "uncalibrated", **_measure(target.kind, target.levels, at, preds[test], yt, wt, rt, options)}
    ]
    not_fitted = []
    for method in methods:
        if method not in REGRESSION_METHODS:
            continue
        if target.kind not in METHOD_KINDS[method]:
            needs = " or ".join(METHOD_KINDS[method])
            not_fitted.append({"method": method, "reason": f"needs {needs} predictions, not {target.kind}"})
            continue
        if method == "isotonic-pit" and target.kind != "gaussian":
            not_fitted.append(
                {
                    "method": method,
                    "reason": "this page measures the isotonic PIT map on a Gaussian; recalibrate fit and apply take "
                    f"it on {target.kind} too",
                }
            )
            continue
        pf, yf, pt = preds[fit], y[fit], preds[test]
        if method == "std-scaling":
            scaling = recalibrators.StdScaling.fit(yf, pf[:, 0], pf[:, 1], wf)
            scaled = np.column_stack([pt[:, 0], scaling.std(pt[:, 1])])
            row = _measure("gaussian", (), at, scaled, yt, wt, rt, options)
            row["fitted"] = {"factor": scaling.factor}
        elif method == "isotonic-pit":
            iso = recalibrators.IsotonicPIT.fit(gaussian_pit(yf, pf[:, 0], pf[:, 1]), wf)
            q = iso.gaussian_quantiles(pt[:, 0], pt[:, 1], np.asarray(ISOTONIC_LEVELS))
            row = _measure("quantiles", ISOTONIC_LEVELS, at, q, yt, wt, rt, replace(options, curve_form="quantile"))
            row["fitted"] = {}
        else:
            lower, upper, _ = _interval(target, pf, at)
            conformal = recalibrators.Conformal.fit(yf, lower, upper, at)
            lt, ut, _ = _interval(target, pt, at)
            lo, hi = conformal.interval(lt, ut)
            row = _measure("intervals", (at,), at, np.column_stack([lo, hi]), yt, wt, rt, options)
            row["fitted"] = {"level": at, "margin": conformal.margin}
        out_rows.append({"method": method, **row})
    ranked = sorted(out_rows, key=lambda r: (_coverage_error(r, at), _interval_score(r)))
    return {
        "split": {"holdout": holdout, "seed": options.seed, "rows_fit": n_fit, "rows_test": n - n_fit},
        "rows": out_rows,
        "ranked": [r["method"] for r in ranked],
        "best": ranked[0],
        "uncalibrated": out_rows[0],
        "not_fitted": not_fitted,
    }


def _coverage_error(row: dict, at: float) -> float:
    return abs(row["metrics"][f"picp_{row['interval']}"]["estimate"] - at) if row["interval"] else float("inf")


def _interval_score(row: dict) -> float:
    name = f"interval_score_{row['interval']}"
    return row["metrics"][name]["estimate"] if row["interval"] else float("inf")
