"""Time windows as group keys (SPEC 12): each row's window from its timestamp (``--time-col ts --every 7D``)
or from its global row index (``--chunk-rows N``), computed batch by batch, so that rows need not be sorted.

A window is left-closed and right-open. Fixed-length offsets (hours, minutes, days, ``7D``) floor the
timestamp as :meth:`pandas.DatetimeIndex.floor` does (bucket boundaries counted from the Unix epoch);
calendar offsets (``W``, ``W-MON``, ``MS``/``ME``, ``QS``/``QE``, ``YS``/``YE``) are pandas' periods of that
frequency (``W`` is ``W-SUN``: Monday to Sunday). Timestamps with a time zone are windowed in that zone's
wall-clock time (as pandas floors a zoned timestamp on its local time) and the report says which zone;
naive timestamps are taken as they are. A window's key is the int64 nanoseconds of its start (wall clock),
or the chunk's number.

pandas is imported here only (``calibcli monitor`` alone pays for it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from calibcli.core.errors import CalibcliError, shown, shown_names
from calibcli.io import formats
from calibcli.io.checks import check_rows
from calibcli.io.columns import ReadPlan, convert_batch

#: The key name of row-count windows (no column of the data is read for them).
CHUNK_KEY = "chunk"

_CALENDAR = {"Week": None, "MonthBegin": "M", "MonthEnd": "M", "QuarterBegin": "Q", "QuarterEnd": "Q"}
_CALENDAR.update({"YearBegin": "Y", "YearEnd": "Y"})


@dataclass(frozen=True)
class Windowing:
    """How rows fall into windows: by ``column`` floored to ``every`` (a pandas offset alias), or by
    ``chunk_rows`` consecutive rows of the dataset's row order. ``tz`` is the column's time zone (None:
    naive timestamps), fixed from the first file."""

    column: str | None = None
    every: str | None = None
    chunk_rows: int | None = None
    tz: str | None = None

    def __post_init__(self) -> None:
        if (self.column is None) == (self.chunk_rows is None):
            raise CalibcliError("windows need {opt:time_col} with {opt:every}, or {opt:chunk_rows}: pass one of them")
        if self.column is not None:
            if self.every is None:
                raise CalibcliError("{opt:time_col} needs {opt:every}: the window length, such as 7D, 1h, W or MS")
            period_of(self.every)
        elif self.chunk_rows is not None and self.chunk_rows < 1:
            raise CalibcliError(f"{{opt:chunk_rows}} is {self.chunk_rows}: expected a positive number of rows")

    @property
    def key(self) -> str:
        """The group key's name: the time column, or ``chunk``."""
        return self.column if self.column is not None else CHUNK_KEY

    def describe(self) -> dict:
        """The report's statement of the windows."""
        if self.column is None:
            return {
                "by": "rows",
                "chunk_rows": self.chunk_rows,
                "rule": f"window k holds rows k*{self.chunk_rows} .. (k+1)*{self.chunk_rows}-1 of the dataset's "
                "row order (files by sorted path, each file's rows in order)",
            }
        offset, period = period_of(self.every or "")
        rule = (
            f"pandas floor to {self.every} (bucket boundaries counted from 1970-01-01)"
            if period is None
            else f"pandas periods of frequency {period}"
        )
        zone = (
            f"timestamps in time zone {self.tz}: windows in its wall-clock time (as pandas floors local time)"
            if self.tz
            else "naive timestamps, windowed as they are (no time zone)"
        )
        return {"by": "time", "time_col": self.column, "every": self.every, "rule": rule, "time_zone": zone}

    def bounds(self, key: int) -> tuple[str, str]:
        """A window's start and end (exclusive) as ISO text (the time zone's wall clock), or row numbers."""
        if self.column is None:
            assert self.chunk_rows is not None
            return str(key * self.chunk_rows), str((key + 1) * self.chunk_rows)
        import pandas as pd

        offset, period = period_of(self.every or "")
        start = pd.Timestamp(int(key), unit="ns")
        end = start + offset if period is None else pd.Period(start, freq=period).end_time.ceil("D")
        return _iso(start), _iso(end)


def _iso(ts) -> str:
    return ts.isoformat() if ts.nanosecond or ts.microsecond else ts.isoformat(timespec="seconds")


def period_of(every: str):
    """``(offset, period alias)`` of a ``--every`` value: the period alias is None for a fixed-length offset
    (floored), else the calendar period the windows are. A word that is not a pandas offset, or a length
    that is not positive, is an error."""
    from pandas.tseries.frequencies import to_offset

    try:
        offset = to_offset(every)
    except (ValueError, TypeError):
        raise CalibcliError(
            f"{{opt:every}} is {shown(every)}: expected a pandas offset alias such as 1h, 6h, 1D, 7D, W, W-MON, MS "
            "or QS (a number and a unit: h hours, D days, W weeks, MS months)"
        ) from None
    if offset.n <= 0:
        raise CalibcliError(f"{{opt:every}} is {shown(every)}: expected a positive window length, such as 1D or 7D")
    try:
        offset.nanos  # noqa: B018 (a fixed-length offset has a length in nanoseconds; a calendar one raises)
        return offset, None
    except ValueError:
        pass
    name = type(offset).__name__
    if name not in _CALENDAR or offset.n != 1 or getattr(offset, "startingMonth", 1) not in (1, 12, None):
        raise CalibcliError(
            f"{{opt:every}} is {shown(every)}: calendar windows are one week (W, W-MON), one month (MS), one quarter "
            "(QS) or one year (YS); for several of them use a fixed length such as 14D"
        )
    return offset, (offset.rule_code if name == "Week" else _CALENDAR[name])


