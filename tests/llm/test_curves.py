"""The selective-prediction numbers against their definitions (SPEC 11) on hand-worked examples with ties: every
within-block order enumerated and the per-row definitions averaged (spreading a block's errors evenly is that
average, since r_k is linear in the errors), AUROC against scikit-learn's, the oracle by its order."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from calibcli.llm import curves

CONF = np.array([0.9, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.5, 0.4])
CORRECT = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 0])


def _orders(conf):
    """Every order of the rows by confidence descending, ties permuted in every way."""
    values = sorted(set(conf), reverse=True)
    groups = [list(np.flatnonzero(conf == v)) for v in values]
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for p in perms for i in p]


def _brute(conf, correct, q=0.5):
    """Exact averages over every tie order of AURC, AUGRC and r at ceil(q n), and the spread-errors curve."""
    n = len(conf)
    sums = [Fraction(0)] * 3
    orders = list(_orders(conf))
    for order in orders:
        err = [1 - int(correct[i]) for i in order]
        e = list(itertools.accumulate(err))
        r = [Fraction(e[k], k + 1) for k in range(n)]
        sums[0] += sum(r) / n
        sums[1] += Fraction(sum(e), n * n)
        sums[2] += r[math.ceil(q * n) - 1]
    return [float(s / len(orders)) for s in sums]


def _blocks(conf, correct, weight=None):
    b = curves.tie_blocks(conf)
    w = np.ones(len(conf)) if weight is None else weight
    return b, b.sums(w), b.sums(w * (1 - correct))


def test_areas_equal_the_average_over_tie_orders():
    _, s, e = _blocks(CONF, CORRECT)
    aurc, augrc, r_half = _brute(CONF, CORRECT)
    assert curves.aurc(s, e) == pytest.approx(aurc, rel=1e-13)
    assert curves.augrc(s, e) == pytest.approx(augrc, rel=1e-13)
    assert curves.risk_at_coverage(s, e, 0.5) == pytest.approx(r_half, rel=1e-13)
    # worked by hand: blocks (0.9: 1 of 2 wrong), (0.8: 1 of 3), (0.7: 0 of 1), (0.6: 2 of 2), (0.5: 0), (0.4: 1)
    r = [0.5 / 1, 1 / 2, (1 + 1 / 3) / 3, (1 + 2 / 3) / 4, 2 / 5, 2 / 6, 3 / 7, 4 / 8, 4 / 9, 5 / 10]
    assert curves.aurc(s, e) == pytest.approx(np.mean(r), rel=1e-13)
    assert curves.augrc(s, e) == pytest.approx(np.mean(np.array(r) * np.arange(1, 11) / 10), rel=1e-13)


def test_oracle_and_e_aurc_use_the_exact_oracle_order():
    n, m = 10, 4
    r = [max(0, k - (n - m)) / k for k in range(1, n + 1)]
    assert curves.oracle_aurc(n, m) == pytest.approx(np.mean(r), rel=1e-14)
    _, s, e = _blocks(CONF, CORRECT)
    oracle = curves.oracle_aurc(s.sum(), e.sum())
    assert curves.aurc(s, e) - oracle > 0
    # the oracle order itself has E-AURC 0
    conf = np.where(CORRECT == 1, 1.0, 0.0) + np.arange(10) * 1e-3
    _, s2, e2 = _blocks(conf, CORRECT)
    assert curves.aurc(s2, e2) == pytest.approx(float(curves.oracle_aurc(10, 5)), rel=1e-14)


def test_coverage_at_risk_is_the_largest_k_meeting_the_risk():
    _, s, e = _blocks(CONF, CORRECT)
    spread = [0.5, 1 / 2, (1 + 1 / 3) / 3, (1 + 2 / 3) / 4, 2 / 5, 2 / 6, 3 / 7, 4 / 8, 4 / 9, 5 / 10]
    for t in (0.2, 0.3, 1 / 3, 0.34, 0.4, 0.45, 0.5, 1.0):
        ks = [k + 1 for k, r in enumerate(spread) if r <= t + 1e-12]
        assert curves.coverage_at_risk(s, e, t) == pytest.approx(max(ks, default=0) / 10, abs=1e-15), t


def test_auroc_equals_scikit_learn_with_ties():
    from sklearn.metrics import roc_auc_score

    _, s, e = _blocks(CONF, CORRECT)
    assert curves.auroc(s, e) == pytest.approx(roc_auc_score(CORRECT, CONF), rel=1e-14)
    assert np.isnan(curves.auroc(s, np.zeros_like(e)))


def test_weights_are_repeated_rows():
    rng = np.random.default_rng(3)
    conf = rng.choice([0.2, 0.5, 0.6, 0.9], size=40)
    correct = rng.integers(0, 2, size=40)
    m = rng.integers(0, 4, size=40).astype(float)
    _, s, e = _blocks(conf, correct, m)
    keep = np.repeat(np.arange(40), m.astype(int))
    _, s2, e2 = _blocks(conf[keep], correct[keep])
    for f in (curves.aurc, curves.augrc, curves.auroc):
        assert f(s, e) == pytest.approx(f(s2, e2), rel=1e-13)
    for q in (0.3, 0.9, 1.0):
        assert curves.risk_at_coverage(s, e, q) == pytest.approx(curves.risk_at_coverage(s2, e2, q), rel=1e-13)
    assert curves.coverage_at_risk(s, e, 0.4) == pytest.approx(curves.coverage_at_risk(s2, e2, 0.4), rel=1e-13)


def test_harmonic_difference_on_both_sides_of_the_series_switch():
    from scipy.special import digamma

    for a in (0.0, 5.0, 998.0, 999.0, 1e6):
        for s in (1.0, 2.0, 7.0, 1000.0):
            exact = float(sum(Fraction(1, int(a) + j) for j in range(1, int(s) + 1)))
            assert curves.harmonic_difference(np.array([a]), np.array([s]))[0] == pytest.approx(exact, rel=1e-12)
    assert digamma(3.0) - digamma(1.0) == pytest.approx(1.5)


def test_against_torch_uncertainty_on_shared_data():
    """torch-uncertainty 0.13's numbers on this seeded data (scripts/llm/compare_torch_uncertainty.py printed them;
    torch is not a test dependency): its AURC is the trapezoid form of the same r_k normalised by 1 - 1/n, its risk
    at coverage the same definition, its coverage at risk the same in float32."""
    rng = np.random.default_rng(35)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=2000)
    labels = np.array([rng.choice(4, p=p) for p in probs])
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    _, s, e = _blocks(conf, correct)
    r = np.cumsum(1 - correct[np.argsort(-conf)]) / np.arange(1, 2001)
    assert (r.sum() - (r[0] + r[-1]) / 2) / 1999 == pytest.approx(0.3137263937942096, rel=1e-8)
    assert curves.aurc(s, e) == pytest.approx(r.mean(), rel=1e-13)
    assert curves.risk_at_coverage(s, e, 0.8) == pytest.approx(0.405625, rel=1e-12)
    assert curves.coverage_at_risk(s, e, 0.3) == pytest.approx(0.40849998593330383, rel=1e-7)
