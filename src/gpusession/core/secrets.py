"""Refuse seed phrases, private keys and over-long text before they reach a session file (issues 5, 12).

``order.toml``, the checklist notes, ``session.toml`` and the journal are plain files that
get copied home and shared with a colleague (seed 003 §8). They must never hold a
wallet's recovery phrase or a private key. :func:`find_secret` recognises text that looks
like one:

* a BIP-39 mnemonic: a run of 12 or more consecutive words (12/15/18/21/24 is the
  standard length) all from *one* of the wordlists the ``mnemonic`` package ships
  (English, French, Spanish, Italian, Portuguese, Czech, Russian, Turkish, Japanese,
  Korean, Chinese), whatever the separators, numbering, case or accents;
* a 64-hex-digit private key (with or without ``0x``), also when split across two
  tokens (``"4c0883a6…" "…3f362318"`` pasted on two lines), except in a destination
  address (some chains write addresses that way);
* a base58 private key of 87–88 characters (Solana and similar: 64 bytes);
* a Bitcoin WIF private key or an extended private key (``xprv…``/``tprv…``);
* a PEM private key block (``-----BEGIN … PRIVATE KEY-----``, e.g. an SSH key);
* a password written as ``password: …`` / ``password=…`` (also ``wachtwoord``).

The one check at the write boundary is :func:`check_free_text`: the TOML writer
(:func:`gpusession.core.tomlio.write_toml`) calls it on the whole document, so every
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

from gpusession.core.errors import BadInput

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
    r"\b(?:password|passwd|passphrase|wachtwoord|mot de passe)\s*[:=]\s*\S", re.IGNORECASE
)
_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_XPRV_RE = re.compile(rf"(?<![0-9A-Za-z])[xtyz]prv[{_B58}]{{100,}}")
#: Keys whose values are digests a machine wrote (revisions, checksums, UUIDs): 64 hex
#: digits there are a checksum, not a key. ``destination`` holds an address.
_DIGEST_KEY_RE = re.compile(r"(revision|sha256|sha|digest|uuid|hash|checksum)s?$", re.IGNORECASE)
_ADDRESS_KEYS = frozenset({"destination"})

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


def longest_wordlist_run(text: str) -> int:
    """Length of the longest run of consecutive words of one BIP-39 wordlist in ``text``.

    Numbers, punctuation and line breaks between the words are ignored, so a recovery
    phrase written one word per numbered line still counts; case and accents are
    ignored. A run counts words of a single language (a real phrase uses one list).

    Args:
        text: any text (a note, a pasted line).

    Returns:
        The number of words in the longest run; 0 when no word is in any list.
    """
    tokens = _TOKEN_RE.findall(_fold(text))  # fold first: NFKD accents are marks, not letters
    if len(tokens) < MNEMONIC_MIN_WORDS:
        return 0  # too few words for a phrase (the lists are not even loaded)
    best = 0
    for words in bip39_wordlists().values():
        run = 0
        for tok in tokens:
            run = run + 1 if tok in words else 0
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


def find_secret(text: str, *, address: bool = False, wordlists_required: bool = True) -> str | None:
    """Why ``text`` looks like a secret, or ``None`` when it does not.

    Args:
        text: the text to check.
        address: the text is a destination address or a digest a machine wrote; some
            chains (Sui, Aptos) write addresses as ``0x`` + 64 hex digits, so the hex
            rules are not applied.
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
    if not address and _HEX64_RE.search(text):
        return ("it contains 64 hexadecimal digits, which looks like a private key; keys must "
                f"never be written in a session file ({_KEEP_ENDS})")
    if not address and _split_hex_key(text):
        return ("it contains 64 hexadecimal digits split in two, which looks like a private "
                f"key; keys must never be written in a session file ({_KEEP_ENDS})")
    if _PASSWORD_RE.search(text):
        return ("it contains what looks like a password (\"password: …\"); access passwords "
                "must never be written in a session file")
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


def kind_of_secret(text: str, *, address: bool = False, wordlists_required: bool = True) -> str | None:
    """A short name of the secret ``text`` looks like (``"seed phrase"``), or ``None``."""
    reason = find_secret(text, address=address, wordlists_required=wordlists_required)
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
        BadInput: naming the field, the size and the limit; the text is not repeated.
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > limit_bytes:
        raise BadInput(f"{size:,} bytes of text; at most {limit_bytes:,} bytes "
                       f"({limit_bytes // 1024} KiB) per field; nothing was written",
                       path=path, field=field)


def _is_address_or_digest(key: str) -> bool:
    return key in _ADDRESS_KEYS or bool(_DIGEST_KEY_RE.search(key))


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
    an address (``destination``) or a machine-written digest (``*_revision``,
    ``sha256``, ``uuid``…) is exempt from the 64-hex rule only.

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
        reason = find_secret(text, address=_is_address_or_digest(key))
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
            kind = kind_of_secret(value, address=_is_address_or_digest(key),
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
