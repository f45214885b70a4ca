"""The audit's numbers (calibcli.audit.segment_tests): each segment as its own population, worst first, MCE and adjustments."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.audit.options import Options
from calibcli.audit.segment_tests import audit_arrays
from calibcli.cumulative.ecce import ecce
from calibcli.audit.multitest import adjust_pvalues, mce_pvalue
from calibcli.audit.segments import code_column, partitions


def _data(n=20_000, seed=0, planted=0.0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.05, 0.95, n)
    country = rng.choice(np.array(["fr", "de", "us", "it"]), n, p=[0.4, 0.3, 0.2, 0.1])
    device = rng.choice(np.array(["ios", "android", "web"]), n)
    age = rng.uniform(18, 80, n)
    truth = s + planted * ((country == "it") & (device == "web"))
    y = (rng.uniform(size=n) < np.clip(truth, 0, 1)).astype(np.int64)
    w = np.ones(n)
    return y, s, w, {"country": country, "device": device, "age": age}


def _audit(y, s, w, columns, **options):
    opts = Options(segment_cols=",".join(columns), **options)
    codings = [
        code_column(k, v, max_values=opts.max_values, segment_bins=opts.segment_bins) for k, v in columns.items()
    ]
    codes = [c.encode(v) for c, v in zip(codings, columns.values())]
    parts = partitions(codings, opts.depth)
    return audit_arrays(y, s, w, codes, codings, parts, opts), codings, codes


def test_every_segment_is_its_own_population():
    y, s, w, cols = _data(5000)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(s))
    result, codings, codes = _audit(y, s, w, cols, min_segment=10)
    by_def = {tuple(sorted(e["definition"].items())): e for e in result.segments}
    assert len(by_def) == len(result.segments) == result.n_segments
    for e in result.segments[:: max(1, len(result.segments) // 12)]:  # a dozen segments, worst to best
        mask = np.ones(len(s), bool)
        for col, value in e["definition"].items():
            c = codings[[k.column for k in codings].index(col)]
            mask &= codes[[k.column for k in codings].index(col)] == c.labels.index(str(value))
        alone = ecce(y[mask], s[mask], sample_weight=w[mask])
        assert e["rows"] == mask.sum()
        assert e["ecce_r"] == pytest.approx(alone.ecce_r, rel=1e-12, abs=1e-15)
        assert e["ecce_r_sigma"] == pytest.approx(alone.ecce_r_sigma, rel=1e-12)
        assert e["p_value"] == pytest.approx(alone.ecce_r_pvalue, rel=1e-9, abs=1e-300)
        assert e["observed_rate"] == pytest.approx(np.average(y[mask], weights=w[mask]), rel=1e-12)
        assert e["mean_prediction"] == pytest.approx(np.average(s[mask], weights=w[mask]), rel=1e-12)
        assert e["o_e"] == pytest.approx((w[mask] * y[mask]).sum() / (w[mask] * s[mask]).sum(), rel=1e-12)
        assert e["o_e_ci_low"] < e["o_e"] < e["o_e_ci_high"]
        bins = np.minimum((s[mask] * 15).astype(int), 14)
        gap = np.bincount(bins, w[mask] * (y[mask] - s[mask]), 15)
        assert e["ece_l1_plugin"] == pytest.approx(np.abs(gap).sum() / w[mask].sum(), rel=1e-9)


def test_worst_first_untested_last_and_the_adjustments():
    y, s, w, cols = _data(3000, seed=2)
    result, *_ = _audit(y, s, w, cols, min_segment=200, adjust="holm")
    tested = [e for e in result.segments if e["tested"]]
    untested = [e for e in result.segments if not e["tested"]]
    assert result.segments == tested + untested
    assert all(e["rows"] < 200 and e["p_value"] is None and e["p_adjusted"] is None for e in untested)
    stats = [e["ecce_r_sigma"] for e in tested]
    assert stats == sorted(stats, reverse=True)
    assert result.n_segments_tested == len(tested)
    p = np.array([e["p_value"] for e in tested])
    assert np.allclose([e["p_adjusted"] for e in tested], adjust_pvalues(p, method="holm"), rtol=1e-12)
    assert result.mce_sigma == stats[0]
    assert result.mce_pvalue == pytest.approx(mce_pvalue(stats[0], len(tested)), rel=1e-12)
    assert result.segments[0]["definition"] is not None
    population = [e for e in result.segments if e["definition"] == {}]
    assert len(population) == 1 and population[0]["rows"] == 3000


def test_a_planted_intersection_is_the_worst_segment():
    y, s, w, cols = _data(100_000, seed=3, planted=0.08)
    result, *_ = _audit(y, s, w, cols)
    assert result.segments[0]["definition"] == {"country": "it", "device": "web"}
    assert result.segments[0]["p_adjusted"] < 1e-6
    assert result.mce_pvalue < 1e-6


def test_options_are_checked():
    from calibcli.core.errors import CalibcliError

    with pytest.raises(CalibcliError, match="adjust"):
        Options(segment_cols="country", adjust="fdr")
    with pytest.raises(CalibcliError, match="power"):
        Options(segment_cols="country", power=1.0)


def test_the_minimum_detectable_ecce_is_at_the_level_segments_are_judged_at():
    from calibcli.cumulative.brownian import minimum_detectable_ecce_sigma

    y, s, w, cols = _data(4000, seed=4)
    adjusted, *_ = _audit(y, s, w, cols, min_segment=50, adjust="holm", power=0.9)
    raw, *_ = _audit(y, s, w, cols, min_segment=50, adjust="none", power=0.9)
    m = adjusted.n_segments_tested
    assert adjusted.mde_level == pytest.approx(0.05 / m) and raw.mde_level == 0.05
    for a, r in zip(adjusted.segments, raw.segments):
        assert a["mde"] == pytest.approx(a["sigma"] * minimum_detectable_ecce_sigma(0.05 / m, 0.9), rel=1e-12)
        assert r["mde"] == pytest.approx(r["sigma"] * minimum_detectable_ecce_sigma(0.05, 0.9), rel=1e-12)
        assert a["mde"] > r["mde"]


def test_many_segments_in_one_partition_keep_their_own_sums():
    """Segment ids come as uint8/uint16 (radix sorts): a partition of 60 segments x 15 bins must not wrap."""
    rng = np.random.default_rng(5)
    n = 30_000
    s = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < s).astype(np.int64)
    cols = {
        "a": rng.integers(0, 12, n).astype(str).astype(object),
        "b": rng.integers(0, 5, n).astype(str).astype(object),
    }
    result, codings, codes = _audit(y, s, np.ones(n), cols, min_segment=10, max_values=12)
    pairs = [e for e in result.segments if len(e["definition"]) == 2]
    assert len(pairs) == 60
    for e in pairs:
        mask = (cols["a"] == e["definition"]["a"]) & (cols["b"] == e["definition"]["b"])
        bins = np.minimum((s[mask] * 15).astype(int), 14)
        gap = np.bincount(bins, y[mask] - s[mask], 15)
        assert e["ece_l1_plugin"] == pytest.approx(np.abs(gap).sum() / mask.sum(), rel=1e-9)
        assert e["positives"] == y[mask].sum()
