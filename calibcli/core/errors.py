"""The project's own exception types.

Every problem with what the user gave us (a file, a column, an option value) is a
:class:`CalibcliError`, a :class:`ValueError`; a value of the wrong type (``n_bins="15"``, ``alpha=None``) is
also a :class:`TypeError` (:class:`OptionTypeError`), as scikit-learn's ``InvalidParameterError`` is both, so
``except ValueError`` and ``except TypeError`` catch what they would catch from NumPy or scikit-learn. The CLI
turns every one into one ``Error: ...`` line on stderr and exit code 2, in one place
(:func:`calibcli.cli.exits.command_failure`).
"""

from __future__ import annotations

import os
import re
import sys

from calibcli.core.safe_text import for_terminal

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


#: Longest value a message quotes in full (a column name, a cell's text): longer ones are cut.
SHOWN_CHARS = 80
#: Most names a message lists (the columns of a file): more are counted, not shown.
SHOWN_NAMES = 20


def shown(value, limit: int = SHOWN_CHARS, *, quote: bool = True) -> str:
    """A value from the user's data as a message quotes it: ``repr`` (so that spaces and control bytes
    show; ``str`` without ``quote``), cut to about ``limit`` characters with an ellipsis and the full
    length, so that one 100,000-character column name does not make a 100 KB error line."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # a NumPy scalar as the user wrote it: 0.1, not np.float64(0.1)
    text = repr(value) if quote else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(str(value))} characters)"


def shown_names(names, limit: int = SHOWN_NAMES) -> str:
    """A list of names (a file's columns) as a message shows it: each name :func:`shown`, at most
    ``limit`` of them, then how many more there are."""
    names = list(names)
    body = ", ".join(shown(n) for n in names[:limit])
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return f"[{body}{more}]"


#: A message longer than this has its long quoted values cut (:func:`shortened`).
LONG_MESSAGE = 1000
_QUOTED = re.compile(rf"'[^'\n]{{{SHOWN_CHARS},}}'|\"[^\"\n]{{{SHOWN_CHARS},}}\"")


def shortened(text: str) -> str:
    """A message with its long quoted values cut as :func:`shown` cuts them, when the message is too long
    to read (over :data:`LONG_MESSAGE` characters): the backstop for a value quoted without :func:`shown`.
    A message of ordinary length is returned as it is."""
    if len(text) <= LONG_MESSAGE:
        return text
    return _QUOTED.sub(
        lambda m: f"{m.group(0)[:SHOWN_CHARS]}... ({len(m.group(0)) - 2} characters){m.group(0)[0]}", text
    )


class CalibcliError(ValueError):
    """Bad usage or bad input, a :class:`ValueError`: the message says what was found, what was expected, how
    to fix it.

    Options are written ``{opt:name}`` in the message: ``str(error)`` names the parameter, and the CLI
    shows the flag instead (:func:`cli_text`), so the core never speaks of flags.
    """

    def __init__(self, message: str = ""):
        self.template = str(message)
        super().__init__(self.template)

    def __str__(self) -> str:
        return shortened(library_text(self.template))

    def for_cli(self, flag_of=None) -> str:
        return shortened(cli_text(self.template, flag_of))

    def about(self, where: str) -> CalibcliError:
        """The same error naming the input it is about (``where: ...``), unless it already starts so."""
        if not where or self.template.startswith(f"{where}:"):
            return self
        return CalibcliError(f"{where}: {self.template}")


class OptionError(CalibcliError):
    """An option value out of range. The message names the parameter (``alpha``); the CLI shows its flag
    (``--alpha``) instead, so the library's messages never speak of flags (ARCHITECTURE: validate once)."""

    def __init__(self, parameter: str, template: str):
        self.parameter = parameter
        super().__init__(template.replace("{name}", "{opt:" + parameter + "}"))


class OptionTypeError(OptionError, TypeError):
    """An option value of the wrong type (``n_bins="15"``, ``alpha=None``, ``seed=1.5``): a :class:`TypeError`
    and, as every :class:`CalibcliError`, a :class:`ValueError` (scikit-learn's ``InvalidParameterError`` is
    both). The message names the parameter, as :class:`OptionError`'s does."""


class GateFailed(Exception):
    """A CI gate failed (exit code 1); the message names file, metric, value and threshold."""


# ---------------------------------------------------------------------------------------------
# How messages name options on the command line, and warnings


#: Parameters whose flag is not ``--`` plus the name with dashes.
FLAGS = {"fmt": "--format", "from_format": "--from"}


def flag_of(parameter: str) -> str:
    """The command-line flag of a library parameter name (``n_bins`` -> ``--n-bins``)."""
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def warn(message: str) -> None:
    """A warning or hint on stderr (never on stdout), options named by their flags."""
    sys.stderr.write(f"Warning: {for_terminal(cli_text(message, flag_of))}\n")  # one line, no escape sequences


def check_choice(value: str, choices: tuple[str, ...], flag: str) -> str:
    """``value`` if it is one of ``choices``, else the error naming ``flag`` and the choices."""
    if value not in choices:
        raise CalibcliError(f"{flag} is {value!r}: expected one of {', '.join(choices)}")
    return value


# ---------------------------------------------------------------------------------------------
# Exit codes beside 2 (bad input) and 1 (a failed gate)

#: Exit code when the reader of stdout goes away: 128 + SIGPIPE, as the shell reports a tool killed by it.
PIPE_CLOSED = 141


def quiet_stdout() -> None:
    """Point stdout at /dev/null after a broken pipe, so that the flush at exit does not complain
    (Python docs, signal module, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in tests)
        pass
