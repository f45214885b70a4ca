"""`calibcli diagram` on datasets (SPEC 6 and 8): directories of Parquet shards, quoted globs, --pool,
--batch-rows, stdin and --group-by give the figure and the JSON of the same rows read whole; each
group's curve is that group's rows drawn alone."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.collections import LineCollection
from matplotlib.container import ErrorbarContainer

from calibcli.diagram.data import prepare_binned
from calibcli.diagram import plot as dg
from calibcli.io.sources import DEFAULT_BATCH_ROWS

from _cli import run, run_json  # noqa: E402  (tests/ is on sys.path)

N = 3000
BOOT = ("--n-boot", "30", "--seed", "4")


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """The same 3000 rows as one Parquet file, as 4 shards of several row groups, as a hive-partitioned
    directory by model, and as a CSV."""
    root = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(11)
    z = rng.beta(1.2, 1.5, N)
    model = np.where(rng.random(N) < 0.4, "a", "b")
    # model b is over-confident, model a calibrated: the groups' curves differ
    y = (rng.random(N) < np.where(model == "a", z, 0.2 + 0.6 * z)).astype(np.int64)
    whole = pa.table({"prob": z, "label": y, "model": model})
    pq.write_table(whole, root / "whole.parquet")
    (root / "shards").mkdir()
    for k, part in enumerate(np.array_split(np.arange(N), 4)):
        pq.write_table(whole.take(part), root / "shards" / f"part-{k:02d}.parquet", row_group_size=200)
    for name in ("a", "b"):
        (root / "hive" / f"model={name}").mkdir(parents=True)
        sel = np.flatnonzero(model == name)
        pq.write_table(whole.take(sel).drop(["model"]), root / "hive" / f"model={name}" / "part-0.parquet")
        whole.take(sel).drop(["model"]).to_pandas().to_csv(root / f"{name}.csv", index=False)
    whole.drop(["model"]).to_pandas().to_csv(root / "whole.csv", index=False)
    return root


def curves(doc) -> list[dict]:
    """Every curve of the report without its name (which follows the input's name)."""
    return [{k: v for k, v in c.items() if k != "name"} for f in doc["files"] for c in f["curves"]]


def main_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() not in ("count", "weighted count", "density")]


def errorbars(ax):
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def smooth_lines(ax):
    return [c for c in ax.collections if isinstance(c, LineCollection) and c.get_label() == "_smooth_curve"]


def legend_names(ax) -> list[str]:
    return [t.get_text().split("\n")[0] for t in ax.get_legend().get_texts()]


# ---------------------------------------------------------------------------------------------
# One dataset, however it is stored and read


def test_directory_of_shards_gives_the_json_and_figure_of_the_whole_file(shards, tmp_path, figures):
    whole = run_json("diagram", shards / "whole.parquet", "-o", tmp_path / "w.png", *BOOT)
    directory = run_json("diagram", shards / "shards", "-o", tmp_path / "d.png", *BOOT)
    assert directory["files"][0]["input"]["files"] == 4 and directory["files"][0]["input"]["rows_read"] == N
    assert directory["files"][0]["name"] == "shards"
    (curve,) = curves(whole)
    assert curve["n"] == N and curve["binned"]["metrics"]["ece_l1_plugin"]["ci_low"] is not None
    assert curves(directory) == curves(whole)
    # the same points, curve and band on the figure
    (w_binned, w_smooth), (d_binned, d_smooth) = (main_axes(f) for f in figures)
    np.testing.assert_array_equal(errorbars(d_binned)[0].lines[0].get_ydata(), errorbars(w_binned)[0].lines[0].get_ydata())
    np.testing.assert_array_equal(np.array(smooth_lines(d_smooth)[0].get_segments()),
                                  np.array(smooth_lines(w_smooth)[0].get_segments()))
    assert (tmp_path / "w.png").read_bytes() != b""


@pytest.mark.parametrize("how", ["glob", "pool", "batch-rows 7", "batch-rows 1000"])
def test_globs_pools_and_batch_sizes_do_not_change_the_report(shards, tmp_path, how):
    parts = sorted(str(p) for p in (shards / "shards").iterdir())
    args = {
        "glob": [str(shards / "shards" / "part-*.parquet")],
        "pool": [*reversed(parts), "--pool"],  # rows in sorted-path order, whatever the order given
        "batch-rows 7": [shards / "shards", "--batch-rows", "7"],
        "batch-rows 1000": [shards / "whole.parquet", "--batch-rows", "1000"],
    }[how]
    doc = run_json("diagram", *args, "-o", tmp_path / "f.png", *BOOT)
    ref = run_json("diagram", shards / "whole.parquet", "-o", tmp_path / "ref.png", *BOOT)
    assert len(doc["files"]) == 1 and doc["diagram"]["n_curves_per_panel"] == 1
    assert curves(doc) == curves(ref)
    p = doc["parameters"]
    assert (p["engine"], p["pool"], p["group_by"], p["batch_rows"]) == (
        "local", how == "pool", None, int(how.split()[-1]) if how.startswith("batch") else DEFAULT_BATCH_ROWS)
    if how == "pool":
        # named as given (like the input's path), read in sorted-path order
        assert doc["files"][0]["name"] == ", ".join(f"part-{k:02d}.parquet" for k in reversed(range(4)))
        assert doc["files"][0]["input"]["path"] == ", ".join(reversed(parts))


