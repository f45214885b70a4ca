"""Reading prediction/label files into validated arrays (used by every command).

- :mod:`calibcli.io.sources`: datasets (files, directories, globs, URIs, stdin) and their streams of
  validated batches, with global row indices (SPEC 8): :func:`resolve_datasets`, :class:`Stream`,
  :class:`Fragment`, :class:`Batch`.
- :mod:`calibcli.io.formats`: which format a path holds, and reading it with pyarrow in bounded batches.
- :mod:`calibcli.io.columns`: which columns hold probabilities, labels and weights; conversion to NumPy.
- :mod:`calibcli.io.checks`: per-row validation and its messages.
- :mod:`calibcli.io.loaded`: :func:`read_input`, one input read whole into a :class:`LoadedInput` (the
  one-batch case of the stream).

Row numbers in messages are 1-based data rows within the file (the header is not counted).
Importing this package imports neither pyarrow nor pandas; pyarrow is imported when a file is read.
"""

from calibcli.io.arrow_values import column_to_numpy
from calibcli.io.columns import (
    ColumnSpec,
    ReadPlan,
    natural_suffix_order,
    resolve_columns,
    vector_column,
)
from calibcli.io.formats import CSV_NULL_VALUES, FORMATS, detect_format, read_schema, read_table
from calibcli.io.fragments import Batch, Fragment, RowCounts
from calibcli.io.loaded import LoadedInput, read_dataset, read_input, read_whole_table
from calibcli.io.resolve import resolve_datasets
from calibcli.io.sources import DEFAULT_BATCH_ROWS, Dataset, Stream
from calibcli.io.streams import Sources

__all__ = [
    "CSV_NULL_VALUES",
    "DEFAULT_BATCH_ROWS",
    "FORMATS",
    "Batch",
    "ColumnSpec",
    "Dataset",
    "Fragment",
    "LoadedInput",
    "ReadPlan",
    "RowCounts",
    "Sources",
    "Stream",
    "column_to_numpy",
    "detect_format",
    "natural_suffix_order",
    "read_dataset",
    "read_input",
    "read_schema",
    "read_table",
    "read_whole_table",
    "resolve_columns",
    "resolve_datasets",
    "vector_column",
]
