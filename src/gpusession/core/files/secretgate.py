"""Whether a text could hold a secret at all, answered without the detectors (S-rules, H-17).

Why: ``gpusession status --format tmux`` runs every few seconds and prints a line made of
a session name and our own words; importing the detectors
(:mod:`gpusession.core.files.secrets`, :mod:`gpusession.core.files.detectors`: dozens of
patterns, the word lists behind them) to learn that ``bench 6d 23h left`` holds no key
cost more than the rest of the command. :func:`may_hold_secret` is a superset of what the
detectors can find: ``False`` only where none of them could match, so skipping them
there changes no output. A test checks it against the detectors on every kind of secret
and on thousands of random texts.

Cheap by construction: string tests and one pass over the characters; no wordlist, no
pattern compiled beyond three small ones.

Who calls it: :func:`gpusession.core.files.textio.printable` and
:func:`gpusession.core.files.sessionname.check_name_secret`. Standard library only.
"""

from __future__ import annotations

import re

#: A literal every match of a token kind holds (``detectors._TOKEN_TABLE``, row by row):
#: PEM and PuTTY keys, age and Nostr keys, GitHub, GitLab, AWS, Hugging Face, ``sk-`` API
#: keys, Slack tokens and webhooks, Stripe, Google, JSON Web Tokens, a password in an
#: address (``://``), extended private keys (``prv``).
TOKEN_MARKS = (
    "-----BEGIN ", "PuTTY-User-Key-File-", "AGE-SECRET-KEY-1", "nsec1",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "AKIA", "ASIA", "ABIA", "ACCA", "hf_", "sk-", "xox", "hooks.slack.com",
    "sk_", "rk_", "whsec_", "AIza", "eyJ", "://", "prv",
)
#: An assignment of a password or token (``HF_TOKEN=…``, ``password: …``) holds ``:`` or
#: ``=`` and, in any case, one of these (``detectors._ASSIGNMENT``'s names).
ASSIGNMENT_WORDS = ("pw", "pass", "wachtwoord", "key", "token", "secret", "credential")
#: The shortest run of letters and digits a key written alone has: WIF 51, hex 64, base58 87.
KEY_RUN_MIN = 51
#: Lines of base64 like a key body: three lines of 40+ characters after one of 60+.
BASE64_BODY_MIN = 140
#: A key's body without its armour, or a DER key in base64 (H-75): a run of this many base64
#: characters (a body line is 64 or 70; a DER word at least 40).
BASE64_RUN_MIN = 40
#: Hex digits a key cut in two holds in all (``detectors._split_hex_keys``).
HEX_DIGITS_MIN = 64
#: A seed phrase: this many words of 3–12 letters in a row (``MNEMONIC_MIN_WORDS``), or
#: one run of letters this long (words written together, ``JOINED_MIN_CHARS``).
SEED_WORDS_MIN = 12
SEED_JOINED_MIN = 36

_ALNUM_RUN = re.compile(r"[0-9A-Za-z]+")
_LETTER_RUN = re.compile(r"[A-Za-z]+")
_BASE64_RUN = re.compile(rf"[A-Za-z0-9+/]{{{BASE64_RUN_MIN}}}")


def may_hold_secret(text: str) -> bool:
    """``False`` only when no detector could find a secret or a format character in ``text``.

    Args:
        text: any text.

    Returns:
        ``True`` for any text that is not ASCII (format characters, seed words of other
        scripts), holds a token kind's mark, a run of :data:`KEY_RUN_MIN` letters and
        digits, :data:`HEX_DIGITS_MIN` hex digits in all, lines that may be a key body, a run
        of :data:`BASE64_RUN_MIN` base64 characters, or
        a run of words that may be a seed phrase; ``False`` otherwise.
    """
    if not text.isascii():
        return True
    if any(mark in text for mark in TOKEN_MARKS):
        return True
    if (":" in text or "=" in text) and any(word in text.lower() for word in ASSIGNMENT_WORDS):
        return True
    if "\n" in text and len(text) >= BASE64_BODY_MIN:
        return True
    if len(text) >= HEX_DIGITS_MIN and sum(c in "0123456789abcdefABCDEF" for c in text) >= HEX_DIGITS_MIN:
        return True
    if len(text) >= BASE64_RUN_MIN and _BASE64_RUN.search(text):
        return True
    if len(text) >= KEY_RUN_MIN and any(len(m) >= KEY_RUN_MIN for m in _ALNUM_RUN.findall(text)):
        return True
    run = 0
    for word in _LETTER_RUN.findall(text):
        if len(word) >= SEED_JOINED_MIN:
            return True
        run = run + 1 if 3 <= len(word) <= 12 else 0
        if run >= SEED_WORDS_MIN:
            return True
    return False


__all__ = ["may_hold_secret"]
