"""SplitMix64's output function (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators",
OOPSLA), the one mixing step of every counter-based draw a compiled loop makes: the Poisson bootstrap's
multiplicities (:mod:`calibcli.core.poisson`) and T-Cal's uniforms (:mod:`calibcli.tcal.kernels`), the loops'
form of :func:`calibcli.core.resampling._mix`.

This module only defines a compiled helper (no Numba at import)."""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import inlined


@inlined
def splitmix64(x):
    """SplitMix64's finaliser of ``x`` (uint64: a stream's key plus a position times the golden gamma)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))
