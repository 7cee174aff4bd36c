"""The one strict reading of a text file: UTF-8, with the line and byte of a bad byte.

Every file a person gives or edits by hand is read through here: TOML documents
(:mod:`gpusession.core.files.tomlio`), the results CSV (:mod:`gpusession.core.records.results`),
manifests (:mod:`gpusession.core.copyhome.manifest`) and the files of corpus validation
(:mod:`gpusession.core.validation.read`). So a file saved in Latin-1 gets the same
precise answer everywhere -- ``file:line: not valid UTF-8 (byte 0xE9 at byte 5 of the
line; ...)`` -- and a byte-order mark (some Windows editors add one) is ignored
everywhere (seed 000 §1, §4; V4, C1).

Two ways to decode: :func:`decode_strict` raises :class:`~gpusession.core.files.errors.BadInput`
at the first bad byte (inputs a person gives); :func:`decode_lenient` never fails and
lists every bad line (run outputs, whose problems are reported, never raised).
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from functools import lru_cache
from io import FileIO
from pathlib import Path

from gpusession.core.files.errors import BadInput, register_field_words
from gpusession.core.files.frozen import field, frozen
from gpusession.core.files.secretgate import may_hold_secret

BOM = "\ufeff"
BOM_BYTES = b"\xef\xbb\xbf"
#: The note saying a BOM was ignored.
BOM_NOTE = "the file starts with a UTF-8 byte-order mark (BOM); it was ignored"


@frozen
class BadByte:
    """Where a text stops being UTF-8.

    Attributes:
        line: 1-based line of the bad byte.
        column: 1-based byte offset of the bad byte within its line.
        byte: the bad byte's value.
    """

    line: int
    column: int
    byte: int

    def words(self) -> str:
        """The problem in words (without the line, which the caller names)."""
        return (
            f"not valid UTF-8 (byte 0x{self.byte:02X} at byte {self.column} of the line; "
            "Latin-1 or another encoding?)"
        )


@frozen
class Text:
    """A decoded text file.

    Attributes:
        text: the text, without a leading BOM; CRLF line ends turned into LF when asked.
        bom: whether a BOM was ignored.
        crlf: how many CRLF line ends were turned into LF (0 when not asked).
        bad_lines: ``{line: BadByte}`` for every line that is not UTF-8 (only from
            :func:`decode_lenient`; those bytes became U+FFFD in ``text``).
    """

    text: str
    bom: bool = False
    crlf: int = 0
    bad_lines: dict[int, BadByte] = field(default_factory=dict)

    def notes(self) -> list[str]:
        """What was tolerated, in words (BOM, CRLF line ends)."""
        out = [BOM_NOTE] if self.bom else []
        if self.crlf:
            out.append(f"{self.crlf:,} line(s) end with CRLF (Windows line ends); the CR was ignored")
        return out


#: The longest line the files of a validation may hold (corpus, references, ID lists,
#: run outputs), in bytes: 16 MiB. A longer line is refused before it is read whole, so
#: a file of one endless line cannot fill the memory.
MAX_LINE_BYTES = 16 * 1024 * 1024
_CHUNK_BYTES = 1024 * 1024


def _kind_of(mode: int) -> str:
    """What a non-regular file is, in words (``"a FIFO (named pipe)"``)."""
    for test, words in ((stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def not_plain(path: Path, mode: int, *, writing: bool = False) -> BadInput:
    """The one refusal of a file that is not a plain file.

    Args:
        path: the file, named in the message.
        mode: its ``st_mode``.
        writing: the file was to be written (``--out``, an atomic write), not read.

    Returns:
        ``PATH: is a FIFO (named pipe), not a regular file; gpusession reads only plain
        files (remove it; nothing was read)`` (or ``a folder``, ``a character device``…;
        for a write: ``gpusession writes only regular files, --force or not; nothing was
        written``), to raise.
    """
    kind = "a folder" if stat.S_ISDIR(mode) else _kind_of(mode)
    if writing:
        return BadInput(f"is {kind}, not a regular file; gpusession writes only regular files, --force "
                        "or not (nothing was written)", path=path)
    return BadInput(f"is {kind}, not a regular file; gpusession reads only plain files "
                    "(remove it; nothing was read)", path=path)


def refuse_special(path: Path, *, writing: bool = False) -> None:
    """Refuse ``path`` when it exists and is neither a regular file nor a link.

    A session's own files (``resultats-bruts.csv``, ``journal.jsonl``) are read by
    several commands; a FIFO there would make each of them wait forever for a writer, a
    device would never end. A link is left to :func:`gpusession.core.files.safefile.link_refused`.

    Raises:
        BadInput: naming the file and what it is (:func:`not_plain`).
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return
    raise not_plain(path, mode, writing=writing)


