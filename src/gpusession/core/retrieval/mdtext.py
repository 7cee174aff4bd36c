r"""Text a person (or a program, or a server) wrote, made inert inside Markdown (H-45).

``report.md`` is read in CommonMark viewers that allow HTML: a GPU model
``<img src=http://… onerror=…>`` or a note ``![x](http://…/y.png)`` reached it raw and
ran or fetched when rendered. Every piece of such text goes through :func:`md_text`:
secrets masked and control characters escaped (:func:`gpusession.core.files.textio.printable`,
H-17), then every character that Markdown or HTML gives a meaning to is escaped with a
backslash (CommonMark: any ASCII punctuation may be), so ``<`` is never a tag, ``&`` never
an entity, ``![x](…)`` never an image, ``[x](…)`` never a link -- and reads as typed.
The HTML page, made from the Markdown text, turns those escapes back into the plain
characters (:func:`unescape_md`), html-escaped: the same text in both.
"""

from __future__ import annotations

import re

from gpusession.core.files.textio import printable

#: The characters escaped: those that open a tag, an entity, a link or image, code,
#: emphasis, and a backslash before punctuation (CommonMark §2.4); the others read as
#: typed unescaped (``\u202e`` stays as printed; a table cell escapes its pipes).
_SPECIAL = re.compile(r"([`*\[\]<&]|\\(?=[!-/:-@\[-`{-~]))")
#: A backslash escape in Markdown text (``\<``), as CommonMark reads it.
MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def md_text(text: str) -> str:
    r"""``text`` as inert Markdown: masked and escaped (:func:`printable`), punctuation backslash-escaped.

    A newline becomes a space (one piece of text never starts a Markdown block).

    Example: ``"![x](http://h/y.png)"`` → ``"!\[x\](http://h/y.png)"``, which
    CommonMark renders as the text ``![x](http://h/y.png)``.
    """
    return _SPECIAL.sub(r"\\\1", printable(text).replace("\n", " "))


#: The report's own images: a chart file beside the report (``![name](name.png)``).
_OWN_IMAGE = re.compile(r"!\[[\w.-]*\]\([\w.-]+\.(?:png|svg)\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_RAW = re.compile(r"(?<!\\)([<&])|(?<!\\)(!\[)|(?<!\\)(\]\()")


def inert_markdown(text: str) -> str:
    r"""The whole report made inert, whatever wrote each line (H-45): the last pass before it is written.

    Sentences other modules word (a cost line quoting the GPU model, a deviation quoting
    what the host said) reach the report without :func:`md_text`; so over the whole text,
    outside code spans: every ``<`` and ``&`` not already escaped is escaped (no HTML
    tag, entity or autolink), and every ``![`` or ``](`` not already escaped, other than
    the report's own chart images (``![name](name.png)``), is escaped (no image, no link).
    """
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_inert(text[pos:m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(_inert(text[pos:]))
    return "".join(out)


def _inert(text: str) -> str:
    own: list[str] = []

    def keep(m: re.Match[str]) -> str:
        own.append(m.group())
        return f"\x00{len(own) - 1}\x00"

    text = _OWN_IMAGE.sub(keep, text)
    text = _RAW.sub(lambda m: "\\" + (m.group(1) or ("!\\[" if m.group(2) else "]\\(")), text)
    return re.sub(r"\x00(\d+)\x00", lambda m: own[int(m.group(1))], text)


def unescape_md(text: str) -> str:
    """Markdown backslash escapes turned back into their characters (the HTML page's reading)."""
    return MD_ESCAPE.sub(r"\1", text)


__all__ = ["MD_ESCAPE", "inert_markdown", "md_text", "unescape_md"]
