"""SmoothECE's compiled bootstrap loops (calibcli/smooth/kernels.py) against the NumPy passes, their reference (kept
here), within the tolerance rule (1e-12 relative, SPEC 8.1: the loops sum in their own plain order); and each
bandwidth's evaluation, which reads the live part of the chosen rows of the spectra without gathering them,
against the gathered form."""

from __future__ import annotations

import numpy as np
import pytest

from _tolerance import assert_within_rule

from calibcli.core import resampling
from calibcli.core.family import Bootstrap
from calibcli.core.resampling import Multiplicities
from calibcli.smooth.bootstrap import CellBootstrap, RowBootstrap, _sinc2, smece_rows, spectra
from calibcli.smooth.grid import _CUTOFF, CellSums, _multiplier


def _numpy_run_deposits(positive, cell, s0, s1, s2, n_cells, want_curve):
    """The NumPy form of the deposits (bincounts over the block, row r offset by r (M + 1)), before the division."""
    R = s0.shape[0]
    size = n_cells + 1
    offset = (np.arange(R) * size)[:, None]
    lower_at, upper_at = (cell + offset).ravel(), (cell + 1 + offset).ravel()

    def deposit(lower, upper):
        return (
            np.bincount(lower_at, weights=lower.ravel(), minlength=R * size)
            + np.bincount(upper_at, weights=upper.ravel(), minlength=R * size)
        ).reshape(R, size)

    w_lower, w_upper = s0 - s1, s1
    y_lower, y_upper = np.where(positive, w_lower, 0.0), np.where(positive, w_upper, 0.0)
    z_lower = (cell * w_lower + (s1 - s2)) / n_cells
    z_upper = (cell * s1 + s2) / n_cells
    out = [deposit(y_lower - z_lower, y_upper - z_upper)]
    if want_curve:
        out += [deposit(y_lower, y_upper), deposit(w_lower, w_upper)]
    return out


def _numpy_resample(boot: RowBootstrap, reps: np.ndarray):
    """The row bootstrap's block as NumPy made it: the multiplicities (Multiplicities.block), the run sums by
    np.add.reduceat, the total by np.sum, the deposits by bincount, divided by the total."""
    g = boot.multiplicities.block(reps)
    if boot.w is not None:
        g = np.multiply(g, boot.w, out=g)
    gf = g * boot.f
    s0 = np.add.reduceat(g, boot.offsets, axis=1)
    s1 = np.add.reduceat(gf, boot.offsets, axis=1)
    gf *= boot.f
    s2 = np.add.reduceat(gf, boot.offsets, axis=1)
    total = g.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        deposits = [
            d / total[:, None]
            for d in _numpy_run_deposits(boot.run_positive, boot.run_cell, s0, s1, s2, boot.n_cells, boot.want_curve)
        ]
    return total, deposits


@pytest.mark.parametrize(
    ("n", "n_cells", "weighted", "want_curve"),
    [(3000, 4096, False, False), (3000, 4096, True, True), (40, 4096, False, True), (20000, 256, True, False),
     (20000, 8, False, True)],
)
def test_the_row_bootstrap_block_equals_its_numpy_form(n, n_cells, weighted, want_curve):
    """Draws, run sums (runs of 1 to thousands of rows), totals and deposits."""
    rng = np.random.default_rng(n + n_cells)
    z = np.round(rng.beta(2.0, 5.0, n), 3) if n_cells == 8 else rng.beta(2.0, 5.0, n)
    z[:3] = [0.0, 1.0, 0.5]
    y = (rng.random(n) < z).astype(np.int64)
    w = rng.gamma(2.0, 1.0, n) if weighted else None
    row_index = np.sort(rng.choice(10 * n, n, replace=False))
    boot = RowBootstrap(row_index, z, y, w, n_cells=n_cells, want_curve=want_curve, seed=12345)
    reps = np.array([0, 1, 7, 999, 5000])
    block = boot.resample(reps, compiled=True)
    total, deposits = _numpy_resample(boot, reps)
    assert_within_rule(block.total, total)
    numpy_form = boot.resample(reps, compiled=False)
    assert np.array_equal(numpy_form.total, total)  # the NumPy backend is these passes
    for got, want in zip(numpy_form.deposits, deposits, strict=True):
        assert np.array_equal(got, want)
    assert len(block.deposits) == len(deposits) == (3 if want_curve else 1)
    for got, want in zip(block.deposits, deposits, strict=True):
        assert_within_rule(got, want)


