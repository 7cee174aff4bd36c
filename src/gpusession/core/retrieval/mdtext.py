r"""Text a person (or a program, or a server) wrote, made inert inside Markdown (H-45).

``report.md`` is read in CommonMark viewers that allow HTML: a GPU model
``<img src=http://… onerror=…>`` or a note ``![x](http://…/y.png)`` reached it raw and
ran or fetched when rendered. Every piece of such text goes through :func:`md_text`:
secrets masked and control characters escaped (:func:`gpusession.core.files.textio.printable`,
H-17), then every character that Markdown or HTML gives a meaning to is escaped with a
backslash (CommonMark: any ASCII punctuation may be), so ``<`` is never a tag, ``&`` never
an entity, ``![x](…)`` never an image, ``[x](…)`` never a link -- and reads as typed.
The HTML page is the Markdown text rendered by markdown-it-py (CommonMark), which reads
those escapes back as the plain characters, html-escaped: the same text in both.
"""

from __future__ import annotations

import bisect
import re

from gpusession.core.files.textio import printable

#: The characters escaped: those that open a tag, an entity, a link or image, code,
#: emphasis, and a backslash before punctuation (CommonMark §2.4); the others read as
#: typed unescaped (``\u202e`` stays as printed; a table cell escapes its pipes).
_SPECIAL = re.compile(r"([`*\[\]<&]|\\(?=[!-/:-@\[-`{-~]))")


def md_text(text: str) -> str:
    r"""``text`` as inert Markdown: masked and escaped (:func:`printable`), punctuation backslash-escaped.

    A newline becomes a space (one piece of text never starts a Markdown block).

    Example: ``"![x](http://h/y.png)"`` → ``"!\[x\](http://h/y.png)"``, which
    CommonMark renders as the text ``![x](http://h/y.png)``.
    """
    return _SPECIAL.sub(r"\\\1", printable(text).replace("\n", " "))


#: The report's own images: a chart file beside the report (``![name](name.png)``).
_OWN_IMAGE = re.compile(r"!\[[\w.-]*\]\([\w.-]+\.(?:png|svg)\)")
#: ASCII punctuation: what a backslash escapes (CommonMark §2.4).
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
#: Where the scan of :func:`inert_markdown` has something to decide.
_NEXT = re.compile(r"[\\`!<&\]~]")
#: What ends the search for a code span's closing run: a backtick run, a pipe, a line end.
_CLOSE_SCAN = re.compile(r"`+|\||\r\n|\r|\n")
#: A line ending as CommonMark reads one (a lone CR is one too).
_EOL = re.compile(r"\r\n|\r|\n")
#: A line whose code span may close on a later line: a paragraph's words (after at most
#: three spaces, one bullet, bold or italic); never a heading, quote, table row, code
#: block or HTML block.
_OPENS_ACROSS = re.compile(r" {0,3}(?:[-*+] )?(?:\*\*|_)?[^\W_]")
#: A line a code span may continue onto: words, which start no block of their own.
_CONTINUES = re.compile(r"[ \t]*[^\W_]")
#: An ordered-list item (``1.`` starts one even inside a paragraph).
_ORDERED = re.compile(r"[ \t]*(?:[-*+] )?\d{1,9}[.)]")
#: A GFM table's delimiter row: the line above it would become a table's header.
_DELIMITER = re.compile(r"[ \t|:-]*-[ \t|:-]*")


