"""The calibration gate of the GitHub Action (action.yml): run one calibcli command with ``--format markdown``,
append its table to the job summary, and exit with the command's exit code.

The action passes its inputs as environment variables, as GitHub does for a composite action's step:

- ``INPUT_FILES``: the inputs (files, directories, quoted globs), separated by spaces or new lines; shell
  quoting keeps a name with spaces or a glob for calibcli to expand (``'runs/*/preds.parquet'``);
- ``INPUT_COMMAND``: the command (default ``ece``; ``smece``, ``tcal``, ``compare``, ``diagram``,
  ``recalibrate evaluate`` print markdown too);
- ``INPUT_ARGS``: further options (``--group-by model --fail-above 0.05``), shell-quoted;
- ``INPUT_REPORT``: where the JSON report is written (default ``calibration.json``; empty: not written).

The markdown goes to ``$GITHUB_STEP_SUMMARY`` (whatever the verdict: a failed gate's table is the evidence) and to
the log; on bad input (exit 2) the summary says so with calibcli's ``Error:`` line. ``exit-code`` and ``report``
are written to ``$GITHUB_OUTPUT`` for later steps. Outside GitHub (no ``GITHUB_STEP_SUMMARY``) it prints the same
and writes no summary, so ``python scripts/calibration_gate.py`` with the variables set is the action, run
locally; ``tests/cli/test_action.py`` does that.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

#: Options the action sets itself: a user's args may not change what stdout carries.
RESERVED = ("--format", "--json")


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def build_command(environ: dict[str, str]) -> tuple[list[str], str]:
    """The calibcli command line the inputs ask for, and the report path ('' for none)."""
    command = shlex.split(environ.get("INPUT_COMMAND", "").strip() or "ece")
    files = shlex.split(environ.get("INPUT_FILES", ""))
    args = shlex.split(environ.get("INPUT_ARGS", ""))
    report = environ.get("INPUT_REPORT", "calibration.json").strip()
    if not files:
        raise ValueError("the 'files' input is empty: give the prediction files, directories or quoted globs to check")
    for a in args:
        if a.split("=", 1)[0] in RESERVED:
            raise ValueError(f"the 'args' input sets {a.split('=', 1)[0]}: the action prints --format markdown itself "
                             "(the JSON report is written to the 'report' input's path)")
    line = [*command, *files, *args, "--format", "markdown"]
    if report:
        line += ["--output", report]
    return line, report


def main(environ: dict[str, str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    summary, outputs = environ.get("GITHUB_STEP_SUMMARY"), environ.get("GITHUB_OUTPUT")
    try:
        line, report = build_command(environ)
    except ValueError as e:
        print(f"Error: {e}", file=sys.stderr)
        _append(summary, f"**calibcli gate**: Error: {e}\n\n")
        _append(outputs, "exit-code=2\nreport=\n")
        return 2
    print("$ calibcli " + shlex.join(line), flush=True)
    proc = subprocess.run([sys.executable, "-m", "calibcli", *line], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    text = proc.stdout if proc.stdout.endswith("\n") or not proc.stdout else proc.stdout + "\n"
    if proc.returncode not in (0, 1):  # bad usage or input: no table, the reason is on stderr
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")] or proc.stderr.splitlines()[-1:]
        text += (f"**calibcli {line[0]}** stopped (exit {proc.returncode}):\n\n```\n" + "\n".join(errors) + "\n```\n")
    _append(summary, text + "\n")
    _append(outputs, f"exit-code={proc.returncode}\nreport={report if report and os.path.exists(report) else ''}\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
