"""`--engine dask` on tcal and diagram: the same report as the local engine (SPEC 8 "Engines")."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from test_engine_dask import BATCH, _json, _write_shards, assert_same_report, cluster  # noqa: E402,F401


@pytest.fixture(scope="module")
def small_shards(tmp_path_factory):
    return _write_shards(tmp_path_factory.mktemp("dask_cmds") / "shards", 30_000, 3, 5_000)


def test_tcal_on_a_cluster_equals_the_local_engine(small_shards, cluster):
    common = ("tcal", small_shards, "--n-boot", "200", "--batch-rows", BATCH, "--group-by", "model", "--max-rows", "8000")
    local = _json(*common)
    remote = _json(*common, "--engine", "dask", "--scheduler", cluster)
    assert remote["parameters"]["engine"] == "dask"
    assert_same_report(remote, local)


def test_diagram_on_a_cluster_equals_the_local_engine(small_shards, cluster, tmp_path):
    common = ("diagram", small_shards, "--n-boot", "30", "--batch-rows", BATCH, "--weight-col", "w")
    (tmp_path / "local").mkdir()
    local = _json(*common, "-o", tmp_path / "local" / "d.png")
    (tmp_path / "local" / "d.png").rename(tmp_path / "local.png")
    remote = _json(*common, "-o", tmp_path / "local" / "d.png", "--engine", "dask", "--scheduler", cluster)
    assert_same_report(remote, local)
    assert (tmp_path / "local" / "d.png").stat().st_size > 10_000


def test_report_on_a_cluster_equals_the_local_engine(small_shards, cluster, tmp_path):
    """The report's one pass (a composite of the ece, smece, tcal and diagram accumulators) on Dask: the same
    numbers as the local engine."""
    import json

    from _cli import run

    docs = {}
    for name, extra in (("local", ()), ("dask", ("--engine", "dask", "--scheduler", cluster))):
        r = run("report", small_shards, "--n-boot", "30", "--batch-rows", BATCH, "--group-by", "model", "--strategy",
                "quantile", "-o", tmp_path / f"{name}.html", "--json-output", tmp_path / f"{name}.json", *extra)
        assert r.exit_code == 0, r.stderr
        docs[name] = json.loads((tmp_path / f"{name}.json").read_text())
    for family in ("ece", "smece", "tcal"):
        local = {"parameters": docs["local"]["documents"][family]["parameters"],
                 "files": [e[family] for e in docs["local"]["files"]]}
        remote = {"parameters": docs["dask"]["documents"][family]["parameters"],
                  "files": [e[family] for e in docs["dask"]["files"]]}
        assert_same_report(remote, local)


def test_audit_on_a_cluster_equals_the_local_engine(small_shards, cluster):
    """The audit's segments (model x quantile bins of the weights) over 3 shards: 3 tasks whose rows are merged on
    the workers; the same segments and numbers as the local engine."""
    common = ("audit", small_shards, "--segment-cols", "model,w", "--batch-rows", BATCH)
    local = _json(*common)
    remote = _json(*common, "--engine", "dask", "--scheduler", cluster)
    assert remote["n_segments_tested"] == local["n_segments_tested"] > 2
    assert_same_report(remote, local)


def test_report_on_a_deep_tree_equals_the_local_engine(small_shards, cluster, tmp_path, monkeypatch):
    """The report's composite state, a task per fragment (5,000-row row groups: 6) merged in pairs on the workers
    (blocks of 2, then 3 -> 2 -> 1), groups included: the local engine's numbers for every family."""
    import json

    from _cli import run

    from calibcli.engines import dask as engine

    monkeypatch.setattr(engine, "SPLIT_EVERY", 2)
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "1")
    docs = {}
    for name, extra in (("local", ()), ("dask", ("--engine", "dask", "--scheduler", cluster))):
        r = run("report", small_shards, "--n-boot", "30", "--batch-rows", "5000", "--group-by", "model",
                "-o", tmp_path / f"{name}.html", "--json-output", tmp_path / f"{name}.json", *extra)
        assert r.exit_code == 0, r.stderr
        docs[name] = json.loads((tmp_path / f"{name}.json").read_text())
    for family in ("ece", "smece", "tcal"):
        local = {"parameters": docs["local"]["documents"][family]["parameters"],
                 "files": [e[family] for e in docs["local"]["files"]]}
        remote = {"parameters": docs["dask"]["documents"][family]["parameters"],
                  "files": [e[family] for e in docs["dask"]["files"]]}
        assert_same_report(remote, local)
