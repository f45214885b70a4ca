"""What each kind of regression prediction gives per row (SPEC 10): the PIT, the calibration curve's bin, the
scores and the interval columns that the accumulator sums, and the spread that ENCE bins over.

A :class:`Prediction` is fixed per input from its :class:`calibcli.io.regression.Target` and the options;
:meth:`Prediction.derive` turns one batch (the ``(n, m)`` prediction matrix, the targets, the global row
indices) into a :class:`Derived`: named per-row columns (summed, weighted, into the state), the curve bin of
each row (``1{row counts at expected proportion p_k} = 1{bin <= k}``: every curve here is monotone in k), the
PIT, and the rows whose quantiles crossed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.regression import scores

FORMS = ("interval", "quantile")
BINNINGS = ("equal-mass", "equal-width")


@dataclass(frozen=True)
class RegressionOptions:
    """What the regression family computes (the command's options, checked by :mod:`calibcli.regression.family`)."""

    curve_form: str | None = None  # None: interval for gaussian and samples, quantile for quantiles
    n_levels: int = 100
    levels: tuple[float, ...] = ()  # central intervals to evaluate (gaussian, samples, quantiles)
    crps_estimator: str = "nrg"
    n_bins: int = 10
    binning: str = "equal-mass"
    pit_bins: int = 10
    n_boot: int = 0
    alpha: float = 0.05
    seed: int = 0
    max_rows: int = 1 << 20
    boot_rows: int = 1 << 17

    @classmethod
    def of(cls, options, **given) -> RegressionOptions:
        """The fields of a command's ``options`` object (checked when it was made) that this record names, each
        read once by its name, and ``given`` (what the options object does not hold: the levels)."""
        taken = {f.name: getattr(options, f.name) for f in fields(cls) if hasattr(options, f.name)}
        return cls(**{**taken, **given})


def level_name(level: float) -> str:
    """A level in a metric's name: ``picp_0.9``."""
    return f"{level:g}"


@dataclass(frozen=True)
class Prediction:
    """One input's kind of prediction with the options that shape what is derived from it."""

    kind: str
    levels: tuple[float, ...]  # the quantiles' levels, or the intervals' levels (as given)
    options: RegressionOptions
    form: str = field(init=False)
    interval_levels: tuple[float, ...] = field(init=False)
    expected: tuple[float, ...] = field(init=False)

    def __post_init__(self) -> None:
        o = self.options
        form = o.curve_form or ("quantile" if self.kind == "quantiles" else "interval")
        if self.kind == "intervals" and form != "interval":
            raise CalibcliError(
                "{opt:curve_form} quantile needs quantiles, samples or a Gaussian: an interval input's curve is the "
                "coverage of each interval (drop {opt:curve_form})"
            )
        pairs = self._pairs()
        if self.kind == "quantiles":
            if form == "interval" and not pairs:
                raise CalibcliError(
                    f"{{opt:curve_form}} interval needs symmetric quantile levels (tau and 1 - tau), but the levels "
                    f"are {list(self.levels)}: drop {{opt:curve_form}}, or add the symmetric columns"
                )
            wanted = o.levels or tuple(sorted(pairs))
            missing = [lv for lv in wanted if lv not in pairs]
            if missing:
                raise CalibcliError(
                    f"{{opt:level}} {level_name(missing[0])} has no pair of quantile columns (levels "
                    f"{(1 - missing[0]) / 2:g} and {(1 + missing[0]) / 2:g}); the central intervals of these quantiles "
                    f"are at {[float(f'{p:.12g}') for p in sorted(pairs)] or 'no level'}"
                )
            interval_levels: tuple[float, ...] = tuple(wanted)
        elif self.kind == "intervals":
            interval_levels = self.levels
        else:
            interval_levels = o.levels or (0.9,)
        if form == "quantile" and self.kind == "quantiles":
            expected = self.levels
        elif self.kind == "quantiles":
            expected = tuple(sorted(pairs))
        elif self.kind == "intervals":
            expected = tuple(sorted(self.levels))
        else:
            expected = tuple(float(p) for p in np.linspace(0.0, 1.0, o.n_levels))
        object.__setattr__(self, "form", form)
        object.__setattr__(self, "interval_levels", tuple(float(v) for v in interval_levels))
        object.__setattr__(self, "expected", tuple(float(v) for v in expected))

    def _pairs(self) -> dict[float, tuple[int, int]]:
        """The central intervals that quantile columns form: level 1 - 2 tau -> (index of tau, of 1 - tau)."""
        if self.kind != "quantiles":
            return {}
        out = {}
        levels = np.asarray(self.levels)
        for i, tau in enumerate(levels):
            if tau >= 0.5:
                continue
            j = np.flatnonzero(np.abs(levels - (1.0 - tau)) < 1e-9)
            if len(j):
                out[float(f"{1.0 - 2.0 * tau:.12g}")] = (i, int(j[0]))
        return out

    # -- what the state holds --------------------------------------------------------------------

    @property
    def has_pit(self) -> bool:
        return self.kind != "intervals"

    @property
    def has_spread(self) -> bool:
        """A predicted standard deviation per row (ENCE, UCE, sharpness)."""
        return self.kind in ("gaussian", "samples")

    @property
    def columns(self) -> tuple[str, ...]:
        """The per-row columns summed into the state, in order."""
        names: list[str] = []
        if self.kind in ("gaussian", "samples"):
            names += ["crps", "sigma2", "r2"]
        if self.kind == "gaussian":
            names += ["nll", "interval_score_avg99"]
        if self.kind in ("gaussian", "quantiles", "intervals"):
            names += ["pinball"]
        for lv in self.interval_levels:
            s = level_name(lv)
            names += [f"cov_{s}", f"width_{s}", f"isc_{s}"]
        return tuple(names)

    @property
    def sample_columns(self) -> tuple[str, ...]:
        """What the row sample of ``max_rows`` rows keeps of a row: the std and the squared error (ENCE's bins),
        the PIT (the exact KS statistic), each interval's coverage and width (its size-stratified coverage)."""
        names = ["sigma", "r2"] if self.has_spread else []
        names += ["pit"] if self.has_pit else []
        for lv in self.interval_levels:
            names += [f"cov_{level_name(lv)}", f"width_{level_name(lv)}"]
        return tuple(names)

    @property
    def boot_columns(self) -> tuple[str, ...]:
        """What the bootstrap's rows keep: every per-row column, then the std and the curve bin."""
        return (
            *self.columns,
            *(("sigma",) if self.has_spread else ()),
            *(("curve_bin",) if self.kind != "intervals" else ()),
        )

    @property
    def n_bins_curve(self) -> int:
        return len(self.expected) + 1

    # -- one batch ---------------------------------------------------------------------------------

    def derive(self, preds: np.ndarray, y: np.ndarray, row_index: np.ndarray) -> Derived:
        """The per-row quantities of one batch (``preds`` as :mod:`calibcli.io.regression` hands them over)."""
        o = self.options
        cols: dict[str, np.ndarray] = {}
        pit = sigma = crossed = None
        bounds: list[tuple[np.ndarray, np.ndarray]] = []
        if self.kind == "gaussian":
            mu, sigma = preds[:, 0], preds[:, 1]
            z = scores.gaussian_z(y, mu, sigma)
            pit = scores.gaussian_pit(y, mu, sigma)
            cols["crps"] = scores.crps_gaussian(y, mu, sigma)
            cols["sigma2"] = sigma * sigma
            cols["r2"] = (y - mu) ** 2
            cols["nll"] = scores.nll_gaussian(y, mu, sigma)
            cols["interval_score_avg99"] = scores.gaussian_interval_score_mean(y, mu, sigma)
            cols["pinball"] = scores.gaussian_pinball(y, mu, sigma)
            from scipy.special import ndtri

            for lv in self.interval_levels:
                half = sigma * ndtri(0.5 + lv / 2.0)
                bounds.append((mu - half, mu + half))
            curve_bin = self._gaussian_bins(z)
        elif self.kind == "samples":
            v = scores.uniforms(o.seed, row_index)
            pit = scores.sample_pit(y, preds, v)
            mean = preds.mean(axis=1)
            sigma = preds.std(axis=1)
            cols["crps"] = scores.crps_ensemble(y, preds, o.crps_estimator)
            cols["sigma2"] = sigma * sigma
            cols["r2"] = (y - mean) ** 2
            for lv in self.interval_levels:
                lo, hi = np.quantile(preds, [(1.0 - lv) / 2.0, (1.0 + lv) / 2.0], axis=1)
                bounds.append((lo, hi))
            curve_bin = self._pit_bins(pit)
        elif self.kind == "quantiles":
            q, crossed = scores.sorted_quantiles(preds)
            v = scores.uniforms(o.seed, row_index)
            levels = np.asarray(self.levels)
            pit = scores.quantile_pit(y, q, levels, v)
            cols["pinball"] = scores.pinball(y, q, levels)
            pairs = self._pairs()
            for lv in self.interval_levels:
                i, j = pairs[lv]
                bounds.append((q[:, i], q[:, j]))
            if self.form == "quantile":
                curve_bin = np.count_nonzero(q < y[:, None], axis=1)
            else:
                covered = [(q[:, i] <= y) & (y <= q[:, j]) for i, j in (pairs[lv] for lv in self.expected)]
                curve_bin = len(self.expected) - np.sum(covered, axis=0)
        else:
            lows, highs = preds[:, 0::2], preds[:, 1::2]
            ends, end_levels = [], []
            for k, lv in enumerate(self.levels):
                bounds.append((lows[:, k], highs[:, k]))
                ends += [lows[:, k], highs[:, k]]
                end_levels += [(1.0 - lv) / 2.0, (1.0 + lv) / 2.0]
            cols["pinball"] = scores.pinball(y, np.column_stack(ends), np.asarray(end_levels))
            curve_bin = None
        for lv, (lo, hi) in zip(self.interval_levels, bounds, strict=True):
            s = level_name(lv)
            cols[f"cov_{s}"] = ((lo <= y) & (y <= hi)).astype(np.float64)
            cols[f"width_{s}"] = hi - lo
            cols[f"isc_{s}"] = scores.interval_score(y, lo, hi, lv)
        return Derived(np.column_stack([cols[c] for c in self.columns]), curve_bin, pit, sigma, crossed)

    def _gaussian_bins(self, z: np.ndarray) -> np.ndarray:
        """Quantile form: ``1{z <= Phi^-1(p_k)}``; interval form: ``1{|z| <= Phi^-1(1/2 + p_k/2)}`` (as
        uncertainty-toolbox compares the standardised residual with the normal quantiles)."""
        from scipy.special import ndtri

        p = np.asarray(self.expected)
        if self.form == "quantile":
            return np.searchsorted(ndtri(p), z, side="left")
        return np.searchsorted(ndtri(0.5 + p / 2.0), np.abs(z), side="left")

    def _pit_bins(self, u: np.ndarray) -> np.ndarray:
        """Quantile form ``1{u <= p_k}``; interval form ``1{|2u - 1| <= p_k}`` (the central interval of the PIT)."""
        p = np.asarray(self.expected)
        return np.searchsorted(p, u if self.form == "quantile" else np.abs(2.0 * u - 1.0), side="left")


@dataclass
class Derived:
    """One batch's per-row quantities: ``values`` ``(n, len(columns))``; the curve bin (None for intervals,
    whose curve is their coverage columns); the PIT; the predicted std (gaussian, samples); crossed rows."""

    values: np.ndarray
    curve_bin: np.ndarray | None
    pit: np.ndarray | None
    sigma: np.ndarray | None
    crossed: np.ndarray | None