def read_plain(path: Path, *, max_bytes: int | None = None, follow_links: bool = True) -> bytes:
    """The bytes of ``path`` when it is a plain file, never waiting.

    The file is opened without waiting (``O_NONBLOCK``: a FIFO would block the open until
    a writer came) and refused unless it is a regular file, before anything is read: a
    FIFO or a device (``/dev/zero``) never ends. A link is followed (its callers refuse
    links where a link matters). Used by the readers of a session's files (the TOML
    reader, ``summary.json``, the journal in ``gpusession status``), so that no caller
    can forget.

    Args:
        path: the file.
        max_bytes: read at most this many bytes (``None``: all); a caller that gets
            ``max_bytes`` back knows the file may be longer.
        follow_links: ``False``: a symbolic link is refused by the open itself
            (``O_NOFOLLOW``, an ``OSError``), so no check can race with a swap.

    Raises:
        OSError: missing or unreadable (the caller words it, or ignores it).
        BadInput: a folder, FIFO, device or socket (:func:`not_plain`).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise not_plain(Path(path), mode)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        if max_bytes is None:
            return fh.readall()
        out = bytearray()
        while len(out) < max_bytes and (chunk := fh.read(min(_CHUNK_BYTES, max_bytes - len(out)))):
            out += chunk
        return bytes(out)


def read_bytes(path: Path, *, what: str = "file", max_line_bytes: int | None = None) -> bytes:
    """The bytes of ``path``, a regular file.

    The file is opened without waiting (a FIFO would block until a writer came) and
    refused unless it is a regular file: a FIFO never ends, ``/dev/zero`` never ends
    either.

    Args:
        path: the file.
        what: how the file is named in an error (``"file"``, ``"manifest"``).
        max_line_bytes: the longest line accepted, in bytes (``None``: no limit); a longer
            line is refused as soon as the limit is passed, without reading the rest.

    Raises:
        BadInput: the file does not exist, is a folder, a FIFO, a device or a socket,
            cannot be read, or holds a line longer than ``max_line_bytes`` (naming that
            line and the limit).
    """
    the = "" if what == "file" else f" the {what}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BadInput(f"{what} not found", path=path) from None
    except IsADirectoryError:
        raise BadInput(f"is a folder, expected a {what}", path=path) from None
    except OSError as exc:
        raise BadInput(f"cannot read{the}: {exc.strerror}", path=path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise BadInput(f"is a folder, expected a {what}", path=path)
        raise BadInput(f"is {_kind_of(mode)}, not a regular file; give {'the' if the else 'a'} "
                       f"{what} saved on disk", path=path)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        try:
            if max_line_bytes is None:
                return fh.readall()
            return _read_limited(fh, path, max_line_bytes)
        except OSError as exc:
            raise BadInput(f"cannot read{the}: {exc.strerror}", path=path) from None


def _too_long(path: Path, max_line_bytes: int, line: int) -> BadInput:
    """The refusal of 1-based ``line``, longer than ``max_line_bytes`` (the one wording)."""
    return BadInput(
        f"this line is longer than {max_line_bytes:,} bytes "
        f"({max_line_bytes // (1024 * 1024)} MiB), the longest line accepted; one "
        "record per line is expected", path=path, line=line)


def _read_limited(fh: FileIO, path: Path, max_line_bytes: int) -> bytes:
    """Read ``fh`` whole, refusing a line longer than ``max_line_bytes`` as soon as seen.

    A file that can be read again (a regular file) is read twice, so that its bytes are
    held once -- a list of chunks joined at the end held them twice, a 1 GB output
    taking 2 GB just to be read: a first pass reads 1 MiB chunks and drops them,
    refusing a long line before the rest is read (a file of one endless line cannot
    fill the memory); then the file is read whole in one allocation and the bound is
    checked again on those very bytes (the file may have changed in between). A stream
    that cannot be read again keeps its chunks and joins them. Per chunk, a few C calls
    and no Python loop over lines (:class:`_LineBound`); a regular file's newlines are
    counted only to name a refused line, by reading up to it again.
    """
    bound = _LineBound(path, max_line_bytes)
    kept: list[bytes] | None = None if _rereadable(fh) else []
    lines_before = 0  # newlines in the earlier chunks of a stream, counted for the error's line
    offset = 0  # bytes of a regular file before this chunk: its newlines are counted on refusal only
    while chunk := fh.read(_CHUNK_BYTES):
        try:
            bound.check(chunk, 0, len(chunk), lines_before)
        except BadInput as exc:
            if kept is not None or exc.line is None:
                raise
            raise _too_long(path, max_line_bytes, exc.line + _newlines_before(fh, offset)) from None
        offset += len(chunk)
        if kept is not None:
            lines_before += chunk.count(b"\n")
            kept.append(chunk)
    if kept is not None:
        return b"".join(kept)
    fh.seek(0)
    data = fh.readall()
    bound.carried = 0
    for start in range(0, len(data), _CHUNK_BYTES):
        bound.check(data, start, min(start + _CHUNK_BYTES, len(data)), 0)
    return data


def _newlines_before(fh: FileIO, offset: int) -> int:
    """The newlines in the first ``offset`` bytes of ``fh`` (read again, a chunk at a time)."""
    fh.seek(0)
    count = 0
    while offset > 0 and (chunk := fh.read(min(_CHUNK_BYTES, offset))):
        count += chunk.count(b"\n")
        offset -= len(chunk)
    return count


def _rereadable(fh: FileIO) -> bool:
    """Whether ``fh`` can be read again from its start (a regular file can; a fake stream may not)."""
    try:
        return bool(fh.seekable())
    except (AttributeError, OSError):
        return False


class _LineBound:
    """The line-length bound over consecutive windows of a file (:func:`_read_limited`).

    The line carried over from the earlier windows is bounded with the window's first
    newline; the lines wholly inside a window can only pass the bound when it is shorter
    than a window, and then one regular expression over the window finds a run of more
    than ``max_line_bytes`` bytes that holds no newline.
    """

    def __init__(self, path: Path, max_line_bytes: int) -> None:
        self.path, self.max_line_bytes = path, max_line_bytes
        self.carried = 0  # bytes of the line in progress, read in earlier windows
        self.inside = (re.compile(rb"(?m)^[^\n]{%d}" % (max_line_bytes + 1))
                       if max_line_bytes < _CHUNK_BYTES else None)

    def check(self, buf: bytes | bytearray, start: int, end: int, lines_before: int) -> None:
        """Check ``buf[start:end]``, the window after the earlier ones.

        Raises:
            BadInput: a line longer than the bound (:func:`_too_long`), its 1-based line
                counted as ``lines_before`` plus the newlines of ``buf`` before it.
        """
        first = buf.find(b"\n", start, end)
        if self.carried + ((end - start) if first < 0 else first - start) > self.max_line_bytes:
            raise self._refused(buf, start, lines_before)
        if first < 0:
            self.carried += end - start
            return
        # Without ``inside`` (a window no longer than the bound) no line inside passes it.
        if self.inside is not None and (m := self.inside.search(buf, first + 1, end)):
            raise self._refused(buf, m.start(), lines_before)
        self.carried = end - buf.rfind(b"\n", start, end) - 1

    def _refused(self, buf: bytes | bytearray, offset: int, lines_before: int) -> BadInput:
        return _too_long(self.path, self.max_line_bytes, lines_before + buf.count(b"\n", 0, offset) + 1)


def bad_byte_at(raw: bytes, offset: int) -> BadByte:
    """The :class:`BadByte` at byte ``offset`` of ``raw`` (line and column counted in ``raw``)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    return BadByte(line=raw.count(b"\n", 0, offset) + 1, column=offset - line_start + 1, byte=raw[offset])


