"""The tolerance rule of SPEC 8.1 ("How it is computed" in docs/computed.md), in one place for the tests: two paths
of one computation (engines, batch sizes, splits, a compiled loop and its NumPy reference) agree within 1e-12
relative, 1e-15 absolute near zero; NaN where NaN."""

from __future__ import annotations

import numpy as np

RTOL = 1e-12
ATOL = 1e-15


def assert_within_rule(got, want, err_msg: str = "") -> None:
    """``got`` equals ``want`` within the rule, elementwise (shapes equal, NaN where NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (err_msg, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=err_msg)
