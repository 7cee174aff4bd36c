"""The report as one self-contained HTML page: the same text as the Markdown (D5, D7).

``gpusession report NAME --html`` writes it next to the Markdown report (``report.html``
beside ``report.md``, mode 0600). The page is made *from the Markdown text*, so it holds
the same numbers and words; the charts are inline SVG and the CSS is inline, so opening
it makes no request (a Content-Security-Policy forbids any). It reads at a phone's width
(viewport, a maximum width, tables that scroll sideways) and prints (no scrolling boxes
on paper). Every piece of text is escaped (:func:`html.escape`) before the little
Markdown it holds (``**bold**``, ``_italic_``, `` `code` ``) becomes tags: a session or
experiment named ``<script>`` is shown, never run.

Only the Markdown :func:`gpusession.core.retrieval.report.render_report` writes is
understood: headings, paragraphs, bullet lists, pipe tables and chart images.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

from gpusession.core.retrieval.mdtext import MD_ESCAPE

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

_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _inline(text: str, charts: Mapping[str, str]) -> str:
    """One line of Markdown as HTML: escaped first, then code, bold, italic, charts."""
    codes: list[str] = []
    images: list[str] = []

    def keep_image(m: re.Match[str]) -> str:
        stem = m.group(2).rsplit("/", 1)[-1].removesuffix(".png")
        svg = next((s for name, s in charts.items() if stem.endswith(f"-{name}") or stem == name), None)
        images.append(f'<span class="chart">{svg}</span>' if svg is not None
                      else f"<em>chart {html.escape(m.group(1))} not inline</em>")
        return f"\x00I{len(images) - 1}\x00"

    text = _IMAGE.sub(keep_image, text)
    escapes: list[str] = []

    def keep_escape(m: re.Match[str]) -> str:  # ``\<`` is the text ``<`` (H-45): never markup
        escapes.append(html.escape(m.group(1), quote=True))
        return f"\x00E{len(escapes) - 1}\x00"

    text = MD_ESCAPE.sub(keep_escape, text)
    text = html.escape(text, quote=True)

    def keep_code(m: re.Match[str]) -> str:
        codes.append(f"<code>{m.group(1)}</code>")
        return f"\x00C{len(codes) - 1}\x00"

    text = re.sub(r"`([^`]+)`", keep_code, text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"(?<![\w])_(?=\S)(.+?)(?<=\S)_(?![\w])", r"<em>\1</em>", text)
    text = re.sub(r"\x00C(\d+)\x00", lambda m: codes[int(m.group(1))], text)
    text = re.sub(r"\x00E(\d+)\x00", lambda m: escapes[int(m.group(1))], text)
    return re.sub(r"\x00I(\d+)\x00", lambda m: images[int(m.group(1))], text)


def _cells(line: str) -> list[str]:
    """The cells of a pipe-table row (a backslash before a pipe keeps it inside a cell)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(rows: list[str], charts: Mapping[str, str]) -> list[str]:
    head, body = _cells(rows[0]), [r for r in rows[2:]]
    out = ['<div class="scroll"><table>', "<thead><tr>"
           + "".join(f"<th>{_inline(c, charts)}</th>" for c in head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{_inline(c, charts)}</td>" for c in _cells(r)) + "</tr>" for r in body]
    return out + ["</tbody></table></div>"]


def _blocks(lines: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``[(kind, lines)]``: ``h1``, ``h2``, ``p``, ``ul`` (one entry per item), ``table``."""
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        kind = blocks[-1][0] if blocks else None
        if not line.strip():
            blocks.append(("blank", []))
        elif line.startswith("## "):
            blocks.append(("h2", [line[3:]]))
        elif line.startswith("# "):
            blocks.append(("h1", [line[2:]]))
        elif line.startswith("|"):
            if kind == "table":
                blocks[-1][1].append(line)
            else:
                blocks.append(("table", [line]))
        elif re.match(r"\s*- ", line):
            item = re.sub(r"^\s*- ", "", line)
            if kind == "ul":
                blocks[-1][1].append(item)
            else:
                blocks.append(("ul", [item]))
        elif kind == "ul" and line.startswith("  "):
            blocks[-1][1][-1] += " " + line.strip()  # the item's wrapped line
        elif kind == "p":
            blocks[-1][1].append(line)
        else:
            blocks.append(("p", [line]))
    return [b for b in blocks if b[0] != "blank"]


def markdown_to_html(markdown: str, *, title: str, charts: Mapping[str, str] | None = None) -> str:
    """The report's Markdown as one self-contained HTML page.

    Args:
        markdown: the text :func:`gpusession.core.retrieval.report.render_report` returned.
        title: the page title (escaped here).
        charts: ``{name → inline SVG}`` (``durations``, ``overview``, ``memory``) put where the Markdown
            links ``report-<name>.png``.

    Returns:
        The page (UTF-8 text), with no external reference.
    """
    charts = dict(charts or {})
    body: list[str] = []
    first_list = True
    for kind, lines in _blocks(markdown.splitlines()):
        if kind == "h1":
            body.append(f"<h1>{_inline(lines[0], charts)}</h1>")
        elif kind == "h2":
            body.append(f"<h2>{_inline(lines[0], charts)}</h2>")
        elif kind == "table":
            body += _table(lines, charts)
        elif kind == "ul":
            css = ' class="summary"' if first_list and len(body) == 1 else ""
            first_list = False
            body.append(f"<ul{css}>" + "".join(f"<li>{_inline(i, charts)}</li>" for i in lines) + "</ul>")
        else:
            body.append(f"<p>{_inline(' '.join(line.strip() for line in lines), charts)}</p>")
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
    )
    return head + "\n".join(body) + "\n</main>\n</body>\n</html>\n"


__all__ = ["CSP", "CSS", "markdown_to_html"]
