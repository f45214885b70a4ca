"""A directory of lm-eval tasks chooses its bootstrap's backend by the whole run's draws (calibcli.core.resampling.
planning_rows): each task under the per-row limit, together past the compiled loops' threshold, every task's
numbers are those of the task alone by NumPy's draws, within 1e-12 relative (SPEC 8.1)."""

from __future__ import annotations

import glob
import shutil

import calibcli.binned.bootstrap as bb
import calibcli.core.resampling as rs
from calibcli.llm import lm_eval
from tests._cli import SAMPLE, run_json
from tests._tolerance import assert_within_rule

(MC,) = glob.glob(str(SAMPLE / "llm" / "lm_eval" / "samples_calib_mc_2*.jsonl"))
N_BOOT = 40


def _numbers(entry: dict, path: str = "") -> dict:
    """Every number of a report entry (its input section aside), by its path."""
    out: dict = {}
    for key, value in entry.items() if isinstance(entry, dict) else enumerate(entry):
        if key == "input":
            continue
        where = f"{path}/{key}"
        if isinstance(value, (dict, list)):
            out.update(_numbers(value, where))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[where] = value
    return out


def test_planned_rows_choose_the_compiled_loops_for_the_whole_run():
    assert not rs.compiled_pays(1000, 1000, 1 << 27)
    with rs.planning_rows(1 << 20):
        assert rs.planned_rows() == 1 << 20
        assert rs.compiled_pays(1000, 1000, 1 << 27)
        with rs.planning_rows(0):
            assert not rs.compiled_pays(1000, 1000, 1 << 27)
    assert rs.planned_rows() == 0


def test_each_task_of_a_directory_equals_the_task_alone(tmp_path, monkeypatch):
    tasks = 3
    for t in range(tasks):
        shutil.copy(MC, tmp_path / f"samples_task{t}_2026-01-01T00-00-00.000000.jsonl")
    n = lm_eval.read(MC).n
    alone = run_json("ece", MC, "--n-boot", N_BOOT)["files"][0]  # n x N_BOOT draws: NumPy's

    # one task's draws stay below the threshold, the directory's reach it
    threshold = tasks * n * N_BOOT
    monkeypatch.setattr(rs, "COMPILED_DRAWS", threshold)
    monkeypatch.setattr(bb, "_COMPILED_DRAWS", threshold)
    calls = []
    run_sums = rs.Multiplicities.run_sums
    monkeypatch.setattr(rs.Multiplicities, "run_sums", lambda self, *a: calls.append(1) or run_sums(self, *a))
    solo = run_json("ece", MC, "--n-boot", N_BOOT)["files"][0]
    assert not calls  # alone: below the threshold
    doc = run_json("ece", str(tmp_path), "--n-boot", N_BOOT)
    assert calls  # together: the compiled loops
    want = _numbers(alone)
    assert _numbers(solo) == want
    assert len(doc["files"]) == tasks
    for entry in doc["files"]:
        got = _numbers(entry)
        assert list(got) == list(want)
        for key, value in want.items():
            assert_within_rule(got[key], value, err_msg=key)



def test_one_group_shares_its_replicates_between_threads_and_prints_the_same_numbers(tmp_path, monkeypatch):
    """Each task of a directory is one input of one group: its compiled bootstraps (the binned estimators' and the
    multiclass scores') cut their replicates into one span per thread. Every replicate's sums are the same loop
    over the same rows, so 1, 2 or 3 threads print the same numbers, bit for bit."""
    tasks = 2
    for t in range(tasks):
        shutil.copy(MC, tmp_path / f"samples_task{t}_2026-01-01T00-00-00.000000.jsonl")
    threshold = lm_eval.read(MC).n * N_BOOT  # every task's bootstrap on the compiled loops
    monkeypatch.setattr(rs, "COMPILED_DRAWS", threshold)
    monkeypatch.setattr(bb, "_COMPILED_DRAWS", threshold)
    widths: list = []
    run_sums = rs.Multiplicities.run_sums
    monkeypatch.setattr(
        rs.Multiplicities, "run_sums", lambda self, reps, *a: widths.append(len(reps)) or run_sums(self, reps, *a)
    )
    numbers = {}
    for threads in (1, 2, 3):
        monkeypatch.setattr(rs, "THREADS", threads)
        monkeypatch.setattr(bb, "THREADS", threads)
        widths.clear()
        doc = run_json("ece", str(tmp_path), "--n-boot", N_BOOT)
        numbers[threads] = [_numbers(entry) for entry in doc["files"]]
        assert widths and max(widths) <= -(-N_BOOT // threads)  # no call took more than its thread's share
    assert numbers[2] == numbers[1]
    assert numbers[3] == numbers[1]
    assert rs.replicate_spans(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert rs.replicate_spans(1, 2) == [(0, 1)]
