"""Reading prediction/label files into validated arrays (used by every command).

- :mod:`calibcli.io.formats`: which format a path holds, and reading it with pyarrow.
- :mod:`calibcli.io.columns`: which columns hold probabilities, labels and weights; conversion to NumPy.
- :mod:`calibcli.io.checks`: per-row validation and its messages.
- :mod:`calibcli.io.loaded`: :func:`read_input`, one input read whole into a :class:`LoadedInput`.

Row numbers in messages are 1-based data rows (the header is not counted).
"""

from calibcli.io.columns import (
    ColumnSpec,
    column_to_numpy,
    natural_suffix_order,
    resolve_columns,
    vector_column,
)
from calibcli.io.formats import CSV_NULL_VALUES, FORMATS, detect_format, read_schema_names, read_table
from calibcli.io.loaded import LoadedInput, read_input, read_whole_table

__all__ = [
    "CSV_NULL_VALUES",
    "FORMATS",
    "ColumnSpec",
    "LoadedInput",
    "column_to_numpy",
    "detect_format",
    "natural_suffix_order",
    "read_input",
    "read_schema_names",
    "read_table",
    "read_whole_table",
    "resolve_columns",
    "vector_column",
]
