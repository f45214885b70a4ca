"""Shared pieces of the calibrators: the base class, numerics, and checked reading of saved dicts.

A fitted calibrator is a small frozen object with ``predict`` and ``to_dict``. The dict is plain JSON
(strings, floats, ints, lists, dicts) and carries everything ``predict`` uses, so a calibrator saved on one
machine predicts bit-for-bit the same on another. :func:`calibcli.calibrators.calibrator_from_dict` reads it
back through the checked accessors below, which raise :class:`~calibcli.errors.CalibcliError` naming the
offending field.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from calibcli.errors import CalibcliError
from calibcli.validation import check_probabilities

#: Default clip of predictions away from 0 and 1 before taking logits or logs.
DEFAULT_CLIP = 1e-12


# --------------------------------------------------------------------------- numerics


def sigmoid(t: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-t))`` without overflow, with full relative precision in both tails."""
    return np.exp(-np.logaddexp(0.0, -np.asarray(t, dtype=np.float64)))


def clip_probabilities(z: np.ndarray, clip: float) -> tuple[np.ndarray, int]:
    """``z`` clipped to ``[clip, 1 - clip]`` and how many values the clip moved."""
    zc = np.clip(z, clip, 1.0 - clip)
    return zc, int(np.count_nonzero(zc != z))


def logit(z: np.ndarray) -> np.ndarray:
    """``log(z / (1 - z))`` for z strictly inside (0, 1)."""
    return np.log(z) - np.log1p(-z)


def check_clip(clip: float) -> float:
    clip = float(clip)
    if not (0.0 < clip < 0.5):
        raise CalibcliError(f"clip is {clip!r}: expected a number in (0, 0.5), e.g. 1e-12")
    return clip


def check_predict_input(y_prob, *, ndim: int = 1) -> np.ndarray:
    """Predictions handed to ``predict``: finite, within [0, 1], of the expected dimension."""
    z = np.asarray(y_prob, dtype=np.float64)
    if z.ndim != ndim:
        expected = "a 1-D array of probabilities" if ndim == 1 else "an (n, K) array of class probabilities"
        raise CalibcliError(f"predict got an array of shape {z.shape}: expected {expected}")
    if z.size == 0:
        return z
    return check_probabilities(z, name="prediction" if ndim == 1 else "class probabilities")


# --------------------------------------------------------------------------- base class


@dataclass(frozen=True, eq=False)
class BinaryCalibrator(ABC):
    """A fitted recalibration map ``g: [0, 1] -> [0, 1]`` for binary (or one-vs-rest) predictions.

    ``info`` holds fit diagnostics (rows used, clipped values, convergence); it is saved with the
    calibrator but ``predict`` never reads it.
    """

    method: ClassVar[str] = ""
    info: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    def predict(self, y_prob) -> np.ndarray:
        """Recalibrated probabilities for predictions ``y_prob`` (1-D, in [0, 1])."""
        z = check_predict_input(y_prob)
        return self._predict(z)

    @abstractmethod
    def _predict(self, z: np.ndarray) -> np.ndarray:
        """The map itself, on validated predictions."""

    def params(self) -> dict[str, Any]:
        """Fitted parameters as JSON values."""
        return {}

    def options(self) -> dict[str, Any]:
        """Options the calibrator was fitted with, as JSON values."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict: ``method``, ``mode``, ``params``, ``options``, ``info``."""
        return {
            "method": self.method,
            "mode": "binary",
            "params": self.params(),
            "options": self.options(),
            "info": _jsonable(dict(self.info)),
        }


