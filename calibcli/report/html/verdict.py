"""The report's verdict in plain words, from the JSON entries of ``ece``, ``smece`` and ``tcal`` (pure: JSON in,
JSON out, so the page renders what the document says).

How much: SmoothECE (Blasiok & Nakkiran 2023, seed 003), a consistent calibration measure without a binning
choice, read against :data:`SIZE_WORDS`; the l1-ECE (Guo et al. 2017) is shown beside it. Is it real: the
T-Cal test's decision (Lee, Huang, Hassani & Dobriban 2023, seed 004), or the exact binomial test per value
for predictors with few distinct outputs (the ``tcal`` command's rule). Where: with ``--segment-cols``, the
segment audit's maximum calibration error over the tested segments (MCE, SPEC 9), which can find a subgroup
off by several sigma under a whole population that looks calibrated (:func:`with_audit`).
"""

from __future__ import annotations

from calibcli.core.documents import fmt_number, segment_text
from calibcli.report.entries import entry_sections

#: Words for the size of SmoothECE: the first bound it falls below. The page states this rule.
SIZE_WORDS = ((0.01, "very small"), (0.03, "small"), (0.07, "moderate"), (float("inf"), "large"))

RULE = (
    "calibrated when the calibration test (T-Cal, or the exact binomial test per value for predictors with few "
    "distinct outputs) does not reject perfect calibration at alpha and SmoothECE is small (below 0.03); "
    "size words from SmoothECE: below 0.01 very small, 0.03 small, 0.07 moderate, else large; unknown, not "
    "possibly miscalibrated, when the test cannot reject at alpha with its resamples (not rejecting says nothing)"
)
AUDIT_RULE = (
    "; with --segment-cols, miscalibrated also when the segment audit rejects: its MCE (the largest ECCE-R / sigma "
    "over the tested segments) has a p-value at most alpha"
)
BEST_RULE = (
    "methods ranked on the held-out rows by SmoothECE (lower first), ties by the Brier score; the "
    "uncalibrated model is ranked with them"
)


def size_word(value: float | None) -> str:
    if value is None:
        return "unknown"
    for bound, word in SIZE_WORDS:
        if value < bound:
            return word
    return SIZE_WORDS[-1][1]


def headline_metric(entry: dict, name: str) -> tuple[str, dict] | None:
    """``(problem, metric dict)`` of ``name`` in an ece or smece entry: the marginal aggregate, else the
    first (binary or top-label) problem."""
    for problem, metrics in entry_sections(entry):
        if name in metrics:
            return problem, metrics[name]
    return None


def _num(value) -> str:
    return fmt_number(value)


def _with_interval(m: dict, level: str) -> str:
    if m.get("ci_low") is None or m.get("ci_high") is None:
        return _num(m.get("estimate"))
    return f"{_num(m['estimate'])} ({level} CI {_num(m['ci_low'])} to {_num(m['ci_high'])})"


def verdict(entry: dict, *, alpha: float) -> dict:
    """The verdict of one report entry: a headline, a few sentences, and the numbers they quote."""
    level = f"{100 * (1 - alpha):g}%"
    ece_found = headline_metric(entry["ece"], "ece_l1_plugin")
    assert ece_found is not None, "every ece entry reports ece_l1_plugin"
    _, ece = ece_found
    smece_found = headline_metric(entry["smece"], "smece")
    smece = smece_found[1] if smece_found else {"estimate": None}
    test = entry["tcal"]
    result = test["result"]
    test_name = "T-Cal" if test["test"] != "binomial" else "the exact binomial test per predicted value"
    if test["mode"] != entry["mode"]:  # T-Cal has no marginal mode: say which problem it tested
        test_name += f" ({test['mode']} mode)"
    reject = bool(result["reject"])
    size = size_word(smece["estimate"])
    small = size in ("very small", "small")
    p = result["p_value"]
    undecided = result.get("can_reject") is False or p is None or p != p  # not rejecting says nothing then
    if reject:
        status, headline = "miscalibrated", f"Miscalibrated: the calibration error is {size} and statistically real"
    elif small:  # (when the test could not decide, the size alone says it, and the sentence below says so)
        status, headline = "calibrated", f"Calibrated: the calibration error is {size} and not statistically detectable"
        if undecided:
            headline = f"Calibrated: the calibration error is {size} ({test_name} could not decide at alpha {alpha:g})"
    elif undecided:
        status, headline = (
            "unknown",
            f"Verdict unknown: the calibration error looks {size}, and {test_name} could not decide "
            f"(it cannot reject at alpha {alpha:g})",
        )
    else:
        status, headline = (
            "uncertain",
            (f"Possibly miscalibrated: the calibration error looks {size}, but the test cannot tell it from chance"),
        )
    sentences = [
        f"How much: SmoothECE {_with_interval(smece, level)} and l1-ECE {_with_interval(ece, level)}"
        + (
            f"; the predicted probabilities are off by about {100 * smece['estimate']:.1f} percentage points on "
            "average."
            if smece["estimate"] is not None
            else "."
        ),
        (
            f"Is it real: {test_name} rejects perfect calibration (p-value {_num(p)} <= alpha {alpha:g})."
            if reject
            else f"Is it real: unknown; {test_name} cannot reject perfect calibration at alpha {alpha:g} here."
            if undecided
            else f"Is it real: {test_name} does not reject perfect calibration (p-value {_num(p)} > alpha {alpha:g})."
        ),
    ]
    warnings = result.get("warnings") or []
    if not reject and warnings:
        sentences.append("The test could not reach alpha: " + "; ".join(warnings))
    rec = entry.get("recalibration")
    if rec:
        best, before = rec["best"], rec["uncalibrated"]
        where = f"on the {rec['split']['n_test']:,} held-out rows"
        if best["method"] == "uncalibrated":
            sentences.append(
                f"Recalibration: {where}, none of the methods lowers SmoothECE ({_num(before['smece'])} uncalibrated)."
            )
        else:
            sentences.append(
                f"Recalibration: {where}, {best['method']} lowers SmoothECE from {_num(before['smece'])} "
                f"(uncalibrated, the same rows) to {_num(best['smece'])}."
            )
    return {
        "status": status,
        "headline": headline,
        "sentences": sentences,
        "size": size,
        "numbers": {
            "ece_l1_plugin": {k: ece.get(k) for k in ("estimate", "ci_low", "ci_high")},
            "smece": {k: smece.get(k) for k in ("estimate", "ci_low", "ci_high")},
            "p_value": p,
            "reject": reject,
            "test": test["test"],
            "alpha": alpha,
        },
    }


