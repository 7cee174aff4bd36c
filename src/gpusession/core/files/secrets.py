"""Refuse secrets and invisible characters before they reach a session file; mask them after.

``order.toml``, the checklist notes, ``session.toml``, the journal, the results CSV and
the validation report are plain files that get copied home and shared with a colleague
(seed 003 §8). They must never hold a wallet's recovery phrase, a private key, an API
token or a password. :func:`find_secret` says whether a text holds one, :func:`mask_text`
hides each one in a whole (multi-line) text; both read :mod:`gpusession.core.files.detectors`:

* a seed phrase: 12 or more consecutive words of one BIP-39 list (every list of the
  ``mnemonic`` package), of Monero's or of SLIP-39's, whatever the separators (one word
  per line too), numbering, case or accents, by four-letter prefixes or written together;
* a private key: a PEM / PGP / OpenSSH block (``-----BEGIN … PRIVATE KEY-----``) with its
  body, a PuTTY key file, lines of base64 like a key body (two or more at a key file's
  width of 64 or 70 are enough, with the short line closing them: H-75), a base64 word
  that decodes to the start of a DER key, 64 or more hex digits (also cut
  in two; a digest a machine wrote is exempt), a base58 key (87–88), a WIF key, an
  extended private key (``xprv…``), an age or Nostr (``nsec1``) secret key;
* an API token: GitHub, GitLab, AWS, Hugging Face, OpenAI/Anthropic, Slack, Stripe,
  Google, a JSON Web Token;
* a password: ``password: …``, ``HF_TOKEN=…``, ``DB_PASSWORD=…``, ``https://user:pw@host``.

The check at the write boundary is :func:`check_free_text`: the TOML writer
(:func:`gpusession.core.files.tomlio.write_toml`) and the validation report call it on the
whole document. What a program wrote (a workload's exception text, its stderr, a row's
notes) is masked, not refused: :func:`mask_text` over the whole text, :func:`mask_record`
for a journal record, the results writer on every cell. A value that names something
(an identifier, an amount, a destination) goes through :func:`check_identifier` before any
other check, so no message ever quotes a value that looks like a secret, and a format
character (category Cf: zero width, right-to-left override) is refused there; in free
notes it is kept and always shown escaped (:func:`gpusession.core.files.textio.printable`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gpusession.core.files import detectors
from gpusession.core.files.detectors import (
    FORMAT_CHARS_RE,
    MNEMONIC_MIN_WORDS,
    Finding,
    bip39_wordlists,
    token_findings,
)
from gpusession.core.files.errors import BadInput, shown_field
from gpusession.core.files.fieldbound import OBSERVED_KEYS as _OBSERVED_KEYS
from gpusession.core.files.fieldbound import OBSERVED_MAX_BYTES, TEXT_MAX_BYTES, check_field_lengths
from gpusession.core.files.secretgate import may_hold_secret

# The longest free text in one field (4 KiB, :data:`TEXT_MAX_BYTES`) and the observed
# tables' bound (64 KiB) are defined once, in :mod:`gpusession.core.files.fieldbound`: the
# writer here and the shared reader hold every field to the same bound (H-48).

__all__ = ["HIDDEN", "KeyBlockFilter", "MNEMONIC_MIN_WORDS", "TEXT_MAX_BYTES", "bip39_wordlists", "check_free_text", "check_read_lengths",
           "check_identifier", "find_secret", "findings", "is_digest_key", "kind_of_secret", "mask_free_text",
           "mask_record", "mask_text", "shown"]

#: What a hidden value reads as (on screen and when its file is written again); in
#: capitals, so Rich markup (the TUI's toasts) never takes it for a style tag.
HIDDEN = "[HIDDEN: looked like a secret]"

#: Keys whose values are digests a machine wrote (revisions, checksums, UUIDs): 64 hex
#: digits there are a checksum, not a key. A ``destination`` address is not exempt.
_DIGEST_KEY_RE = re.compile(r"(revision|sha256|sha|digest|uuid|hash|checksum)s?$", re.IGNORECASE)

def bip39_words() -> frozenset[str]:
    """The 2,048 words of the standard BIP-39 English wordlist (folded)."""
    return bip39_wordlists()["english"]


def findings(text: str, *, digest: bool = False, wordlists_required: bool = True) -> list[Finding]:
    """Every secret in ``text``, searched as one whole text (seed phrases first).

    Args:
        text: any text, multi-line (a stderr tail, a traceback, a note).
        digest: the text is a digest a machine wrote: the hex kinds do not apply.
        wordlists_required: ``False`` where a missing ``mnemonic`` package (a broken
            install) must not stop the caller (masking what a program wrote): the other
            kinds still apply.

    Returns:
        The findings (:class:`~gpusession.core.files.detectors.Finding`), seed phrases
        first, then tokens and keys in :func:`~gpusession.core.files.detectors.token_kinds`
        order; ``[]`` for an empty text.

    Raises:
        ImportError: ``mnemonic`` is missing and ``wordlists_required``.
    """
    if not text or not may_hold_secret(text):  # the cheap gate: no detector could match
        return []
    try:
        seeds = detectors.seed_findings(text)
    except ImportError:
        if wordlists_required:
            raise
        seeds = []
    return seeds + token_findings(text, digest=digest)


def longest_wordlist_run(text: str) -> int:
    """Length of the longest run of consecutive words of one seed wordlist in ``text``.

    Returns:
        The number of words, when a run of :data:`MNEMONIC_MIN_WORDS` or more is found;
        else 0 (shorter runs are not counted).
    """
    return detectors.longest_run(detectors.seed_findings(text))


def find_secret(text: str, *, address: bool = False, digest: bool = False,
                wordlists_required: bool = True) -> str | None:
    """Why ``text`` looks like a secret, or ``None`` when it does not.

    Args:
        text: the text to check (a whole text; secrets split over lines are found).
        address: the text is a destination address: checked like any text (64 hex
            digits, with or without ``0x``, are refused there too, since they cannot be
            told from a private key; 40-hex, base58 and bech32 addresses pass).
        digest: the text is a digest a machine wrote (a revision, a checksum, a UUID).
        wordlists_required: see :func:`findings`.

    Returns:
        The kind of secret and why, in words (never the secret itself).
    """
    del address  # an address gets no exemption
    found = findings(text, digest=digest, wordlists_required=wordlists_required)
    return found[0].reason if found else None


def kind_of_secret(text: str, *, address: bool = False, digest: bool = False,
                   wordlists_required: bool = True) -> str | None:
    """A short name of the secret ``text`` looks like (``"seed phrase"``), or ``None``."""
    del address
    found = findings(text, digest=digest, wordlists_required=wordlists_required)
    return found[0].kind if found else None


_MARKER_RE = re.compile(r"\[HIDDEN: [^\]\n]{1,40}\]")


def mask_text(text: str, *, digest: bool = False) -> tuple[str, list[str]]:
    """``text`` with each secret replaced by ``[HIDDEN: <kind>]``; the rest kept as it was.

    Why: what a program wrote (a workload's exception, its stderr, a row's notes) is kept
    for the person reading it, less the secret. The whole text is searched at once, so
    a PEM body split over lines or a seed printed one word per line is hidden whole.

    Args:
        text: any text (``""`` gives ``""``).
        digest: the text is a digest a machine wrote (see :func:`findings`).

    Returns:
        ``(masked text, kinds hidden)``; the kinds in the order found, each once.
        Never raises for a missing ``mnemonic`` package (the other kinds still apply).
    """
    found = findings(text, digest=digest, wordlists_required=False)
    if not found:
        return text, []
    # masking twice changes nothing: a finding that starts inside a marker is dropped
    markers = [m.span() for m in _MARKER_RE.finditer(text)]
    found = [f for f in found if not any(a <= f.start < b for a, b in markers)]
    if not found:
        return text, []
    found.sort(key=lambda f: (f.start, -f.end))
    parts: list[str] = []
    kinds: list[str] = []
    at = 0
    for f in found:
        if f.end <= at:
            continue  # inside a secret already hidden
        if f.start >= at:
            parts.append(text[at:f.start])
            parts.append(f"[HIDDEN: {f.kind}]")
        at = max(at, f.end)
        if f.kind not in kinds:
            kinds.append(f.kind)
    parts.append(text[at:])
    return "".join(parts), kinds


def mask_record(doc: Any, key: str = "") -> Any:
    """A copy of ``doc`` with every secret in its strings masked (:func:`mask_text`).

    For a journal record or any document a program writes from what it observed. A list
    of strings (stderr lines) is masked as one text joined by newlines, so a secret split
    over lines is found; where one was, the list holds the masked lines. A string under a
    digest key (``sha256``, ``*_revision``) keeps its hex digits.

    Args:
        doc: dicts, lists, strings, numbers.
        key: the key ``doc`` is under (for the digest exemption).

    Returns:
        The masked copy (``doc`` itself when nothing was hidden in a string).
    """
    if isinstance(doc, str):
        return mask_text(doc, digest=_is_digest(key))[0]
    if isinstance(doc, Mapping):
        return {k: mask_record(v, str(k)) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        if joinable(doc):
            joined = "\n".join(doc)
            masked = mask_text(joined, digest=_is_digest(key))[0]
            return list(doc) if masked == joined else masked.split("\n")
        return [mask_record(v, key) for v in doc]
    return doc


#: An identifier: letters then digits (``b8``), or parts joined by '.', '_' or '-'
#: (``batch-8``, ``cold.b1``); not a word alone, not a run of hex digits.
_IDENTIFIER_RE = re.compile(r"[A-Za-z]+\d+|\w*[A-Za-z]\w*(?:[._-]\w+)+")


def joinable(items: Any) -> bool:
    """Whether a list is text to search as one (stderr lines, argv words), not a list of ids.

    A list of two or more strings, not all identifiers (``["batch-1", "batch-8", …]``, a
    drawn order, is data whose words mean nothing together).
    """
    return (isinstance(items, (list, tuple)) and len(items) > 1
            and all(isinstance(v, str) for v in items)
            and not all(_IDENTIFIER_RE.fullmatch(v) for v in items))


def format_characters(text: str) -> list[str]:
    """The invisible or direction-changing characters in ``text``, as ``U+202E RIGHT-TO-LEFT OVERRIDE``.

    Unicode format characters (category Cf: zero width space and joiners, bidi embeddings,
    overrides and isolates, the BOM) and the line and paragraph separators: they change how
    a text reads without being seen, so a reversed address reads as another one (H-24).
    """
    return [f"U+{ord(c):04X} {unicodedata.name(c, 'format character')}"
            for c in dict.fromkeys(FORMAT_CHARS_RE.findall(text))]


def check_identifier(text: str | None, *, field: str, what: str, address: bool = False) -> None:
    """The first check of a value that names or pays something: no secret, no format character.

    Why: it runs before every other check of the value (its format, its length), so no
    refusal quotes a value that looks like a secret; and an identifier, an amount, an
    asset or a destination that holds an invisible or direction-changing character could
    read as another one (H-24, a payment to the wrong wallet).

    Args:
        text: the value (``None`` passes).
        field: the field, named in the error (``payment.destination``, ``--name``).
        what: the value in words (``"the destination"``, ``"the session name"``).
        address: a destination address (see :func:`find_secret`).

    Raises:
        BadInput: naming the field, the kind of secret or the characters by code point;
            never the value.
    """
    if text is None:
        return
    reason = find_secret(text, address=address)
    if reason is not None:  # said for a name looked up too, so "nothing was written" is not
        raise BadInput(f"refused: {reason}", field=field)
    bad = format_characters(text)
    if bad:
        raise BadInput(f"refused: {what} contains {', '.join(bad)}, an invisible or "
                       "direction-changing character that makes it read as something else; "
                       "type it again without it", field=field)


def check_no_secret(text: str | None, *, field: str, address: bool = False) -> None:
    """Raise :class:`BadInput` when ``text`` looks like a seed phrase or private key.

    Args:
        text: any free text or field value a person typed (``None`` passes).
        field: the field name, for the one-line error.
        address: a destination address (see :func:`find_secret`).

    Raises:
        BadInput: with the reason; nothing is written by the caller.
    """
    if text is None:
        return
    reason = find_secret(text, address=address)
    if reason is not None:
        raise BadInput(f"refused: {reason}; nothing was written", field=field)


def check_length(text: str, *, field: str, path: Path | str | None = None,
                 limit_bytes: int = TEXT_MAX_BYTES) -> None:
    """Raise :class:`BadInput` when ``text`` is longer than ``limit_bytes`` of UTF-8.

    Args:
        text: the value.
        field: its field, named in the error.
        path: the file it was going to, named in the error.
        limit_bytes: the limit (default 4 KiB).

    Raises:
        BadInput: the field first, then the size and the limit, the file as where
            nothing was written ("the note for g1.approver is 10,240 bytes;
            at most 4,096 bytes (4 KiB); nothing was written to checklist.toml", so
            the file does not read as broken); the text is not repeated.
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > limit_bytes:
        dest = f" to {Path(path).name}" if path is not None else ""
        exc = BadInput(f"{_field_words(field)} is {size:,} bytes; at most {limit_bytes:,} bytes "
                       f"({limit_bytes // 1024} KiB); nothing was written{dest}")
        # the line names them in its own words; the parts stay for a form to focus the field
        exc.field, exc.path = field, Path(path) if path is not None else None
        raise exc


