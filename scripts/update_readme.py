"""Run the console examples of README.md and of every page of docs/, and write what they print back into them
(``--check``: only compare).

    python scripts/update_readme.py                          # refresh every example of README.md and docs/, in place
    python scripts/update_readme.py docs/commands/ece.md     # only these files
    python scripts/update_readme.py --check                  # exit 1 and show the differences if any file is stale

The README and the documentation pages are run by this one mechanism (a *document* below is either).

An *example* is a fenced block with no info string or the info string ``console`` whose first line starts
with ``$ ``: every ``$ COMMAND`` line is run with ``bash`` (so pipes, redirections and ``echo $?`` work), and
the lines after it, up to the next ``$ `` line, are what it prints (stdout and stderr together, in the order
written). A block whose info string is ``console not-run`` is shown but never run (a cluster, a benchmark's
timing); the other fences (``bash``, ``python``, ``json``, ``text``) are scripts and data, not examples.

The commands of one document run in order in one scratch directory, made fresh for each document, holding
``sample_data`` (a link to the repository's), the folders of ``docs/`` (empty) and the files the
documentation's text says were made beforehand (:data:`SETUP`); so an example that writes a file
(``-o platt.json``) leaves the repository alone. Commands run from the scratch directory's root whichever
folder the page is in, so a page under ``docs/commands/`` writes ``-o docs/figures/x.png`` as the README would.
The environment is fixed: ``COLUMNS`` (:data:`COLUMNS`) for the width of the tables, ``NO_COLOR``,
``PYTHONUNBUFFERED`` (stdout and stderr in the order written) and no ``CALIBCLI_*`` variables.

What may differ between a run and the document, and is normalised on both sides (:func:`normalise`) before
comparing: the tool version (``calibcli 0.1.0``, ``"version": "0.1.0"``), the scratch directory's and the
repository's absolute paths, a figure's size in bytes (it follows matplotlib's and the fonts' versions),
spaces at the end of a line and blank lines at the end of an output. Numbers are compared to a stated
tolerance (:data:`RELATIVE_TOLERANCE`, :data:`NOISE`: one unit in the last printed digit, so another machine's
floating-point rounding does not fail the check), the padding of tables with them; every other character, path,
message and integer must match. Refreshing also copies the figures the examples draw (``-o docs/figures/...``) into the
repository's ``docs/``, so the pictures and the text that describes them stay in step.

``tests/project/test_readme.py`` runs the same comparison for every document (and checks that every command of
``calibcli --help`` has a README section); ``tests/project/test_docs.py`` checks the site around them.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documents() -> list[Path]:
    """Every document whose examples run: README.md, then the pages of ``docs/`` in path order."""
    return [README, *sorted(DOCS.rglob("*.md"))]

#: Terminal width the examples are run (and printed in the README) at.
COLUMNS = 150

#: Info strings of the fences that are run; ``console not-run`` blocks are skipped on purpose.
RUN_INFO = ("", "console")
SKIP_INFO = "console not-run"

#: Files the documentation's text says were made before its examples, made in the scratch directory first.
SETUP = (
    "printf '' > broken.json",
    "calibcli recalibrate fit --method platt sample_data/breast_cancer_nb.csv -o platt.json > /dev/null",
    "calibcli recalibrate fit --method histogram --n-bins 10 sample_data/breast_cancer_nb.csv -o hist.json > /dev/null",
    "calibcli recalibrate apply hist.json sample_data/breast_cancer_nb.csv -o breast_cancer_hist.csv > /dev/null",
)

_MARK = "@@calibcli-readme-example-end@@"


@dataclass
class Command:
    """One ``$ COMMAND`` line of an example and what the README says it prints."""

    command: str
    expected: list[str]  # the output lines, trailing blank lines removed
    trailing_blank: int = 0  # blank lines after the output in the README (kept when rewriting)
    line: int = 0  # 1-based line of the ``$`` in README.md


@dataclass
class Block:
    """A fenced example: where its body is in README.md (0-based line range) and its commands."""

    start: int
    end: int
    commands: list[Command] = field(default_factory=list)


def parse(text: str) -> tuple[list[Block], list[int]]:
    """The runnable examples of a README, and the lines (1-based) of the fences marked not-run."""
    lines = text.split("\n")
    blocks, skipped = [], []
    i = 0
    while i < len(lines):
        m = re.match(r"^(```+)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).strip()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        body = lines[i + 1 : j]
        if info == SKIP_INFO:
            skipped.append(i + 1)
        elif info in RUN_INFO and body and body[0].startswith("$ "):
            blocks.append(_block(i + 1, j, body))
        i = j + 1
    return blocks, skipped


def _block(start: int, end: int, body: list[str]) -> Block:
    block = Block(start, end)
    for k, line in enumerate(body):
        if line.startswith("$ "):
            block.commands.append(Command(line[2:], [], line=start + k + 1))
        else:
            block.commands[-1].expected.append(line)
    for c in block.commands:
        while c.expected and not c.expected[-1].strip():
            c.expected.pop()
            c.trailing_blank += 1
    return block


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALIBCLI_")}
    env.update(COLUMNS=str(COLUMNS), LINES="50", NO_COLOR="1", TERM="dumb", PYTHONUNBUFFERED="1", LC_ALL="C.UTF-8")
    # the calibcli of this interpreter's environment first (the repository's, installed editable)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def scratch_directory() -> tempfile.TemporaryDirectory:
    """A fresh directory to run the examples in: ``sample_data`` linked, the ``docs/`` folders made, :data:`SETUP` run."""
    tmp = tempfile.TemporaryDirectory(prefix="calibcli-readme-")
    os.symlink(ROOT / "sample_data", Path(tmp.name) / "sample_data")
    for folder in [ROOT / "docs", *(p for p in (ROOT / "docs").rglob("*") if p.is_dir())]:  # figures go there
        (Path(tmp.name) / folder.relative_to(ROOT)).mkdir(parents=True, exist_ok=True)
    (Path(tmp.name) / "docs" / "figures").mkdir(exist_ok=True)  # the diagram examples write there (scripts/make_figures.py)
    for command in SETUP:
        proc = subprocess.run(["bash", "-c", command], cwd=tmp.name, env=environment(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"README setup failed: {command}\n{proc.stderr}")
    return tmp


def run_block(block: Block, cwd: str, timeout: float = 900) -> list[list[str]]:
    """Run a block's commands in one ``bash`` (so ``echo $?`` sees the previous command): each one's output lines."""
    script = ["exec 2>&1"]
    for c in block.commands:
        script.append(c.command)
        # the exit status survives the marker: `echo $?` on the next line reports the command's
        script.append(f"__rc=$?; printf '\\n%s\\n' '{_MARK}'; (exit $__rc)")
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=environment(), capture_output=True,
                          text=True, timeout=timeout)
    parts = proc.stdout.split(f"\n{_MARK}\n")
    outputs = []
    for part in parts[: len(block.commands)]:
        lines = part.split("\n") if part else []
        while lines and not lines[-1].strip():
            lines.pop()
        outputs.append(lines)
    while len(outputs) < len(block.commands):
        outputs.append(["<the example's shell stopped before this command>"])
    return outputs


def normalise(lines: list[str], cwd: str | None = None) -> list[str]:
    """What may differ between runs, replaced on both sides: the version, absolute paths, trailing spaces."""
    out = []
    for line in lines:
        if cwd:
            line = line.replace(os.path.realpath(cwd) + "/", "").replace(cwd + "/", "")
        line = line.replace(str(ROOT) + "/", "")
        line = re.sub(r'"version": "[^"]*"', '"version": "<version>"', line)
        line = re.sub(r"\bcalibcli \d+\.\d+\.\d+\S*", "calibcli <version>", line)
        line = re.sub(r"\b\d[\d,]* bytes\)", "<size> bytes)", line)  # a figure's size: matplotlib's and the fonts' versions
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def run_readme(text: str, images_to: Path | None = None) -> list[tuple[Block, list[list[str]]]]:
    """Every runnable example of a document's ``text`` with what its commands print now (paths relative,
    spaces trimmed); the README's or a docs page's alike.

    ``images_to``: copy the files the examples wrote under ``docs/`` (figures the document shows) there."""
    blocks, _ = parse(text)
    results = []
    if not blocks:  # nothing to run: no scratch directory, no setup commands
        return results
    with scratch_directory() as cwd:
        for block in blocks:
            outputs = run_block(block, cwd)
            results.append((block, [_relative(o, cwd) for o in outputs]))
        if images_to is not None:
            for image in sorted(p for p in (Path(cwd) / "docs").rglob("*") if p.is_file()):
                target = images_to / image.relative_to(cwd)
                if not target.exists() or target.read_bytes() != image.read_bytes():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(image, target)
                    print(f"{target.relative_to(images_to)}: redrawn", file=sys.stderr)
    return results


def _relative(lines: list[str], cwd: str) -> list[str]:
    real = os.path.realpath(cwd) + "/"
    return [line.replace(real, "").replace(cwd + "/", "").replace(str(ROOT) + "/", "").rstrip() for line in lines]


#: How far a printed number may move between machines (another NumPy, SciPy or BLAS build, another CPU kernel)
#: and still be the README's number: one unit in its last printed digit, 1e-9 relative, or, for two numbers both
#: below 1e-12 in magnitude, anything (floating-point noise around an exact zero, such as a Wald z of 5e-15).
#: Integers (counts, sizes, exit codes) and all the text around the numbers must match exactly.
RELATIVE_TOLERANCE = 1e-9
NOISE = 1e-12

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_PADDING = re.compile(r"[ ─━═]+")  # table padding and rules: a wider number widens its column


def _last_digit_unit(token: str) -> float:
    """One unit in the last printed digit of a decimal number: '0.06027' -> 1e-5, '2.497e-11' -> 1e-14."""
    mantissa, _, exponent = token.lower().lstrip("+-").partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _numbers_agree(a: str, b: str) -> bool:
    if a == b:
        return True
    integral = not re.search(r"[.eE]", a) and not re.search(r"[.eE]", b)
    if integral:
        return False
    x, y = float(a), float(b)
    if abs(x) < NOISE and abs(y) < NOISE:
        return True
    unit = max(_last_digit_unit(a), _last_digit_unit(b))
    return abs(x - y) <= max(unit * (1 + 1e-9), RELATIVE_TOLERANCE * max(abs(x), abs(y)))


def lines_agree(want: str, have: str) -> bool:
    """Two output lines say the same: the same text (padding aside) and numbers within the tolerance above."""
    if want == have:
        return True
    want_numbers, have_numbers = _NUMBER.findall(want), _NUMBER.findall(have)
    if len(want_numbers) != len(have_numbers):
        return False
    want_text = _PADDING.sub(" ", _NUMBER.sub("#", want)).strip()
    have_text = _PADDING.sub(" ", _NUMBER.sub("#", have)).strip()
    return want_text == have_text and all(map(_numbers_agree, want_numbers, have_numbers))


def outputs_agree(want: list[str], have: list[str]) -> bool:
    """A command's normalised output says what the README's does, line by line (:func:`lines_agree`)."""
    return len(want) == len(have) and all(map(lines_agree, want, have))


def differences(results, name: str = "README.md") -> list[str]:
    """Unified diffs of every command whose normalised output differs from the document's (beyond the tolerance);
    ``name`` is the document's path, for the messages."""
    diffs = []
    for block, outputs in results:
        for c, got in zip(block.commands, outputs):
            want, have = normalise(c.expected), normalise(got)
            if not outputs_agree(want, have):
                diffs.append(f"{name} line {c.line}: $ {c.command}\n" + "\n".join(
                    difflib.unified_diff(want, have, name, "now", lineterm="", n=1)))
    return diffs