def with_audit(verdict: dict, audit: dict, *, alpha: float) -> dict:
    """``verdict`` (of :func:`verdict`) amended by the segment audit of the same input (an entry of ``audit
    --json``): a whole population can look calibrated while a segment is off by many sigma, and then the verdict
    must say so (:data:`AUDIT_RULE`). The numbers gain ``audit`` (MCE, its p-value, the decision, the worst
    tested segment); the sentences gain one saying where."""
    sigma, p = audit.get("mce_sigma"), audit.get("mce_pvalue")
    worst = next((s for s in audit["segments"] if s["definition"] and s["tested"]), None)
    reject = p is not None and p <= alpha
    numbers = {
        "mce_sigma": sigma,
        "mce_pvalue": p,
        "reject": reject,
        "n_segments_tested": audit["n_segments_tested"],
        "worst_segment": worst["definition"] if worst else None,
    }
    out = {**verdict, "sentences": list(verdict["sentences"]), "numbers": {**verdict["numbers"], "audit": numbers}}
    tested = f"{audit['n_segments_tested']} segments tested"
    if sigma is None:
        out["sentences"].append("Where: the segment audit tested no segment (each has fewer rows than --min-segment).")
        return out
    if not reject:
        out["sentences"].append(
            f"Where: no segment departs from calibration beyond chance (MCE {sigma:.3g} sigma, p-value {_num(p)} > "
            f"alpha {alpha:g}, {tested})."
        )
        return out
    where = segment_text(worst["definition"]) if worst else "a segment"
    o_e = f", observed/expected {worst['o_e']:.3g}" if worst and worst.get("o_e") is not None else ""
    out["sentences"].append(
        f"Where: the segment audit rejects calibration within segments (MCE {sigma:.3g} sigma, p-value {_num(p)} <= "
        f"alpha {alpha:g}, {tested}); the worst is {where}{o_e}."
    )
    if verdict["status"] != "miscalibrated":
        out["status"] = "miscalibrated"
        out["headline"] = (
            f"Miscalibrated in segments: {where} is off by {worst['ecce_r_sigma'] if worst else sigma:.3g} sigma, "
            "though the whole population's "
            f"calibration error is {verdict['size']}"
        )
    return out


def add_audit(doc: dict) -> None:
    """Amend the verdict of every ungrouped entry of a report document by its input's segment audit
    (``doc["audit"]``), and state the rule. Grouped entries keep theirs: the audit is of the whole input."""
    alpha = doc["parameters"]["alpha"]
    by_path = {a["input"]["path"]: a for a in doc["audit"]["files"]}
    for entry in doc["files"]:
        audit = by_path.get(entry["input"]["path"])
        if audit is not None and entry.get("group") is None:
            entry["verdict"] = with_audit(entry["verdict"], audit, alpha=alpha)
    doc["parameters"]["verdict_rule"] = RULE + AUDIT_RULE


def recalibration_summary(doc: dict) -> dict:
    """The held-out comparison of a ``recalibrate evaluate`` document, best first (:data:`BEST_RULE`)."""
    f = doc["files"][0]
    multi = "brier_score_multiclass" in f["rows"][0]["metrics"]
    brier, loss = ("brier_score_multiclass", "log_loss_multiclass") if multi else ("brier_score", "log_loss")
    rows = []
    for r in f["rows"]:
        m = r["metrics"]
        rows.append(
            {
                "method": r["method"],
                "smece": m["smece"]["estimate"],
                "ece_l1_plugin": m["ece_l1_plugin"]["estimate"],
                "ece_l2_debiased_dpe": m["ece_l2_debiased_dpe"]["estimate"],
                "brier": m[brier]["estimate"],
                "log_loss": m[loss]["estimate"],
                "test": r["test"]["test"],
                "p_value": r["test"]["p_value"],
                "reject": r["test"]["reject"],
            }
        )
    inf = float("inf")
    ranked = sorted(
        rows, key=lambda r: (inf if r["smece"] is None else r["smece"], inf if r["brier"] is None else r["brier"])
    )
    return {
        "split": f["split"],
        "mode": f["mode"],
        "brier_name": brier,
        "log_loss_name": loss,
        "rows": ranked,
        "best": ranked[0],
        "uncalibrated": next(r for r in rows if r["method"] == "uncalibrated"),
        "not_fitted": list(f.get("not_fitted", [])),
    }
