"""Refuse seed phrases, private keys and over-long text before they reach a session file (issues 5, 12).

``order.toml``, the checklist notes, ``session.toml`` and the journal are plain files that
get copied home and shared with a colleague (seed 003 §8). They must never hold a
wallet's recovery phrase or a private key. :func:`find_secret` recognises text that looks
like one:

* a BIP-39 mnemonic: a run of 12 or more consecutive words (12/15/18/21/24 is the
  standard length) all from *one* of the wordlists the ``mnemonic`` package ships
  (English, French, Spanish, Italian, Portuguese, Czech, Russian, Turkish, Japanese,
  Korean, Chinese), whatever the separators, numbering, case or accents;
  The words may also be given by their unique first four letters (``aban abil able``)
  or written together without spaces (``abandonabilityable…``, segmented over the list);
* a 64-hex-digit private key (with or without ``0x``), also when split across two
  tokens (``"4c0883a6…" "…3f362318"`` pasted on two lines) -- in a destination address
  too (issue 12: an address of 40 hex digits, base58 or bech32 passes; 64 hex digits
  cannot be told from a key), only a digest a machine wrote is exempt;
* a base58 private key of 87–88 characters (Solana and similar: 64 bytes);
* a Bitcoin WIF private key or an extended private key (``xprv…``/``tprv…``);
* a PEM private key block (``-----BEGIN … PRIVATE KEY-----``, e.g. an SSH key);
* a password or access token written as ``password: …`` / ``pw=…`` / ``pwd:`` /
  ``passwd=`` / ``token=`` / ``api_key=`` / ``secret:`` (also ``wachtwoord``).

The one check at the write boundary is :func:`check_free_text`: the TOML writer
(:func:`gpusession.core.files.tomlio.write_toml`) calls it on the whole document, so every
string of every field -- typed in the CLI, a TUI form, or added later -- is checked for
a secret and for its length (:data:`TEXT_MAX_BYTES`), not a list of fields. What was
hand-written into a file before is hidden on reading (:func:`mask_free_text`), never
shown and never written back. A transaction hash or signature cannot be told apart from
a key: the explanation suggests keeping only its first and last characters. No message
ever repeats the value.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpusession.core.files.errors import BadInput

MNEMONIC_MIN_WORDS = 12
#: The longest free text accepted in one field (a note, a parameter): 4 KiB of UTF-8 (issue 12).
TEXT_MAX_BYTES = 4096
#: What a hidden value reads as (on screen and when its file is written again).
HIDDEN = "[hidden: looked like a secret]"

_TOKEN_RE = re.compile(r"[^\W\d_]+")  # runs of letters, any script
_HEX64_RE = re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")
_HEX_TOKEN_RE = re.compile(r"(?<![0-9A-Za-z])(?:0x)?([0-9a-fA-F]{4,})(?![0-9A-Za-z])")
_SPLIT_GAP_RE = re.compile(r"[\s:;,.|/_…-]{1,4}")
_B58 = "1-9A-HJ-NP-Za-km-z"
_BASE58_KEY_RE = re.compile(rf"(?<![0-9A-Za-z])[{_B58}]{{87,88}}(?![0-9A-Za-z])")
_WIF_RE = re.compile(rf"(?<![0-9A-Za-z])[5KLc][{_B58}]{{50,51}}(?![0-9A-Za-z])")
_PASSWORD_RE = re.compile(
    r"\b(?:password|passwd|passphrase|pwd|pw|wachtwoord|mot de passe|"
    r"(?:api|access|auth|secret|private)[_-]?(?:key|token)|apikey|token|secret)"
    r"\s*[:=]\s*\S", re.IGNORECASE
)
#: A long run of lowercase letters: perhaps a seed phrase written without spaces.
_JOINED_MIN_CHARS = 3 * MNEMONIC_MIN_WORDS
#: Wordlists whose words are written in a-z once folded (segmented when joined).
_LATIN = ("english", "spanish", "french", "italian", "portuguese", "czech", "turkish")
_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_XPRV_RE = re.compile(rf"(?<![0-9A-Za-z])[xtyz]prv[{_B58}]{{100,}}")
#: Keys whose values are digests a machine wrote (revisions, checksums, UUIDs): 64 hex
#: digits there are a checksum, not a key. A ``destination`` address is not exempt (issue 12).
_DIGEST_KEY_RE = re.compile(r"(revision|sha256|sha|digest|uuid|hash|checksum)s?$", re.IGNORECASE)

_KEEP_ENDS = "for a transaction hash or signature, keep only its first and last 8 characters"


#: Combining marks left by NFKD (Latin accents, Japanese voicing marks).
_MARKS_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u3099\u309a]")


def _fold(text: str) -> str:
    """Case-folded, accents dropped (NFKD without combining marks): ``Élève`` → ``eleve``."""
    if text.isascii():
        return text.lower()
    # Turkish dotless ı: "KAPI" written in capitals folds to "kapi", so both sides use i
    return _MARKS_RE.sub("", unicodedata.normalize("NFKD", text)).casefold().replace("ı", "i")


@lru_cache(maxsize=1)
def bip39_wordlists() -> dict[str, frozenset[str]]:
    """Every BIP-39 wordlist the ``mnemonic`` package ships, folded (:func:`_fold`).

    Returns:
        ``{language: 2,048 folded words}`` for English, French, Spanish, Italian,
        Portuguese, Czech, Russian, Turkish, Japanese, Korean and Chinese.
    """
    from mnemonic import Mnemonic

    # one fold per list (not per word): the lists load in a few milliseconds
    return {lang: frozenset(_fold("\n".join(Mnemonic(lang).wordlist)).split("\n"))
            for lang in Mnemonic.list_languages()}


def bip39_words() -> frozenset[str]:
    """The 2,048 words of the standard BIP-39 English wordlist (folded)."""
    return bip39_wordlists()["english"]


@lru_cache(maxsize=1)
def _prefixes() -> dict[str, frozenset[str]]:
    """``{language: the first four letters of each word longer than four}`` (folded).

    BIP-39 words are unique by their first four letters, and wallets accept them so.
    """
    return {lang: frozenset(w[:4] for w in words if len(w) > 4)
            for lang, words in bip39_wordlists().items()}


def _joined_words(token: str, words: frozenset[str]) -> int:
    """How many list words ``token`` is made of, written without spaces; 0 if it is not.

    Dynamic programming over the token's positions (words are 3 to 9 letters):
    ``best[i]`` is the most words that make up ``token[:i]`` exactly.
    """
    n = len(token)
    best = [-1] * (n + 1)
    best[0] = 0
    for i in range(1, n + 1):
        for size in range(3, min(9, i) + 1):
            before = best[i - size]
            if before >= 0 and token[i - size:i] in words:
                best[i] = max(best[i], before + 1)
    return max(best[n], 0)


#: Lengths of the folded words of every BIP-39 list: ASCII words (English, French,
#: Spanish, Italian, Portuguese, Czech, Turkish) and the others (Japanese, Russian,
#: Korean, Chinese). A test checks them against :func:`bip39_wordlists`.
BIP39_ASCII_LENGTHS = (3, 9)
BIP39_OTHER_MAX_LENGTH = 11
#: Common English words in none of the lists (a test checks it): prose has one of them
#: every few words, a seed phrase never.
NOT_BIP39_WORDS = frozenset(
    "the and with for are was not but your its has had our out his her their which "
    "who how each every these those were been being does did should would could "
    "while through after".split()
)


def _may_hold_phrase(tokens: list[str]) -> bool:
    """Whether ``tokens`` may hold a seed phrase: a check without the lists (~13 ms to load).

    True when :data:`MNEMONIC_MIN_WORDS` folded tokens in a row could each be a wordlist
    word or its four-letter prefix (of a length some word has, not a common English word
    of no list, nor the prefix of one). Words written together are not looked at here.
    """
    low, high = BIP39_ASCII_LENGTHS
    run = 0
    for tok in tokens:
        if tok.isascii():
            fits = low <= len(tok) <= high and tok not in NOT_BIP39_WORDS
        else:
            fits = len(tok) <= BIP39_OTHER_MAX_LENGTH
        run = run + 1 if fits else 0
        if run >= MNEMONIC_MIN_WORDS:
            return True
    return False


def longest_wordlist_run(text: str) -> int:
    """Length of the longest run of consecutive words of one BIP-39 wordlist in ``text``.

    Numbers, punctuation and line breaks between the words are ignored, so a recovery
    phrase written one word per numbered line still counts; case and accents are
    ignored. A run counts words of a single language (a real phrase uses one list). A
    word may be given by its unique first four letters (``aban`` for ``abandon``), and
    words written together (``abandonability…``, 36 letters or more, a-z lists only)
    count as the words they segment into (issue 12).

    Args:
        text: any text (a note, a pasted line).

    Returns:
        The number of words in the longest run; 0 when no word is in any list, or when
        no run of :data:`MNEMONIC_MIN_WORDS` is possible (then the lists are not loaded).
    """
    tokens = _TOKEN_RE.findall(_fold(text))  # fold first: NFKD accents are marks, not letters
    joined = any(len(t) >= _JOINED_MIN_CHARS for t in tokens)
    if len(tokens) < MNEMONIC_MIN_WORDS and not joined:
        return 0  # too few words for a phrase (the lists are not even loaded)
    if not joined and not _may_hold_phrase(tokens):
        return 0  # no 12 words in a row of a wordlist's lengths (issue 10: start-up)
    best = 0
    prefixes = _prefixes()
    for lang, words in bip39_wordlists().items():
        run = 0
        for tok in tokens:
            if tok in words or (len(tok) == 4 and tok in prefixes[lang]):
                run += 1
            elif len(tok) >= _JOINED_MIN_CHARS and lang in _LATIN and tok.isascii():
                count = _joined_words(tok, words)
                run = run + count if count else 0
            else:
                run = 0
            best = max(best, run)
    return best


def _split_hex_key(text: str) -> bool:
    """Two hex tokens next to each other whose digits add up to 64 (a key cut in two)."""
    tokens = list(_HEX_TOKEN_RE.finditer(text))
    for a, b in zip(tokens, tokens[1:], strict=False):
        if len(a.group(1)) + len(b.group(1)) != 64:
            continue
        if _SPLIT_GAP_RE.fullmatch(text[a.end():b.start()]):
            return True
    return False


def find_secret(text: str, *, address: bool = False, digest: bool = False,
                wordlists_required: bool = True) -> str | None:
    """Why ``text`` looks like a secret, or ``None`` when it does not.

    Args:
        text: the text to check.
        address: the text is a destination address: checked like any text (issue 12:
            64 hex digits, with or without ``0x``, are refused there too, since they
            cannot be told from a private key; 40-hex, base58 and bech32 addresses pass).
        digest: the text is a digest a machine wrote (a revision, a checksum, a UUID):
            the hex rules are not applied.
        wordlists_required: ``False`` where a missing ``mnemonic`` package (a broken
            install) must not stop the caller (hiding text on reading, the journal):
            the other rules still apply.

    Returns:
        The kind of secret and why, in words (never the secret itself).
    """
    if not text:
        return None
    try:
        run = longest_wordlist_run(text)
    except ImportError:
        if wordlists_required:
            raise
        run = 0
    if run >= MNEMONIC_MIN_WORDS:
        return (f"it contains {run} consecutive words from a BIP-39 wordlist, which looks like "
                "a wallet seed phrase (mnemonic); a seed phrase gives full control of the wallet "
                "and must never be written in a session file")
    del address  # an address gets no exemption (issue 12)
    if not digest and _HEX64_RE.search(text):
        return ("it contains 64 hexadecimal digits, which looks like a private key; keys must "
                f"never be written in a session file ({_KEEP_ENDS})")
    if not digest and _split_hex_key(text):
        return ("it contains 64 hexadecimal digits split in two, which looks like a private "
                f"key; keys must never be written in a session file ({_KEEP_ENDS})")
    if _PASSWORD_RE.search(text):
        return ("it contains what looks like a password or access token (\"password: …\", "
                "\"token=…\"); passwords and tokens must never be written in a session file")
    if _PEM_RE.search(text):
        return ("it contains a private key block (-----BEGIN … PRIVATE KEY-----); keys must "
                "never be written in a session file")
    if _XPRV_RE.search(text):
        return "it contains an extended private key (xprv…); keys must never be written here"
    if _BASE58_KEY_RE.search(text):
        return ("it contains 87-88 base58 characters, which looks like a private key (Solana "
                f"and similar); keys must never be written in a session file ({_KEEP_ENDS})")
    if _WIF_RE.search(text):
        return ("it contains what looks like a WIF private key (51–52 base58 characters); keys "
                "must never be written in a session file")
    return None


def kind_of_secret(text: str, *, address: bool = False, digest: bool = False,
                   wordlists_required: bool = True) -> str | None:
    """A short name of the secret ``text`` looks like (``"seed phrase"``), or ``None``."""
    reason = find_secret(text, address=address, digest=digest,
                         wordlists_required=wordlists_required)
    if reason is None:
        return None
    for words, kind in (("seed phrase", "seed phrase"), ("password", "password"),
                        ("extended private key", "extended private key"),
                        ("WIF", "WIF private key"), ("private key", "private key")):
        if words in reason:
            return kind
    return "secret"  # pragma: no cover - every reason names its kind


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
    """Raise :class:`BadInput` when ``text`` is longer than ``limit_bytes`` of UTF-8 (issue 12).

    Args:
        text: the value.
        field: its field, named in the error.
        path: the file it was going to, named in the error.
        limit_bytes: the limit (default 4 KiB).

    Raises:
        BadInput: the field first, then the size and the limit, the file as where
            nothing was written (issue 12: "the note for g1.approver is 10,240 bytes;
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


def _is_digest(key: str) -> bool:
    return bool(_DIGEST_KEY_RE.search(key))


#: Tables a program fills with what it observed (the run's environment, a probe's
#: evidence): their text may be longer than a note, so only :data:`OBSERVED_MAX_BYTES`
#: applies there; the secret check applies everywhere.
_OBSERVED_KEYS = frozenset({"environment", "evidence"})
OBSERVED_MAX_BYTES = 64 * 1024


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
    """The one check of free text at the write boundary (issue 12, seed 003 §8).

    Every string in ``doc`` (values, list items, table keys; at any depth) must be at
    most ``limit_bytes`` of UTF-8 (under an ``environment`` or ``evidence`` key, which a
    program fills with what it observed: :data:`OBSERVED_MAX_BYTES`) and must not look
    like a secret (:func:`find_secret`).
    The TOML writer calls it on every document before anything is written, so a field
    added later is checked without being listed anywhere. A value under a key that holds
    a machine-written digest (``*_revision``, ``sha256``, ``uuid``…) is exempt from the
    64-hex rule only; a ``destination`` address is not (issue 12).

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
        reason = find_secret(text, digest=_is_digest(key))
        if reason is not None:
            raise BadInput(f"refused: {reason}; nothing was written", path=file, field=where)


def mask_free_text(doc: Any, file: Path | str | None = None) -> tuple[Any, list[str]]:
    """``doc`` with every secret-looking string replaced by :data:`HIDDEN` (issue 12).

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
            warnings.append(f"{prefix}{where}: hidden, it looked like a {kind}; remove it from "
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

    A refused value is never printed back (issue 12): text longer than ``limit``
    characters, or that looks like a secret, reads as ``"the value (N characters, not
    shown)"``; control characters are escaped by ``repr``.
    """
    if isinstance(value, str) and (len(value) > limit or find_secret(value) is not None):
        return f"the value ({len(value)} characters, not shown)"
    text = repr(value)
    return text if len(text) <= limit + 2 else f"the value ({len(text)} characters, not shown)"
