"""``tcal``'s options (SPEC 4, 9), declared once: the command's flags and help, the library's keywords and
defaults, the checks (made once, when the object is built) and the report's ``parameters``; the one object the
T-Cal family and the classical tests (:mod:`calibcli.clinical.family`) receive."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calibcli.core.declarations import CLINICAL_TEST_NAMES, auto
from calibcli.core.errors import CalibcliError, OptionError
from calibcli.core.family import Bootstrap
from calibcli.core.validation import option
from calibcli.tcal.results import COMBINES, NULLS

#: Rows T-Cal runs on at most; beyond, the bottom-k sample of this many (SPEC 8).
MAX_ROWS = 1_000_000

#: Distinct prediction values counted exactly for the binomial test; beyond, the predictor is continuous.
MAX_DISTINCT = 1 << 20

TCAL_MODES = ("binary", "top-label", "canonical")
DISCRETE_CHOICES = ("auto", "yes", "no")

#: ``--test`` choices: T-Cal or the binomial test as --discrete decides (auto), one of them, or a classical test.
TESTS = ("auto", "tcal", "binomial", *CLINICAL_TEST_NAMES)


@dataclass(frozen=True)
class Options(Bootstrap):
    """``tcal``'s options, declared once: the command's flags, the checks (made once, when the object is built),
    the report's ``parameters`` (the T-Cal family's, and the classical tests' of :mod:`calibcli.clinical.family`).
    The same frozen object is what the family's plan, its input accumulator
    (:class:`calibcli.tcal.accumulator.TcalInputAccumulator`), the classical tests' accumulator
    (:class:`calibcli.clinical.accumulator.ClinicalTestAccumulator`), the library (:func:`calibcli.api.tcal_test`,
    :func:`calibcli.api.clinical_test`) and ``recalibrate evaluate`` receive. ``max_distinct`` (the distinct
    values counted for the binomial test) is no option."""

    mode: str | None = option(
        None,
        "--mode",
        help="binary, top-label or canonical (the whole probability vector, equal-volume simplex "
        "bins). Default: binary for one or two probability columns, top-label for K > 2.",
        choices=TCAL_MODES,
        shown=auto,
    )
    smoothness: float | None = option(
        None,
        "--smoothness",
        help="Holder smoothness s of the miscalibration, if known: single-scale test with "
        "m* = floor(n^(2/(4s+K-1))) bins. Default: the adaptive test over the dyadic levels m = 2, 4, ..., 2^L.",
    )
    null: str = option(
        "y-bootstrap",
        "--null",
        help="Null distribution: y-bootstrap (keep z, redraw y ~ Bernoulli(z); exact "
        "p-values), consistency (also resample z; approximate) or chebyshev (no resampling; conservative critical "
        "values of Theorem 3.1).",
        choices=NULLS,
    )
    combine: str = option(
        "bonferroni",
        "--combine",
        help="Combining the levels: bonferroni (reject if some level has p <= alpha/L) or "
        "min-p (min_b p_b calibrated over the same resamples; exact and more powerful).",
        choices=COMBINES,
    )
    discrete: str = option(
        "auto",
        "--discrete",
        help="Exact binomial test per distinct prediction value instead of T-Cal: auto (when "
        "the predictor takes at most sqrt(n) distinct values), yes or no.",
        choices=DISCRETE_CHOICES,
    )
    max_rows: int = option(
        MAX_ROWS,
        "--max-rows",
        help="T-Cal runs on every row up to this many, else on the bottom-k sample of this "
        "many rows (smallest hash of (seed, row index); the same however the data are split). The binomial test "
        "counts every row. --test ecce is exact up to this many rows and uses every row on a fine score grid beyond.",
    )
    test: str = option(
        "auto",
        "--test",
        help="Which test: auto (T-Cal, or the exact binomial test when --discrete says so), tcal, "
        "binomial, spiegelhalter (Spiegelhalter's Z, 1986) or hosmer-lemeshow (C-hat over --n-bins deciles of risk, "
        "G - 2 df; depends on the grouping, weak at small n, rejects nearly every model at large n) or ecce "
        "(ECCE-R/sigma against the range of Brownian motion, docs: How it is computed §9; no bins, O(n log n); "
        "exact up to --max-rows "
        "rows, a 2^16-cell score grid with its error bound beyond).",
        choices=TESTS,
        library="spiegelhalter",  # (the library's function taking it is clinical_test; tcal_test takes no test)
    )
    n_bins: int | None = option(
        None,
        "--n-bins",
        help="Groups of the Hosmer-Lemeshow test (quantile bins of the predictions). Default: 10.",
        library=10,
    )
    fail_on_reject: bool = option(False, "--fail-on-reject", help="Exit 1 when the test rejects perfect calibration.")
    n_boot: int = option(1000, "--n-boot", help="Resamples for the null distribution; one set serves every level.")
    alpha: float = option(0.05, "--alpha", help="Level of the test: reject when the p-value is at most alpha.")
    max_distinct: int = field(default=MAX_DISTINCT, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_bins is not None and self.test != "hosmer-lemeshow":
            raise CalibcliError(
                f"{{opt:n_bins}} sets the groups of {{opt:test}} hosmer-lemeshow, and {{opt:test}} is {self.test}: "
                "drop {opt:n_bins}"
            )
        if self.test in ("tcal", "binomial") and self.discrete not in ("auto", self.wanted_discrete):
            raise CalibcliError(
                f"{{opt:test}} {self.test} and {{opt:discrete}} {self.discrete} disagree: {{opt:test}} {self.test} is "
                f"{{opt:discrete}} {self.wanted_discrete}"
            )
        if self.test not in CLINICAL_TEST_NAMES and self.null == "chebyshev" and self.combine == "min-p":
            raise CalibcliError(
                "{opt:combine} min-p calibrates the minimum p-value over resamples, and {opt:null} chebyshev draws "
                "none: use {opt:combine} bonferroni with chebyshev, or a resampling null"
            )
        if self.test in CLINICAL_TEST_NAMES:
            if self.max_rows < 1:
                raise OptionError("max_rows", f"{{name}} is {self.max_rows}: expected at least 1 row")
            return
        s = self.smoothness
        if s is not None and not (math.isfinite(s) and s > 0):
            raise OptionError("smoothness", f"{{name}} is {s}: expected a positive Holder exponent")
        if self.null != "chebyshev" and self.n_boot < 1:
            raise OptionError(
                "n_boot", f"{{name}} is {self.n_boot}: expected at least 1 resample for the {self.null} null"
            )
        if self.max_rows < 2:
            raise OptionError(
                "max_rows",
                f"{{name}} is {self.max_rows}: expected at least 2 rows (T-Cal compares predictions that share a bin)",
            )
        if self.max_distinct < 1:
            raise OptionError("max_distinct", f"{{name}} is {self.max_distinct}: expected a positive number of values")

    @property
    def wanted_discrete(self) -> str:
        """``--discrete`` as ``--test`` reconciles it: ``tcal`` is ``no``, ``binomial`` is ``yes``."""
        return {"tcal": "no", "binomial": "yes"}.get(self.test, self.discrete)

    @property
    def procedure(self) -> dict:
        """The keywords of :func:`calibcli.tcal.procedure.tcal_test` (and ``tcal_tests``) these options set: the
        smoothness, the null, the resamples, the rule combining the levels and the level of the test."""
        return {
            "smoothness": self.smoothness,
            "null": self.null,
            "n_boot": self.n_boot,
            "combine": self.combine,
            "alpha": self.alpha,
        }

    @property
    def resamples(self) -> int:
        """Resamples T-Cal draws: ``n_boot``, none for the Chebyshev null."""
        return 0 if self.null == "chebyshev" else self.n_boot

    @property
    def groups(self) -> int:
        """The Hosmer-Lemeshow test's groups: ``n_bins``, 10 by default."""
        return 10 if self.n_bins is None else self.n_bins
