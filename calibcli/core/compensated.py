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


def add_exact_at(hi: np.ndarray, lo: np.ndarray, x: np.ndarray, at: np.ndarray | None) -> None:
    """:func:`add_exact` of a dense batch ``x`` of which only the cells ``at`` (indices) can be nonzero: those
    cells alone when they are few (adding 0 leaves a pair as it is), every cell otherwise (or when ``at`` is
    None). For a fine grid that a small batch touches in few cells."""
    if at is None or 4 * len(at) >= len(hi):
        add_exact(hi, lo, x)
        return
    part_hi, part_lo = hi[at], lo[at]
    add_exact(part_hi, part_lo, x[at])
    hi[at], lo[at] = part_hi, part_lo
