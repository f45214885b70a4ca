"""The sink-safe name functions of :mod:`calibcli.core.safe_text` (issue 24), each checked against the sink itself:
matplotlib draws the name literally, rich prints no escape sequence, a markdown row keeps its cells, an HTML
parser gets the visible text back with no bidirectional control in it."""

from __future__ import annotations

import html

import io
import re
from html.parser import HTMLParser

import pytest

from calibcli.core.safe_text import BIDI_CONTROLS, for_html, for_markdown_cell, for_matplotlib, for_rich, for_terminal

HOSTILE = [
    "preds_$1_$2.csv",
    "$x$",
    "$$",
    r"$\frac{1}{0}$",
    r"a\$b",
    "price $5",
    "\x1b[2J\x1b]0;owned\x07",
    "a|b\nc",
    "tab\there\r\nnext",
    "evil\u202egnp.exe",
    "[bold red]x[/bold red]",
    "<script>alert(1)</script>",
    "ünïcödé 名前 ملف",
    "\x9b31m",
    "back\\slash",
]


# ---------------------------------------------------------------------------------------------
# matplotlib


@pytest.mark.parametrize("name", HOSTILE)
def test_matplotlib_shows_the_name_literally(name):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        title = ax.set_title(for_matplotlib(name))
        ax.plot([0, 1], [0, 1], label=for_matplotlib(name))
        legend = ax.legend()
        fig.canvas.draw()  # mathtext would raise here on an unbalanced expression
        for text in (title, legend.get_texts()[0]):
            assert text._preprocess_math(text.get_text()) == (for_terminal(name), False)  # plain text, as written
    finally:
        plt.close(fig)


def test_a_dollar_name_unescaped_is_mathtext():
    """Why the function exists: the raw name is parsed as mathtext (and this one fails to draw)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        title = ax.set_title("preds_$1_$2.csv")
        assert title._preprocess_math(title.get_text())[1] is True
        with pytest.raises(ValueError):
            fig.canvas.draw()
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------------------------
# terminal and rich


def test_terminal_escapes_are_made_visible():
    assert for_terminal("\x1b[2J\x1b]0;owned\x07") == "\\x1b[2J\\x1b]0;owned\\x07"
    assert for_terminal("a\nb\tc\r") == "a\\nb\\tc\\r"
    assert for_terminal("\x9b31m") == "\\x9b31m"
    assert for_terminal("evil\u202egnp.exe") == "evil\\u202egnp.exe"
    assert for_terminal("ünïcödé 名前 ملف") == "ünïcödé 名前 ملف"
    assert for_terminal("C:\\data\\x.csv") == "C:\\data\\x.csv"


@pytest.mark.parametrize("name", HOSTILE)
def test_nothing_a_terminal_acts_on_reaches_it(name):
    for shown in (for_terminal(name), for_rich(name)):
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in BIDI_CONTROLS for ch in shown)


@pytest.mark.parametrize("name", HOSTILE)
def test_rich_prints_the_visible_name_not_markup(name):
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=400, color_system=None)
    table = Table("name")
    table.add_row(for_rich(name))
    console.print(for_rich(name))
    console.print(table)
    printed = out.getvalue()
    assert printed.splitlines()[0] == for_terminal(name)
    assert "\x1b" not in printed
    assert for_terminal(name) in printed.splitlines()[4]  # the table's one body row


# ---------------------------------------------------------------------------------------------
# markdown


def _cells(row: str) -> list[str]:
    """The cells of one GitHub-flavoured markdown table row: ``|`` ends a cell unless escaped by a backslash
    (GFM's rule); then the cell's backslash escapes of punctuation are undone, as markdown renders them."""
    cells, current, i = [], "", 0
    body = row.strip()[1:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            current += body[i : i + 2]
            i += 2
            continue
        if body[i] == "|":
            cells.append(current)
            current = ""
        else:
            current += body[i]
        i += 1
    cells.append(current)
    # as a renderer reads a cell: backslash escapes first, then character references
    return [html.unescape(re.sub(r"\\([\\|!])", r"\1", c.strip())) for c in cells]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_markdown_row_keeps_its_cells(name):
    row = f"| {for_markdown_cell(name)} | 0.12 |"
    assert "\n" not in row and "\r" not in row
    cells = _cells(row)
    assert len(cells) == 2 and cells[1] == "0.12"
    expected = name.replace("\r\n", "\\r\\n").replace("\n", "\\n").replace("\r", "\\r")
    assert cells[0] == for_terminal(expected)


def test_markdown_examples():
    assert for_markdown_cell("a|b\nc") == "a\\|b\\nc"
    assert for_markdown_cell("a\\|b") == "a\\\\\\|b"


def test_markdown_cells_carry_no_raw_html_and_no_image():
    """Issue 33: a segment or group value ``<img src=x onerror=...>`` reached a rendered job summary as an image."""
    assert for_markdown_cell("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)>"
    assert for_markdown_cell("a & b") == "a &amp; b"
    assert for_markdown_cell("![t](https://example.com/x.png)") == "\\![t](https://example.com/x.png)"


# ---------------------------------------------------------------------------------------------
# HTML


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.tags = "", []

    def handle_data(self, data):
        self.text += data

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


@pytest.mark.parametrize("name", HOSTILE)
def test_html_shows_the_name_as_text_without_bidi_controls(name):
    from markupsafe import Markup

    shown = for_html(name)
    assert isinstance(shown, Markup)
    parser = _Text()
    parser.feed(f"<td>{shown}</td>")
    parser.close()
    assert parser.tags == ["td"]  # no element of the name's making
    assert parser.text == for_terminal(name)
    assert not any(ch in BIDI_CONTROLS for ch in parser.text)


def test_html_through_jinja2_autoescape_is_escaped_once():
    import jinja2

    env = jinja2.Environment(autoescape=True)
    page = env.from_string("<td>{{ name }}</td>").render(name=for_html("<b>&\u202e</b>"))
    assert page == "<td>&lt;b&gt;&amp;\\u202e&lt;/b&gt;</td>"


# ---------------------------------------------------------------------------------------------
# The HTML report, through the installed command: names from the data never act on the page


def test_the_report_page_shows_hostile_names_visibly(tmp_path):
    """A file name with a right-to-left override and group values with an override, an escape sequence and a
    tag: the page holds none of those characters raw and no element of the data's making; the names show as
    visible escapes (the page's ``finalize`` and ``path_breaks``)."""
    import os
    import shutil
    import subprocess
    import sys

    import pandas as pd

    from tests._cli import BINARY

    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    df = pd.read_csv(BINARY)
    df["site"] = ["ab\u202ecd" if i % 2 else "<i>x\x1b[2Jy" for i in range(len(df))]
    name = tmp_path / "evil\u202egnp.csv"
    df.to_csv(name, index=False)
    r = subprocess.run(
        [exe, "report", str(name), "--group-by", "site", "--n-boot", "20", "-o", str(tmp_path / "r.html")],
        capture_output=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert not any(ch in page for ch in BIDI_CONTROLS + "\x1b")
    assert "<i>x" not in page and "&lt;i&gt;x\\x1b[2Jy" in page
    assert "evil\\u202egnp.csv" in page and "site=ab\\u202ecd" in page
