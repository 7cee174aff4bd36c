r"""Arguments and ``GPUSESSION_*`` variables that are not UTF-8, refused first (H-40).

On POSIX, Python decodes ``argv`` and the environment with ``surrogateescape``: a byte
that is not UTF-8 (``$'\xff bad'``) becomes a lone surrogate (U+DCFF) that reads as a
``str`` everywhere -- until it reaches a writer (the TOML writer, the journal, a CSV)
and ends in ``UnicodeEncodeError``, after part of the work was done. So every argument
and every ``GPUSESSION_*`` variable is checked before anything is parsed or read: one
that cannot be encoded as UTF-8 (a lone surrogate, escaped or typed) is refused in one
line naming the option (or the variable), its value shown escaped (``\xff``) with any
secret masked, exit 2, nothing read or written.

Cheap on purpose: ``gpusession status`` runs this every few seconds; nothing is imported
unless an argument is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

#: The prefix of the environment variables gpusession reads.
ENV_PREFIX = "GPUSESSION_"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(text: str, limit: int = 60) -> str:
    r"""``text`` as it may be shown: bytes that are not UTF-8 as ``\xff``, other surrogates as ``\udc80``.

    Secrets are masked and control characters escaped
    (:func:`gpusession.core.files.textio.printable`); past ``limit`` characters, cut
    with ``…``.
    """
    from gpusession.core.files.textio import printable

    raw = text.encode("utf-8", "surrogateescape") if _escapable(text) else None
    shown = raw.decode("utf-8", "backslashreplace") if raw is not None else text.encode(
        "utf-8", "backslashreplace").decode("ascii")
    shown = printable(shown, keep="")
    return shown if len(shown) <= limit else shown[:limit] + "…"


def _escapable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _option_of(argv: Sequence[str], i: int) -> str:
    """The option argument ``i`` belongs to (``--param``), or ``argument N`` for a positional one."""
    word = argv[i]
    if word.startswith("--") and "=" in word:
        name = word.split("=", 1)[0]
        return name if _utf8(name) else f"argument {i + 1}"
    if word.startswith("-") and len(word) > 1:
        return f"argument {i + 1} (an option's name)"
    if i > 0 and argv[i - 1].startswith("-") and len(argv[i - 1]) > 1 and _utf8(argv[i - 1]):
        return f"the value of {argv[i - 1].split('=', 1)[0]}"
    if i > 0:  # a positional word: said by its place and the word before it
        return f"argument {i + 1} (after '{escaped(argv[i - 1], 30)}')"
    return f"argument {i + 1}"


def refusal(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> str | None:
    r"""The one line refusing an argument or a ``GPUSESSION_*`` variable that is not UTF-8, else ``None``.

    Args:
        argv: the arguments after the program name.
        environ: the environment (default :data:`os.environ`).

    Returns:
        ``gpusession: error: the value of --param: not valid UTF-8 ('u=\xff'); …``, or
        ``None`` when every argument and variable is UTF-8.
    """
    for i, word in enumerate(argv):
        if not _utf8(word):
            return (f"gpusession: error: {_option_of(argv, i)}: not valid UTF-8 "
                    f"('{escaped(word)}'); give it as UTF-8 text (nothing was read or written)")
    env = os.environ if environ is None else environ
    for key, value in env.items():
        if key.startswith(ENV_PREFIX) and not (_utf8(key) and _utf8(value)):
            name = key if _utf8(key) else escaped(key)
            return (f"gpusession: error: environment variable {name}: not valid UTF-8 "
                    f"('{escaped(value)}'); set it as UTF-8 text or unset it "
                    "(nothing was read or written)")
    return None


__all__ = ["ENV_PREFIX", "escaped", "refusal"]