def _jsonable(value):
    """Convert NumPy scalars and arrays inside ``value`` to plain Python numbers and lists."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def float_list(a: np.ndarray) -> list[float]:
    """A float array as a list of Python floats (``repr`` round-trips them exactly through JSON)."""
    return [float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


# --------------------------------------------------------------------------- reading saved dicts


class Fields:
    """Checked access to one dict of a saved calibrator; ``where`` names it in messages."""

    def __init__(self, d: Any, where: str):
        if not isinstance(d, Mapping):
            raise CalibcliError(f"calibrator: {where} is {_kind(d)}: expected a JSON object")
        self.d = d
        self.where = where
        self.read: set[str] = set()  # the keys a loader asked for (see check_all_read)
        self.children: list[Fields] = []
        self.free_form = False

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str) -> Any:
        self.read.add(key)
        if key not in self.d:
            raise CalibcliError(f"calibrator: missing field '{self._name(key)}'")
        return self.d[key]

    def sub(self, key: str, *, optional: bool = False) -> "Fields":
        if optional and key not in self.d:
            self.read.add(key)
            child = Fields({}, self._name(key))
        else:
            child = Fields(self.get(key), self._name(key))
        self.children.append(child)
        return child

    def any_keys(self) -> "Fields":
        """Mark this object as free-form (``info``: facts about the fit that ``predict`` does not use)."""
        self.free_form = True
        return self

    def check_all_read(self) -> None:
        """Refuse fields the loader did not read, in this object and every object read through it.

        A calibrator is rebuilt only from the fields this version knows; a field it does not know (written
        by a newer calibcli, or edited in) could change what ``predict`` should do, so it is never ignored.
        """
        unknown = [] if self.free_form else [self._name(k) for k in self.d if k not in self.read]
        if unknown:
            from calibcli._version import __version__

            shown = ", ".join(repr(_short(k)) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise CalibcliError(
                f"calibrator: unknown field{'s' if len(unknown) > 1 else ''} {shown}: calibcli {__version__} does not "
                f"know {'them' if len(unknown) > 1 else 'it'} (a calibrator written by a newer calibcli, or edited by "
                f"hand); refit the calibrator with this version, or remove the field")
        for child in self.children:
            child.check_all_read()

    def number(self, key: str, *, low: float | None = None, high: float | None = None,
               open_low: bool = False) -> float:
        v = self.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CalibcliError(
                f"calibrator: field '{self._name(key)}' is {_kind(v)}: expected a finite number")
        v = float(v)
        if low is not None and (v < low or (open_low and v == low)):
            raise CalibcliError(
                f"calibrator: field '{self._name(key)}' is {v!r}: expected a value "
                f"{'>' if open_low else '>='} {low!r}")
        if high is not None and v > high:
            raise CalibcliError(f"calibrator: field '{self._name(key)}' is {v!r}: expected a value <= {high!r}")
        return v

    def integer(self, key: str, *, low: int | None = None) -> int:
        v = self.get(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise CalibcliError(f"calibrator: field '{self._name(key)}' is {_kind(v)}: expected an integer")
        if low is not None and v < low:
            raise CalibcliError(f"calibrator: field '{self._name(key)}' is {v}: expected an integer >= {low}")
        return v

    def boolean(self, key: str) -> bool:
        v = self.get(key)
        if not isinstance(v, bool):
            raise CalibcliError(f"calibrator: field '{self._name(key)}' is {_kind(v)}: expected true or false")
        return v

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        v = self.get(key)
        if v not in choices:
            raise CalibcliError(
                f"calibrator: field '{self._name(key)}' is {v!r}: expected one of {', '.join(choices)}")
        return v

    def array(self, key: str, *, length: int | None = None, min_length: int = 0,
              low: float | None = None, high: float | None = None, increasing: bool = False,
              strictly: bool = False) -> np.ndarray:
        v = self.get(key)
        name = self._name(key)
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
            raise CalibcliError(f"calibrator: field '{name}' is {_kind(v)}: expected a list of numbers")
        a = np.asarray(v, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            raise CalibcliError(f"calibrator: field '{name}' has a non-finite value: expected finite numbers")
        if length is not None and len(a) != length:
            raise CalibcliError(f"calibrator: field '{name}' has {len(a)} values: expected {length}")
        if len(a) < min_length:
            raise CalibcliError(f"calibrator: field '{name}' has {len(a)} values: expected at least {min_length}")
        if (low is not None and np.any(a < low)) or (high is not None and np.any(a > high)):
            raise CalibcliError(f"calibrator: field '{name}' has a value outside [{low}, {high}]")
        if increasing and len(a) > 1:
            d = np.diff(a)
            if np.any(d <= 0) if strictly else np.any(d < 0):
                order = "strictly increasing" if strictly else "non-decreasing"
                raise CalibcliError(f"calibrator: field '{name}' is not {order}")
        return a


def _short(text: str, limit: int = 60) -> str:
    """A field name as a message shows it: at most ``limit`` characters."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, Mapping):
        return "an object"
    return type(v).__name__
