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


# -- code spans as CommonMark pairs backticks ------------------------------------------------
DECISION = "keep a``<img src=http://127.0.0.1:9/x onerror=alert(1)> b"
HANDOVER = "see `x`` ![i](http://127.0.0.1:9/i.png) ``y` and ```<script>alert(1)</script>"


def _tags(html_text: str) -> set[str]:
    """The HTML tags a renderer made (escaped text holds ``&lt;``, never ``<``)."""
    return {m.group(1).lower() for m in re.finditer(r"<([a-zA-Z][\w-]*)", html_text)}


def _inert_html(html_text: str) -> None:
    """Nothing runs or is fetched: only text markup, no URL in an attribute."""
    assert _tags(html_text) <= {"p", "code", "em", "strong", "ul", "ol", "li", "h1", "h2", "h3", "br",
                                "hr", "pre", "blockquote"}, html_text
    assert not re.search(r"<[^>]*\b(src|href|on\w+)=", html_text), html_text


def test_h45_a_decision_note_with_a_backtick_run_is_inert_and_reads_as_typed(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
) -> None:
    """A run of two backticks is never split into a span's closer (the g8 notes went in raw)."""
    import html as h

    assert cli(capsys, sessions_root, "new", "c", "--gpu", "H100", "--lots", "1", "--days", "3")[0] == 0
    for item, note in (("g8.decision", DECISION), ("g8.handover", HANDOVER), ("g8.keep-accepted", NOTE)):
        code, _, err = cli(capsys, sessions_root, "checklist", "c", "note", item, note)
        assert code == 0, err
    out = tmp_path / "r.md"
    code, _, err = cli(capsys, sessions_root, "report", "c", "--out", str(out), "--html")
    assert code == 0, err
    md, page = out.read_text(), out.with_suffix(".html").read_text()
    rendered = _rendered(md)
    _inert_html(rendered)
    flat, page = " ".join(rendered.split()), " ".join(page.split())
    for note in (DECISION, HANDOVER, NOTE):
        assert h.escape(note, quote=False) in flat, note  # as typed: no code, no image
        assert h.escape(note, quote=True) in page or h.escape(note, quote=False) in page, note
    assert "<code>" not in flat.split("What the trial decided")[1].split("</p>")[0]


@pytest.mark.parametrize(("text", "code"), [
    # the report's own spans stay code, whatever they hold
    ("run `gpusession pull <HOST>` then", "gpusession pull &lt;HOST&gt;"),
    ("a ``x ` y`` b", "x ` y"),
    ("a ```x `` <b>``` b", "x `` &lt;b&gt;"),
    ("wrapped `gpusession checklist c\nnote <ID> TEXT` over two lines", "gpusession checklist c note &lt;ID&gt; TEXT"),
    # a run is closed only by a run of its own length
    ("single ` <img src=http://127.0.0.1:9/x> ``", None),
    ("double a``<img src=http://127.0.0.1:9/x onerror=alert(1)> b` c`", None),
    ("triple ```<script>alert(1)</script>`` `", None),
    ("unbalanced ` `` ``` <img src=http://127.0.0.1:9/x> ![i](http://127.0.0.1:9/i.png)", None),
    ("escaped \\`<b>` and \\\\<img src=http://127.0.0.1:9/x> and \\\\![i](http://127.0.0.1:9/i.png)", None),
    # never across a block: an HTML block, a list item, a table cell
    ("a `x\n<script>alert(1)</script>` b", None),
    ("- a `x\n- <img src=http://127.0.0.1:9/x>` b", None),
    ("| `a | <img src=http://127.0.0.1:9/x>` |\n| --- | --- |", None),
    ("text `a\nmore <img src=http://127.0.0.1:9/x>`\n--- | ---", None),
    ("    `code\n<img src=http://127.0.0.1:9/x>`", None),
    ("[r]: http://127.0.0.1:9/r\n\n[r] and [t](http://127.0.0.1:9/t) ~~~", None),
])
def test_h45_backtick_runs_pair_as_in_commonmark(text: str, code: str | None) -> None:
    """Single, double, triple and unbalanced runs: the report keeps its spans, adds none."""
    from gpusession.core.retrieval.mdtext import inert_markdown

    rendered = _rendered(inert_markdown(text))
    _inert_html(rendered)
    if code is not None:
        assert f"<code>{code}</code>" in rendered, rendered
    else:
        assert "<img" not in rendered and "<script" not in rendered and "<a " not in rendered


def test_h45_the_report_and_its_own_charts_are_unchanged_by_the_pass() -> None:
    """What holds no stray run is written as it was: the report's spans, its chart images."""
    from gpusession.core.retrieval.mdtext import inert_markdown

    for text in ("# Session report: m\n\n- run `gpusession report m` and see ![cost](cost.png)\n",
                 "| a | b |\n| --- | --- |\n| `x` | 1 |\n"):
        assert inert_markdown(text) == text
