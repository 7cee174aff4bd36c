"""The report as one self-contained HTML page: the same text as the Markdown (D5, D7).

``gpusession report NAME --html`` writes it next to the Markdown report (``report.html``
beside ``report.md``, mode 0600); ``compare --html`` writes its page the same way. The page
is made *from the Markdown text* by markdown-it-py (CommonMark and its pipe tables, the
renderer a CommonMark viewer of ``report.md`` uses), so it holds the same numbers and words,
read as CommonMark reads them. The charts are inline SVG and the CSS is inline, so opening
it makes no request (a Content-Security-Policy forbids any). It reads at a phone's width
(viewport, a maximum width, tables that scroll sideways) and prints (no scrolling boxes on
paper).

Nothing in the text becomes markup that runs or fetches (H-45): raw HTML is escaped, never
passed through (a session or experiment named ``<script>`` is shown, never run); the only
image is the report's own chart beside it (``![name](report-name.png)``), put inline; any
other image or link stays its Markdown text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

#: The page's style: readable on a phone, printable.
CSS = """
:root { color-scheme: light; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
       background: #fff; margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; border-bottom: 1px solid #ccc; }
p, li { overflow-wrap: anywhere; }
ul { padding-left: 1.25rem; }
ul.summary { background: #f3f6fa; border: 1px solid #c9d6e6; border-radius: 6px;
             padding: .75rem 1rem .75rem 2rem; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, monospace; background: #f2f2f2;
       padding: 0 .2em; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: .5rem 0; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { border: 1px solid #bbb; padding: .25rem .5rem; text-align: left; white-space: nowrap; }
th { background: #eee; }
.chart { display: block; overflow-x: auto; -webkit-overflow-scrolling: touch; }
.chart svg { width: 100%; min-width: 36rem; height: auto; display: block; margin: .5rem 0; }
@media print {
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  .scroll, .chart { overflow: visible; }
  .chart svg { min-width: 0; }
  th, td { white-space: normal; }
  h2 { break-after: avoid; }
  table, .chart { break-inside: avoid; }
}
"""

#: Nothing may be fetched: no script, no font, no image from anywhere but the page itself.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

#: A file beside the report (``report-durations.png``): the only link or image target parsed
#: as one; anything else (a scheme, a path, an autolink) stays text, so nothing is fetched.
_BESIDE = re.compile(r"[\w.-]+\.(?:png|svg)")


def _image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A chart image as its inline SVG (``env["charts"]``: ``{name → SVG}``), or a line saying it is not inline."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    stem = src.removesuffix(".png").removesuffix(".svg")
    charts: Mapping[str, str] = env.get("charts", {})
    svg = next((s for name, s in charts.items() if stem.endswith(f"-{name}") or stem == name), None)
    if svg is not None:
        return f'<span class="chart">{svg}</span>'
    return f"<em>chart {html.escape(alt)} not inline</em>"


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A link is shown as the Markdown typed (``[label](file)``): the page links nowhere."""
    env.setdefault("hrefs", []).append(str(tokens[idx].attrGet("href") or ""))
    return "["


def _link_close(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return f"]({html.escape(env['hrefs'].pop())})"


def _table_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A table in a box that scrolls sideways at a phone's width (``.scroll`` in :data:`CSS`)."""
    return '<div class="scroll"><table>\n'


def _table_close(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return "</table></div>\n"


def _parser() -> MarkdownIt:
    """CommonMark with pipe tables, raw HTML escaped, links and images only to a file beside the page."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.validateLink = lambda url: _BESIDE.fullmatch(url) is not None  # type: ignore[method-assign]
    for name, rule in (("image", _image), ("link_open", _link_open), ("link_close", _link_close),
                       ("table_open", _table_open), ("table_close", _table_close)):
        md.add_render_rule(name, rule)
    return md


_MD = _parser()


def markdown_to_html(markdown: str, *, title: str, charts: Mapping[str, str] | None = None) -> str:
    """The report's Markdown as one self-contained HTML page.

    Args:
        markdown: the text :func:`gpusession.core.retrieval.report.render_report` returned
            (or ``compare``'s Markdown): CommonMark with pipe tables.
        title: the page title (escaped here).
        charts: ``{name → inline SVG}`` (``durations``, ``overview``, ``memory``, ``cost``) put where
            the Markdown shows ``report-<name>.png``.

    Returns:
        The page (UTF-8 text), with no external reference. The list right under the page's
        ``# `` title is the summary (``<ul class="summary">``).
    """
    env: dict[str, Any] = {"charts": dict(charts or {})}
    tokens = _MD.parse(markdown, env)
    if (len(tokens) > 3 and tokens[0].type == "heading_open" and tokens[0].tag == "h1"
            and tokens[3].type == "bullet_list_open"):
        tokens[3].attrSet("class", "summary")
    body = _MD.renderer.render(tokens, _MD.options, env)
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
    )
    return head + body + "</main>\n</body>\n</html>\n"


__all__ = ["CSP", "CSS", "markdown_to_html"]
