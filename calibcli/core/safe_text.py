"""Names from the data made safe for the sink that shows them: one function per sink (issue 24).

A file name, a class name, a column name or a group-by value is text the user's data chose. Every sink that
*interprets* text would act on it: matplotlib parses ``$...$`` as mathtext (``diagram 'preds_$1_$2.csv'`` was an
internal error), a terminal obeys escape sequences (a group value could clear the screen or set the window
title), a markdown table splits a cell at ``|`` and a row at a newline, and an HTML page reorders text around a
right-to-left override. Each function below returns the text as that sink must receive it to show it literally;
the text is changed only where the sink would have interpreted it, and what cannot be shown is made visible
(``\\x1b``, ``\\u202e``), never dropped.

=============  ==========================  =======================================================================
sink           function                    what it does
=============  ==========================  =======================================================================
matplotlib     :func:`for_matplotlib`      controls made visible as for the terminal, then ``$`` escaped as ``\\$``
                                           (mathtext stays off for the name; for Text objects with the default
                                           ``parse_math=True`` and ``usetex=False``)
terminal       :func:`for_terminal`        control characters (C0, DEL, C1: ESC starts every escape sequence)
                                           and bidirectional controls shown as ``\\xNN`` / ``\\uNNNN`` escapes
rich markup    :func:`for_rich`            :func:`for_terminal`, then ``[`` escaped (rich.markup.escape), for text
                                           placed inside a markup string (a bare str cell of a rich Table is markup)
markdown cell  :func:`for_markdown_cell`   backslash and ``|`` escaped, newlines as ``\\n``, control characters as
                                           for the terminal: one cell stays one cell, one row one row
HTML           :func:`for_html`            escaped (``& < > " '``), bidi controls and other control characters
                                           shown as visible escapes; returns ``markupsafe.Markup``, so Jinja2's
                                           autoescape leaves it as it is. :func:`html_text` does the same without
                                           escaping, for a template's ``finalize`` (the report page uses it)
CSV            (none: the csv module)      a name written through :mod:`csv` (``csv.writer`` quotes ``,``, ``"``,
                                           newlines) or pyarrow's CSV writer needs no change: the reader gets the
                                           exact name back. No function here, on purpose.
=============  ==========================  =======================================================================

The escapes follow Python's own ``repr`` notation, which :func:`calibcli.core.errors.shown` uses in error messages.
"""

from __future__ import annotations

import re

#: Bidirectional formatting characters (Unicode TR9 explicit formatting and isolates, the implicit marks,
#: the Arabic letter mark): each can reorder the text around it.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

#: Control characters a terminal may act on: C0 (with newline, tab and ESC), DEL and C1 (0x9b is CSI by itself).
_CONTROL = "\x00-\x1f\x7f\x80-\x9f"

_TERMINAL = re.compile(f"[{_CONTROL}{BIDI_CONTROLS}]")
_HTML_INVISIBLE = re.compile(f"[{_CONTROL}{BIDI_CONTROLS}]")
_HTML_HIDDEN = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f{BIDI_CONTROLS}]")
_NEWLINE = re.compile(r"\r\n|\r|\n")


def _escape(ch: str) -> str:
    """One character as Python writes it in a string literal: ``\\n``, ``\\t``, ``\\x1b``, ``\\u202e``."""
    if ch == "\\":
        return "\\\\"
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or (
        f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
    )


def for_matplotlib(text: object) -> str:
    """``text`` for a matplotlib ``Text`` (title, axis label, legend entry, annotation): every ``$`` escaped,
    so mathtext never parses a name (``preds_$1_$2.csv`` was "ValueError: ... mathtext"), and matplotlib shows
    each ``\\$`` as ``$``. A backslash already before a ``$`` stays shown as it was (``a\\$b`` shows
    ``a\\$b``). Control and bidirectional characters are made visible first, as for the terminal (a newline
    would break the legend's layout, ESC draws as a missing glyph, and a PDF or SVG with text keeps an override).
    Only for text drawn with matplotlib's defaults (``parse_math=True``, ``usetex=False``); with
    ``parse_math=False`` use :func:`for_terminal` instead."""
    return for_terminal(text).replace("$", r"\$")


def for_terminal(text: object) -> str:
    """``text`` for a terminal: control characters (ESC, which starts every escape sequence; BEL; backspace;
    carriage return; newline; C1 codes) and bidirectional controls shown as ``\\x1b``, ``\\n``, ``\\u202e``
    escapes. Plain text (letters of any script, spaces, punctuation, backslashes of Windows paths) is
    unchanged."""
    return _TERMINAL.sub(lambda m: _escape(m.group(0)), str(text))


def for_rich(text: object) -> str:
    """``text`` for a rich markup string (a ``str`` given to ``console.print`` or a ``Table`` cell, which rich
    parses as markup): :func:`for_terminal`, then rich's own markup escape (``[bold]`` stays text)."""
    from rich.markup import escape

    return escape(for_terminal(text))


def for_markdown_cell(text: object) -> str:
    """``text`` for one cell of a markdown (GitHub-flavoured) table: a backslash escaped (``\\\\``), ``|``
    escaped (``\\|``, so it does not end the cell), a newline shown as ``\\n`` (so it does not end the row), and
    other control and bidirectional characters as for the terminal. Raw HTML and markdown's own images and links
    stay text: ``&`` and ``<`` as entities (a renderer would load ``<img src=... onerror=...>`` from the
    data), and an image's ``![`` as ``\\![`` (``![](url)`` loads too; a link stays a link, loading nothing)."""
    text = str(text).replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("&", "&amp;").replace("<", "&lt;")  # (no tag opens without "<": ">" stays, "0.06 > 0.05")
    text = text.replace("![", "\\![")
    text = _NEWLINE.sub(lambda m: "\\r\\n" if m.group(0) == "\r\n" else _escape(m.group(0)), text)
    return _HTML_INVISIBLE.sub(lambda m: _escape(m.group(0)), text)


def html_text(text: object) -> str:
    """``text`` for an HTML page that escapes it afterwards (a Jinja2 template's ``finalize``): bidirectional
    controls and control characters other than whitespace shown as visible escapes; tabs and newlines, which
    HTML shows as spaces, are left alone (the page's own texts keep theirs). Not escaped: see :func:`for_html`."""
    return _HTML_HIDDEN.sub(lambda m: _escape(m.group(0)), str(text))


def for_html(text: object):
    """``text`` for an HTML page, as ``markupsafe.Markup`` (Jinja2's autoescape leaves it as it is): ``& < > "
    '`` escaped, and bidirectional controls (a right-to-left override reordered a name on the report page)
    and other control characters shown as visible ``\\u202e`` / ``\\x1b`` escapes instead of acting."""
    from markupsafe import Markup, escape

    visible = _HTML_INVISIBLE.sub(lambda m: _escape(m.group(0)), str(text))
    return Markup(escape(visible))


__all__ = ["BIDI_CONTROLS", "for_matplotlib", "for_terminal", "for_rich", "for_markdown_cell", "for_html", "html_text"]
