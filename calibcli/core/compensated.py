"""Float sums that do not depend on the order they are added in (SPEC 8: "float sums in a fixed order per
batch; use compensated or pairwise sums where the error would show").

A streamed state adds each batch's per-bin sums into its own; a cluster adds the same batch sums in the order
of its tree of merges. Plain float addition rounds at every step, so the two orders differ in the last bits,
and a number that is a small residual of large sums (a variance by cancellation, the within-bin Brier term),
or a random draw through an eigenbasis of those sums, shows it. Here a sum is kept as a pair ``(hi, lo)``
whose exact value ``hi + lo`` carries about 106 bits (a double-double): each addition is Knuth's TwoSum, an
error-free transformation (``a + b = s + e`` exactly, in six float operations), and the pair is renormalised
after it, so that ``hi`` is ``hi + lo`` rounded to the nearest float. Adding ``k`` numbers of one sign this
way, in any order, leaves an error below about ``k 2^-104`` of the total in ``hi + lo``, so ``hi`` is the
correctly rounded exact sum (the same float whatever the order) unless the exact sum falls within that much of
a rounding midpoint. Consumers read ``hi`` as the sum; ``lo`` only travels with the state to keep later
additions exact.

Sources: D. E. Knuth, The Art of Computer Programming, vol. 2, 4.2.2 (TwoSum); T. J. Dekker, "A floating-point
technique for extending the available precision", Numer. Math. 18 (1971) (the pair arithmetic); the accumulation
is Ogita, Rump and Oishi's Sum2 ("Accurate sum and dot product", SIAM J. Sci. Comput. 26, 2005) with the pair
renormalised at every step. The cost is a dozen array operations per addition of a batch's sums, none per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def add_exact(hi: np.ndarray, lo: np.ndarray, x, x_lo=None) -> None:
    """``(hi, lo) += x`` (plus ``x_lo``, the low part of another pair), in place, the pair renormalised.

    ``hi`` and ``lo`` are float64 arrays of one shape (or writable views); ``x`` and ``x_lo`` broadcast to it."""
    s = np.add(hi, x)
    if not np.isfinite(s).all():  # an overflowed sum (plain addition has it too): see _add_overflowed
        _add_overflowed(hi, lo, x, x_lo)
        return
    # TwoSum(hi, x) = (s, e), then TwoSum(s, e + lo + x_lo) = (hi, lo); in place, three temporaries in all
    t = np.subtract(s, hi)  # b' = s - hi
    e = np.subtract(s, t)  # a' = s - b'
    np.subtract(hi, e, out=e)  # hi - a'
    np.subtract(x, t, out=t)  # x - b'
    e += t  # hi + x == s + e exactly
    e += lo
    if x_lo is not None:
        e += x_lo
    np.add(s, e, out=hi)  # hi = fl(s + e)
    np.subtract(hi, s, out=t)  # b' = hi - s
    np.subtract(hi, t, out=lo)  # a' = hi - b'
    np.subtract(s, lo, out=lo)  # s - a'
    np.subtract(e, t, out=t)  # e - b'
    lo += t


def _add_overflowed(hi: np.ndarray, lo: np.ndarray, x, x_lo) -> None:
    """:func:`add_exact` where some sum overflows: those sums become the plain sum (infinite) with no low part,
    the others exact as usual."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = hi + x
        bad = ~np.isfinite(s)
        t = s - hi
        e = hi - (s - t)
        e += x - t
        e += lo
        if x_lo is not None:
            e += x_lo
        e[bad] = 0.0
        np.add(s, e, out=hi)
        t = hi - s
        np.subtract(s, hi - t, out=lo)
        lo += e - t
        lo[bad] = 0.0


def add_exact_at(
    hi: np.ndarray, lo: np.ndarray, x: np.ndarray, at: np.ndarray | None, x_lo: np.ndarray | None = None
) -> None:
    """:func:`add_exact` of a dense batch ``x`` (with its low parts ``x_lo``) of which only the cells ``at``
    (indices) can be nonzero: those cells alone when they are few (adding 0 leaves a pair as it is), every cell
    otherwise (or when ``at`` is None). For a fine grid that a small batch touches in few cells."""
    if at is None or 4 * len(at) >= len(hi):
        add_exact(hi, lo, x, x_lo)
        return
    part_hi, part_lo = hi[at], lo[at]
    add_exact(part_hi, part_lo, x[at], None if x_lo is None else x_lo[at])
    hi[at], lo[at] = part_hi, part_lo