def inert_markdown(text: str) -> str:
    r"""The whole report made inert, whatever wrote each line (H-45): the last pass before it is written.

    Sentences other modules word (a cost line quoting the GPU model, a deviation quoting
    what the host said) reach the report without :func:`md_text`; so over the whole text,
    outside code spans: every ``<`` and ``&`` is escaped (no HTML tag or block, entity or
    autolink); every ``![`` other than the report's own chart images
    (``![name](name.png)``), every ``](`` and ``]:`` (no image, link or link definition)
    and a run of ``~~~`` (no fenced code) too. A backslash escape stays as written, and an
    escaped backslash (``\\``) escapes nothing after it.

    Code spans are found as CommonMark finds them (§6.1): a run of backticks is closed
    only by the next run of exactly its length. A run closed on its line, or on a later
    line of the same paragraph, is a span kept as written; every other run is escaped
    backtick by backtick, so no renderer can pair it with a later run and take the text
    between for code left raw. To stay on the safe side a span never crosses a ``|`` (a
    GFM table cell ends there), and crosses a line end only onto a line of words.
    """
    lines = _Lines(text)
    unclosed: set[tuple[int, int]] = set()  # (run, line): no closer after it there (stays linear)
    out: list[str] = []
    pos = 0
    for m in _NEXT.finditer(text):
        at = m.start()
        if at < pos:  # inside what was already written
            continue
        out.append(text[pos:at])
        c = m.group()
        if c == "\\":
            pos = at + 2 if text[at + 1:at + 2] in _PUNCT else at + 1
            out.append(text[at:pos])
        elif c == "`":
            run = _run_length(text, at, "`")
            end = _closer(text, at + run, run, lines, unclosed)
            if end is None:
                out.append("\\`" * run)
                pos = at + run
            else:
                out.append(text[at:end])
                pos = end
        elif c == "!":
            own = _OWN_IMAGE.match(text, at)
            if own:
                out.append(own.group())
                pos = own.end()
            elif text.startswith("[", at + 1):
                out.append("!\\[")
                pos = at + 2
            else:
                out.append(c)
                pos = at + 1
        elif c == "]" and text[at + 1:at + 2] in ("(", ":"):
            out.append("]\\" + text[at + 1])
            pos = at + 2
        elif c == "~" and text.startswith("~~~", at):
            tildes = _run_length(text, at, "~")
            out.append("\\" + "~" * tildes)
            pos = at + tildes
        else:
            out.append("\\" + c if c in "<&" else c)
            pos = at + 1
    out.append(text[pos:])
    return "".join(out)


def _run_length(text: str, at: int, char: str) -> int:
    """How many ``char`` in a row from ``at``."""
    end = at
    while end < len(text) and text[end] == char:
        end += 1
    return end - at


class _Lines:
    """Where each line of a text starts, and whether a code span may close below it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _EOL.finditer(text)]
        self.across: list[bool] = []
        table = False  # a line of this paragraph holds a pipe: maybe a GFM table
        for i in range(len(self.starts)):
            line = self.line(i)
            table = bool(line.strip()) and (table or "|" in line)
            self.across.append(not table and bool(_OPENS_ACROSS.match(line))
                               and not _ORDERED.match(line))

    def line(self, i: int) -> str:
        """Line ``i`` without its line ending ("" past the last line)."""
        if i >= len(self.starts):
            return ""
        m = _EOL.search(self.text, self.starts[i])
        return self.text[self.starts[i]:m.start() if m else len(self.text)]

    def index(self, pos: int) -> int:
        """The line holding ``pos``."""
        return bisect.bisect_right(self.starts, pos) - 1

    def continues(self, i: int) -> bool:
        """Line ``i`` may carry on a code span from the line above."""
        line = self.line(i)
        return bool(_CONTINUES.match(line)) and not _ORDERED.match(line) and "|" not in line


def _closer(text: str, start: int, run: int, lines: _Lines, unclosed: set[tuple[int, int]]) -> int | None:
    """The end of the run of ``run`` backticks closing the span opened before ``start``, or None.

    Source: H-45 -- as CommonMark pairs backticks, and never where a renderer might not.
    """
    first = lines.index(start)
    if (run, first) in unclosed:  # an earlier run of this length on this line found none
        return None
    end = _search_closer(text, start, run, lines, first)
    if end is None:
        unclosed.add((run, first))
    return end


def _search_closer(text: str, start: int, run: int, lines: _Lines, first: int) -> int | None:
    across = run < 3 and lines.across[first]  # ``` at a line's start may open a code block
    pos = start
    while m := _CLOSE_SCAN.search(text, pos):
        found = m.group()
        if found == "|":
            return None
        if found[0] == "`":
            if len(found) == run:
                last = lines.index(m.start())
                if last != first and _DELIMITER.fullmatch(lines.line(last + 1)):
                    return None  # the closing line would become a table's header row
                return m.end()
        elif not (across and lines.continues(lines.index(m.end()))):
            return None
        pos = m.end()
    return None


__all__ = ["inert_markdown", "md_text"]
