"""``audit``'s options (SPEC 9), declared once: the command's flags and help, the checks (made once, when the
object is built) and the report's ``parameters``; the one object every part of the audit family receives."""

from __future__ import annotations

from dataclasses import dataclass, field

from calibcli.audit.multitest import ADJUST_METHODS, MCE_METHODS
from calibcli.core.declarations import ALPHA, MODE
from calibcli.core.errors import CalibcliError
from calibcli.core.family import split_columns
from calibcli.core.validation import Declared, declared, option


@dataclass(frozen=True)
class Options(Declared):
    """``audit``'s options, declared once: the command's flags, the checks (made once, when the object is built),
    the report's ``parameters``. The same frozen object is what the family's plan, its input accumulator
    (:class:`calibcli.audit.accumulator.SegmentAuditAccumulator`), the segment tests
    (:func:`calibcli.audit.segment_tests.audit_arrays`) and ``calibcli report --segment-cols`` receive.
    ``n_bins`` (the uniform bins of each segment's ``ece_l1_plugin``) is no option."""

    segment_cols: str | None = option(
        None,
        "--segment-cols",
        help="Columns whose values (and their intersections) define the segments, "
        "comma-separated: categorical columns by value, numeric ones by quantile bins.",
        show_default=False,
    )
    mode: str | None = declared(
        None,
        MODE.narrowed(
            ("binary", "top-label"),
            help=(
                "binary, or top-label (the confidence of the predicted class against whether it was right). "
                "Default: binary for one or two probability columns, top-label for K > 2."
            ),
        ),
    )
    depth: int = option(2, "--depth", help="Intersections of up to this many segment columns.")
    max_values: int = option(
        10,
        "--max-values",
        help="Values kept per categorical column, the most frequent; the rest are one segment, 'other'.",
    )
    segment_bins: int = option(
        4, "--segment-bins", help="Quantile bins of a numeric column (one with more distinct values than this)."
    )
    min_segment: int = option(100, "--min-segment", help="Segments with fewer rows are counted, not tested.")
    max_segments: int = option(
        100_000,
        "--max-segments",
        help="Most segments an audit forms (every combination of codes of the partitions up to --depth), checked "
        "before any work with the memory they need; more is an error naming a --depth or --max-values that fits.",
    )
    alpha: float = declared(0.05, ALPHA)
    power: float = option(0.8, "--power", help="Power of the minimum detectable ECCE (mde) of each segment.")
    adjust: str = option(
        "holm",
        "--adjust",
        help="Adjust the segments' p-values for their number: holm "
        "(family-wise), bh (false discovery rate), by, bonferroni or none.",
        choices=ADJUST_METHODS,
    )
    mce_method: str = option(
        "bonferroni",
        "--mce-method",
        help="The MCE p-value over the segments tested: bonferroni "
        "(any overlap), sidak (independent segments) or none (MCGrad's unadjusted minimum).",
        choices=MCE_METHODS,
    )
    top: int = option(10, "--top", help="Segments shown in the table, the worst first (JSON: all).")
    fail_above_sigma: float | None = option(
        None, "--fail-above-sigma", help="Exit 1 when MCE (the worst tested segment's ECCE-R/sigma) exceeds this."
    )
    fail_if_any_segment: bool = option(
        False, "--fail-if-any-segment", help="Exit 1 when any segment's adjusted p-value is at most --alpha."
    )
    n_bins: int = field(default=15, repr=False)

    def __post_init__(self) -> None:
        if not self.columns:
            raise CalibcliError(
                "--segment-cols names no column: name the columns that define the segments, "
                "e.g. --segment-cols country,device"
            )
        super().__post_init__()

    @property
    def columns(self) -> tuple[str, ...]:
        return split_columns(self.segment_cols)