def rewrite(text: str, results) -> str:
    """``text`` with every example's output replaced by what it prints now (fences and commands kept).

    ``text`` may be a newer README than the one run (a section edited meanwhile): each of its examples takes
    the outputs of the example with the same commands that was run; an example not run is left as it is."""
    ran: dict[tuple[str, ...], list] = {}
    for block, outputs in results:
        ran.setdefault(tuple(c.command for c in block.commands), []).append(outputs)
    lines = text.split("\n")
    blocks, _ = parse(text)
    matched = []
    for block in blocks:
        found = ran.get(tuple(c.command for c in block.commands))
        if found:
            matched.append((block, found.pop(0)))
    for block, outputs in sorted(matched, key=lambda r: -r[0].start):  # bottom up: line numbers stay valid
        body = []
        for c, got in zip(block.commands, outputs):
            body.append(f"$ {c.command}")
            # an output within the tolerance is left as the README has it: no churn from another machine's digits
            body.extend(c.expected if outputs_agree(normalise(c.expected), normalise(got)) else got)
            body.extend([""] * c.trailing_blank)
        lines[block.start : block.end] = body
    return "\n".join(lines)


def display_name(path: Path) -> str:
    """A document's path as the messages give it: relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="documents to run (default: README.md and every docs/**/*.md)")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if a document is stale")
    parser.add_argument("--readme", action="append", default=[], help="a document to run (as a path argument)")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in [*args.paths, *args.readme]] or documents()
    stale = 0
    for path in paths:
        name = display_name(path)
        text = path.read_text()
        results = run_readme(text, images_to=None if args.check else ROOT)
        diffs = differences(results, name)
        n = sum(len(b.commands) for b, _ in results)
        if not n:
            continue
        if args.check:
            print("\n\n".join(diffs) if diffs else f"{name}: all {n} example commands print what it shows")
            stale += bool(diffs)
            continue
        if diffs:
            path.write_text(rewrite(path.read_text(), results))  # the document as it is now: edits meanwhile are kept
        print(f"{name}: {len(diffs)} of {n} example outputs updated")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
