"""User text that is HTML or Markdown inside the report (H-45).

``report.md`` is rendered by a CommonMark renderer that allows HTML (markdown-it-py,
which rich already brings): nothing user-made may become a tag, an image or a link,
and the texts read as typed in both the Markdown and the HTML page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import cli

GPU = "<img src=http://127.0.0.1:9/x onerror=alert(1)>"
NOTE = "![x](http://127.0.0.1:9/y.png)"
MORE = "<b>bold</b> [link](http://127.0.0.1:9/z) &amp; **not bold** `not code` <http://127.0.0.1:9/a>"


def _rendered(md: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return str(markdown_it.MarkdownIt("commonmark", {"html": True}).render(md))


@pytest.fixture
def report(capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> tuple[str, str]:
    code, _, err = cli(capsys, sessions_root, "new", "m", "--gpu", GPU, "--lots", "1", "--days", "7",
                       "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    for item, note in (("g1.approver", NOTE), ("g1.one-sentence", MORE)):
        code, _, err = cli(capsys, sessions_root, "checklist", "m", "note", item, note)
        assert code == 0, err
    out = tmp_path / "r.md"
    code, _, err = cli(capsys, sessions_root, "report", "m", "--out", str(out), "--html")
    assert code == 0, err
    return out.read_text(), out.with_suffix(".html").read_text()


def test_h45_report_md_rendered_as_commonmark_runs_and_fetches_nothing(report: tuple[str, str]) -> None:
    md, _ = report
    html = _rendered(md)
    assert not re.search(r"<(img|a|script|b)\b", html), html
    assert "onerror" not in re.sub(r"&lt;img[^\n]*", "", html) or "&lt;img" in html
    assert "src=" not in re.sub(r"&lt;img src=", "", html)


def test_h45_texts_read_as_typed_in_the_md_and_the_html(report: tuple[str, str]) -> None:
    md, page = report
    rendered = " ".join(_rendered(md).split())  # a long note is wrapped over lines
    page = " ".join(page.split())
    import html as h

    for text in (NOTE, "<b>bold</b>", "[link](http://127.0.0.1:9/z)", "**not bold**", "`not code`"):
        assert h.escape(text, quote=False) in rendered, text  # the Markdown, rendered
        assert h.escape(text, quote=True) in page or h.escape(text, quote=False) in page, text
    assert "&amp;amp;" in rendered  # the typed "&amp;" is text, not an entity
    assert "<img" not in page and "<b>" not in page and "<a " not in page


def test_h45_a_note_that_is_image_syntax_is_its_text_in_both(report: tuple[str, str]) -> None:
    md, page = report
    assert "!\\[x\\](http://127.0.0.1:9/y.png)" in md
    assert NOTE in page and 'src="http' not in page
