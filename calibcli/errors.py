"""The project's own exception types.

Every problem with what the user gave us (a file, a column, an option value) is a
:class:`CalibcliError`. The CLI turns it into one ``Error: ...`` line on stderr and
exit code 2, in one place (:func:`calibcli.cli.main`).
"""

from __future__ import annotations

import re

#: How a message names an option: ``{opt:drop_invalid}``. The library shows the parameter name
#: (``drop_invalid``); the command line shows its flag (``--drop-invalid``), through :func:`cli_text`.
_OPTION = re.compile(r"\{opt:([a-z_]+)\}")


def library_text(text: str) -> str:
    """A message as the library shows it: options by their parameter names."""
    return _OPTION.sub(lambda m: m.group(1), text)


def cli_text(text: str, flag_of=None) -> str:
    """A message as the command line shows it: options by their flags (``n_bins`` -> ``--n-bins``)."""
    flag_of = flag_of or (lambda name: "--" + name.replace("_", "-"))
    return _OPTION.sub(lambda m: flag_of(m.group(1)), text)


class CalibcliError(Exception):
    """Bad usage or bad input: the message says what was found, what was expected, how to fix it.

    Options are written ``{opt:name}`` in the message: ``str(error)`` names the parameter, and the CLI
    shows the flag instead (:func:`cli_text`), so the core never speaks of flags.
    """

    def __init__(self, message: str = ""):
        self.template = str(message)
        super().__init__(self.template)

    def __str__(self) -> str:
        return library_text(self.template)

    def for_cli(self, flag_of=None) -> str:
        return cli_text(self.template, flag_of)


class OptionError(CalibcliError):
    """An option value out of range. The message names the parameter (``alpha``); the CLI shows its flag
    (``--alpha``) instead, so the library's messages never speak of flags (ARCHITECTURE: validate once)."""

    def __init__(self, parameter: str, template: str):
        self.parameter = parameter
        super().__init__(template.replace("{name}", "{opt:" + parameter + "}"))


class GateFailed(Exception):
    """A CI gate failed (exit code 1); the message names file, metric, value and threshold."""