def time_kind(arrow_type, column: str, where: str) -> str | None:
    """The time zone of a time column's pyarrow type (None: naive), checking that it holds times: timestamps,
    dates, or text that pandas parses."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_timestamp(arrow_type):
        return arrow_type.tz
    if pa.types.is_date(arrow_type) or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return None
    raise CalibcliError(
        f"{where}: time column {shown(column)} holds {arrow_type}: expected timestamps, dates, or text such as "
        "2024-05-01T12:00:00; pass the column of the predictions' times with {opt:time_col}"
    )


def window_keys(col, windowing: Windowing, where: str, first_row: int) -> np.ndarray:
    """Each row's window key (int64 nanoseconds of its window's start, wall clock) from a time column (a pyarrow
    array or chunked array). An empty cell or a text that is not a time is an error naming its row."""
    import pandas as pd
    import pyarrow as pa

    if col.null_count:
        row = int(np.flatnonzero(np.array(col.is_null().to_pylist()))[0])
        raise CalibcliError(
            f"{where}: row {first_row + row + 1}, time column {shown(windowing.column)}: the timestamp is empty: "
            "expected a time on every row (fill it in, or drop those rows before monitoring)"
        )
    typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    if pa.types.is_dictionary(col.type):
        col = col.cast(typ)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        text = np.asarray(col.to_pylist(), dtype=object)
        times = pd.to_datetime(pd.Series(text), format="ISO8601", errors="coerce")
        bad = times.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise CalibcliError(
                f"{where}: row {first_row + row + 1}, time column {shown(windowing.column)}: {shown(text[row])} is "
                "not a timestamp: expected ISO 8601 times such as 2024-05-01 or 2024-05-01T12:00:00+02:00"
            )
    else:
        times = pd.Series(col.to_pandas() if hasattr(col, "to_pandas") else col)
        times = pd.to_datetime(times)
    tz = getattr(times.dt, "tz", None)
    if tz is not None:
        if windowing.tz is not None and str(tz) != windowing.tz:
            times = times.dt.tz_convert(windowing.tz)
        times = times.dt.tz_localize(None)  # the wall clock of the zone
    index = pd.DatetimeIndex(times)
    offset, period = period_of(windowing.every or "")
    starts = index.floor(offset) if period is None else index.to_period(period).start_time
    return np.asarray(starts.as_unit("ns").asi8, dtype=np.int64)


@dataclass(frozen=True)
class WindowedPlan(ReadPlan):
    """A dataset's :class:`~calibcli.io.columns.ReadPlan` whose first group key is each row's window: the time
    column is read beside the rows and floored here (row-count windows are keyed from the rows' global indices
    once they are known, :func:`calibcli.io.fragments.windowed`)."""

    windows: Windowing | None = None

    @property
    def data_columns(self) -> list[str]:
        extra = [self.windows.column] if self.windows is not None and self.windows.column is not None else []
        return list(dict.fromkeys([*super().data_columns, *extra]))

    def read(self, table, where: str, first_row: int, partition, *, whole_file: bool, text_of):
        """A batch as arrays with each row's window key first, the rows passing the checks, the drops by reason."""
        assert self.windows is not None and self.carried[0] == self.windows.key
        conv = convert_batch(table, self, where, first_row, {**(partition or {}), self.windows.key: 0})
        if self.windows.column is not None and conv.groups is not None:
            keys = window_keys(table.column(self.windows.column), self.windows, where, first_row)
            conv.groups = (keys, *conv.groups[1:])
        return conv, *check_rows(conv, self, where, first_row, whole_file=whole_file, text_of=text_of)


def windowed(stream, windows: Windowing):
    """``stream`` (an opened :class:`calibcli.io.sources.Stream`) with its rows keyed by ``windows`` first, then by
    its group-by columns; the time column is checked against the first file's schema (it exists, it holds times)
    and its time zone fixed from it. A stream read with the audit's segment columns (``monitor --segment-cols``)
    carries the window key first among them instead, splitting nothing (the audit of each window splits them)."""
    plan = stream.plan
    if type(plan) is not ReadPlan:
        raise CalibcliError("monitor measures class probabilities with labels (not another kind of prediction)")
    if windows.key in plan.carried:
        raise CalibcliError(f"{shown(windows.key)} is both the windows' key and a group-by column: group by others")
    if windows.column is not None:
        source, location, fmt, _ = stream._files[0]
        schema = formats.read_schema(location, fmt)
        names = list(schema.names)
        if windows.column not in names:
            partitioned = windows.column in stream.dataset.partition_kinds
            where = " (a partition key of the directories: expected a column of the files)" if partitioned else ""
            raise CalibcliError(
                f"{source.path}: no column {shown(windows.column)} (given by {{opt:time_col}}){where}; the file has "
                f"columns {shown_names(names)}"
            )
        windows = replace(windows, tz=time_kind(schema.field(windows.column).type, windows.column, source.path))
    values = {f.name: getattr(plan, f.name) for f in fields(plan)}
    carried = "segment_by" if plan.segment_by else "group_by"
    values.update(
        {carried: (windows.key, *plan.carried)},
        group_kinds=("int", *plan.group_kinds),
        partition_keys=(windows.key, *plan.partition_keys),
        windows=windows,
    )
    stream.plan = WindowedPlan(**values)
    stream.group_by = stream.plan.group_by
    return stream


def chunk_keys(rows: np.ndarray, chunk_rows: int) -> np.ndarray:
    """Row-count windows: each row's window is its global row index divided by ``chunk_rows``."""
    return rows // np.int64(chunk_rows)