def _field_words(field: str) -> str:
    """``items.g1.approver.note`` → ``the note for g1.approver``; ``name`` → ``the name``."""
    owner, dot, last = field.rpartition(".")
    if not dot:
        return f"the {field}" if field else "the text"
    owner = owner.removeprefix("items.")
    return f"the {last} for {owner}"


def is_digest_key(key: str) -> bool:
    """Whether a value under ``key`` is a digest a machine wrote (``sha256``, ``*_revision``, ``uuid``)."""
    return bool(_DIGEST_KEY_RE.search(key))


_is_digest = is_digest_key


def _walk(value: Any, where: str, key: str,
          observed: bool = False) -> Iterator[tuple[str, str, str, bool]]:
    """Yield ``(field path, last key, text, observed)`` for every string inside ``value``."""
    if isinstance(value, str):
        yield where, key, value, observed
    elif isinstance(value, Mapping):
        for k, v in value.items():
            k = str(k)
            here = f"{where}.{k}" if where else k
            yield from _walk(v, here, k, observed or k in _OBSERVED_KEYS)
            yield here, k, k, observed  # a table's key is text too
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, f"{where}[{i}]", key, observed)


def check_free_text(doc: Any, file: Path | str | None, *,
                    limit_bytes: int = TEXT_MAX_BYTES) -> None:
    """The one check of free text at the write boundary (seed 003 §8).

    Every string in ``doc`` (values, list items, table keys; at any depth) must be at
    most ``limit_bytes`` of UTF-8 (under an ``environment`` or ``evidence`` key, which a
    program fills with what it observed: :data:`OBSERVED_MAX_BYTES`) and must not look
    like a secret (:func:`find_secret`).
    The TOML writer calls it on every document before anything is written, so a field
    added later is checked without being listed anywhere. A value under a key that holds
    a machine-written digest (``*_revision``, ``sha256``, ``uuid``…) is exempt from the
    64-hex rule only; a ``destination`` address is not.

    Args:
        doc: the document (dicts, lists, strings, numbers, dates).
        file: the file it is going to, named in the error.
        limit_bytes: the longest text of one field.

    Raises:
        BadInput: naming the file and the field (``events[3].note``), the kind of secret
            or the size and the limit; never the value. Nothing is written by the caller.
    """
    for where, key, text, observed in _walk(doc, "", ""):
        check_length(text, field=where, path=file,
                     limit_bytes=max(limit_bytes, OBSERVED_MAX_BYTES) if observed else limit_bytes)
        reason = _secret_in(text, _is_digest(key))
        if reason is not None:
            raise BadInput(f"refused: {reason}; nothing was written", path=file, field=where)
    for where, key, lines in _string_lists(doc, "", ""):  # a secret split over list items
        reason = _secret_in("\n".join(lines), _is_digest(key))
        if reason is not None:
            raise BadInput(f"refused: {reason}; nothing was written", path=file, field=where)


