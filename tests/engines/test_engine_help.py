"""``--engine``'s help is made from the engine registry: a new engine is its module and its registration."""

from __future__ import annotations

import pytest

from calibcli.engines.base import ENGINES, engines_help, register


def test_engine_help_names_every_registered_engine_in_order():
    assert engines_help() == ("local (this process) or dask (a Dask cluster: --scheduler, or a local one of --workers "
                              "processes); the same report either way.")


def test_a_registered_engine_is_listed_without_another_edit(monkeypatch):
    monkeypatch.setattr("calibcli.engines.base.ENGINES", dict(ENGINES))

    @register
    class Threads:
        name = "threads"
        where = "threads of this process"

    from calibcli.engines import base

    assert "threads" in base.ENGINES and "threads" not in ENGINES
    assert engines_help().startswith("local (this process), dask (a Dask cluster: --scheduler, or a local one of "
                                     "--workers processes) or threads (threads of this process);")


@pytest.mark.parametrize("name", list(ENGINES))
def test_every_engine_says_where_it_runs(name):
    assert ENGINES[name].where
