"""A Griffe extension for the API pages (mkdocs.yml loads it): a docstring's bare doctest, ``>>>`` lines and
the output under them outside a numpydoc ``Examples`` section, is shown as a ``pycon`` code block.

Without it the doctest is read as Markdown prose: ``doc["columns"]["probabilities"]`` looks like a reference
link, and the strict build fails on it. The docstrings themselves stay plain doctests (``doctest`` runs them).
"""

from __future__ import annotations

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every run of doctest lines (``>>>`` or ``...`` prompts and their output, up to a blank
    line) inside a ```` ```pycon ```` fence; lines already inside a fence are left alone."""
    out: list[str] = []
    in_fence = in_doctest = False
    for line in text.split("\n"):
        stripped = line.strip()
        if in_doctest and not stripped:
            out.append("```")
            in_doctest = False
        if stripped.startswith("```") and not in_doctest:
            in_fence = not in_fence
        elif not in_fence and not in_doctest and stripped.startswith(">>>"):
            out.append("```pycon")
            in_doctest = True
        out.append(line)
    if in_doctest:
        out.append("```")
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:  # noqa: ARG002 (Griffe's hook signature)
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
