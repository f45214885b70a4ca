"""The monitor's options, declared once (``calibcli monitor``, :func:`calibcli.metrics.monitor`; SPEC 12): the
windows, the reference, the monitored metrics, the test and its adjustment, the gate and the picture."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as reworded

from calibcli.audit.options import Options as AuditOptions
from calibcli.core.errors import CalibcliError, shown
from calibcli.core.family import Bootstrap, split_columns
from calibcli.core.validation import declared, option, params_of
from calibcli.io.windows import Windowing
from calibcli.monitor.alerts import ADJUSTMENTS
from calibcli.monitor.reference import REFERENCE_ROWS

#: What ``--metrics`` may monitor: SmoothECE (its null resampled from the reference) and the Cox coefficients
#: (two-sample Wald tests).
MONITORED = ("smece", "calibration_in_the_large", "cox_slope", "cox_intercept")
#: The monitored metrics by default.
DEFAULT_METRICS = "smece,calibration_in_the_large"
#: The audit's declarations (``calibcli audit``'s flags and rules) that ``--segment-cols`` per window takes.
_AUDIT = params_of(AuditOptions)
#: The options a window's audit takes from the monitor's (the others are the audit's defaults).
_AUDITED = ("segment_cols", "mode", "depth", "min_segment", "alpha")


@dataclass(frozen=True)
class Options(Bootstrap):
    """``monitor``'s options (its flags, checks and the report's ``parameters``)."""

    mode: str | None = declared(None, _AUDIT["mode"][0])
    time_col: str | None = option(
        None, "--time-col", help="The column of each prediction's time (timestamps, dates, or ISO 8601 text)."
    )
    every: str | None = option(
        None,
        "--every",
        help="Window length with --time-col, a pandas offset alias: 1h, 6h, 1D, 7D (fixed lengths, floored from "
        "1970-01-01), W or W-MON (weeks), MS (months), QS, YS.",
    )
    chunk_rows: int | None = option(
        None, "--chunk-rows", help="Windows of this many consecutive rows in file order (instead of --time-col)."
    )
    reference_windows: int | None = option(
        None, "--reference-windows", help="The reference is the first K windows (default: 1, without --reference)."
    )
    reference_until: str | None = option(
        None, "--reference-until", help="The reference is every window that starts before this date (ISO 8601)."
    )
    reference: str | None = option(
        None,
        "--reference",
        help="The reference is this file (the validation data the model shipped with); every window is monitored.",
    )
    metrics: str = option(
        DEFAULT_METRICS,
        "--metrics",
        help="The metrics compared with the reference, comma-separated: smece, calibration_in_the_large, "
        "cox_slope, cox_intercept.",
    )
    adjust: str = option(
        "holm",
        "--adjust",
        help="Adjustment of the p-values over every test of every monitored window: holm (family-wise "
        "false-alarm rate <= alpha), bonferroni, bh (false discovery rate) or none.",
        choices=ADJUSTMENTS,
    )
    n_null: int = option(
        200, "--n-null", help="Resamples of the reference at each window's size for the SmoothECE comparison."
    )
    reference_rows: int = option(
        REFERENCE_ROWS,
        "--reference-rows",
        help="Rows of the reference kept for those resamples (a seeded bottom-k sample beyond).",
    )
    min_rows: int = option(
        100, "--min-rows", help="Windows with fewer rows are reported as too small to test (never as calm)."
    )
    segment_cols: str | None = declared(
        None,
        reworded(
            _AUDIT["segment_cols"][0],
            help="Audit every window by these columns (calibcli audit's segments and tests on the window's rows "
            "alone); a window whose worst segment departs is alerted.",
        ),
    )
    depth: int = declared(2, _AUDIT["depth"][0])
    min_segment: int = declared(100, _AUDIT["min_segment"][0])
    fail_on_alert: bool = option(False, "--fail-on-alert", help="Exit 1 when any window is alerted (a CI gate).")
    plot: str | None = option(
        None, "--plot", help="Also draw each monitored metric over time, its band, the reference band, the alerts."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        Windowing(self.time_col, self.every, self.chunk_rows)  # checks --time-col / --every / --chunk-rows
        for name in self.monitored:
            if name not in MONITORED:
                raise CalibcliError(
                    f"{{opt:metrics}} names {shown(name)}: expected some of {', '.join(MONITORED)}, comma-separated"
                )
        if not self.monitored:
            raise CalibcliError(f"{{opt:metrics}} is empty: expected some of {', '.join(MONITORED)}")
        given = [self.reference_windows is not None, self.reference_until is not None, self.reference is not None]
        if sum(given) > 1:
            raise CalibcliError(
                "{opt:reference_windows}, {opt:reference_until} and {opt:reference} each choose the reference: "
                "pass one of them"
            )
        if self.plot is not None and self.plot.rsplit(".", 1)[-1].lower() not in ("png", "svg", "pdf"):
            raise CalibcliError(
                f"{{opt:plot}} is {shown(self.plot)}: expected a file name ending in .png, .svg or .pdf"
            )
        if self.reference_until is not None:
            _ = self.until  # parsed now: a bad date fails before any work
        _ = self.audit  # the audit's own checks (its depth, the segment columns named), before any work

    @property
    def audit(self) -> AuditOptions | None:
        """The audit of every window (``--segment-cols``): ``calibcli audit``'s options, its defaults otherwise."""
        if not self.segments:
            return None
        return AuditOptions(**{name: getattr(self, name) for name in _AUDITED})

    @property
    def segments(self) -> tuple[str, ...]:
        return split_columns(self.segment_cols)

    @property
    def windowing(self) -> Windowing:
        return Windowing(self.time_col, self.every, self.chunk_rows)

    @property
    def monitored(self) -> tuple[str, ...]:
        return split_columns(self.metrics)

    @property
    def until(self) -> int:
        """``--reference-until`` as nanoseconds (wall clock, as the window keys)."""
        import pandas as pd

        try:
            ts = pd.Timestamp(self.reference_until)
        except (ValueError, TypeError):
            ts = None
        if ts is None or ts is pd.NaT:
            raise CalibcliError(
                f"{{opt:reference_until}} is {shown(self.reference_until)}: expected a date such as 2024-03-01 "
                "or 2024-03-01T12:00"
            ) from None
        if ts.tzinfo is not None:
            ts = ts.tz_localize(None)
        return int(ts.as_unit("ns").value)