def test_stdin_is_read_as_a_stream(shards, tmp_path):
    csv = (shards / "whole.csv").read_text()
    r = run("diagram", "-", "-o", tmp_path / "s.png", *BOOT, "--json", input=csv)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["files"][0]["input"]["path"] == "<stdin>" and doc["files"][0]["name"] == "stdin"
    assert curves(doc) == curves(run_json("diagram", shards / "whole.parquet", "-o", tmp_path / "w.png", *BOOT))
    assert (tmp_path / "s.png").stat().st_size > 0


# ---------------------------------------------------------------------------------------------
# Groups


def test_group_by_draws_one_overlay_per_group_equal_to_its_rows_drawn_alone(shards, tmp_path, figures):
    doc = run_json("diagram", shards / "whole.parquet", "-o", tmp_path / "g.png", "--group-by", "model", *BOOT)
    model = pq.read_table(shards / "whole.parquet").column("model").to_numpy(zero_copy_only=False)
    assert [(f["group"], f["rows_in_group"], f["name"]) for f in doc["files"]] == [
        ({"model": "a"}, int((model == "a").sum()), "model=a"), ({"model": "b"}, int((model == "b").sum()), "model=b")]
    p = doc["parameters"]
    assert (p["group_by"], p["max_overlays"], p["pool"], p["engine"]) == (["model"], 10, False, "local")
    assert doc["groups"] == {"by": ["model"], "n_groups": 2, "n_groups_drawn": 2}
    d = doc["diagram"]
    assert (d["n_panels"], d["n_curves_per_panel"], d["groups_drawn"], d["groups_total"], d["note"]) == (1, 2, 2, 2, None)

    # One overlay per group in each panel, named by the group.
    (fig,) = figures
    binned_ax, smooth_ax = main_axes(fig)
    assert len(errorbars(binned_ax)) == 2 and len(smooth_lines(smooth_ax)) == 2
    assert legend_names(binned_ax) == legend_names(smooth_ax) == ["model=a", "model=b"]
    assert [t.get_text() for t in fig.texts] == ["Reliability diagram of whole.parquet by model, binary mode"]

    # Each group's binned numbers are those of its rows drawn alone (the bootstrap differs: it is keyed
    # by the global row index); the smooth curve too, up to the rows' renumbering.
    for k, name in enumerate("ab"):
        alone = run_json("diagram", shards / f"{name}.csv", "-o", tmp_path / f"{name}.png", *BOOT)
        (mine,), (ref,) = doc["files"][k]["curves"], alone["files"][0]["curves"]
        assert mine["n"] == ref["n"] == doc["files"][k]["rows_in_group"]
        b, rb = mine["binned"], ref["binned"]
        assert b["n_bins_nonempty"] == rb["n_bins_nonempty"] and len(b["per_bin"]) == len(rb["per_bin"])
        for q, rq in zip(b["per_bin"], rb["per_bin"]):
            assert (q["lower"], q["upper"], q["count"]) == (rq["lower"], rq["upper"], rq["count"])
            for key in ("mean_confidence", "accuracy", "wilson_low", "wilson_high"):
                assert q[key] == pytest.approx(rq[key], rel=1e-12, abs=1e-15), key
        assert b["metrics"]["ece_l1_plugin"]["estimate"] == pytest.approx(rb["metrics"]["ece_l1_plugin"]["estimate"], rel=1e-12)
        s, rs = mine["smooth"], ref["smooth"]
        assert s["sigma"] == pytest.approx(rs["sigma"], rel=1e-9)
        assert s["metrics"]["smece"]["estimate"] == pytest.approx(rs["metrics"]["smece"]["estimate"], rel=1e-9)
        # the points drawn are these bins
        np.testing.assert_allclose(errorbars(binned_ax)[k].lines[0].get_ydata(), [q["accuracy"] for q in rb["per_bin"]],
                                   rtol=1e-12)