def _normalise(text: str, crlf: bool) -> tuple[str, int]:
    if crlf and "\r" in text:
        n = text.count("\r\n")
        if n:
            return text.replace("\r\n", "\n"), n
    return text, 0


def decode_strict(raw: bytes, *, path: Path | None, crlf: bool = False, must: str = "") -> Text:
    """Decode ``raw`` as UTF-8, ignoring a leading BOM; fail at the first bad byte.

    Args:
        raw: the file's bytes.
        path: the file, named in the error.
        crlf: turn CRLF line ends into LF (and count them).
        must: a clause added to the error, e.g. ``"TOML files must be UTF-8"``.

    Raises:
        BadInput: a byte sequence that is not UTF-8, naming the file, the line and the
            byte within the line.
    """
    bom = raw.startswith(BOM_BYTES)
    if bom:
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = bad_byte_at(raw, exc.start)
        raise BadInput(bad.words() + (f"; {must}" if must else ""), path=path, line=bad.line) from None
    text, n = _normalise(text, crlf)
    return Text(text, bom=bom, crlf=n)


def read_text(path: Path, *, what: str = "file", crlf: bool = False, must: str = "") -> Text:
    """Read ``path`` strictly: :func:`read_bytes` then :func:`decode_strict`.

    Raises:
        BadInput: missing or unreadable file, or not UTF-8 (file, line, byte named).
    """
    return decode_strict(read_bytes(path, what=what), path=path, crlf=crlf, must=must)


