"""The regression guide's Python session runs as written (its console examples run in tests/project)."""

from __future__ import annotations

import doctest
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_guide_python_session_prints_what_it_shows(monkeypatch):
    text = (ROOT / "docs" / "guides" / "regression.md").read_text()
    sessions = re.findall(r"```pycon\n(.*?)```", text, flags=re.DOTALL)
    assert sessions
    monkeypatch.chdir(ROOT)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for k, session in enumerate(sessions):
        test = parser.get_doctest(session, {}, f"guide session {k}", str(ROOT / "docs/guides/regression.md"), 0)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert os.getcwd() == str(ROOT)