#: Texts :func:`find_secret` found clean in this process, with their ``digest`` flag.
#: Why: a session's TOML is written whole at each change, so the same thousands of values
#: were searched again at every run boundary (A5); a pure function's answer is kept.
_CLEAN: set[tuple[str, bool]] = set()
#: The most texts kept before the set starts over (bounds the memory).
_CLEAN_MAX = 200_000


def _secret_in(text: str, digest: bool) -> str | None:
    """:func:`find_secret` of ``text``, a text found clean before answered from :data:`_CLEAN`."""
    if (text, digest) in _CLEAN:
        return None
    reason = find_secret(text, digest=digest)
    if reason is None:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN.add((text, digest))
    return reason


def check_read_lengths(doc: Any, file: Path | str | None, *,
                       limit_bytes: int = TEXT_MAX_BYTES) -> None:
    """The notes' length bound at the *read* boundary of a hand-editable file (H-48).

    What the writer refuses (:func:`check_free_text`) a hand edit can still put in: a
    4 MB ``deviation`` in ``host-check.toml`` once took 11 s to show. The shared TOML
    reader applies it to every file (:func:`gpusession.core.files.nesting.check_field_lengths`);
    this is that check, for a document read otherwise.

    Raises:
        BadInput: ``FILE: FIELD: N bytes of text; at most 4,096 bytes (4 KiB) per field;
            the file was not used`` -- the field named, never its value.
    """
    check_field_lengths(doc, file, limit_bytes=limit_bytes)


