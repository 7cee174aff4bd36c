"""The report's Markdown made inert, as properties over hostile texts (H-45).

Whatever the text -- backtick runs of any length, balanced or not, escapes, HTML, images,
links, tables, lists -- the Markdown :func:`inert_markdown` makes, rendered by a CommonMark
renderer that allows HTML (markdown-it-py, which rich brings), holds no tag but text
markup and no URL; a person's text through :func:`md_text` reads as typed.
"""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusession.core.files.textio import printable
from gpusession.core.retrieval.mdtext import inert_markdown, md_text

markdown_it = pytest.importorskip("markdown_it")
_MD = markdown_it.MarkdownIt("commonmark", {"html": True})

#: Pieces a hostile text is made of: every way to open or close code, HTML, a link.
HOSTILE = ["`", "``", "```", "````", "\\", "\\\\", "<img src=http://127.0.0.1:9/x onerror=alert(1)>",
           "<script>alert(1)</script>", "<div>", "<http://127.0.0.1:9/a>", "![i](http://127.0.0.1:9/i.png)",
           "[l](http://127.0.0.1:9/l)", "[r]", "[r]: http://127.0.0.1:9/r", "](", "]:", "!", "[", "]", "(",
           "&amp;", "&#60;", "|", "| --- |", "- ", "1. ", "> ", "# ", "    ", "~~~", "---", "**", "a", "b c",
           " ", "\n", "\n\n", "\r", "\t"]
_TEXT_TAGS = {"p", "code", "em", "strong", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "br",
              "hr", "pre", "blockquote"}


def _tags(rendered: str) -> list[str]:
    return re.findall(r"<[a-zA-Z][^>]*>", rendered)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(HOSTILE), max_size=24).map("".join))
def test_h45_no_hostile_text_renders_a_tag_a_link_or_an_image(text: str) -> None:
    rendered = _MD.render(inert_markdown(text))
    for tag in _tags(rendered):
        name = re.match(r"<([a-zA-Z0-9]+)", tag)
        assert name and name.group(1).lower() in _TEXT_TAGS, (text, rendered)
        assert not re.search(r"\b(src|href|on\w+)=", tag), (text, rendered)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([h for h in HOSTILE if h not in ("\r", "\t")] + ["x_y", "*", "\\`"]),
                max_size=24).map("".join))
def test_h45_a_persons_text_reads_as_typed_once_rendered(text: str) -> None:
    """Through md_text and the whole report's pass: one paragraph, the text as typed (secrets masked)."""
    rendered = _MD.render(inert_markdown("note: " + md_text(text)))
    assert _tags(rendered) == ["<p>"], (text, rendered)
    shown = html.unescape(re.sub(r"</?p>", "", rendered))
    typed = "note: " + printable(text)  # a secret is masked (H-17): the rest as typed
    assert " ".join(shown.split()) == " ".join(typed.split()), (text, rendered)
