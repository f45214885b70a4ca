"""What ``calibcli compare`` measures of two inputs (SPEC 2, 3 and 8's paired bootstrap), declared once.

The comparison reads its two inputs side by side (:func:`calibcli.compare.run.compare_streams`), not one stream at
a time, so it has its own driver; its options (the command's flags, their checks, the report's ``parameters``)
are :class:`Options`, on the binned family's shared declarations.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.core.declarations import CLASS_WEIGHTS_PARAM, N_BINS, STRATEGY
from calibcli.core.errors import CalibcliError
from calibcli.core.family import Bootstrap, mode_field
from calibcli.core.validation import declared, option

#: How the rows of the two inputs are paired (``calibcli.compare.run.PAIRINGS``).
PAIRINGS = ("auto", "order", "none")


@dataclass(frozen=True)
class Options(Bootstrap):
    """``compare``'s options, declared once."""

    id_col: str | None = option(
        None,
        "--id-col",
        help="Pair the rows of both inputs by this ID column (present in "
        "both; the candidate is held in memory). Default: pair by row order when the labels "
        "agree row by row.",
    )
    pairing: str = option(
        "auto",
        "--pairing",
        help="auto (by --id-col, else by row order when the labels agree, else "
        "unpaired), order (an error when the rows are not the same examples), or none (independent "
        "bootstraps).",
        choices=PAIRINGS,
    )
    mode: str | None = mode_field()
    class_weights: str = declared("uniform", CLASS_WEIGHTS_PARAM)
    n_bins: int = declared(15, N_BINS)
    strategy: str = declared("uniform", STRATEGY)
    smece: bool = option(False, "--smece", help="Compare the SmoothECE as well (docs: How it is computed §3).")
    fail_if_worse: list[str] | None = option(
        None,
        "--fail-if-worse",
        metavar="METRIC",
        help="Exit 1 when the candidate is worse on METRIC and the interval of the difference excludes 0 (repeatable).",
    )
    fail_if_worse_by: list[str] | None = option(
        None,
        "--fail-if-worse-by",
        metavar="METRIC=X",
        help="Exit 1 when the candidate is worse on METRIC by more than X (repeatable).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fail_if_worse and self.n_boot == 0:
            raise CalibcliError("--fail-if-worse needs the interval of the difference: pass --n-boot N with N > 0")
