"""Error types shared by the core and the CLI.

The CLI maps :class:`BadInput` to exit code 2 and :class:`Failure` to exit code 1, and
prints the message on one line without a traceback ("Bad input gets a clear error").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


class GpusessionError(Exception):
    """Base class of every error gpusession reports to a person."""

    exit_code = 1


class BadInput(GpusessionError):
    """Input a person gave (a file, a field, an argument) is not usable. Exit code 2.

    Args:
        message: what was expected, in words.
        path: the file concerned, if any.
        line: the 1-based line in that file, if known.
        field: the field or key concerned, if any.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        """Keep the parts; ``str(error)`` is :meth:`render`."""
        self.message = message
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(self.render())

    def render(self) -> str:
        """One line: ``file:line: field: message`` with the parts that are known."""
        where = ""
        if self.path is not None:  # a path a person typed may hold a token: masked as a field (H-46)
            where = shown_field(str(self.path))
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        if self.field:
            where += f"{shown_field(self.field)}: "
        return where + self.message


#: How a field's name is shown (:func:`register_field_words`); set by
#: :mod:`gpusession.core.files.textio` when it loads (this module imports nothing of
#: core, so it cannot import the masking itself).
_field_words: Callable[[str], str] | None = None


def register_field_words(words: Callable[[str], str]) -> None:
    """Set how :func:`shown_field` shows a field (``textio.printable``: secrets masked, controls escaped)."""
    global _field_words
    _field_words = words


def shown_field(field: str) -> str:
    r"""A field's name as a refusal may print it: a key that looks like a secret masked (H-46).

    A refusal names the field, never the value -- and a field's path holds keys a person
    typed (``--param 'ghp_…=1'`` makes the field ``params.ghp_…``), so the path itself
    goes through the registered display (:func:`gpusession.core.files.textio.printable`:
    secrets replaced by ``[HIDDEN: <kind>]``, control characters escaped); before that
    is loaded, control characters are escaped alone.
    """
    if _field_words is not None:
        return _field_words(field)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in field)


class Failure(GpusessionError):
    """Something failed that is not the person's input (a worker died, disk full). Exit 1."""

    exit_code = 1