def test_a_replicate_without_weight_gives_nan_deposits_as_numpy_did():
    """One row: some replicates draw it 0 times (total 0, deposits NaN, left out by the solver)."""
    boot = RowBootstrap(np.array([5]), np.array([0.3]), np.array([1]), None, n_cells=16, want_curve=False, seed=1)
    reps = np.arange(40)
    block = boot.resample(reps, compiled=True)
    total, deposits = _numpy_resample(boot, reps)
    assert (total == 0).any()
    assert_within_rule(block.total, total)
    assert_within_rule(block.deposits[0], deposits[0])


def test_the_cell_bootstrap_deposits_equal_their_numpy_form():
    rng = np.random.default_rng(4)
    z = rng.beta(2.0, 5.0, 5000)
    y = (rng.random(5000) < z).astype(np.int64)
    boot = CellBootstrap(CellSums.of_rows(z, y, rng.gamma(2.0, 1.0, 5000), 1024), want_curve=True, seed=3)
    reps = np.arange(6)
    block = boot.resample(reps, compiled=True)
    # the same draws again, by the replicates' own generators, as the bootstrap makes them
    again = CellBootstrap(CellSums.of_rows(z, y, None, 1024), want_curve=True, seed=3)
    assert np.isfinite(again.resample(reps).deposits[0]).all()
    s0 = np.array([block.total])  # one check of the division and order over a hand-made block of sums
    runs = len(boot.count)
    s0 = rng.gamma(2.0, 1.0, (3, runs))
    s1 = s0 * rng.random((3, runs))
    s2 = s1 * rng.random((3, runs))
    total = s0.sum(axis=1)
    from calibcli.smooth.bootstrap import _run_deposits

    got = _run_deposits(boot.positive, boot.cell, s0, s1, s2, total, boot.n_cells, True, True)
    numpy_form = _run_deposits(boot.positive, boot.cell, s0, s1, s2, total, boot.n_cells, True, False)
    want = [d / total[:, None] for d in _numpy_run_deposits(boot.positive, boot.cell, s0, s1, s2, boot.n_cells, True)]
    for a, b, c in zip(got, numpy_form, want, strict=True):
        assert_within_rule(a, c)
        assert np.array_equal(b, c)
    assert_within_rule(block.deposits[0], boot.resample(reps, compiled=False).deposits[0])


def _numpy_smoothed_rows(spec, sigma):
    """K_sigma applied to each row's measure at its bandwidth, as NumPy made it (the zero-padded product mirrored,
    its real FFT's real part, halved)."""
    R, size = spec.shape
    n_cells = size - 1
    product = np.zeros((R, 2 * n_cells))

    def mirrored(rows, values):
        width = values.shape[1]
        product[rows, :width] = values
        if width > 1:
            top = min(width, n_cells)
            product[rows, 2 * n_cells - top + 1 :] = values[:, top - 1 : 0 : -1]

    resolved = sigma * n_cells >= 2.0
    rows = np.flatnonzero(resolved)
    if len(rows):
        s = sigma[rows]
        n_live = np.minimum(n_cells + 1, np.ceil(_CUTOFF / s).astype(np.int64) + 1)
        width = int(n_live.max())
        k = np.arange(width, dtype=np.float64)
        with np.errstate(over="ignore"):
            mult = np.exp(-0.5 * ((np.pi * k)[None, :] * s[:, None]) ** 2) / _sinc2(n_cells, width)
        live = k[None, :] < n_live[:, None]
        mirrored(rows, np.where(live, spec[rows, :width] * mult, 0.0))
    for r in np.flatnonzero(~resolved):
        mult = _multiplier(n_cells, float(sigma[r]))
        mirrored(np.array([r]), spec[r : r + 1, : len(mult)] * mult)
    return 0.5 * np.fft.rfft(product, axis=1).real


def _numpy_abs_integral_rows(r):
    absolute = np.abs(r)
    seg = absolute[:, :-1] + absolute[:, 1:]
    crossing = np.multiply(r[:, :-1], r[:, 1:], out=absolute[:, :-1]) < 0
    rows, cells = np.divmod(np.flatnonzero(crossing), crossing.shape[1])
    if len(rows):
        a, b = r[rows, cells], r[rows, cells + 1]
        seg[rows, cells] = (a**2 + b**2) / seg[rows, cells]
    return seg.sum(axis=1) * 0.5 / (r.shape[1] - 1)


