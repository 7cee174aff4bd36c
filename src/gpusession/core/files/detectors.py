"""Where a text holds a secret: one compiled pattern per kind, and the seed-phrase word lists.

Why it exists: :mod:`gpusession.core.files.secrets` refuses secrets at the write boundary
and masks them in what a program wrote (a workload's exception, its stderr); both need
*where* each secret is in a whole, multi-line text, so that a PEM body split over lines
or a seed printed one word per line is found as one secret and only it is masked.

The token and key kinds are a table of compiled patterns (:func:`token_kinds`), one per
kind, each with a test. ``detect-secrets`` was measured and not used: its plugins scan
line by line (a split PEM body passes), took 16 s on 1 MB of stderr on this machine,
flag ordinary prose as "high entropy", miss Hugging Face and current OpenAI keys, and
had no release since 2024-05. Seed phrases come from word lists: every BIP-39 list of
the ``mnemonic`` package, and the Monero (English, 1,626 words, from the ``monero``
package, MIT/BSD) and SLIP-39 (1,024 words, from Trezor's ``shamir-mnemonic``, MIT) lists
kept in ``gpusession/data/wordlists``.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache

#: Unicode format characters (category Cf: soft hyphen, zero width space and joiners,
#: bidi marks, embeddings, overrides and isolates, the BOM, tags) and the line and
#: paragraph separators: they change how a text reads without being seen (H-24). A test
#: checks the ranges against :mod:`unicodedata`.
FORMAT_CHARS_RE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)

#: A seed phrase is a run of at least this many words of one list (12/15/18/21/24 for
#: BIP-39, 13 or 25 for Monero, 20 or 33 for SLIP-39).
MNEMONIC_MIN_WORDS = 12


@dataclass(frozen=True)
class Finding:
    """One secret in a text: ``text[start:end]`` is what to hide.

    Attributes:
        start: first character of the secret (0-based, in the text searched).
        end: one past its last character.
        kind: a short name (``"private key"``, ``"GitHub token"``, ``"seed phrase"``).
        reason: why, in words, for a refusal; never the secret itself.
    """

    start: int
    end: int
    kind: str
    reason: str


_KEEP_ENDS = "for a transaction hash or signature, keep only its first and last 8 characters"
_NEVER = "keys and tokens must never be written in a session file"
_B58 = "1-9A-HJ-NP-Za-km-z"
_BECH32 = "02-9ac-hj-np-z"

#: An assignment of a password or token: ``HF_TOKEN=…``, ``DB_PASSWORD: …``, ``pw=…``.
#: The name may carry a prefix (``AWS_SECRET_ACCESS_KEY``) but must end in the word,
#: so ``max_tokens=512`` or ``token_count=3`` pass; ``token=5`` (a count) and
#: ``PWD=/home/me`` (the shell's working directory) pass too. Only the value is hidden.
_ASSIGNMENT = (
    r"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_-])*"
    r"(?:(?:password|passwd|passphrase|pw|wachtwoord|mot de passe|"
    r"(?:api|access|auth|secret|private|client)[_-]?(?:key|token|secret)|apikey|secret|credentials?)"
    r"\s*[:=]\s*|token\s*[:=]\s*(?!\d+\b)|pwd\s*[:=]\s*(?![/~]))"
    # the value, unless it is the next name (``secret: password: …``)
    r"(?P<secret>\"[^\"\n]*\"|'[^'\n]*'|(?![\w-]+\s*[:=](?:\s|$))\S+)"
)

#: ``(kind, pattern, flags, reason, digest-exempt)``: the token and key kinds, in the
#: order a refusal names them. A pattern with a ``secret`` group hides that group only.
#: A kind whose prefix is its own (``ghp_``, ``glpat-``, ``xoxb-``, ``AIza``, ``eyJ…``) is
#: found glued to the word before it too (``mytokenghp_…``): a paste loses its separator.
#: ``hf_`` glued needs a capital in its body (a token's) and ``sk-`` never glues
#: (``task-…``, ``disk-…`` are words).
#: Compiled on first use (:func:`token_kinds`): start-up stays cheap.
_TOKEN_TABLE: tuple[tuple[str, str, int, str, bool], ...] = (
        ("private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
         r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)", re.S,
         "it contains a private key block (-----BEGIN … PRIVATE KEY-----); keys must never "
         "be written in a session file", False),
        ("private key", r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)", re.S,
         f"it contains a PuTTY private key file; {_NEVER}", False),
        ("private key", r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{60,80}={0,2}[ \t]*\n"
         r"(?:[ \t]*[A-Za-z0-9+/]{40,80}={0,2}[ \t]*(?:\n|\Z)){2,}(?:[ \t]*[A-Za-z0-9+/]+={0,2}(?![^\n]))?", 0,
         f"it contains three or more lines of base64 like the body of a key file; {_NEVER}", True),
        ("age secret key", rf"AGE-SECRET-KEY-1[{_BECH32.upper()}{_BECH32}]{{58}}", 0,
         f"it contains an age secret key (AGE-SECRET-KEY-1…); {_NEVER}", False),
        ("Nostr private key", rf"nsec1[{_BECH32}]{{58}}", 0,
         f"it contains a Nostr private key (nsec1…); {_NEVER}", False),
        ("GitHub token", r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
         0, f"it contains a GitHub token (ghp_…, github_pat_…); {_NEVER}", False),
        ("GitLab token", r"glpat-[A-Za-z0-9_-]{20,}", 0,
         f"it contains a GitLab token (glpat-…); {_NEVER}", False),
        ("AWS access key", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])", 0,
         f"it contains an AWS access key id (AKIA…); {_NEVER}", False),
        ("Hugging Face token", r"(?:(?<![A-Za-z0-9_])|(?=hf_[a-z0-9]*[A-Z]))hf_[A-Za-z0-9]{30,}", 0,
         f"it contains a Hugging Face token (hf_…); {_NEVER}", False),
        ("API key", r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}",
         0, f"it contains an API key (sk-…, as OpenAI and Anthropic issue them); {_NEVER}", False),
        ("Slack token", r"xox[abposre]-[A-Za-z0-9-]{10,}", 0,
         f"it contains a Slack token (xoxb-…); {_NEVER}", False),
        ("Slack webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+", 0,
         f"it contains a Slack webhook address, which lets anyone post; {_NEVER}", False),
        ("Stripe key", r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
         0, f"it contains a Stripe secret key (sk_live_…); {_NEVER}", False),
        ("Google API key", r"AIza[0-9A-Za-z_-]{35}", 0,
         f"it contains a Google API key (AIza…); {_NEVER}", False),
        ("JSON Web Token", r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
         0, f"it contains a JSON Web Token (eyJ….….…), which is a bearer credential; {_NEVER}", False),
        ("password", r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://(?P<secret>[^\s/?#@:]+:[^\s/?#@]+)@", 0,
         "it contains a user name and password in an address (https://user:password@…); "
         "passwords and tokens must never be written in a session file", False),
        ("password", _ASSIGNMENT, 0,
         "it contains what looks like a password or access token (\"password: …\", "
         "\"token=…\"); passwords and tokens must never be written in a session file", False),
        ("extended private key", rf"(?<![0-9A-Za-z])[xtyz]prv[{_B58}]{{100,}}", 0,
         "it contains an extended private key (xprv…); keys must never be written here", False),
        ("private key", r"(?<![0-9A-Za-z])(?:0x)?(?:[0-9a-fA-F]{128}|[0-9a-fA-F]{64})(?![0-9A-Za-z])", 0,
         f"it contains 64 (or 128) hexadecimal digits, which looks like a private key; keys must "
         f"never be written in a session file ({_KEEP_ENDS})", True),
        ("private key", rf"(?<![0-9A-Za-z])[{_B58}]{{87,88}}(?![0-9A-Za-z])", 0,
         "it contains 87-88 base58 characters, which looks like a private key (Solana and "
         f"similar); keys must never be written in a session file ({_KEEP_ENDS})", False),
        ("WIF private key", rf"(?<![0-9A-Za-z])[5KLc][{_B58}]{{50,51}}(?![0-9A-Za-z])", 0,
         "it contains what looks like a WIF private key (51–52 base58 characters); keys must "
         "never be written in a session file", False),
)


def _has(*parts: str) -> Callable[[str], bool]:
    return lambda text: any(p in text for p in parts)


def _longer(n: int) -> Callable[[str], bool]:
    return lambda text: len(text) >= n


#: One cheap test per row of :data:`_TOKEN_TABLE`, true whenever its pattern could match
#: (a literal every match holds, or its shortest length): a pattern is compiled and run
#: only where it may find something, so ``status`` on a short name compiles none.
_GATES: tuple[Callable[[str], bool], ...] = (
    _has("-----BEGIN "), _has("PuTTY-User-Key-File-"), lambda s: "\n" in s and len(s) >= 140,
    _has("AGE-SECRET-KEY-1"), _has("nsec1"), _has("gh", "github_pat_"), _has("glpat-"),
    _has("AKIA", "ASIA", "ABIA", "ACCA"), _has("hf_"), _has("sk-"), _has("xox"),
    _has("hooks.slack.com"), _has("sk_", "rk_", "whsec_"), _has("AIza"), _has("eyJ"),
    _has("://"), _has(":", "="), _has("prv"), _longer(64), _longer(87), _longer(51),
)


@cache
def _compiled(i: int) -> re.Pattern[str]:
    _kind, pattern, flags, _reason, _exempt = _TOKEN_TABLE[i]
    return re.compile(pattern, flags)


def token_kinds() -> tuple[tuple[str, re.Pattern[str], str, bool], ...]:
    """``(kind, compiled pattern, reason, digest-exempt)`` for every row of the table."""
    return tuple((row[0], _compiled(i), row[3], row[4]) for i, row in enumerate(_TOKEN_TABLE))

_SPLIT_REASON = ("it contains 64 hexadecimal digits split in two, which looks like a private "
                 f"key; keys must never be written in a session file ({_KEEP_ENDS})")
_HEX_TOKEN_RE = re.compile(r"(?<![0-9A-Za-z])(?:0x)?([0-9a-fA-F]{4,})(?![0-9A-Za-z])")
_SPLIT_GAP_RE = re.compile(r"[\s:;,.|/_…-]{1,4}")
#: Hex digits written right after these words are a digest a program printed
#: (``sha256: 9f86…``, ``digest=…``), not a key.
_DIGEST_BEFORE_RE = re.compile(r"(?i)(?:sha-?(?:1|256|384|512)?|digest|checksum|hash|revision|commit)"
                               r"\W{0,3}$")


def _split_hex_keys(text: str) -> list[Finding]:
    """Two hex tokens next to each other whose digits add up to 64 (a key cut in two)."""
    tokens = list(_HEX_TOKEN_RE.finditer(text))
    out = []
    for a, b in zip(tokens, tokens[1:], strict=False):
        if len(a.group(1)) + len(b.group(1)) == 64 and _SPLIT_GAP_RE.fullmatch(text[a.end():b.start()]):
            out.append(Finding(a.start(), b.end(), "private key", _SPLIT_REASON))
    return out


def token_findings(text: str, *, digest: bool = False) -> list[Finding]:
    """Every token or key in ``text`` (:func:`token_kinds`, and 64 hex digits cut in two).

    Args:
        text: a whole text; patterns span lines where the secret does (a PEM block).
        digest: the text is a digest a machine wrote (a checksum, a revision): the hex
            and base64-lines kinds do not apply.

    Returns:
        The findings in table order (a refusal names the first).
    """
    out: list[Finding] = []
    for i, (kind, _source, _flags, reason, exempt) in enumerate(_TOKEN_TABLE):
        if (exempt and digest) or not _GATES[i](text):
            continue
        pattern = _compiled(i)
        for m in pattern.finditer(text):
            start, end = m.span("secret") if "secret" in pattern.groupindex else m.span()
            if exempt and _DIGEST_BEFORE_RE.search(text, max(0, start - 12), start):
                continue
            out.append(Finding(start, end, kind, reason))
    if not digest:
        out.extend(_split_hex_keys(text))
        out.extend(key_body_findings(text))
        out.extend(der_key_findings(text))
    return out


# ---- a key's body without its armour (H-75) ---------------------------------------------

#: The widths a key's body lines are wrapped at: PEM and PGP 64, OpenSSH 70.
KEY_BODY_WIDTHS = (64, 70)
_KEY_WIDTH_RE = re.compile(r"[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{70}")
_HEX_ONLY_RE = re.compile(r"[0-9a-fA-F]+")
_KEY_TAIL_RE = re.compile(r"[A-Za-z0-9+/]{4,69}={0,2}")
_TAIL_MARK_RE = re.compile(r"[0-9+/=]")
_CUT_HEAD_RE = re.compile(r"[A-Za-z0-9+/]{16,}$")
#: Lines of a text as a note joins them too (stderr lines joined by " | ").
_LINE_SEP_RE = re.compile(r"\r?\n| \| ")
_BODY_REASON = ("it contains lines of base64 at a key file's width (64 or 70 characters), like "
                f"the body of a private key; {_NEVER}")


def is_key_body_line(line: str) -> bool:
    """Whether ``line`` (spaces around it ignored) is a full line of a key's body (H-75).

    Exactly 64 or 70 base64 characters (PEM's, PGP's and OpenSSH's width), no padding,
    and not hex digits only: 64 hex digits are a SHA-256 digest a program printed.
    """
    s = line.strip(" \t\r")
    return len(s) in KEY_BODY_WIDTHS and bool(_KEY_WIDTH_RE.fullmatch(s)) and not _HEX_ONLY_RE.fullmatch(s)


def is_key_tail_line(line: str) -> bool:
    """Whether ``line`` may be the short last line of a key's body, read right after its run (H-75).

    Base64 of a whole number of 4-character groups (``=`` padding allowed), shorter
    than a full line, holding a digit, ``+``, ``/`` or ``=`` or at least 16 characters,
    so a word (``Done``, ``Finished``) after a run is kept.
    """
    s = line.strip(" \t\r")
    return (len(s) % 4 == 0 and bool(_KEY_TAIL_RE.fullmatch(s))
            and (len(s) >= 16 or bool(_TAIL_MARK_RE.search(s))))


def key_body_findings(text: str) -> list[Finding]:
    """Every run of two or more key body lines in ``text``, with the line that closes it (H-75).

    Why: a program may print a key's body without its BEGIN and END lines, and a tail of
    its stderr keeps only the last few lines; the run is what is left to recognise.
    Lines are split at line breaks and at `` | `` (how a note joins stderr lines). The
    run takes the following short line (:func:`is_key_tail_line`), and the base64 end
    (16+ characters) of the line just before it: a body line a tail cut in the middle.
    One line of 64 base64 characters alone is not a run (a token printed once is left to
    the other kinds).
    """
    if len(text) < 2 * KEY_BODY_WIDTHS[0] + 1:
        return []
    spans: list[tuple[int, int]] = []
    at = 0
    for sep in _LINE_SEP_RE.finditer(text):
        spans.append((at, sep.start()))
        at = sep.end()
    spans.append((at, len(text)))
    out: list[Finding] = []
    i = 0
    while i < len(spans):
        j = i
        while j < len(spans) and is_key_body_line(text[spans[j][0]:spans[j][1]]):
            j += 1
        if j - i < 2:
            i = max(j, i + 1)
            continue
        start, end = spans[i][0], spans[j - 1][1]
        if j < len(spans) and is_key_tail_line(text[spans[j][0]:spans[j][1]]):
            end = spans[j][1]
            j += 1
        if i > 0 and (cut := _CUT_HEAD_RE.search(text, spans[i - 1][0], spans[i - 1][1])):
            start = cut.start()
        out.append(Finding(start + len(text[start:end]) - len(text[start:end].lstrip(" \t")),
                           end, "private key", _BODY_REASON))
        i = j
    return out


_DER_WORD_RE = re.compile(r"(?<![A-Za-z0-9+/=])M[A-Za-z0-9+/]{39,}={0,2}(?![A-Za-z0-9+/=])")
_DER_REASON = (f"it contains base64 that decodes to the start of a DER private key (an ASN.1 "
               f"SEQUENCE, as PKCS#1, PKCS#8 and SEC1 keys begin); {_NEVER}")


def is_der_key_start(word: str) -> bool:
    """Whether the base64 ``word`` decodes to the start of a DER key (H-75).

    The first bytes are an ASN.1 SEQUENCE (``0x30``) whose length (short form of 30+
    bytes, or long form ``0x81``/``0x82``) is at least what ``word`` holds after the
    header, followed by an INTEGER (the version of a PKCS#1, PKCS#8 or SEC1 key) or a
    SEQUENCE (an encrypted PKCS#8 key, a certificate). Random base64 meets all three about
    once in 10^5 words; base64 of JSON (``eyJ…``) or text never.
    """
    try:
        head = base64.b64decode(word[:8])
    except (binascii.Error, ValueError):
        return False
    if len(head) < 6 or head[0] != 0x30:
        return False
    if head[1] < 0x80:
        length, header = head[1], 2
        if length < 30:
            return False
    elif head[1] == 0x81:
        length, header = head[2], 3
        if length < 0x80:
            return False
    elif head[1] == 0x82:
        length, header = (head[2] << 8) | head[3], 4
        if length < 0x100:
            return False
    else:
        return False
    if head[header] not in (0x02, 0x30):
        return False
    return len(word.rstrip("=")) * 3 // 4 <= header + length


def der_key_findings(text: str) -> list[Finding]:
    """Every base64 word of 40+ characters in ``text`` that starts a DER key (:func:`is_der_key_start`)."""
    if "M" not in text or len(text) < 40:
        return []
    return [Finding(m.start(), m.end(), "private key", _DER_REASON)
            for m in _DER_WORD_RE.finditer(text) if is_der_key_start(m.group())]


# ---- seed phrases ----------------------------------------------------------------------

#: Combining marks left by NFKD (Latin accents, Japanese voicing marks).
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u3099\u309a"
_MARKS_RE = re.compile(f"[{_MARKS}]")
#: A word: letters of any script, with the combining marks of a decomposed (NFD) text.
#: U+FFFD counts as a letter inside a word: one word of ``mnemonic``'s Russian list is
#: stored with two of them ("сно\ufffd\ufffdа"), and a phrase holding it must still be found.
_WORD_RE = re.compile(rf"[^\W\d_](?:[^\W\d_]|[{_MARKS}\ufffd])*")


def fold(text: str) -> str:
    """Case-folded, accents dropped (NFKD without combining marks): ``Élève`` → ``eleve``."""
    if text.isascii():
        return text.lower()
    # Turkish dotless ı: "KAPI" written in capitals folds to "kapi", so both sides use i
    return _MARKS_RE.sub("", unicodedata.normalize("NFKD", text)).casefold().replace("ı", "i")


@lru_cache(maxsize=1)
def bip39_wordlists() -> dict[str, frozenset[str]]:
    """Every BIP-39 wordlist the ``mnemonic`` package ships, folded (:func:`fold`).

    Returns:
        ``{language: 2,048 folded words}`` for English, French, Spanish, Italian,
        Portuguese, Czech, Russian, Turkish, Japanese, Korean and Chinese.
    """
    from mnemonic import Mnemonic

    # one fold per list (not per word): the lists load in a few milliseconds
    return {lang: frozenset(fold("\n".join(Mnemonic(lang).wordlist)).split("\n"))
            for lang in Mnemonic.list_languages()}


@lru_cache(maxsize=1)
def other_wordlists() -> dict[str, frozenset[str]]:
    """The seed word lists of wallets that do not use BIP-39, kept in ``data/wordlists``.

    Returns:
        ``{"monero": 1,626 words, "slip39": 1,024 words}`` (English; folded).
    """
    from importlib import resources

    folder = resources.files("gpusession") / "data" / "wordlists"
    return {name: frozenset((folder / f"{name}-english.txt").read_text(encoding="utf-8").split())
            for name in ("monero", "slip39")}


def seed_wordlists() -> dict[str, frozenset[str]]:
    """:func:`bip39_wordlists` and :func:`other_wordlists` together, by list name."""
    return {**bip39_wordlists(), **other_wordlists()}


@lru_cache(maxsize=1)
def prefixes() -> dict[str, frozenset[str]]:
    """``{list: the first four letters of each word longer than four}`` (folded).

    BIP-39 and SLIP-39 words are unique by their first four letters, and wallets accept
    them so; Monero's are unique by three, too short to tell from ordinary words.
    """
    return {lang: frozenset(w[:4] for w in words if len(w) > 4)
            for lang, words in seed_wordlists().items() if lang != "monero"}


def joined_words(token: str, words: frozenset[str]) -> int:
    """How many list words ``token`` is made of, written without spaces; 0 if it is not.

    Dynamic programming over the token's positions (words are 3 to 12 letters):
    ``best[i]`` is the most words that make up ``token[:i]`` exactly.
    """
    n = len(token)
    best = [-1] * (n + 1)
    best[0] = 0
    for i in range(1, n + 1):
        for size in range(3, min(12, i) + 1):
            before = best[i - size]
            if before >= 0 and token[i - size:i] in words:
                best[i] = max(best[i], before + 1)
    return max(best[n], 0)


#: Lengths of the folded words of every seed list: ASCII words (the a-z lists) and the
#: others (Japanese, Russian, Korean, Chinese). A test checks them against the lists.
SEED_ASCII_LENGTHS = (3, 12)
SEED_OTHER_MAX_LENGTH = 11
#: Common English words in none of the seed lists (a test checks it): prose has one of
#: them every few words, a seed phrase never. ``gpusession`` too: the product's own hints
#: and evidence name a command every few words (the TUI's checklist then loads no list).
NOT_SEED_WORDS = frozenset(
    "the and for are was not but your its has had our out his her their which "
    "who how these those been did would could while through yet gpusession".split()
)
#: A run of lowercase letters this long may be a seed phrase written without spaces.
JOINED_MIN_CHARS = 3 * MNEMONIC_MIN_WORDS
#: Lists whose words are written in a-z once folded (segmented when joined).
_LATIN = frozenset({"english", "spanish", "french", "italian", "portuguese", "czech", "turkish",
                    "monero", "slip39"})


def may_hold_phrase(tokens: list[str]) -> bool:
    """Whether ``tokens`` may hold a seed phrase: a check without the lists (~13 ms to load).

    True when :data:`MNEMONIC_MIN_WORDS` folded tokens in a row could each be a list word
    or its four-letter prefix (of a length some word has, not a common English word of no
    list), or when one token is long enough to be words written together.
    """
    low, high = SEED_ASCII_LENGTHS
    run = 0
    for tok in tokens:
        if len(tok) >= JOINED_MIN_CHARS:
            return True
        if tok.isascii():
            fits = low <= len(tok) <= high and tok not in NOT_SEED_WORDS
        else:
            fits = len(tok) <= SEED_OTHER_MAX_LENGTH
        run = run + 1 if fits else 0
        if run >= MNEMONIC_MIN_WORDS:
            return True
    return False


def seed_findings(text: str) -> list[Finding]:
    """Every run of :data:`MNEMONIC_MIN_WORDS` or more words of one seed list in ``text``.

    The whole text is searched, so a phrase written one word per line, numbered, in
    capitals, without accents, by four-letter prefixes or without spaces is one run;
    a run counts the words of a single list (a real phrase uses one).

    Raises:
        ImportError: the ``mnemonic`` package is missing (a broken install).
    """
    spans = [(m.start(), m.end()) for m in _WORD_RE.finditer(text)]
    if len(spans) < MNEMONIC_MIN_WORDS and not any(e - s >= JOINED_MIN_CHARS for s, e in spans):
        return []  # too few words for a phrase (the lists are not even loaded)
    tokens = [fold(text[s:e]) for s, e in spans]
    if not may_hold_phrase(tokens):
        return []
    found: list[Finding] = []
    pre = prefixes()
    for lang, words in seed_wordlists().items():
        run, first = 0, 0
        for i, tok in enumerate(tokens + [""]):  # a last empty token closes the last run
            if tok and (tok in words or (len(tok) == 4 and tok in pre.get(lang, ()))):
                count = 1
            elif len(tok) >= JOINED_MIN_CHARS and lang in _LATIN and tok.isascii():
                count = joined_words(tok, words)
            else:
                count = 0
            if count:
                first = i if run == 0 else first
                run += count
                continue
            # one word said over and over (``batch batch batch``) is not a phrase
            if run >= MNEMONIC_MIN_WORDS and (run > i - first or len(set(tokens[first:i])) > 1):
                found.append(Finding(
                    spans[first][0], spans[i - 1][1], "seed phrase",
                    f"it contains {run} consecutive words from a {_list_words(lang)}, which "
                    "looks like a wallet seed phrase (mnemonic); a seed phrase gives full "
                    "control of the wallet and must never be written in a session file"))
            run = 0
    return found


def _list_words(lang: str) -> str:
    return {"monero": "Monero seed wordlist", "slip39": "SLIP-39 wordlist"}.get(lang, "BIP-39 wordlist")


def longest_run(findings: list[Finding]) -> int:
    """The most words in one seed-phrase finding (0 when there is none)."""
    best = 0
    for f in findings:
        if f.kind == "seed phrase":
            best = max(best, int(f.reason.split()[2]))
    return best
