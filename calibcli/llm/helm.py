"""HELM run directories (``benchmark_output/runs/<suite>/<run>/``; SPEC 11).

``scenario_state.json`` holds ``request_states``: each the ``instance`` (``id``, ``split``, ``references`` with
``tags`` containing ``"correct"``), ``train_trial_index``, ``output_mapping`` (a multiple-choice run's letter ->
reference text) and ``result.completions[0]`` (``text``, ``logprob``, ``tokens``). ``per_instance_stats.json``
holds HELM's own per-instance statistics; its ``exact_match`` is the answer's correctness where present, else
the completion (stripped) is compared with the correct reference's letter (or text). HELM's current ``Token``
has no top log-probabilities, so the confidence is the completion's probability, ``exp(logprob)`` (the
``sequence`` rule). Read from HELM's ``helm/benchmark/adaptation/scenario_state.py`` and
``request_state.py`` and checked on a run HELM wrote (``scripts/llm/make_helm_run.sh``).
"""

from __future__ import annotations

import math
import os

from calibcli.core.errors import CalibcliError
from calibcli.llm.confidence import rule_for
from calibcli.llm.items import Items, add_row_columns
from calibcli.llm.texts import json_document, need

STATE = "scenario_state.json"
STATS = "per_instance_stats.json"


def is_run_dir(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, STATE))


def run_dirs(path: str) -> list[str]:
    """The run directories at or below ``path`` (a run, a suite, ``benchmark_output/runs``), sorted."""
    if is_run_dir(path):
        return [path]
    found = []
    for root, _dirs, files in os.walk(path):
        if STATE in files:
            found.append(root)
    return sorted(found)


def _exact_match(directory: str) -> dict[tuple[str, int], float]:
    path = os.path.join(directory, STATS)
    if not os.path.isfile(path):
        return {}
    out = {}
    document = json_document(path)
    for entry in document if isinstance(document, list) else []:
        for stat in entry.get("stats", []):
            name = stat.get("name", {})
            if name.get("name") == "exact_match" and not name.get("perturbation"):
                out[(str(entry.get("instance_id")), int(entry.get("train_trial_index", 0)))] = float(stat["mean"])
    return out


def read(directory: str, confidence: str | None = None) -> Items:
    rule = rule_for("helm", confidence)
    path = os.path.join(directory, STATE)
    state = json_document(path)
    if not isinstance(state, dict) or not isinstance(state.get("request_states"), list):
        raise CalibcliError(f"{path}: is not a HELM scenario state: expected an object with request_states")
    matches = _exact_match(directory)
    items = Items(directory, "helm", rule, keys=[], confidence=[], correct=[])
    assert items.confidence is not None and items.correct is not None
    for i, rs in enumerate(state["request_states"]):
        where = f"{path}: request_states[{i}]"
        instance = need(rs, "instance", where, "the instance")
        result = need(rs, "result", where, "the model's result")
        completions = (result or {}).get("completions") or []
        if not completions:
            raise CalibcliError(f"{where}: the result has no completions: expected the model's answer")
        completion = completions[0]
        logprob = need(completion, "logprob", where, "the completion's log-probability")
        trial = int(rs.get("train_trial_index", 0))
        key = str(instance.get("id", i))
        correct_refs = [r["output"]["text"] for r in instance.get("references", []) if "correct" in r.get("tags", [])]
        if (key, trial) in matches:
            right = int(matches[(key, trial)] >= 1.0)
        else:
            mapping = rs.get("output_mapping") or {}
            letters = [k for k, v in mapping.items() if v in correct_refs]
            answer = str(completion.get("text", "")).strip()
            right = int(answer in letters or answer in [c.strip() for c in correct_refs])
        items.confidence.append(math.exp(float(logprob)))
        items.correct.append(right)
        fields = {"split": instance.get("split"), "sub_split": instance.get("sub_split")}
        add_row_columns(items.columns, {k: v for k, v in fields.items() if v is not None}, len(items.keys))
        items.keys.append(key if trial == 0 else f"{key}@{trial}")
    items.facts = {
        "run": os.path.basename(os.path.normpath(directory)),
        "correctness": "HELM's exact_match (per_instance_stats.json)" if matches else "completion vs correct reference",
        "item_key": "instance id (@train trial beyond the first)",
    }
    return items
