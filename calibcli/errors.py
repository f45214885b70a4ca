"""The project's own exception types.

Every problem with what the user gave us (a file, a column, an option value) is a
:class:`CalibcliError`. The CLI turns it into one ``Error: ...`` line on stderr and
exit code 2, in one place (:func:`calibcli.cli.main`).
"""

from __future__ import annotations


class CalibcliError(Exception):
    """Bad usage or bad input: the message says what was found, what was expected, how to fix it."""


class OptionError(CalibcliError):
    """An option value out of range. The message names the parameter (``alpha``); the CLI shows its flag
    (``--alpha``) instead, so the library's messages never speak of flags (ARCHITECTURE: validate once)."""

    def __init__(self, parameter: str, template: str):
        self.parameter = parameter
        self.template = template
        super().__init__(template.format(name=parameter))

    def with_name(self, name: str) -> str:
        return self.template.format(name=name)


class GateFailed(Exception):
    """A CI gate failed (exit code 1); the message names file, metric, value and threshold."""