def run_sums(columns: Iterable[np.ndarray], starts: np.ndarray, top: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sums of the runs ``x[starts[k]:starts[k + 1]]`` of each column ``x`` of ``columns`` (1-D float64 arrays of
    one length, taken in turn and used as scratch: overwritten, so a generator may make each in the same array), as
    pairs ``(hi, lo)`` (:func:`add_exact`'s, (runs, columns)) whose value is the exact sum to about 2^-100 of it, so
    a state adding them holds the same floats however its rows were split into batches. ``starts``: increasing, the
    first 0; ``top``: a bound on each column's ``|x|``.

    Each column's values are split without error into a high part on a grid coarse enough that the high parts
    sum exactly in any order, and the low rest (Rump, Ogita & Oishi 2008, "Accurate floating-point summation
    part I", Algorithm 3.2 ExtractVector): with ``sigma = 2^E`` at least ``2 (n + 1) max |x|`` for ``n`` values,
    ``hi = (sigma + x) - sigma`` is ``x`` rounded to a multiple of ``2^(E - 53)`` and every partial sum of such
    numbers is below ``sigma / 2``, exact; ``x - hi`` is exact and below ``2^(E - 52)``, so its sums' rounding is
    about ``n^2 2^-104`` of the largest value. A column that is not finite is summed plainly (its low parts 0).
    One column at a time, so a batch's column, its high parts and its runs stay in the cache (a pass over all the
    columns at once streamed them through memory at every step)."""
    top = np.asarray(top, dtype=np.float64)
    out_hi, out_lo = np.zeros((len(starts), len(top))), np.zeros((len(starts), len(top)))
    hi = None
    for j, x in enumerate(columns):
        n = len(x)
        if n == 0:
            continue
        if not math.isfinite(top[j]):
            out_hi[:, j] = np.add.reduceat(x, starts)
            continue
        if hi is None or len(hi) != n:
            hi = np.empty(n)
        _, exponent = math.frexp(top[j])  # top < 2^exponent
        hi, x = _split_off(x, math.ldexp(1.0, exponent + int(n + 1).bit_length() + 1), part=hi, rest=x)
        s, e = np.add.reduceat(hi, starts), np.add.reduceat(x, starts)
        out = s + e  # renormalised: hi the pair rounded to the nearest float
        out_hi[:, j], out_lo[:, j] = out, e - (out - s)
    return out_hi, out_lo


def _split_off(x: np.ndarray, sigma, part: np.ndarray | None = None, rest: np.ndarray | None = None):
    """``(hi, lo)``: the high parts ``(sigma + x) - sigma`` of ``x`` (``x`` rounded to a multiple of ``2^-53
    sigma``; ``sigma`` a power of two above ``|x|``) and the low parts ``x - hi``, both exact (Rump, Ogita &
    Oishi's ExtractVector), ``|x - hi| <= 2^-53 sigma``; written into ``part`` and ``rest`` when given (``rest``
    may be ``x``)."""
    hi = np.add(x, sigma, out=part)
    hi -= sigma
    return hi, np.subtract(x, hi, out=rest)


#: :func:`bincount_exact` stops splitting once the plain sum of what is left errs by at most this much of each
#: bin's sum (an eighth of its last bit, at worst): a state's pair is then within one unit of the last place of the
#: correctly rounded sum, and almost always that sum (the plain sums' rounding errs by about sqrt(c) units, and the
#: tolerance rule absorbs one unit even through Cox's p-values far in the tail, a few thousand times as
#: sensitive).
_SPLIT_ENOUGH = 2.0**-56


def bincount_exact(
    key: np.ndarray, x: np.ndarray, count: np.ndarray, top: float | None = None, *, levels: int = 4
) -> tuple[np.ndarray, np.ndarray]:
    """``np.bincount(key, weights=x, minlength=len(count))`` as pairs ``(hi, lo)`` (:func:`add_exact`'s) exact to
    2^-56 of each bin's sum, so a state adding them holds the same floats (to the last bit, or within one unit of
    it) however its rows were split into batches and in whatever order they came; no sort. ``count``: the bins'
    numbers of values (``np.bincount(key)``); ``top``: a bound on ``|x|`` (else its maximum).

    :func:`run_sums`' split, with bincount: ``x`` is split without error into a high part on a grid coarse
    enough that a bin's high parts sum exactly in any order (``sigma = 2^E`` at least ``4 (c + 1) max |x|`` for
    bins of at most ``c`` values) and the low rest, which is split again while its plain sum could err by more
    than 2^-56 of a bin's sum (``c_b^2 2^-53 top`` for ``c_b`` values below ``top``: a bin of small values beside
    large ones, a sum that cancels), at most ``levels`` times; the last rest is summed plainly (one split is
    enough for the clinical grid's cells and most of the binned family's). Non-finite values are summed
    plainly."""
    size = len(count)
    hi, lo = np.zeros(size), np.zeros(size)
    if len(x) == 0:
        return hi, lo
    top = float(max(np.max(x), -np.min(x))) if top is None else float(top)
    if not np.isfinite(top) or top == 0.0:
        return np.bincount(key, weights=x, minlength=size), lo
    c = count.astype(np.float64)
    spread = int(count.max() + 1).bit_length() + 2
    part, rest = None, x
    for _ in range(levels):
        _, exponent = math.frexp(top)  # top < 2^exponent
        if top == 0.0 or exponent + spread > 1023:  # (nothing left to split; or a grid beyond the floats)
            break
        sigma = math.ldexp(1.0, exponent + spread)
        part, rest = _split_off(rest, sigma, part, None if rest is x else rest)
        add_exact(hi, lo, np.bincount(key, weights=part, minlength=size))
        top = math.ldexp(sigma, -53)  # |rest| <= 2^-53 sigma
        if np.all(c * c * math.ldexp(top, -53) <= _SPLIT_ENOUGH * np.abs(hi)):
            break
    add_exact(hi, lo, np.bincount(key, weights=rest, minlength=size))
    return hi, lo


def bincount_exact_rows(
    key: np.ndarray, x: np.ndarray, count: np.ndarray, *, levels: int = 4
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bincount_exact` of every row of ``x`` ((columns, values), the values keyed by one ``key``) at once:
    pairs ``(hi, lo)`` of shape (columns, bins), each row the same floats as ``bincount_exact(key, x[j], count)``
    (the same splits, the same additions in the same order: a row that needs no further split adds zeros, which
    leave a pair as it is), in a few bincounts over all the columns instead of a few per column. For the binned
    cells and the clinical grid, which sum six or more columns per batch (and per group of ``--group-by``)."""
    columns, n = x.shape
    size = len(count)
    hi, lo = np.zeros((columns, size)), np.zeros((columns, size))
    if n == 0:
        return hi, lo
    flat = (key[None, :] + size * np.arange(columns)[:, None]).ravel()

    def sums(values: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=values.ravel(), minlength=columns * size).reshape(columns, size)

    top = np.maximum(np.max(x, axis=1), -np.min(x, axis=1))
    plain = ~np.isfinite(top) | (top == 0.0)  # (summed plainly, no low part)
    done = plain.copy()
    c = count.astype(np.float64)
    spread = int(count.max() + 1).bit_length() + 2
    rest = x
    for _ in range(levels):
        _, exponent = np.frexp(np.where(done, 1.0, top))  # top < 2^exponent
        done |= (top == 0.0) | (exponent + spread > 1023)  # (nothing left to split; or a grid beyond the floats)
        if done.all():
            break
        sigma = np.ldexp(1.0, np.where(done, 0, exponent + spread))[:, None]
        part = rest + sigma
        part -= sigma
        part[done] = 0.0
        rest = rest - part  # (a finished row's rest unchanged: its part is 0)
        add_exact(hi, lo, sums(part))
        top = np.where(done, top, np.ldexp(sigma[:, 0], -53))  # |rest| <= 2^-53 sigma
        done |= np.all(c * c * np.ldexp(top, -53)[:, None] <= _SPLIT_ENOUGH * np.abs(hi), axis=1)
    last = sums(rest)
    if plain.any():
        hi[plain], last[plain] = last[plain], 0.0
    add_exact(hi, lo, last)
    return hi, lo