def test_group_by_hive_partition_equals_the_column(shards, tmp_path):
    by_column = run_json("diagram", shards / "whole.parquet", "-o", tmp_path / "c.png", "--group-by", "model",
                         "--n-boot", "0", "--kind", "binned")
    by_partition = run_json("diagram", shards / "hive", "-o", tmp_path / "p.png", "--group-by", "model",
                            "--n-boot", "0", "--kind", "binned")
    assert [f["group"] for f in by_partition["files"]] == [{"model": "a"}, {"model": "b"}]
    assert [f["name"] for f in by_partition["files"]] == ["model=a", "model=b"]
    for a, b in zip(curves(by_column), curves(by_partition)):
        assert a["n"] == b["n"]
        assert a["binned"]["metrics"]["ece_l1_plugin"]["estimate"] == pytest.approx(
            b["binned"]["metrics"]["ece_l1_plugin"]["estimate"], rel=1e-12)
    # a --name names the dataset; its groups follow it
    named = run_json("diagram", shards / "hive", "-o", tmp_path / "n.png", "--group-by", "model", "--name", "M",
                     "--n-boot", "0", "--kind", "binned")
    assert [f["name"] for f in named["files"]] == ["M [model=a]", "M [model=b]"]


def test_groups_beyond_the_cap_are_counted_and_the_cap_is_stated(shards, tmp_path, figures):
    note = "the first 1 of 2 groups by model are drawn (--max-overlays 1)"
    r = run("diagram", shards / "whole.parquet", "-o", tmp_path / "g.png", "--group-by", "model", "--max-overlays", "1",
            "--n-boot", "0", "--kind", "binned", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == f"Warning: {note}\n"
    doc = json.loads(r.stdout)
    assert [f["group"] for f in doc["files"]] == [{"model": "a"}]
    d = doc["diagram"]
    assert (d["n_curves_per_panel"], d["groups_drawn"], d["groups_total"], d["note"]) == (1, 1, 2, note)
    assert doc["groups"] == {"by": ["model"], "n_groups": 2, "n_groups_drawn": 1}
    (fig,) = figures
    # one curve: the title names it (its group), the legend only gives its numbers
    # (too wide for the one-column figure on one line: broken after the comma)
    assert [t.get_text() for t in fig.texts] == ["Reliability diagram of whole.parquet [model=a],\nbinary mode", note]
    (ax,) = main_axes(fig)
    assert ax.get_legend().get_texts()[0].get_text().startswith("ece_l1_plugin = ")

    r = run("diagram", shards / "whole.parquet", "-o", tmp_path / "x.png", "--group-by", "model", "--max-overlays", "0")
    assert (r.exit_code, r.stderr) == (2, "Error: --max-overlays is 0: expected a positive number of groups to draw\n")


def test_marginal_mode_panels_per_class_overlays_per_group(tmp_path, figures):
    rng = np.random.default_rng(2)
    n = 900
    P = rng.dirichlet([2, 2, 2, 2], n)
    labels = np.array([rng.choice(4, p=row) for row in P])
    site = np.where(rng.random(n) < 0.5, "north", "south")
    path = tmp_path / "four.parquet"
    pq.write_table(pa.table({**{f"p_{k}": P[:, k] for k in range(4)}, "label": labels, "site": site}), path)
    r = run("diagram", path, "-o", tmp_path / "m.png", "--mode", "marginal", "--max-classes", "3", "--group-by", "site",
            "--kind", "binned", "--n-boot", "0", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    note = "marginal mode: the first 3 of 4 classes are drawn (--max-classes 3)"
    assert r.stderr == f"Warning: {note}\n" and doc["diagram"]["note"] == note
    assert [f["name"] for f in doc["files"]] == ["site=north", "site=south"]
    assert [[c["problem"] for c in f["curves"]] for f in doc["files"]] == [["class 0", "class 1", "class 2"]] * 2
    (fig,) = figures
    mains = main_axes(fig)
    assert [ax.get_title().split("\n")[0] for ax in mains] == ["class 0", "class 1", "class 2"]
    # small multiples: one legend above the grid names the groups; each panel's legend gives their numbers
    (shared,) = fig.legends
    assert [t.get_text() for t in shared.get_texts()] == ["site=north", "site=south"]
    assert [[t.split(" = ")[0] for t in legend_names(ax)] for ax in mains] == [["ece_l1_plugin"] * 2] * 3
    # class 2 of the south rows: class 2 against the rest, on those rows alone
    south = site == "south"
    ref = prepare_binned((labels[south] == 2).astype(int), P[south, 2], n_boot=0)
    np.testing.assert_allclose(errorbars(mains[2])[1].lines[0].get_ydata(), ref.accuracy, rtol=1e-12)
