"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures a diagram command renders, caught on their way to ``figure_bytes``."""
    from calibcli import diagrams as dg

    caught = []
    render = dg.figure_bytes

    def spy(fig, fmt, **kwargs):
        caught.append(fig)
        return render(fig, fmt, **kwargs)

    monkeypatch.setattr(dg, "figure_bytes", spy)
    return caught
