"""Recalibration of regression predictions (SPEC 10 "Recalibration"), as frozen objects saved as JSON:

- :class:`StdScaling`: ``sigma' = s* sigma`` with ``s* = sqrt(mean ((y - mu) / sigma)^2)``, the NLL-optimal factor
  in closed form (Levi et al. 2019; uncertainty-toolbox's ``optimize_recalibration_ratio`` minimises the
  miscalibration area numerically instead);
- :class:`IsotonicPIT`: Kuleshov, Fenner, Ermon (2018): the map ``p -> R(p) = mean 1{u <= p}`` of the PIT
  ``u`` on calibration rows (the empirical CDF of the PIT is already monotone: it is its own isotonic fit),
  applied to the levels. A Gaussian has every quantile, so its recalibrated quantile at ``tau`` is the model's
  quantile at ``R^-1(tau)``; quantiles (and an ensemble's sorted members, its quantiles at ``j / (M + 1)``, the
  PIT's convention) are re-labelled instead: the model's ``tau``-quantile ``q`` is the recalibrated CDF
  ``R(F(y))``'s ``R(tau)``-quantile, since ``R(F(q)) = R(tau)``, exactly, where interpolating the model's
  quantiles at ``R^-1(tau)`` would need levels beyond the outermost ones for any overconfident model
  (:meth:`IsotonicPIT.relabelled_levels`);
- :class:`Conformal`: split-conformal adjustment of a central interval (Romano, Patterson, Candes 2019, CQR):
  the ``ceil((n + 1)(1 - a)) / n`` empirical quantile ``Q`` of ``max(l - y, y - u)`` widens (or narrows) every
  interval to ``[l - Q, u + Q]``, with coverage at least ``1 - a`` on exchangeable rows.

Each has ``fit(...)`` (a classmethod on calibration rows), what it writes back (``std``, ``quantiles`` or
``interval``), ``to_dict()`` / :func:`from_dict`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.regression import scores

KIND = "calibcli.regression_calibrator"
VERSION = 1


@dataclass(frozen=True)
class StdScaling:
    factor: float

    @classmethod
    def fit(cls, y, mean, std, sample_weight=None) -> StdScaling:
        z2 = ((np.asarray(y) - np.asarray(mean)) / np.asarray(std)) ** 2
        w = np.ones(len(z2)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        return cls(float(math.sqrt(np.sum(w * z2) / np.sum(w))))

    def std(self, std) -> np.ndarray:
        """The recalibrated standard deviations."""
        return self.factor * np.asarray(std, dtype=float)

    def to_dict(self) -> dict:
        return {"kind": KIND, "version": VERSION, "method": "std-scaling", "factor": self.factor}


@dataclass(frozen=True)
class IsotonicPIT:
    """The recalibration map as knots ``(p_j, R(p_j))`` of the PIT's empirical CDF, linearly interpolated."""

    p: tuple[float, ...]
    r: tuple[float, ...]

    @classmethod
    def fit(cls, pit, sample_weight=None, max_knots: int = 1001) -> IsotonicPIT:
        u = np.asarray(pit, dtype=float)
        n = len(u)
        if n < 2:
            raise CalibcliError(f"isotonic-pit needs at least 2 calibration rows, got {n}")
        if sample_weight is None:
            u = np.sort(u)
            ecdf = np.arange(1, n + 1) / n
        else:  # the weighted empirical CDF (frequency weights: a row of weight 2 counts twice)
            order = np.argsort(u, kind="stable")
            u, w = u[order], np.asarray(sample_weight, dtype=float)[order]
            ecdf = np.cumsum(w) / np.sum(w)
        keep = np.unique(np.linspace(0, n - 1, min(n, max_knots - 2)).astype(int))
        p = np.concatenate([[0.0], u[keep], [1.0]])
        r = np.concatenate([[0.0], ecdf[keep], [1.0]])
        p, first = np.unique(p, return_index=True)
        return cls(tuple(p.tolist()), tuple(np.maximum.accumulate(r[first]).tolist()))

    def calibrated(self, u) -> np.ndarray:
        """``R(u)``: the recalibrated CDF value of a PIT value."""
        return np.interp(np.asarray(u, dtype=float), self.p, self.r)

    def level(self, tau) -> np.ndarray:
        """``R^-1(tau)``: the model's level whose quantile is the recalibrated quantile at ``tau``."""
        return np.interp(np.asarray(tau, dtype=float), self.r, self.p)

    def relabelled_levels(self, levels) -> tuple[float, ...]:
        """The level ``R(tau)`` each quantile at ``tau`` holds under the recalibrated CDF ``R(F(y))``, rounded to
        6 significant digits (the written columns' names state them: ``q0.0733333``); refused where two levels
        round to one or one to 0 or 1 (a map of too few calibration rows for so close a pair of levels)."""
        taus = np.asarray(levels, dtype=float)
        out = tuple(float(level_text(v)) for v in self.calibrated(taus))
        for k, v in enumerate(out):
            if not 0.0 < v < 1.0:
                raise CalibcliError(
                    f"isotonic-pit maps the quantile level {taus[k]:.12g} to {v:g}, outside (0, 1): the map has too "
                    "few calibration rows for it; fit on more rows"
                )
            if k and v <= out[k - 1]:
                raise CalibcliError(
                    f"isotonic-pit maps the quantile levels {taus[k - 1]:.12g} and {taus[k]:.12g} to one level {v:g} "
                    "(to 6 significant digits): fit on more calibration rows, or drop one of the two columns"
                )
        return out

    def gaussian_quantiles(self, mean, std, levels) -> np.ndarray:
        """``(n, L)`` recalibrated quantiles of Gaussian predictions at ``levels``."""
        inner = np.clip(self.level(levels), 1e-12, 1 - 1e-12)
        return scores.gaussian_quantiles(np.asarray(mean, float), np.asarray(std, float), inner)

    def to_dict(self) -> dict:
        return {"kind": KIND, "version": VERSION, "method": "isotonic-pit", "p": list(self.p), "r": list(self.r)}


