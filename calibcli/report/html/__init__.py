"""The one-page HTML report, rendered from the report's JSON document with Jinja2 templates.

:func:`render_page` takes the document :func:`calibcli.report.document.build_document` builds (the source of
truth) and returns one self-contained page: styles, scripts and the SVG diagrams inline, no external URL,
the document itself embedded as ``<script type="application/json" id="report-data">`` (without the SVG
text, which is in the page already). Jinja2 is a base dependency, imported only here (when a page is
rendered), so that start-up does not pay for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys

from calibcli.core.errors import CalibcliError
from calibcli.monitor import render as monitor_render

#: Marker left in the embedded JSON where a diagram's SVG text was (the figure itself is in the page).
SVG_IN_PAGE = "inline in the page"


def require_jinja2():
    """The jinja2 module, or a usage error that says how to install it (a base dependency: missing only from
    an environment installed without dependencies)."""
    try:
        import jinja2
    except ModuleNotFoundError:
        raise CalibcliError(
            "the HTML report needs Jinja2, which is not installed: pip install 'calibcli[report]' "
            "(or pip install jinja2)"
        ) from None
    return jinja2


_XML_HEAD = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->|<metadata>.*?</metadata>", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_PATH_DATA = re.compile(r'\sd="([^"]*)"')
_LONG_DECIMAL = re.compile(r"(\d\.\d\d)\d+")


def svg_fragment(svg: str, *, prefix: str) -> str:
    """Matplotlib's SVG file as an element to inline in HTML: no XML declaration, doctype, comments or
    metadata (whose RDF names are URLs) or indentation, path coordinates to 0.01 pt, every id prefixed with
    ``prefix`` (several figures share one page's id space), and no fixed width or height, so CSS scales it (the
    viewBox keeps the aspect ratio)."""
    svg = _XML_HEAD.sub("", svg).strip()
    # path coordinates to 0.01 pt (matplotlib writes 6 decimals): a third of the size, no visible change
    svg = _PATH_DATA.sub(lambda m: ' d="' + " ".join(_LONG_DECIMAL.sub(r"\1", m.group(1)).split()) + '"', svg)
    svg = re.sub(r">\s+<", "><", svg)  # the indentation between elements
    ids = set(_ID.findall(svg))
    if ids:
        svg = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', svg)
        refs = re.compile(r"(#)(" + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)) + r")\b")
        svg = refs.sub(lambda m: f"#{prefix}{m.group(2)}", svg)
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    return head + ' role="img"' + svg[head_end:]


def page_data(doc: dict) -> dict:
    """The document as embedded in the page: every diagram's SVG text replaced by :data:`SVG_IN_PAGE`."""
    out = dict(doc)
    out["files"] = []
    for entry in doc["files"]:
        e = dict(entry)
        if e.get("figure"):  # a regression entry's curve and PIT histogram (calibcli.report.html.regression)
            e["figure"] = {**e["figure"], "svg": SVG_IN_PAGE}
        if e.get("diagrams"):
            e["diagrams"] = {k: (SVG_IN_PAGE if k in ("binned", "smooth") else v) for k, v in e["diagrams"].items()}
        out["files"].append(e)
    if doc.get("audit"):  # the segment audit's figures (calibcli.report.html.audit)
        out["audit"] = {
            **doc["audit"],
            "files": [
                {**e, "figure": e["figure"] and {**e["figure"], "svg": SVG_IN_PAGE}} for e in doc["audit"]["files"]
            ],
        }
    if doc.get("monitor"):  # the monitor's pictures (calibcli.report.html.monitor)
        out["monitor"] = {
            **doc["monitor"],
            "files": [{**d, "figure": {**d["figure"], "svg": SVG_IN_PAGE}} for d in doc["monitor"]["files"]],
        }
    return out


