"""``calibcli compare`` of two models' LLM dumps: paired by item key (lm-eval's doc_hash) for the selective
metrics as for the ECE family; the row order of either dump changes nothing; items missing from one side are
counted in one Error line."""

from __future__ import annotations

import glob
import json
import random

import numpy as np
import pytest

from calibcli.llm import curves
from tests._cli import SAMPLE, run, run_json

LLM = SAMPLE / "llm"
(MC,) = glob.glob(str(LLM / "lm_eval" / "samples_calib_mc_2*.jsonl"))
(MODEL2,) = glob.glob(str(LLM / "lm_eval_model2" / "samples_calib_mc_2*.jsonl"))
SELECTIVE = ("accuracy", "aurc", "e_aurc", "augrc", "auroc", "risk_at_coverage_0.8", "coverage_at_risk_0.2")


def _lines(path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line for line in f if line.strip()]


def _shuffled(path, tmp_path, seed: int) -> str:
    lines = _lines(path)
    random.Random(seed).shuffle(lines)
    out = tmp_path / f"shuffled{seed}" / "samples_calib_mc_2026-12-02T00-00-00.000000.jsonl"
    out.parent.mkdir()
    out.write_text("".join(lines), encoding="utf-8")
    return str(out)


def test_compare_of_two_dumps_has_the_selective_metrics_paired_by_item():
    doc = run_json("compare", MC, MODEL2, "--n-boot", "200")
    c = doc["comparison"]
    assert doc["parameters"]["pairing"]["id_column"] == "item"
    for name in SELECTIVE:
        assert c[name]["paired"] is True and c[name]["ci_method"].startswith("paired Poisson bootstrap over items")
        assert c[name]["difference"] == pytest.approx(c[name]["candidate"] - c[name]["baseline"], abs=1e-15)
    # the same numbers as `selective CANDIDATE --against BASELINE` (the same paired draws)
    against = run_json("selective", MODEL2, "--against", MC, "--n-boot", "200")["files"][0]["problems"][1]["metrics"]
    for name in SELECTIVE:
        for key, mine in (("estimate", "difference"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            assert c[name][mine] == pytest.approx(against[name][key], rel=1e-12, abs=1e-15), (name, key)


def test_compare_agrees_with_a_direct_computation_on_the_items_side_by_side():
    doc = run_json("compare", MC, MODEL2, "--n-boot", "0")
    c = doc["comparison"]
    sides = []
    for path in (MC, MODEL2):
        by_key = {}
        for line in _lines(path):
            row = json.loads(line)
            k = len(row["doc"]["choices"])  # (2K requests logged: the last K unconditional, for mutual information)
            ll = np.array([float(r[0]) for r in row["filtered_resps"][:k]])
            p = np.exp(ll - ll.max())
            p /= p.sum()
            by_key[row["doc_hash"]] = (p.max(), float(p.argmax() == int(row["target"])))
        sides.append(by_key)
    keys = sorted(sides[0])
    assert sorted(sides[1]) == keys
    for side, role in zip(sides, ("baseline", "candidate"), strict=True):
        conf = np.array([side[k][0] for k in keys])
        wrong = 1.0 - np.array([side[k][1] for k in keys])
        order = np.argsort(-conf, kind="stable")
        # r_k with tie blocks' errors spread evenly: the hand-made curve of SPEC 11
        blocks = curves.tie_blocks(conf[order])
        s, e = blocks.sums(np.ones(len(keys))), blocks.sums(wrong[order])
        assert c["aurc"][role] == pytest.approx(float(curves.aurc(s, e)), rel=1e-12)
        assert c["accuracy"][role] == pytest.approx(1.0 - wrong.mean(), rel=1e-12)
        # no ties in these samples: AURC is the plain mean of the running risks, AUGRC of k/n times them
        assert len(np.unique(conf)) == len(conf)
        r = np.cumsum(wrong[order]) / np.arange(1, len(keys) + 1)
        assert c["aurc"][role] == pytest.approx(r.mean(), rel=1e-12)
        assert c["augrc"][role] == pytest.approx(np.mean(np.arange(1, len(keys) + 1) / len(keys) * r), rel=1e-12)


def test_shuffled_rows_on_one_side_give_the_same_paired_result(tmp_path):
    base = run_json("compare", MC, MODEL2, "--n-boot", "200", "--smece")["comparison"]
    shuffled = run_json("compare", MC, _shuffled(MODEL2, tmp_path, 1), "--n-boot", "200", "--smece")["comparison"]
    assert list(shuffled) == list(base)
    for name, c in base.items():  # the candidate is aligned to the baseline's order: every number, every interval
        for key in ("baseline", "candidate", "difference", "ci_low", "ci_high"):
            if c[key] is None:
                assert shuffled[name][key] is None, (name, key)
            else:
                assert shuffled[name][key] == pytest.approx(c[key], rel=1e-12, abs=1e-15), (name, key)
    # the baseline shuffled too: the selective metrics (keyed by sorted item keys) are the same to the last bit
    both = run_json("compare", _shuffled(MC, tmp_path, 2), _shuffled(MODEL2, tmp_path, 3), "--n-boot", "200")
    for name in SELECTIVE:
        for key in ("baseline", "candidate", "difference", "ci_low", "ci_high"):
            assert both["comparison"][name][key] == pytest.approx(base[name][key], rel=1e-12, abs=1e-15), (name, key)


def test_items_missing_from_one_side_are_counted_in_one_error_line(tmp_path):
    lines = _lines(MODEL2)
    fewer = tmp_path / "fewer" / "samples_calib_mc_2026-12-02T00-00-00.000000.jsonl"
    fewer.parent.mkdir()
    fewer.write_text("".join(lines[:-3]), encoding="utf-8")
    r = run("compare", MC, str(fewer), "--n-boot", "0")
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error: ")
    assert "3 of " in r.stderr and "missing from" in r.stderr


def test_a_gate_on_a_selective_metric():
    r = run("compare", MC, MODEL2, "--n-boot", "0", "--fail-if-worse-by", "auroc=0")
    assert r.exit_code == 0, r.stderr  # the candidate's AUROC is higher: better
    r = run("compare", MODEL2, MC, "--n-boot", "0", "--fail-if-worse-by", "auroc=0.01")
    assert r.exit_code == 1 and "auroc" in r.stderr
