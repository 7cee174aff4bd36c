"""Error types shared by the core and the CLI.

The CLI maps :class:`BadInput` to exit code 2 and :class:`Failure` to exit code 1, and
prints the message on one line without a traceback ("Bad input gets a clear error").
"""

from __future__ import annotations

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
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        if self.field:
            where += f"{self.field}: "
        return where + self.message


class Failure(GpusessionError):
    """Something failed that is not the person's input (a worker died, disk full). Exit 1."""

    exit_code = 1