def decode_lenient(raw: bytes, *, crlf: bool = True) -> Text:
    """Decode ``raw`` as UTF-8 without ever failing (V4: encoding problems are reported).

    Invalid bytes become U+FFFD; :attr:`Text.bad_lines` says which lines held them and
    where. A leading BOM is ignored; CRLF line ends are turned into LF when ``crlf``.
    """
    bom = raw.startswith(BOM_BYTES)
    if bom:
        raw = raw[3:]
    bad: dict[int, BadByte] = {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        raw_lines = raw.split(b"\n")
        # Only lines holding a replacement character can be the broken ones.
        for i, ln in enumerate(text.split("\n")):
            if "\ufffd" not in ln:
                continue
            try:
                raw_lines[i].decode("utf-8")
            except UnicodeDecodeError as exc:
                bad[i + 1] = BadByte(line=i + 1, column=exc.start + 1, byte=raw_lines[i][exc.start])
    text, n = _normalise(text, crlf)
    return Text(text, bom=bom, crlf=n, bad_lines=bad)


#: C0 controls, DEL and C1 controls, each as its ``\xNN`` escape (H-17).
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
def _escape_format(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


#: Lone surrogates: a file name's bytes that are not UTF-8, as ``os`` decodes them
#: (surrogateescape), or a stray half of a pair: never valid text on a terminal.
_SURROGATES_RE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c - 0xdc00:02x}" if 0xdc80 <= c <= 0xdcff else f"\\u{c:04x}"  # the original byte


@lru_cache(maxsize=8)
def _control_table(keep: str) -> dict[int, str]:
    """The ``str.translate`` table of :data:`_CONTROLS` less ``keep`` (built once per ``keep``)."""
    return {c: e for c, e in _CONTROLS.items() if chr(c) not in keep}


def printable(text: str, keep: str = "\n\t", *, digest: bool = False) -> str:
    r"""``text`` as it may be shown: secrets masked, invisible characters escaped (H-17, H-24).

    The one display helper: free text read from a file a person may edit by hand
    (checklist notes, order and event notes, results notes) or written by a program (a
    workload's exception, its stderr) goes through here on every path that shows or
    writes it, so an ESC, a NUL, a right-to-left override or a token never reaches a
    terminal or a report raw.

    Args:
        text: any text.
        keep: control characters left as they are (newline and tab by default).
        digest: the text is a digest a machine wrote (its hex digits are kept).

    Returns:
        The text with every secret replaced by ``[HIDDEN: <kind>]``
        (:func:`gpusession.core.files.secrets.mask_text`, over the whole text), C0
        controls (except ``keep``), DEL and C1 controls as ``\x1b``, format
        characters (category Cf, U+2028/U+2029) as ``\u202e``, and a name's byte that
        is not UTF-8 (a lone surrogate) as ``\xff`` (H-44).
    """
    table = _control_table(keep)
    if not may_hold_secret(text):  # plain ASCII no detector can match: none imported (status)
        return text.translate(table)
    from gpusession.core.files.detectors import FORMAT_CHARS_RE
    from gpusession.core.files.secrets import mask_text

    text = mask_text(text, digest=digest)[0]
    return _SURROGATES_RE.sub(_escape_surrogate, FORMAT_CHARS_RE.sub(_escape_format, text.translate(table)))


#: What a JSON document never carries raw: C1 controls, format characters (a bidi
#: override), lone surrogates (a file name's bytes that are not UTF-8). JSON's own
#: ``\uXXXX`` escape keeps each one as data, never as a terminal's instruction (H-44).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                          "\ufeff\ufff9-\ufffb\ud800-\udfff]")


def json_safe(text: str) -> str:
    r"""A dumped JSON document as it may be printed: unsafe characters as ``\uXXXX`` (H-44).

    Why: the text forms print names through
    :func:`gpusession.core.files.textio.printable`; ``--json`` carries the same names (a
    right-to-left override, a C1 control, a byte that is not UTF-8), so they reach the
    terminal as JSON escapes, which every JSON reader decodes back to the same text.
    Secrets are hidden before the dump, value by value
    (:func:`gpusession.commands._common.print_json`).
    """
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    r"""A one-line field as a printer shows it: :func:`printable` with every control escaped.

    A note may hold a line break (a multi-line note is kept as typed); shown on one line
    (``note: line 1\nline 2``), it can never forge a line of its own, such as a
    ``[x] done`` item at column 0 (H-44).
    """
    return printable(text, keep="")


def _cells(ch: str) -> int:
    """Terminal columns of one character: 2 for wide East Asian forms, 0 for combining marks."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def fit_columns(line: str, columns: int, *, keep: str = "") -> str:
    r"""``line + keep`` cut to fit ``columns - 1`` terminal columns, ``…`` where cut (H-66).

    Why: a line rewritten in place (``\r`` then erase) that wraps leaves its first rows
    behind on every rewrite (a 36-column tmux pane); one column is kept free so the
    cursor never reaches the last one. ``keep`` (the figure that changes, ``": 1 min
    10 s"``) is kept whole when the room allows, ``line`` cut before it. ``columns``
    under 2 leaves the line empty.
    """
    if keep:
        tail = sum(_cells(c) for c in keep)
        if columns - tail >= 3:
            return fit_columns(line, columns - tail) + keep
        return fit_columns(line + keep, columns)
    room = max(0, columns - 1)
    widths = [_cells(c) for c in line]
    if sum(widths) <= room:
        return line
    out, used = [], 0
    for ch, w in zip(line, widths, strict=True):
        if used + w > room - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + ("…" if room else "")


def quoted(text: str) -> str:
    r"""``text`` in single quotes as a refusal may print it: a path or an address typed or read.

    For what is meant to be read whole (a path, ``HOST:PATH``); a value that may be
    anything goes through :func:`gpusession.core.files.secrets.shown`. Secrets masked and
    control characters escaped (:func:`printable`), ``'/tmp/[HIDDEN: GitHub token].csv'``.
    """
    return f"'{printable(text, keep='')}'"


register_field_words(lambda field: printable(field, keep=""))  # a refusal's field, masked (H-46)