def level_text(level: float) -> str:
    """A recalibrated level as a column's name states it: 6 significant digits, positional (``0.00001``, never
    ``1e-05``, which the input layer would not read as a level)."""
    return np.format_float_positional(float(f"{float(level):.6g}"), trim="-")


def member_levels(m: int) -> np.ndarray:
    """The levels ``j / (M + 1)`` of an ensemble's sorted members (the PIT's convention, SPEC 10)."""
    return np.arange(1, m + 1) / (m + 1.0)


@dataclass(frozen=True)
class Conformal:
    level: float
    margin: float

    @classmethod
    def fit(cls, y, lower, upper, level: float) -> Conformal:
        e = np.maximum(np.asarray(lower) - np.asarray(y), np.asarray(y) - np.asarray(upper))
        n = len(e)
        k = math.ceil((n + 1) * level)
        if k > n:
            least = max(1, math.floor(level / (1.0 - level)) - 1)
            while math.ceil((least + 1) * level) > least:
                least += 1
            raise CalibcliError(f"conformal at level {level:g} needs at least {least} calibration rows, got {n}")
        return cls(float(level), float(np.sort(e)[k - 1]))

    def interval(self, lower, upper) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(lower, float) - self.margin, np.asarray(upper, float) + self.margin

    def to_dict(self) -> dict:
        return {"kind": KIND, "version": VERSION, "method": "conformal", "level": self.level, "margin": self.margin}


def from_dict(doc: dict):
    """The calibrator a :meth:`to_dict` document describes."""
    if doc.get("kind") != KIND or doc.get("version") != VERSION:
        raise CalibcliError(
            f"not a regression calibrator of version {VERSION}: {doc.get('kind')!r} {doc.get('version')!r}"
        )
    method = doc.get("method")
    if method == "std-scaling":
        return StdScaling(float(doc["factor"]))
    if method == "isotonic-pit":
        return IsotonicPIT(tuple(doc["p"]), tuple(doc["r"]))
    if method == "conformal":
        return Conformal(float(doc["level"]), float(doc["margin"]))
    raise CalibcliError(
        f"unknown regression recalibration method {method!r}: expected std-scaling, isotonic-pit or conformal"
    )