@pytest.mark.parametrize("n_cells", [64, 4096])
def test_smece_rows_equals_the_numpy_smoothing_and_integral(n_cells):
    """Bandwidths from below a cell (the sampled kernel) to wider than the interval, rows picked in any order."""
    rng = np.random.default_rng(n_cells)
    deposits = rng.standard_normal((9, n_cells + 1)) / n_cells
    spec = spectra(deposits)
    rows = np.array([4, 0, 8, 8, 2, 7, 1])
    sigma = np.array([0.02, 0.3 / n_cells, 5.0, 0.001, 1.5 / n_cells, 0.2, 0.07])
    want = _numpy_abs_integral_rows(_numpy_smoothed_rows(spec[rows], sigma))
    assert np.array_equal(smece_rows(spec, rows, sigma), want)
    resolved = sigma * n_cells >= 2.0
    assert np.array_equal(smece_rows(spec, rows[resolved], sigma[resolved]), want[resolved])


def test_the_draws_are_the_multiplicities_of_resampling():
    """The compiled draws follow calibcli.core.resampling's table and thresholds (through a block's run sums of single
    rows: each run's g is one row's multiplicity)."""
    n = 50_000
    z = (np.arange(n) + 0.5) / n
    boot = RowBootstrap(np.arange(n) * 3, z, np.zeros(n, dtype=np.int64), None, n_cells=1 << 16, want_curve=False,
                        seed=99)
    assert len(boot.offsets) == n
    reps = np.array([2, 3])
    from calibcli.smooth import kernels

    total, s0 = np.empty(2), np.empty((2, n))
    kernels.run_sums(resampling._stream_keys(99, reps), boot.multiplicities._positions, boot.f, False, boot.f,
                     boot.offsets, resampling._CELL_INT8, resampling._THRESHOLDS, total, s0, np.empty((2, n)),
                     np.empty((2, n)))
    want = Multiplicities(99, np.arange(n) * 3).block(reps)
    assert np.array_equal(s0, want)
    assert want.max() >= 6  # the split cells of the table (rare large counts) are among them


def test_smoothed_rows_equal_the_numpy_smoothing():
    """The curves' and the ICI's smoothing (the products written by the same kernel)."""
    from calibcli.smooth.bootstrap import smoothed_rows

    rng = np.random.default_rng(8)
    spec = spectra(rng.standard_normal((5, 257)) / 256)
    sigma = np.array([0.05, 1.0 / 256, 3.0, 0.011, 0.4])
    assert np.array_equal(smoothed_rows(spec, sigma), _numpy_smoothed_rows(spec, sigma))


def test_a_grouped_bootstrap_gives_the_same_numbers_compiled_or_not(monkeypatch):
    """finish_groups over groups with rows: the compiled loops (past _COMPILED_DRAWS) and NumPy's passes (below)
    give every replicate within the tolerance rule."""
    import calibcli.smooth.bootstrap as sb
    from calibcli.smooth.estimator import finish_groups
    from calibcli.smooth.grid import STATS_GRID

    rng = np.random.default_rng(21)
    problems = []
    for g, n in enumerate((3000, 800, 5000)):
        z = rng.beta(2.0, 5.0, n)
        y = (rng.random(n) < z**1.2).astype(np.int64)
        w = rng.gamma(2.0, 1.0, n) if g == 1 else None
        index = np.arange(n) + 10_000 * g
        problems.append((CellSums.of_rows(z, y, w, STATS_GRID), (index, z, y, w), n))
    results = {}
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(sb, "_COMPILED_DRAWS", threshold)
        results[threshold] = finish_groups(problems, Bootstrap(n_boot=50, seed=4), curve_points=51)
    for a, b in zip(results[0], results[1 << 62], strict=True):
        assert_within_rule(a.replicates, b.replicates)
        assert_within_rule([a.ci_low, a.ci_high, a.smece], [b.ci_low, b.ci_high, b.smece])


def test_a_small_smece_does_not_load_numba():
    """2^17 rows x 1000 resamples stay below _COMPILED_DRAWS: an ungrouped smece never pays for loading Numba."""
    import subprocess
    import sys
    from pathlib import Path

    from calibcli.smooth.bootstrap import _COMPILED_DRAWS
    from calibcli.smooth.grid import ROW_LIMIT

    assert ROW_LIMIT * 1000 < _COMPILED_DRAWS
    sample = Path(__file__).resolve().parents[2] / "sample_data" / "breast_cancer_nb.parquet"
    probe = (
        "import sys\nfrom calibcli.cli.entry import main\n"
        f"sys.argv = ['calibcli', 'smece', {str(sample)!r}, '--n-boot', '200', '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('numba' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.stderr.strip().splitlines()[-1] == "False", proc.stderr
