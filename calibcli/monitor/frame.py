"""The monitor from the library, on a DataFrame with a time column (:func:`calibcli.metrics.monitor`): the same
document as ``calibcli monitor`` on the same rows written to a file, because it is that run (the frame is
written to a temporary Parquet file through pyarrow and streamed as the command streams it)."""

from __future__ import annotations

import os
import tempfile

from calibcli.core.errors import CalibcliError
from calibcli.io.columns import ColumnSpec
from calibcli.io.streams import Sources
from calibcli.monitor.family import Options
from calibcli.monitor.run import monitor as run


def monitor_frame(
    data,
    *,
    prob_col: str | None = None,
    prob_cols: list[str] | None = None,
    label_col: str | None = None,
    group_by: str | None = None,
    reference_data=None,
    **options,
) -> dict:
    """``calibcli monitor``'s document (the JSON ``--json`` prints, as a dict) for the rows of ``data`` (a pandas
    DataFrame or a pyarrow Table): ``time_col`` and ``every`` (or ``chunk_rows``), the reference (``reference_windows``,
    ``reference_until``, or ``reference_data``: a frame of the reference's rows), and the command's other options
    by their parameter names (``metrics``, ``adjust``, ``alpha``, ``n_boot``, ``n_null``, ``seed``, ...).

    >>> import pandas as pd
    >>> from calibcli.metrics import monitor
    >>> scores = pd.read_parquet("sample_data/monitor/scores.parquet")
    >>> doc = monitor(scores, time_col="ts", every="W", reference_windows=4, n_boot=0)
    >>> doc["drift"][0]["from"], doc["alerts"]
    ('2024-02-26T00:00:00', 4)
    """
    if "reference" in options:
        raise CalibcliError("reference is a file of the command line: pass the reference's rows as reference_data")
    chosen = Options(**options, reference=None if reference_data is None else "<reference_data>")
    spec = ColumnSpec(prob_col=prob_col, prob_cols=tuple(prob_cols) if prob_cols else None, label_col=label_col)
    split = tuple(g.strip() for g in (group_by or "").split(",") if g.strip())
    with tempfile.TemporaryDirectory(prefix="calibcli-monitor-") as folder:
        path = _written(data, os.path.join(folder, "data.parquet"))
        reference = None
        if reference_data is not None:
            reference = Sources((_written(reference_data, os.path.join(folder, "reference.parquet")),), spec)
        return run(Sources((path,), spec, group_by=split), chosen, reference=reference)


def _written(data, path: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(data, pa.Table):
        try:
            data = pa.Table.from_pandas(data, preserve_index=False)
        except (TypeError, AttributeError):
            raise CalibcliError(
                f"data is {type(data).__name__}: expected a pandas DataFrame or a pyarrow Table"
            ) from None
    pq.write_table(data, path)
    return path
