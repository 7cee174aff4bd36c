"""What a command workload may report it ran on: ``device``, ``python_version``, ``torch_version`` (R10).

Why it exists: gpusession runs a command as a whole process and cannot see its
interpreter or the device it chose, so those cells stay empty (the row states only what
was applied or reported, seed §2, §4). A command that knows them may say so: for every
call gpusession sets :data:`REPORT_ENV` (``$GPUSESSION_REPORT``) to a file path in the
worker's private folder (mode 0700, removed before each call), and the command may write
there one JSON object on one line::

    {"device": "cuda:0", "python_version": "3.11.9", "torch_version": "2.5.1+cu121"}

After the call -- outside the timed region -- the worker reads it (:func:`read_report`):
at most :data:`REPORT_MAX_BYTES`, a plain file only (never through a link), UTF-8, one
object; each value a string of at most :data:`VALUE_MAX_CHARS` characters in its key's
form (:data:`FORMS`) that holds no secret
(:func:`gpusession.core.files.secrets.kind_of_secret`). What passes goes into the run's row;
what does not is named in its notes (:meth:`CommandReport.words`), never the value itself.
No file, or an empty one, is no report: the cells stay empty and nothing is said.

Who calls it: the command worker (:mod:`gpusession.bench.worker`) after each call; the
row builder (:mod:`gpusession.bench.row_record`) puts the values in the row. No torch.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import TOO_DEEP, loads_json
from gpusession.core.files.secrets import find_secret, kind_of_secret

#: The variable naming the file a command may write its report to.
REPORT_ENV = "GPUSESSION_REPORT"
#: The report file's name in the worker's private folder.
REPORT_NAME = "report.json"
#: The keys a report may hold, in the order they are said.
REPORT_KEYS = ("device", "python_version", "torch_version")
#: A report larger than this (bytes) is not read.
REPORT_MAX_BYTES = 4096
#: A value longer than this (characters) is refused.
VALUE_MAX_CHARS = 64
#: Unknown keys named in the notes, at most (the rest are counted).
UNKNOWN_NAMED_MAX = 5

_DEVICE_ONE = r"[a-z][a-z0-9_]{0,15}(?::[0-9]{1,4})?"
_VERSION = r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,3}[A-Za-z0-9.]{0,24}(?:\+[A-Za-z0-9.]{1,32})?"
#: Each key's form: ``cuda:0`` (or ``cuda:0,cuda:1``); ``3.11.9``; ``2.5.1+cu121``.
FORMS = {
    "device": re.compile(rf"{_DEVICE_ONE}(?:,{_DEVICE_ONE})*"),
    "python_version": re.compile(_VERSION),
    "torch_version": re.compile(_VERSION),
}
#: Each key's form in words, for a refusal.
FORM_WORDS = {"device": "a device such as cuda:0 or cpu",
              "python_version": "a version such as 3.11.9",
              "torch_version": "a version such as 2.5.1+cu121"}
_KEY_SHOWN = re.compile(r"[A-Za-z0-9_]{1,32}")


@dataclass(frozen=True)
class CommandReport:
    """What one call's report gave.

    Attributes:
        values: the accepted values by key (a subset of :data:`REPORT_KEYS`), ``{}`` when
            none.
        problems: what was refused or ignored, in words, without the refused values.
    """

    values: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def words(self) -> str | None:
        """``"the command's report: torch_version refused (…)"`` for the notes, ``None`` when all was taken."""
        if not self.problems:
            return None
        return "the command's report ($GPUSESSION_REPORT): " + ", ".join(self.problems)


def parse_report(raw: bytes) -> CommandReport:
    """The report in ``raw`` (the file's bytes), checked (see the module).

    Args:
        raw: at most :data:`REPORT_MAX_BYTES` bytes; longer is refused whole.

    Returns:
        The accepted values and what was refused; an empty or blank ``raw`` is no report
        (no values, no problem).
    """
    if len(raw) > REPORT_MAX_BYTES:
        return CommandReport(problems=(f"over {REPORT_MAX_BYTES:,} bytes, not read",))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return CommandReport(problems=("not UTF-8, not read",))
    if not text.strip():
        return CommandReport()
    try:
        doc = loads_json(text, None)
    except ValueError:
        return CommandReport(problems=("not one JSON object on one line, not read",))
    except BadInput:  # nested past the bound (H-39): refused as any bad report, the run measured
        return CommandReport(problems=(f"{TOO_DEEP}, not read",))
    if not isinstance(doc, dict):
        return CommandReport(problems=("not a JSON object, not read",))
    values: dict[str, str] = {}
    problems: list[str] = []
    for key in REPORT_KEYS:
        value = doc.get(key)
        if value is None:
            continue
        why = _refusal(key, value)
        if why is None:
            values[key] = str(value)
        else:
            problems.append(f"{key} refused ({why})")
    unknown = [k for k in doc if k not in REPORT_KEYS]
    if unknown:
        named = [k for k in unknown if _KEY_SHOWN.fullmatch(k) and find_secret(k) is None][:UNKNOWN_NAMED_MAX]
        rest = len(unknown) - len(named)
        problems.append("unknown keys ignored: " + " ".join(named)
                        + (f"{' and ' if named else ''}{rest} more" if rest else ""))
    return CommandReport(values, tuple(problems))


def _refusal(key: str, value: object) -> str | None:
    """Why ``value`` is not taken for ``key`` (words without the value), ``None`` when it is."""
    if not isinstance(value, str):
        return f"expected text, got {type(value).__name__}"
    if len(value) > VALUE_MAX_CHARS:
        return f"over {VALUE_MAX_CHARS} characters"
    kind = kind_of_secret(value)
    if kind is not None:
        return f"it looks like a {kind}, never written"
    if not FORMS[key].fullmatch(value):
        return f"expected {FORM_WORDS[key]}"
    return None


def read_report(path: Path) -> CommandReport:
    """Read and check the report a call left at ``path``, without following a link.

    Args:
        path: the file :data:`REPORT_ENV` named for the call.

    Returns:
        :func:`parse_report` of its bytes; no file is no report; a link, a folder or
        another non-regular file, or one that cannot be read, is refused in words.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return CommandReport()
    except OSError as exc:
        why = "a link" if exc.errno == errno.ELOOP else exc.strerror or type(exc).__name__
        return CommandReport(problems=(f"not read ({why})",))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return CommandReport(problems=("not a plain file, not read",))
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            raw = fh.read(REPORT_MAX_BYTES + 1)
    except OSError as exc:
        return CommandReport(problems=(f"not read ({exc.strerror or type(exc).__name__})",))
    finally:
        if fd >= 0:
            os.close(fd)
    return parse_report(raw)


def remove_report(path: Path) -> None:
    """Remove the report file of an earlier call (a missing one is fine).

    Raises:
        OSError: it exists and cannot be removed (a folder in its place).
    """
    try:
        path.unlink()
    except FileNotFoundError:
        pass


__all__ = ["FORMS", "REPORT_ENV", "REPORT_KEYS", "REPORT_MAX_BYTES", "REPORT_NAME", "VALUE_MAX_CHARS",
           "CommandReport", "parse_report", "read_report", "remove_report"]