def _script_json(doc: dict) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` escaped as JSON unicode escapes."""
    from calibcli.core.documents import jsonable

    text = json.dumps(jsonable(page_data(doc)), allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def metric_rows(entry: dict) -> list[dict]:
    """Every metric of an entry for the full table: the ece and smece sections (aggregate, problems,
    multiclass scores) and the test's headline, each with its description from the registry."""
    from calibcli.core.registry import REGISTRY
    from calibcli.report.entries import entry_sections, metric_cells

    rows = []
    for source in ("ece", "smece", "tcal"):
        for problem, metrics in entry_sections(entry[source]):
            for name, m in metrics.items():
                spec = REGISTRY.get(name)
                rows.append(
                    {
                        **metric_cells(problem, name, m),
                        "description": spec.description if spec else (m.get("note") or ""),
                        "better": spec.better if spec else "",
                    }
                )
    return rows


_PATH_PART = re.compile(r"[/\\]*[^/\\]*[/\\]|[^/\\]+$")  # a leading '/' stays with the first name
_WORD_JOINT = re.compile(r"(?<=[_-])(?=.)")
_SPACES = re.compile(r"(\s+)")


def path_breaks(text: str):
    """Text naming inputs (a name, a heading with one) as HTML that a narrow column breaks only after a ``/``,
    as the terminal's summary breaks names (:mod:`calibcli.report.render`): each part of a path up to and including
    its slash is an inline block (``.path-part``, which moves to the next line whole), and only a part wider
    than the line breaks inside, after a ``_`` or ``-`` (``<wbr>``). Words without ``/``, ``_`` or ``-`` stay
    plain text; the text (copy, ``textContent``) is unchanged, except that control and bidirectional characters
    (a right-to-left override reordered a name) are shown as visible escapes
    (:func:`calibcli.core.safe_text.for_terminal`:
    a name is one line)."""
    from markupsafe import Markup, escape

    from calibcli.core.safe_text import for_terminal

    text = for_terminal(text)

    def word(token: str):
        if not re.search(r"[/\\_-]", token):
            return escape(token)
        return Markup("<wbr>").join(
            Markup('<span class="path-part">')
            + Markup("<wbr>").join(escape(w) for w in _WORD_JOINT.split(part))
            + Markup("</span>")
            for part in _PATH_PART.findall(token)
        )

    return Markup("").join(escape(t) if t.isspace() or not t else word(t) for t in _SPACES.split(text))


def regression_rows(entry: dict) -> list[dict]:
    """Every metric of a regression entry (``calibcli regression``'s), with its description from the registry."""
    from calibcli.core.registry import REGISTRY

    per_level = {
        "picp": "coverage of the {} interval: mean 1{{lower <= y <= upper}}",
        "mpiw": "mean width of the {} interval",
        "interval_score": "Winkler score of the {} interval (Gneiting and Raftery 2007)",
        "ssc": "size-stratified coverage of the {} interval: its smallest coverage over bins of the width",
    }
    rows = []
    for name, m in entry["problem"]["metrics"].items():
        spec = REGISTRY.get(name)
        head, _, level = name.rpartition("_")
        description = spec.description if spec else per_level.get(head, "{}").format(level) if head else ""
        rows.append(
            {
                "metric": name,
                "estimate": m.get("estimate"),
                "ci_low": m.get("ci_low"),
                "ci_high": m.get("ci_high"),
                "description": description,
            }
        )
    return rows


def render_page(doc: dict, *, template: str = "report.html.j2") -> str:
    """The HTML page of a report document (:mod:`calibcli.cli.commands.report`): the classifier page, or
    ``regression.html.j2`` for regression dumps (:mod:`calibcli.report.html.regression`)."""
    from markupsafe import Markup

    from calibcli.core.documents import fmt_interval, fmt_number
    from calibcli.core.safe_text import html_text

    jinja2 = require_jinja2()
    # finalize: every value a template prints, before autoescape, has its bidirectional controls and control
    # characters made visible (names, group values and class names from the data); markup built on purpose
    # (the SVG figures, the stylesheet, path_breaks' output) is left as it is
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("calibcli.report.html", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        finalize=lambda v: html_text(v) if isinstance(v, str) and not isinstance(v, Markup) else v,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["num"] = fmt_number
    env.filters["interval"] = fmt_interval
    env.filters["raw"] = lambda v: "" if v is None else repr(float(v))
    env.filters["path_breaks"] = path_breaks
    page = env.get_template(template)
    p = doc["parameters"]
    return page.render(
        doc=doc,
        p=p,
        level=f"{100 * (1 - p['alpha']):g}%",
        data_json=_script_json(doc),
        metric_rows=metric_rows,
        regression_rows=regression_rows,
        monitor_rows=monitor_render.window_rows,
        monitor_lines=monitor_render.footer_lines,
        css=_read("style.css"),
        js=_read("sort.js"),
    )


#: Where the templates' compiled code is kept: this package's ``__pycache__``, beside its modules' bytecode.
BYTECODE_DIR = os.path.join(os.path.dirname(__file__), "__pycache__")


def _bytecode_cache():
    """Jinja2's compiled templates kept on disk in :data:`BYTECODE_DIR`, as Python keeps a module's bytecode:
    compiling the page's template is a tenth of a second of a small report, loading it a millisecond. A file's
    name carries Jinja2's version and a digest of this module (the environment's options are compiled into the
    code) and Jinja2 checks the template's own digest and Python's version inside it, so another template,
    environment, Jinja2 or Python compiles afresh. Written only when Python writes bytecode (not with
    ``PYTHONDONTWRITEBYTECODE`` or ``-B``); a folder that cannot be read or written is only slower, and a file cut
    short or written by another version is compiled again. None (no cache) when this module cannot be read."""
    from importlib.metadata import version

    from jinja2 import FileSystemBytecodeCache

    class Cache(FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except Exception:  # unreadable, or cut short (pickle's and marshal's errors): compiled again
                bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            if sys.dont_write_bytecode:
                return
            try:
                os.makedirs(self.directory, exist_ok=True)
                super().dump_bytecode(bucket)
            except OSError:
                pass  # (no temporary file is left: Jinja2 removes it)

    try:
        with open(__file__, "rb") as fh:
            digest = hashlib.sha256(fh.read() + version("jinja2").encode()).hexdigest()[:16]
    except OSError:
        return None
    return Cache(BYTECODE_DIR, f"calibcli-template-%s-{digest}.jinja2")


def _read(name: str) -> str:
    from importlib.resources import files

    return files("calibcli.report.html").joinpath("templates", name).read_text(encoding="utf-8")
