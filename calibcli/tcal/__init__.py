"""T-Cal: a test of perfect calibration (SPEC section 4; seed 004).

Lee, Huang, Hassani, Dobriban, *T-Cal: An optimal test for the calibration of predictive
models* (JMLR 2023). Reference implementation: https://github.com/dh7401/T-Cal.

What is here
- :func:`tcal_statistic`: the debiased plug-in estimate ``T_m`` of the squared l2-ECE (SPEC 4.1,
  the paper's eq. 6). Binary / top-label data use the scalar residual ``U = y - z`` with ``m``
  equal-width bins; canonical data (K > 2 columns) use the residual vectors ``U = e_c - P`` and the
  equal-volume simplex partition of SPEC 4.3 (:func:`simplex_bin_keys`). The paper writes the binary
  case with K = 2 vectors, so its ``T^d`` is twice the scalar ``T_m``; its constants are halved here.
- :func:`tcal_test`: the adaptive test (Algorithm 2: levels ``b = 1..L`` with ``m = 2^b`` bins per
  axis) or the single-scale test of Algorithm 1 for a known Holder smoothness ``s``
  (``m* = floor(n^(2/(4s+K-1)))``), with three null distributions (``y-bootstrap``,
  ``consistency``, ``chebyshev``) and two ways to combine levels (``bonferroni``, ``min-p``);
  :func:`tcal_tests`: several tests of the same seed at once, the same results (tests of the same rows,
  such as recalibrated predictions, share their draws and try each other's sort order).
- :func:`binomial_test`: the exact binomial test for predictors with few distinct values
  (the paper's appendix 8.2.4, SPEC 4.4), and the rule :func:`discreteness` that chooses it; both
  also from per-value counts (:func:`binomial_test_from_counts`, :func:`discreteness_from_counts`),
  which a stream accumulates exactly over every row (:mod:`calibcli.tcal.accumulator`).

Where it is, by module
- :mod:`~calibcli.tcal.procedure`: :func:`tcal_test` and :func:`tcal_statistic` (validation, levels, engine,
  resamples, combination, result).
- :mod:`~calibcli.tcal.engine`: the ``Engine`` protocol and the chunked, seeded driver of the resamples;
  :mod:`~calibcli.tcal.scalar` (binary / top-label) and :mod:`~calibcli.tcal.vector` (canonical) implement it.
- :mod:`~calibcli.tcal.combine`: Monte Carlo p-values per level, Bonferroni and min-p.
- :mod:`~calibcli.tcal.scales`: levels, ``m*``, Theorem 3.1's constant; :mod:`~calibcli.tcal.simplex`: the
  simplex partition; :mod:`~calibcli.tcal.binomial`: discrete predictors; :mod:`~calibcli.tcal.results`: the
  result types.
"""

from __future__ import annotations

from calibcli.tcal.binomial import (
    DISCRETE_RULE,
    BinomialRow,
    BinomialTestResult,
    DiscreteCheck,
    binomial_test,
    binomial_test_from_counts,
    discreteness,
    discreteness_from_counts,
    is_discrete,
)
from calibcli.tcal.combine import TIE_RTOL, MonteCarloCombination, monte_carlo_combine
from calibcli.tcal.procedure import HOPELESS_RATE, tcal_statistic, tcal_test, tcal_tests
from calibcli.tcal.results import COMBINES, NULLS, STATISTIC_NAME, TcalLevel, TcalResult
from calibcli.tcal.scales import BYTES_PER_CELL, chebyshev_constant, n_levels, optimal_n_bins
from calibcli.tcal.simplex import simplex_bin_index, simplex_bin_keys

__all__ = [
    "BYTES_PER_CELL",
    "COMBINES",
    "DISCRETE_RULE",
    "HOPELESS_RATE",
    "STATISTIC_NAME",
    "TIE_RTOL",
    "MonteCarloCombination",
    "monte_carlo_combine",
    "NULLS",
    "BinomialRow",
    "BinomialTestResult",
    "DiscreteCheck",
    "TcalLevel",
    "TcalResult",
    "binomial_test",
    "binomial_test_from_counts",
    "chebyshev_constant",
    "discreteness",
    "discreteness_from_counts",
    "is_discrete",
    "n_levels",
    "optimal_n_bins",
    "simplex_bin_index",
    "simplex_bin_keys",
    "tcal_statistic",
    "tcal_test",
    "tcal_tests",
]
