"""The project's own exception types.

Every problem with what the user gave us (a file, a column, an option value) is a
:class:`CalibcliError`. The CLI turns it into one ``Error: ...`` line on stderr and
exit code 2, in one place (:func:`calibcli.cli.main`).
"""

from __future__ import annotations


class CalibcliError(Exception):
    """Bad usage or bad input: the message says what was found, what was expected, how to fix it."""


class GateFailed(Exception):
    """A CI gate failed (exit code 1); the message names file, metric, value and threshold."""
