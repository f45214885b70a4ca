"""The GitHub Action (action.yml) runs here as a runner would run its gate step: the step's own ``run`` line in
``bash``, its ``env`` filled from the inputs, ``GITHUB_ACTION_PATH`` at the checkout, and ``GITHUB_STEP_SUMMARY``
and ``GITHUB_OUTPUT`` pointed at temporary files. (The setup-python and pip steps are GitHub's; the calibcli
under test is the one installed here.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # PyYAML comes with the test extra (through mkdocs)

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
SAMPLE = "sample_data/breast_cancer_nb.csv"


def _step(step_id: str) -> dict:
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == step_id]
    return step


def run_action(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, str, dict[str, str]]:
    """Run the gate step with these inputs (the action's defaults for the others), from a workspace holding
    the sample data: the process, the job summary written, and the step's outputs."""
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    values.update(inputs)
    step = _step("gate")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CALIBCLI_", "GITHUB_", "INPUT_"))}
    for name, template in step["env"].items():
        env[name] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: values[m.group(1)], template)
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    env.update(GITHUB_ACTION_PATH=str(ROOT), GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs),
               COLUMNS="150", NO_COLOR="1", PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    if not (workspace / "sample_data").exists():
        (workspace / "sample_data").symlink_to(ROOT / "sample_data")
    proc = subprocess.run([step["shell"], "-c", step["run"]], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=600)
    written = summary.read_text() if summary.exists() else ""
    out = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return proc, written, out


def test_the_action_is_a_composite_with_the_three_inputs():
    assert ACTION["runs"]["using"] == "composite"
    assert {"files", "command", "args"} <= set(ACTION["inputs"])
    assert ACTION["inputs"]["files"]["required"] is True
    assert ACTION["inputs"]["command"]["default"] == "ece"
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], "inputs reach a script through env, never pasted into the shell"
    install = next(s for s in ACTION["runs"]["steps"] if s.get("name") == "Install calibcli")
    assert "$GITHUB_ACTION_PATH" in install["run"]
    assert set(ACTION["outputs"]) == {"exit-code", "report"}


def test_a_failed_gate_fails_the_step_and_still_posts_the_table(tmp_path):
    proc, summary, outputs = run_action(tmp_path, files=SAMPLE,
                                        args="--n-boot 0 --summary --metrics ece_l1_plugin,brier_score --fail-above 0.05")
    assert proc.returncode == 1, proc.stderr
    assert summary == (
        "**calibcli ece**\n\n"
        "| file | `ece_l1_plugin` | `brier_score` |\n"
        "|---|---:|---:|\n"
        "| breast_cancer_nb.csv | 0.06027 | 0.05678 |\n\n"
        "Estimates with 95% intervals in brackets.\n\n"
        "Gate: **failed**\n"
        f"- {SAMPLE}: ece_l1_plugin = 0.0602732 > 0.05 (--fail-above)\n\n")
    assert f"Gate failed: {SAMPLE}: ece_l1_plugin = 0.0602732 > 0.05 (--fail-above)" in proc.stderr
    assert proc.stdout.startswith(f"$ calibcli ece {SAMPLE} --n-boot 0 ")
    assert outputs == {"exit-code": "1", "report": "calibration.json"}
    assert (tmp_path / "workspace" / "calibration.json").stat().st_size > 1000


def test_a_passing_gate_passes_and_appends_to_the_summary(tmp_path):
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("earlier step\n")
    proc, summary, outputs = run_action(tmp_path, files=f"{SAMPLE}\n", command="smece",
                                        args="--n-boot 0 --fail-above 0.1", report="")
    assert proc.returncode == 0, proc.stderr
    assert summary == (
        "earlier step\n**calibcli smece**\n\n"
        "| file | group | problem | metric | estimate | 95% CI | bound |\n"
        "|---|---|---|---|---:|---:|---:|\n"
        f"| {SAMPLE} |  | binary | `smece` | 0.05616 | - |  |\n\n"
        "Gate: **passed**\n\n")
    assert outputs == {"exit-code": "0", "report": ""}
    assert not (tmp_path / "workspace" / "calibration.json").exists()


def test_compare_takes_two_files(tmp_path):
    proc, summary, _ = run_action(tmp_path, command="compare", args="--n-boot 0 --fail-if-worse-by brier_score=0.001",
                                  files="sample_data/eval_shards/model=nb sample_data/eval_shards/model=logreg")
    assert proc.returncode == 0, proc.stderr
    assert summary.startswith("**calibcli compare**")
    assert summary.endswith("Gate: **passed**\n\n")


def test_bad_input_is_exit_2_with_the_error_in_the_summary(tmp_path):
    proc, summary, outputs = run_action(tmp_path, files="'no such file.csv'")
    assert proc.returncode == 2
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert "no such file.csv" in error
    assert summary == f"**calibcli ece** stopped (exit 2):\n\n```\n{error}\n```\n\n"
    assert outputs == {"exit-code": "2", "report": ""}


@pytest.mark.parametrize("inputs, message", [
    ({"files": ""}, "Error: the 'files' input is empty"),
    ({"files": SAMPLE, "args": "--json"}, "Error: the 'args' input sets --json"),
    ({"files": SAMPLE, "args": "--format=csv"}, "Error: the 'args' input sets --format"),
])
def test_inputs_the_action_cannot_honour_are_refused(tmp_path, inputs, message):
    proc, summary, outputs = run_action(tmp_path, **inputs)
    assert proc.returncode == 2
    assert proc.stderr.startswith(message)
    assert summary.startswith("**calibcli gate**: " + message)
    assert outputs["exit-code"] == "2"
