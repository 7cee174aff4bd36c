"""Refuse seed phrases and private keys before they reach a session file (issue 5).

``order.toml`` and the checklist notes are plain files that get copied home and shared
with a colleague (seed 003 §8). They must never hold a wallet's recovery phrase or a
private key. :func:`check_no_secret` refuses text that looks like one:

* a BIP-39 mnemonic: a run of 12 or more consecutive words (12/15/18/21/24 is the
  standard length) all from the standard English wordlist (the ``mnemonic`` package,
  the reference implementation's list), whatever the separators or numbering;
* a 64-hex-digit private key (with or without ``0x``), except in a destination address
  (some chains write addresses that way);
* a Bitcoin WIF private key or an extended private key (``xprv…``/``tprv…``);
* a PEM private key block (``-----BEGIN … PRIVATE KEY-----``, e.g. an SSH key);
* a password written as ``password: …`` / ``password=…`` (also ``wachtwoord``).

A transaction hash is also 64 hex digits and cannot be told apart from a key: the
explanation suggests keeping only its first and last characters. The error message
never repeats the secret.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gpusession.core.errors import BadInput

MNEMONIC_MIN_WORDS = 12
_WORD_RE = re.compile(r"[A-Za-z]+")
_HEX64_RE = re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")
_WIF_RE = re.compile(r"(?<![0-9A-Za-z])[5KLc][1-9A-HJ-NP-Za-km-z]{50,51}(?![0-9A-Za-z])")
_PASSWORD_RE = re.compile(
    r"\b(?:password|passwd|passphrase|wachtwoord|mot de passe)\s*[:=]\s*\S", re.IGNORECASE
)
_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_XPRV_RE = re.compile(r"(?<![0-9A-Za-z])[xtyz]prv[1-9A-HJ-NP-Za-km-z]{100,}")


@lru_cache(maxsize=1)
def bip39_words() -> frozenset[str]:
    """The 2,048 words of the standard BIP-39 English wordlist."""
    from mnemonic import Mnemonic

    return frozenset(Mnemonic("english").wordlist)


def longest_wordlist_run(text: str) -> int:
    """Length of the longest run of consecutive BIP-39 words in ``text``.

    Numbers, punctuation and line breaks between the words are ignored, so a recovery
    phrase written one word per numbered line still counts.

    Args:
        text: any text (a note, a pasted line).

    Returns:
        The number of words in the longest run; 0 when no word is in the list.
    """
    words = bip39_words()
    best = run = 0
    for tok in _WORD_RE.findall(text):
        if tok.lower() in words:
            run += 1
            best = max(best, run)
        else:
            run = 0
    return best


def find_secret(text: str, *, address: bool = False) -> str | None:
    """Why ``text`` looks like a secret, or ``None`` when it does not.

    Args:
        text: the text to check.
        address: the text is a destination address; some chains (Sui, Aptos) write
            addresses as ``0x`` + 64 hex digits, so the 64-hex rule is not applied.

    Returns:
        An explanation (without the secret itself).
    """
    if not text:
        return None
    run = longest_wordlist_run(text)
    if run >= MNEMONIC_MIN_WORDS:
        return (f"it contains {run} consecutive words from the BIP-39 wordlist, which looks like "
                "a wallet seed phrase (mnemonic); a seed phrase gives full control of the wallet "
                "and must never be written in a session file")
    if not address and _HEX64_RE.search(text):
        return ("it contains 64 hexadecimal digits, which looks like a private key; keys must "
                "never be written in a session file (for a transaction hash, keep only its "
                "first and last 8 characters)")
    if _PASSWORD_RE.search(text):
        return ("it contains what looks like a password (\"password: …\"); access passwords "
                "must never be written in a session file")
    if _PEM_RE.search(text):
        return ("it contains a private key block (-----BEGIN … PRIVATE KEY-----); keys must "
                "never be written in a session file")
    if _XPRV_RE.search(text):
        return "it contains an extended private key (xprv…); keys must never be written here"
    if _WIF_RE.search(text):
        return ("it contains what looks like a WIF private key (51–52 base58 characters); keys "
                "must never be written in a session file")
    return None


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
