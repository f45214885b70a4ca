"""Shared pieces of the calibrators: the base class, numerics, and checked reading of saved dicts.

A fitted calibrator is a small frozen object with ``predict`` and ``to_dict``. The dict is plain JSON
(strings, floats, ints, lists, dicts) and carries everything ``predict`` uses, so a calibrator saved on one
machine predicts bit-for-bit the same on another. :func:`calibcli.calibrators.calibrator_from_dict` reads it
back through the checked accessors below, which raise :class:`~calibcli.core.errors.CalibcliError` naming the
offending field.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from calibcli.core.documents import jsonable
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_probabilities

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


def check_predicted(
    p: np.ndarray, z: np.ndarray | None = None, method: str = "", what: str = "probability"
) -> np.ndarray:
    """The last check of every ``predict``: recalibrated values are finite and within [0, 1], so that ``apply``
    never writes NaN or an impossible probability, whatever the calibrator's parameters (a fitted one never
    fails it; a calibrator edited by hand, or built with absurd parameters, can). Returns ``p``."""
    p = np.asarray(p)
    if p.size == 0:
        return p
    with np.errstate(invalid="ignore"):
        bad = ~((p >= 0.0) & (p <= 1.0))  # NaN compares false
    if not bad.any():
        return p
    i = int(np.flatnonzero(bad.ravel())[0])
    value = p.ravel()[i]
    at = ""
    if z is not None and np.ndim(z) == 1 and p.ndim == 1 and len(z) == len(p):
        at = f" for the prediction {shown_number(float(z[i]))}"
    kind = "a non-finite" if not np.isfinite(value) else "an out-of-range"
    name = f"the {method} calibrator" if method else "the calibrator"
    raise CalibcliError(
        f"{name} produced {kind} {what} ({shown_number(float(value))}){at}: its parameters are "
        f"outside what fitting produces (edited by hand?): refit it"
    )


def _bound(x: float) -> str:
    """A limit of ours as a message shows it: ``1e+12``, ``5e-09``, ``0``, ``0.49``."""
    return format(float(x), ".12g")


def shown_number(v) -> str:
    """A number as a message shows it: as the user wrote it (``0.1``, ``5e-324``, ``nan``), never NumPy's
    ``np.float64(0.1)``; an integer too long to print in full (Python refuses over 4300 digits) by its size."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if v.bit_length() > 200:
            return f"an integer of about {int(v.bit_length() * 0.30103) + 1} digits"
        return str(v)
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return repr(v)


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
        """Recalibrated probabilities for predictions ``y_prob`` (1-D, in [0, 1]); never a non-finite value or
        one outside [0, 1] (:func:`check_predicted`)."""
        z = check_predict_input(y_prob)
        return check_predicted(self._predict(z), z, self.method)

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
            "info": jsonable(dict(self.info), finite=False),
        }

    @classmethod
    @abstractmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> BinaryCalibrator:
        """The calibrator a saved document's ``params``, ``options`` and ``info`` describe (each method reads
        and checks its own fields)."""


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

    def sub(self, key: str, *, optional: bool = False) -> Fields:
        if optional and key not in self.d:
            self.read.add(key)
            child = Fields({}, self._name(key))
        else:
            child = Fields(self.get(key), self._name(key))
        self.children.append(child)
        return child

    def any_keys(self) -> Fields:
        """Mark this object as free-form (``info``: facts about the fit that ``predict`` does not use). Its
        content is still plain JSON of bounded depth and size (:func:`check_plain_json`), so that saving the
        calibrator again, or printing it, cannot recurse without end or choke on a 5000-digit integer."""
        check_plain_json(self.d, f"calibrator: field '{self.where}'")
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

            shown = ", ".join(repr(_short(k)) for k in unknown[:5]) + (
                f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            )
            raise CalibcliError(
                f"calibrator: unknown field{'s' if len(unknown) > 1 else ''} {shown}: calibcli {__version__} does not "
                f"know {'them' if len(unknown) > 1 else 'it'} (a calibrator written by a newer calibcli, or edited by "
                f"hand); refit the calibrator with this version, or remove the field"
            )
        for child in self.children:
            child.check_all_read()

    def number(
        self,
        key: str,
        *,
        low: float | None = None,
        high: float | None = None,
        open_low: bool = False,
        magnitude: float | None = None,
        why: str = "",
    ) -> float:
        """A finite number within ``[low, high]`` (``(low, high]`` with ``open_low``) and, with
        ``magnitude``, of absolute value at most that; ``why`` ends the message (what fitting produces).
        Messages show the value as the file wrote it."""
        raw = self.get(key)
        name = self._name(key)
        if (
            isinstance(raw, bool)
            or not isinstance(raw, (int, float))
            or (isinstance(raw, int) and raw.bit_length() > 1023)
        ):
            raise CalibcliError(f"calibrator: field '{name}' is {_kind(raw)}: expected a finite number")
        v = float(raw)
        if not math.isfinite(v):
            raise CalibcliError(f"calibrator: field '{name}' is {_kind(raw)}: expected a finite number")
        why = f" ({why})" if why else ""
        if low is not None and (v < low or (open_low and v == low)):
            raise CalibcliError(
                f"calibrator: field '{name}' is {shown_number(raw)}: expected a value {'>' if open_low else '>='} "
                f"{_bound(low)}{why}"
            )
        if high is not None and v > high:
            raise CalibcliError(
                f"calibrator: field '{name}' is {shown_number(raw)}: expected a value <= {_bound(high)}{why}"
            )
        if magnitude is not None and abs(v) > magnitude:
            raise CalibcliError(
                f"calibrator: field '{name}' is {shown_number(raw)}: expected a value between "
                f"{_bound(-magnitude)} and {_bound(magnitude)}{why}"
            )
        return v

    def integer(self, key: str, *, low: int | None = None, high: int | None = None, why: str = "") -> int:
        v = self.get(key)
        name = self._name(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise CalibcliError(f"calibrator: field '{name}' is {_kind(v)}: expected an integer")
        why = f" ({why})" if why else ""
        if low is not None and v < low:
            raise CalibcliError(f"calibrator: field '{name}' is {shown_number(v)}: expected an integer >= {low}{why}")
        if high is not None and v > high:
            raise CalibcliError(f"calibrator: field '{name}' is {shown_number(v)}: expected an integer <= {high}{why}")
        return v

    def boolean(self, key: str) -> bool:
        v = self.get(key)
        if not isinstance(v, bool):
            raise CalibcliError(f"calibrator: field '{self._name(key)}' is {_kind(v)}: expected true or false")
        return v

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        v = self.get(key)
        if v not in choices:
            raise CalibcliError(f"calibrator: field '{self._name(key)}' is {v!r}: expected one of {', '.join(choices)}")
        return v

    def array(
        self,
        key: str,
        *,
        length: int | None = None,
        min_length: int = 0,
        low: float | None = None,
        high: float | None = None,
        increasing: bool = False,
        strictly: bool = False,
        magnitude: float | None = None,
        why: str = "",
    ) -> np.ndarray:
        """A list of finite numbers: its length (checked before anything is built from it), range, order and,
        with ``magnitude``, absolute values at most that. Messages name the first offending entry as written."""
        v = self.get(key)
        name = self._name(key)
        if not isinstance(v, list):
            raise CalibcliError(f"calibrator: field '{name}' is {_kind(v)}: expected a list of numbers")
        for i, x in enumerate(v):
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise CalibcliError(f"calibrator: field '{name}[{i}]' is {_kind(x)}: expected a number")
            if isinstance(x, int) and x.bit_length() > 1023:
                raise CalibcliError(f"calibrator: field '{name}[{i}]' is {_kind(x)}: expected a finite number")
        if length is not None and len(v) != length:
            raise CalibcliError(f"calibrator: field '{name}' has {len(v)} values: expected {length}")
        if len(v) < min_length:
            raise CalibcliError(f"calibrator: field '{name}' has {len(v)} values: expected at least {min_length}")
        a = np.asarray(v, dtype=np.float64)
        why = f" ({why})" if why else ""

        def first(bad: np.ndarray, problem: str):
            i = int(np.flatnonzero(bad)[0])
            raise CalibcliError(f"calibrator: field '{name}' has {problem}: entry {i} is {shown_number(v[i])}{why}")

        def interval(lo, hi) -> str:
            return f"[{'-inf' if lo is None else _bound(lo)}, {'inf' if hi is None else _bound(hi)}]"

        finite = np.isfinite(a)
        if not finite.all():
            first(~finite, "a non-finite value")
        if (low is not None and (a < low).any()) or (high is not None and (a > high).any()):
            first(
                (a < (-np.inf if low is None else low)) | (a > (np.inf if high is None else high)),
                f"a value outside {interval(low, high)}",
            )
        if magnitude is not None and (np.abs(a) > magnitude).any():
            first(np.abs(a) > magnitude, f"a value outside {interval(-magnitude, magnitude)}")
        if increasing and len(a) > 1:
            d = np.diff(a)
            bad = d <= 0 if strictly else d < 0
            if bad.any():
                i = int(np.flatnonzero(bad)[0]) + 1
                order = "strictly increasing" if strictly else "non-decreasing"
                raise CalibcliError(
                    f"calibrator: field '{name}' is not {order}: entry {i} is {shown_number(v[i])} "
                    f"after {shown_number(v[i - 1])}{why}"
                )
        return a


def _short(text: str, limit: int = 60) -> str:
    """A field name as a message shows it: at most ``limit`` characters."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Deepest nesting and most values the free-form parts of a calibrator (``info``) may have: far beyond what
#: fitting writes (a few levels, a few dozen values), far below what would recurse or fill memory.
MAX_JSON_DEPTH = 32
MAX_JSON_VALUES = 1_000_000


def check_plain_json(value: Any, where: str) -> None:
    """Refuse, without recursion, a value that is not plain JSON of bounded size: nesting deeper than
    :data:`MAX_JSON_DEPTH`, more than :data:`MAX_JSON_VALUES` values, an integer beyond a float's range,
    or a type JSON does not have. ``where`` starts the message."""
    stack = [(value, 1)]
    seen = 0
    while stack:
        v, depth = stack.pop()
        seen += 1
        if seen > MAX_JSON_VALUES:
            raise CalibcliError(
                f"{where} holds more than {MAX_JSON_VALUES:,} values: expected a few facts about the fit"
            )
        if depth > MAX_JSON_DEPTH:
            raise CalibcliError(
                f"{where} is nested more than {MAX_JSON_DEPTH} levels deep: expected a few facts about the fit"
            )
        if isinstance(v, Mapping):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 1023:
            raise CalibcliError(f"{where} holds {_kind(v)}: expected numbers within a float's range")
        elif not (v is None or isinstance(v, (str, int, float, bool))):
            raise CalibcliError(f"{where} holds {_kind(v)}: expected JSON values")


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, int) and v.bit_length() > 200:
        return shown_number(v)
    if isinstance(v, (int, float)):
        return f"the number {shown_number(v)}"
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, Mapping):
        return "an object"
    return type(v).__name__
