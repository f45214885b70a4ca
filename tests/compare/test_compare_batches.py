"""compare beyond the kept rows gives the same paired intervals whatever the batch size (SPEC 8.1), and each input's
binned cells taken from the joint cells are the ones it would sum itself."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from _cli import run_json
from _tolerance import assert_within_rule


def test_joint_per_bin_intervals_do_not_depend_on_the_batch_size(tmp_path):
    # beyond the 2^17 kept rows the paired intervals come from the joint cells (calibcli.compare.paired_bootstrap),
    # whose covariances' small eigenvalues are differences of large sums: the batch's sums are exact, so two batch
    # sizes give the same intervals within the tolerance rule (they moved by 3.5e-9 relative with plain sums)
    rng = np.random.default_rng(37)
    n = (1 << 17) + 9_000
    z = rng.beta(2, 5, n)
    y = (rng.random(n) < z**1.1).astype(int)
    paths = []
    for name, prob in (("a.parquet", z), ("b.parquet", z**0.9)):
        paths.append(str(tmp_path / name))
        pd.DataFrame({"prob": prob, "label": y}).to_parquet(paths[-1])
    docs = [run_json("compare", *paths, "--n-boot", "200", "--batch-rows", str(b)) for b in (1 << 17, 40_000)]
    assert docs[0]["parameters"]["batch_rows"] != docs[1]["parameters"]["batch_rows"]
    joint = [name for name, c in docs[0]["comparison"].items() if "joint per-bin" in (c.get("ci_method") or "")]
    assert {"ece_l1_plugin", "brier_score", "brier_within_bin"} <= set(joint)
    for name in joint:
        a, b = docs[0]["comparison"][name], docs[1]["comparison"][name]
        for key in ("baseline", "candidate", "difference", "ci_low", "ci_high"):
            assert_within_rule(a[key], b[key], f"{name}.{key}")


def _pair_rows(n, k, seed):
    """Two models' probabilities of the same ``n`` rows of ``k`` classes (1-D for 2), and their labels."""
    rng = np.random.default_rng(seed)
    if k == 2:
        z = rng.beta(2, 5, n)
        return z, np.clip(z + rng.normal(0, 0.05, n), 0, 1), (rng.random(n) < z).astype(np.int64)
    logits = rng.normal(size=(n, k))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    q = np.exp(1.2 * logits) / np.exp(1.2 * logits).sum(axis=1, keepdims=True)
    return p, q, np.array([rng.choice(k, p=row) for row in p])


@pytest.mark.parametrize(
    "mode, k, strategy", [("binary", 2, "uniform"), ("marginal", 3, "uniform"), ("binary", 2, "quantile")]
)
def test_cells_taken_from_the_joint_cells_are_the_ones_each_input_sums_itself(mode, k, strategy):
    # rows that pair give each input's binned accumulator its cells as the joint cells' marginals (summed once for
    # both, calibcli.compare.run._pair_pass): the same counts and the same floats as the cells it sums itself
    from calibcli.compare.paired_bootstrap import JointState
    from calibcli.ece_family.accumulator import InputAccumulator
    from calibcli.ece_family.options import Options

    p, q, y = _pair_rows(30_000, k, 5)
    options = Options(n_bins=10, strategy=strategy, n_boot=50, row_limit=100)
    edges = [np.quantile(p if p.ndim == 1 else p[:, j], np.linspace(0, 1, 11)[1:-1]) for j in range(k if k > 2 else 1)]

    def new():
        return InputAccumulator(
            mode=mode,
            n_classes=k,
            class_names=tuple(str(c) for c in range(k)),
            options=options,
            edges=edges if strategy == "quantile" else None,
        )

    own, taken = [new(), new()], [new(), new()]
    joint = JointState(*taken)
    columns = taken[0].problems[0].row_columns(False)
    assert columns == ("wu", "wu2", "wll", "wu3", "wu4", "wll2")
    for start in range(0, len(y), 7_000):
        rows = np.arange(start, min(start + 7_000, len(y)))
        a, b = (SimpleNamespace(probs=m[rows], labels=y[rows], sample_weight=None) for m in (p, q))
        given = joint.update(a, b, columns)
        for side, m in enumerate((p, q)):
            own[side].update(rows, m[rows], y[rows])
            taken[side].update(rows, m[rows], y[rows], None, given[side])
    for side in (0, 1):
        for mine, theirs in zip(own[side].problems, taken[side].problems, strict=True):
            assert mine.rows.dropped
            for cells in ("cells", "uniform_cells"):
                if getattr(mine, cells) is None:
                    continue
                np.testing.assert_array_equal(getattr(mine, cells).count, getattr(theirs, cells).count)
                np.testing.assert_array_equal(getattr(mine, cells).sums, getattr(theirs, cells).sums)
        assert own[side].result().to_dict() == taken[side].result().to_dict()


def test_an_error_in_the_joint_cells_thread_is_raised_by_the_pass_and_leaves_no_thread(monkeypatch):
    # a chunk's joint cells are summed in a thread beside the feeding of the chunk before it
    # (calibcli.engines.fragments.Beside): its error is the pass's, raised in the caller's thread, and the pass
    # waits for the thread whichever way it ends
    import threading

    from calibcli.compare import paired_bootstrap
    from calibcli.compare.paired_bootstrap import JointState
    from calibcli.compare.run import _pair_pass
    from calibcli.core.errors import CalibcliError
    from calibcli.ece_family.accumulator import InputAccumulator
    from calibcli.ece_family.options import Options

    p, q, y = _pair_rows(5_000, 2, 8)
    chunks = [np.arange(s, s + 1_000) for s in range(0, 5_000, 1_000)]

    def batches(m):
        return [
            SimpleNamespace(probs=m[r], labels=y[r], sample_weight=None, row_index=r, groups=None, source="t")
            for r in chunks
        ]

    def accs():
        options = Options(n_bins=10, n_boot=20, row_limit=100)
        return [InputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=options)]

    now_a, now_b = accs(), accs()
    part = _pair_pass(
        batches(p), batches(q), now_a, now_b, JointState(now_a[0], now_b[0]), paired=True, stop=True
    )
    assert part.diff is None and part.n_a == part.n_b == 5_000 and part.joint.problems[0][0].count.sum() == 5_000
    calls = []
    real = paired_bootstrap.JointCells.update

    def failing(self, *args):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise CalibcliError("the third chunk's joint cells failed")
        return real(self, *args)

    monkeypatch.setattr(paired_bootstrap.JointCells, "update", failing)
    now_a, now_b = accs(), accs()
    with pytest.raises(CalibcliError, match="the third chunk's joint cells failed"):
        _pair_pass(batches(p), batches(q), now_a, now_b, JointState(now_a[0], now_b[0]), paired=True, stop=True)
    assert calls == ["calibcli-beside"] * 3
    assert not [t for t in threading.enumerate() if t.name == "calibcli-beside"]