def _string_lists(value: Any, where: str, key: str) -> Iterator[tuple[str, str, list[str]]]:
    """Yield ``(field path, last key, items)`` for every list of two or more strings."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _string_lists(v, f"{where}.{k}" if where else str(k), str(k))
    elif isinstance(value, (list, tuple)):
        if joinable(value):
            yield where, key, list(value)
        else:
            for i, v in enumerate(value):
                yield from _string_lists(v, f"{where}[{i}]", key)


def mask_free_text(doc: Any, file: Path | str | None = None) -> tuple[Any, list[str]]:
    """``doc`` with every secret-looking string replaced by :data:`HIDDEN`.

    For files edited by hand: a secret already in ``order.toml`` is never shown (the
    Order pane, ``order show``) and, since the hidden text is what the program holds,
    never written back when the file is next saved.

    Args:
        doc: a parsed document.
        file: its path, named in the warnings.

    Returns:
        The masked document (a copy where something was hidden) and one warning per
        hidden value, naming the file, the field and the kind (never the value).
    """
    warnings: list[str] = []
    prefix = f"{file}: " if file is not None else ""

    def mask(value: Any, where: str, key: str) -> Any:
        if isinstance(value, str):
            kind = kind_of_secret(value, digest=_is_digest(key),
                                  wordlists_required=False)
            if kind is None:
                return value
            warnings.append(f"{prefix}{shown_field(where)}: hidden, it looked like a {kind}; remove it from "
                            "the file (it will not be written back)")
            return HIDDEN
        if isinstance(value, Mapping):
            return {k: mask(v, f"{where}.{k}" if where else str(k), str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v, f"{where}[{i}]", key) for i, v in enumerate(value)]
        return value

    masked = mask(doc, "", "")
    return masked, warnings


def shown(value: Any, limit: int = 40) -> str:
    """``repr(value)`` for an error message, unless it is long or looks like a secret.

    A refused value is never printed back: text longer than ``limit``
    characters, or that looks like a secret, reads as ``"the value (N characters, not
    shown)"``; control characters are escaped by ``repr``.
    """
    if isinstance(value, str) and (len(value) > limit or find_secret(value) is not None):
        return f"the value ({len(value)} characters, not shown)"
    text = repr(value)
    return text if len(text) <= limit + 2 else f"the value ({len(text)} characters, not shown)"


#: A PEM private key's armour lines (RSA, EC, OPENSSH, ENCRYPTED …), as text.
_KEY_BEGIN_RE = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_KEY_END_RE = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
#: The marker a private key's lines become in a stream (one line for the whole key).
KEY_LINE = "[HIDDEN: private key]"


class KeyBlockFilter:
    """Hides a private key line by line as a stream is read, before any tail is cut (H-59, H-75).

    Why: a program's stderr keeps only its last lines; a key whose BEGIN line scrolled out
    left its body and END line, which no later mask recognises, and a program may print a
    body with no armour at all. So the stream's reader passes every line here first:

    * a BEGIN line becomes :data:`KEY_LINE`; the body and the END line are dropped. A block
      without an END ends after :attr:`MAX_LINES` lines (a key is under 100), so a stray
      BEGIN cannot swallow a log;
    * a run of two or more body lines (:func:`~gpusession.core.files.detectors.is_key_body_line`:
      exactly 64 or 70 base64 characters, not hex only) becomes one :data:`KEY_LINE`, with
      the short line that closes it and an END line after it. The first such line is held
      back until the next one says whether it starts a run (one line of delay, and only for
      a line that looks like one).

    :meth:`lines` answers each line with the lines to keep (none, one, or a held line and
    this one); :meth:`end` releases a line still held when the stream ends.
    """

    MAX_LINES = 120

    def __init__(self) -> None:
        """A filter outside any key."""
        self._inside = 0
        self._held: str | None = None
        #: ``True`` inside a run of body lines, ``"tail"`` right after its short last line.
        self._in_run: bool | str = False

    def lines(self, text: str) -> list[str]:
        """What to keep for ``text``: ``[]`` inside a key, :data:`KEY_LINE` for one, else the lines."""
        if self._inside:
            self._inside = 0 if _KEY_END_RE.search(text) or self._inside >= self.MAX_LINES else self._inside + 1
            return []
        out = self.end()
        if _KEY_BEGIN_RE.search(text):
            self._in_run = False
            self._inside = 0 if _KEY_END_RE.search(text) else 1
            return [*out, KEY_LINE]
        if detectors.is_key_body_line(text):
            if self._in_run is True:
                return []
            if out:  # a held body line and this one: a run
                self._in_run = True
                return [KEY_LINE]
            self._held = text
            return []
        if self._in_run:  # the line after a run: its short last line, then an END line
            closing = self._in_run is True and detectors.is_key_tail_line(text)
            self._in_run = "tail" if closing else False
            if closing or _KEY_END_RE.search(text):
                return []
        return [*out, text]

    def end(self) -> list[str]:
        """The line held back, if any (at the end of the stream, or before the next line)."""
        held, self._held = self._held, None
        return [] if held is None else [held]

    def bytes_lines(self, raw: bytes) -> list[bytes]:
        """:meth:`lines` for a line of bytes (decoded as UTF-8 with replacement to look)."""
        if (not self._inside and self._held is None and not self._in_run
                and b"PRIVATE KEY-----" not in raw and len(raw.strip(b" \t\r")) not in detectors.KEY_BODY_WIDTHS):
            return [raw]  # the common line: nothing to decode
        return [ln.encode("utf-8") for ln in self.lines(raw.decode("utf-8", "replace"))]

    def bytes_end(self) -> list[bytes]:
        """:meth:`end` as bytes."""
        return [ln.encode("utf-8") for ln in self.end()]
