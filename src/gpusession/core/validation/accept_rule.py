"""Accepted by a rule, for any output: expected names, a format, the user's program (S9; V1–V3).

A classification corpus is accepted by its IDs and macro-F1. Other work -- a folder of
eighteen images -- is accepted by the rules of this module, declared before the first
measurement (V5) in the experiment's protocol::

    [experiments.render.protocol]
    kind = "accept-rule"
    accept = ["python3", "check.py", "{output}"]
    expected_outputs = "expected.txt"      # one name per line
    deliverable_format = "png"
    accept_timeout_s = 60

The checks, in order, each reported separately (V1):

1. **names** (V1–V3 on file names): the output folder holds exactly the expected names:
   none missing, none extra, none twice -- two names equal under Unicode normalization
   (NFC) are one name twice (H-16);
2. **format**: every file's magic bytes (png, jpeg, pdf) or parse (svg, json, text);
3. **the rule**: the user's program judges the output: exit 0 accepted, 1 rejected,
   anything else (or a timeout) could not be judged; its first stdout line is the reason
   (secret-masked, escaped, at most 200 characters). It runs only when 1 and 2 passed.

The two kinds never mix in one experiment: an accept rule excludes classes and a metric.
Who calls it: ``experiment define`` (:func:`accept_protocol`), the runner through
:mod:`gpusession.bench.accept_run`, :mod:`gpusession.core.money.count`.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import TOO_DEEP, loads_json
from gpusession.core.files.secrets import mask_text, shown
from gpusession.core.files.textio import decode_strict, printable, read_bytes

KIND = "accept-rule"
FORMATS = ("png", "jpeg", "pdf", "svg", "json", "text")
#: Default seconds the rule may take before it counts as "could not be judged".
DEFAULT_TIMEOUT_S = 60.0
#: The reason kept from the rule's first stdout line, in characters.
REASON_MAX_CHARS = 200
#: The longest expected-outputs list read (names).
NAMES_MAX = 100_000
_MAGIC = {"png": (b"\x89PNG\r\n\x1a\n",), "jpeg": (b"\xff\xd8\xff",), "pdf": (b"%PDF-",)}
#: What the rule's exit status means.
ACCEPTED, REJECTED, UNJUDGED = "accepted", "rejected", "could not be judged"
#: The report file beside the others under validation/ (V8).
REPORT_SUFFIX = ".accept.json"


@dataclass(frozen=True)
class AcceptRule:
    """The accept protocol of one experiment (S9), fixed before it runs (V5).

    Attributes:
        argv: the rule's program and arguments (``{output}``, ``{corpus}`` filled as
            plain paths); empty: no program, names and format only.
        expected_outputs: the file listing the expected names, as stored.
        deliverable_format: one of :data:`FORMATS`, or ``None``.
        timeout_s: seconds before the rule counts as not judged.
    """

    argv: tuple[str, ...] = ()
    expected_outputs: str | None = None
    deliverable_format: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def command_words(self) -> str:
        """The rule's program as typed: placeholders as ``{output}``, a spaced argument quoted."""
        import shlex

        return " ".join(a if a.startswith("{") and a.endswith("}") else shlex.quote(a) for a in self.argv)

    def check_words(self) -> list[str]:
        """The checks before the program, in words: the expected names, the format."""
        words = []
        if self.expected_outputs:
            words.append(f"the names listed in {self.expected_outputs}")
        if self.deliverable_format:
            words.append(f"the {self.deliverable_format} format of every file")
        return words

    def to_toml(self) -> dict[str, Any]:
        """The ``protocol`` table."""
        return {"kind": KIND, "accept": list(self.argv), "expected_outputs": self.expected_outputs,
                "deliverable_format": self.deliverable_format, "accept_timeout_s": self.timeout_s}


def rule_of(protocol: Mapping[str, Any] | None) -> AcceptRule | None:
    """The accept rule a protocol table holds, ``None`` for a classification protocol.

    Raises:
        BadInput: an accept protocol whose values are not of their kind.
    """
    if not protocol or protocol.get("kind") != KIND:
        return None
    argv = protocol.get("accept") or []
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise BadInput("expected the rule's program and arguments as a list of text", field="protocol.accept")
    fmt = protocol.get("deliverable_format")
    if fmt is not None and fmt not in FORMATS:
        raise BadInput(f"expected one of {', '.join(FORMATS)}, got {shown(fmt)}",
                       field="protocol.deliverable_format")
    names = protocol.get("expected_outputs")
    if names is not None and not isinstance(names, str):
        raise BadInput("expected a file path", field="protocol.expected_outputs")
    timeout = protocol.get("accept_timeout_s", DEFAULT_TIMEOUT_S)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 86_400:
        raise BadInput("expected seconds between 0 and 86400", field="protocol.accept_timeout_s")
    return AcceptRule(tuple(argv), names, fmt, float(timeout))


def output_suffix(protocol: Mapping[str, Any] | None) -> str:
    """The suffix of each run's ``{output}`` path: ``""`` for a folder of named files, else ``.jsonl``.

    An experiment with ``--expected-outputs`` writes a folder of deliverables (S9), so its
    outputs are named ``warm-1``, not ``warm-1.jsonl``: the folder is handed over as is.
    An unreadable protocol keeps ``.jsonl`` (``run`` refuses it earlier, naming the field).
    """
    try:
        rule = rule_of(protocol)
    except BadInput:
        return ".jsonl"
    return "" if rule is not None and rule.expected_outputs else ".jsonl"


def accept_protocol(*, accept: str | None, expected_outputs: str | None, deliverable_format: str | None,
                    timeout_s: float | None = None, classification: Mapping[str, Any] | None = None,
                    check_argv: Callable[..., None] | None = None) -> dict[str, Any]:
    """The ``protocol`` table of ``define --accept / --expected-outputs / --deliverable-format``.

    Args:
        accept: the rule's command line, split like a shell.
        expected_outputs: the expected names file, as given.
        deliverable_format: one of :data:`FORMATS`.
        timeout_s: the rule's timeout (default :data:`DEFAULT_TIMEOUT_S`).
        classification: the classification protocol also given (refused with any of these).
        check_argv: refuses placeholders a program would run as code (the command's
            check, :func:`gpusession.core.experiment.placeholders.check_command`), called
            as ``check_argv(argv, field="accept")``.

    Raises:
        BadInput: classes or a metric given too (the two kinds never mix), a command that
            does not split or whose placeholders could run as code, an unknown format.
    """
    import shlex

    if classification:
        raise BadInput("--accept, --expected-outputs and --deliverable-format judge any output; "
                       "--classes, --metric and --threshold judge a classification corpus: give one "
                       "kind per experiment, never both", field="accept")
    argv: list[str] = []
    if accept is not None:
        try:
            argv = shlex.split(accept)
        except ValueError as exc:
            raise BadInput(f"{exc} in {shown(accept)}; quote like a shell", field="accept") from None
        if check_argv is not None:
            check_argv(argv, field="accept")
    if deliverable_format is not None and deliverable_format not in FORMATS:
        raise BadInput(f"expected one of {', '.join(FORMATS)}, got {shown(deliverable_format)}",
                       field="deliverable-format")
    rule = AcceptRule(tuple(argv), expected_outputs, deliverable_format,
                      DEFAULT_TIMEOUT_S if timeout_s is None else float(timeout_s))
    return rule.to_toml()


# -- names (V1–V3 on file names) ----------------------------------------------------------
def read_expected_names(path: Path) -> list[str]:
    """The expected names, one per line (V2, V3): NFC, no duplicate, no empty line inside.

    Empty lines at the very end are ignored (H-20); a name with ``..``, an absolute path
    or a backslash is refused.

    Raises:
        BadInput: unreadable, not UTF-8, an empty line inside, a bad name, or a name
            twice (also two Unicode forms of one name), naming the file and line.
    """
    data = read_bytes(Path(path))
    text = decode_strict(data, path=path, crlf=True).text
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) > NAMES_MAX:
        raise BadInput(f"more than {NAMES_MAX:,} names", path=path)
    seen: dict[str, int] = {}
    out: list[str] = []
    for i, raw in enumerate(lines, start=1):
        name = raw.strip()
        if not name:
            raise BadInput("empty line: one expected file name per line", path=path, line=i)
        p = PurePosixPath(name)
        if p.is_absolute() or ".." in p.parts or "\\" in name or any(unicodedata.category(c)[0] == "C" for c in name):
            raise BadInput(f"expected a file name inside the output folder, got {shown(name)}", path=path, line=i)
        key = unicodedata.normalize("NFC", name)
        if key in seen:
            how = " (the same name in another Unicode form)" if key != name or lines[seen[key] - 1].strip() != name else ""
            raise BadInput(f"{shown(name)} is already expected on line {seen[key]}{how}; each name once",
                           path=path, line=i)
        seen[key] = i
        out.append(key)
    if not out:
        raise BadInput("no expected file name", path=path)
    return out


@dataclass(frozen=True)
class NamesCheck:
    """The output folder's names against the expected ones (V1–V3).

    Attributes:
        expected: expected names (NFC), in file order.
        observed: names found (relative POSIX, as on disk).
        missing: expected and not found.
        extra: found and not expected.
        duplicates: names found twice under Unicode normalization, with the forms.
    """

    expected: tuple[str, ...]
    observed: tuple[str, ...]
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Exactly the expected names, each once."""
        return not (self.missing or self.extra or self.duplicates)

    def words(self) -> str:
        """``18 names as expected`` / ``2 missing (visual-17.png, visual-18.png), 1 extra (…)``."""
        if self.ok:
            return f"{len(self.expected)} names as expected"
        parts = []
        for what, names in (("missing", self.missing), ("extra", self.extra),
                            ("twice under Unicode normalization", self.duplicates)):
            if names:
                quoted = ", ".join(repr(n) for n in names[:5]) + (", …" if len(names) > 5 else "")
                parts.append(f"{len(names)} {what} ({quoted})")
        return ", ".join(parts)


def output_files(output: Path) -> list[str]:
    """The relative names of the regular files of an output (a folder, or one file).

    A link is listed (so it can be refused as extra), never followed.
    """
    output = Path(output)
    if not output.is_dir() or output.is_symlink():
        return [output.name]
    found: list[str] = []
    for root, dirs, names in os.walk(output):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        for n in sorted(names):
            found.append(PurePosixPath(*(Path(root) / n).relative_to(output).parts).as_posix())
    return found


def check_names(output: Path, expected: Sequence[str]) -> NamesCheck:
    """Compare the output's file names with the expected ones as sets, by NFC (V2, V3, H-16)."""
    observed = output_files(output)
    by_key: dict[str, list[str]] = {}
    for n in observed:
        by_key.setdefault(unicodedata.normalize("NFC", n), []).append(n)
    dups = tuple(" / ".join(repr(f) for f in forms) for forms in by_key.values() if len(forms) > 1)
    want = set(expected)
    return NamesCheck(tuple(expected), tuple(observed),
                      tuple(n for n in expected if n not in by_key),
                      tuple(k for k in by_key if k not in want), dups)


# -- format -------------------------------------------------------------------------------
def format_problem(path: Path, fmt: str) -> str | None:
    """Why ``path`` is not a ``fmt`` file (magic bytes or a parse), ``None`` when it is.

    A link or anything but a regular file is a problem, never followed.
    """
    if os.path.islink(path) or not Path(path).is_file():
        return "not a regular file"
    if fmt in _MAGIC:
        with open(path, "rb") as fh:
            head = fh.read(16)
        return None if head.startswith(_MAGIC[fmt]) else f"does not start like a {fmt.upper()} file"
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte {exc.start})"
    if fmt == "text":
        return None
    if fmt == "json":
        try:
            loads_json(text, path)
        except ValueError as exc:
            return f"not JSON ({exc})"
        except BadInput:  # nested past the bound (H-39): never a RecursionError
            return TOO_DEEP
        return None
    import xml.etree.ElementTree as ET  # noqa: N817

    if "<!ENTITY" in text:
        return "declares XML entities (refused: an SVG needs none)"
    try:
        root = ET.fromstring(text)  # noqa: S314 - entity declarations refused above
    except ET.ParseError as exc:
        return f"not XML ({exc})"
    return None if root.tag.rsplit("}", 1)[-1] == "svg" else f"the root element is {root.tag}, not svg"


def check_format(output: Path, names: Sequence[str], fmt: str) -> list[str]:
    """One problem per bad file (``visual-03.png: does not start like a PNG file``)."""
    base = Path(output)
    out = []
    for n in names:
        path = base / n if base.is_dir() else base
        problem = format_problem(path, fmt)
        if problem:
            out.append(f"{n}: {problem}")
    return out


# -- the reason line ------------------------------------------------------------------------
def reason_line(stdout: bytes) -> str:
    """The rule's first stdout line: decoded, secrets masked, escaped, at most 200 characters."""
    first = stdout.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    masked, _ = mask_text(first)
    text = printable(masked, keep="")
    return text if len(text) <= REASON_MAX_CHARS else text[:REASON_MAX_CHARS - 1] + "…"


# -- the report (V8) and the count (S10) -------------------------------------------------
@dataclass
class AcceptReport:
    """What the accept checks found for one output (V1; the fields D3's stop reads).

    The attribute names are the validation report's, so the first-result stop (D3) and
    the row (seed 000 §4) read both kinds alike.
    """

    output_path: str
    names: NamesCheck | None
    format_problems: list[str] = field(default_factory=list)
    format_checked: bool = False
    verdict: str | None = None  # ACCEPTED / REJECTED / UNJUDGED, None: the rule did not run
    reason: str | None = None
    exit_code: int | None = None
    files: dict[str, str] = field(default_factory=dict)  # name → SHA-256
    #: names of the output that are no regular file inside it (a FIFO, a device, a link
    #: out of the folder): named, never hashed nor counted (H-52)
    not_counted: list[str] = field(default_factory=list)

    @property
    def ids_match(self) -> bool:
        """The names check passed (or none was declared)."""
        return self.names is None or self.names.ok

    @property
    def format_valid(self) -> bool:
        """Every file is of the declared format (or none was declared)."""
        return not self.format_problems

    @property
    def quality_met(self) -> bool:
        """The rule accepted the output; ``True`` when no rule is declared and the rest passed."""
        return self.verdict in (ACCEPTED, None) and self.ids_match and self.format_valid

    @property
    def corpus_accepted(self) -> bool | None:
        """Accepted when names, format and rule passed; ``None`` when the rule could not judge."""
        if not (self.ids_match and self.format_valid):
            return False
        if self.verdict == UNJUDGED:
            return None
        return self.verdict in (ACCEPTED, None)

    # the validation report's counters, read by the first-result stop (D3)
    @property
    def missing_count(self) -> int:
        """Expected names not found."""
        return len(self.names.missing) if self.names else 0

    @property
    def extra_count(self) -> int:
        """Names found and not expected."""
        return len(self.names.extra) if self.names else 0

    @property
    def duplicate_output_count(self) -> int:
        """Names found twice under Unicode normalization."""
        return len(self.names.duplicates) if self.names else 0

    @property
    def bad_record_count(self) -> int:
        """Files not of the declared format."""
        return len(self.format_problems)

    def defect_words(self) -> str | None:
        """The major defect in words for the first-result stop (D3), ``None`` when none."""
        out = []
        if not self.ids_match and self.names is not None:
            out.append(f"output names: {self.names.words()}")
        if not self.format_valid:
            out.append(f"invalid format ({len(self.format_problems)} files: {self.format_problems[0]})")
        if self.verdict == REJECTED:
            out.append(f"rejected by the accept rule: {self.reason or 'no reason printed'}")
        return ", ".join(out) or None

    def row_fields(self) -> dict[str, Any]:
        """The row's seed columns: names as IDs, format, ``accept-rule``, the verdict (seed 000 §4)."""
        n = self.names
        return {
            "expected_ids": len(n.expected) if n is not None else None,
            "observed_ids": len(n.observed) if n is not None else None,
            "ids_match": self.ids_match if n is not None else None,
            "format_valid": self.format_valid if self.format_checked else None,
            "quality_metric": KIND,
            "corpus_accepted": self.corpus_accepted,
        }

    def note(self) -> str | None:
        """The row's note: the failed checks and the rule's reason (escaped, ≤ 200 characters)."""
        out = []
        if not self.ids_match and n_words(self.names):
            out.append(f"output names: {n_words(self.names)}")
        if not self.format_valid:
            out.append(f"format: {'; '.join(self.format_problems[:3])}")
        if self.verdict is not None:
            out.append(f"accept rule: {self.verdict}" + (f" ({self.reason})" if self.reason else ""))
        if self.not_counted:
            shown = ", ".join(printable(n, keep="") for n in self.not_counted[:5])
            more = f" and {len(self.not_counted) - 5} more" if len(self.not_counted) > 5 else ""
            out.append(f"not counted (no regular file inside the output): {shown}{more}")
        elif not (self.ids_match and self.format_valid):
            out.append("accept rule not run (names or format failed first)")
        return "; ".join(out) or None

    def to_json(self) -> dict[str, Any]:
        """The archived report (V8)."""
        n = self.names
        return {"schema": 1, "kind": KIND, "output": self.output_path, "accepted": self.corpus_accepted,
                "names": None if n is None else {"expected": len(n.expected), "observed": len(n.observed),
                                                  "missing": list(n.missing), "extra": list(n.extra),
                                                  "duplicates": list(n.duplicates)},
                "format_problems": self.format_problems, "verdict": self.verdict, "reason": self.reason,
                "exit_code": self.exit_code, "files": self.files, "not_counted": self.not_counted}


def n_words(names: NamesCheck | None) -> str | None:
    """The names check in words, ``None`` without one."""
    return names.words() if names is not None else None


class RuleSession(Protocol):
    """What the count asks of a session here: its folder's data and validation folder.

    A protocol, not :class:`gpusession.core.folder.session.Session`: validation stands
    below the folder and must not import it.
    """

    @property
    def data(self) -> dict[str, Any]: ...

    @property
    def validation_dir(self) -> Path: ...


def has_accept_rule(session: RuleSession) -> bool:
    """Whether an experiment of the session is accepted by a rule (S10's second source)."""
    table = session.data.get("experiments") or {}
    return any(isinstance(v, Mapping) and isinstance(v.get("protocol"), Mapping)
               and v["protocol"].get("kind") == KIND for v in table.values())


def report_run(base: Path, path: Path) -> tuple[str, str, str, int] | None:
    """``(experiment, variant, phase, run index)`` a report's path names, ``None`` for another shape.

    The runner archives one report per run at ``<experiment>/<variant>/<phase>-<index>.accept.json``.
    """
    try:
        exp, variant, name = path.relative_to(base).parts
        phase, _, index = name[: -len(REPORT_SUFFIX)].rpartition("-")
        return exp, variant, phase, int(index)
    except ValueError:
        return None


def accepted_output_digests(session: RuleSession, accepted_runs: Collection[tuple[str, str, str, int]]
                            ) -> tuple[set[str], int, list[str]]:
    """Distinct SHA-256 of the files of every accepted output, how many were judged, and the strays (S10, H-57).

    Read from the archived reports (``validation/<experiment>/<variant>/*.accept.json``).
    A report counts only when a row of ``resultats-bruts.csv`` holds its run, accepted by
    the rule (``accepted_runs``: ``(experiment, variant, phase, run index)``): a report made
    by hand, or left by a run whose row is gone, is a stray, named and never counted.

    Args:
        session: the session (its validation folder).
        accepted_runs: the runs the results rows say the rule accepted.

    Returns:
        ``(digests, judged, strays)``; ``strays`` are the reports' paths relative to the
        validation folder.
    """
    digests: set[str] = set()
    judged = 0
    strays: list[str] = []
    base = Path(session.validation_dir)
    if not base.is_dir():
        return digests, 0, strays
    for path in sorted(base.rglob(f"*{REPORT_SUFFIX}")):
        if path.is_symlink():
            continue
        try:
            doc = loads_json(path.read_text("utf-8"), path)  # nested past the bound: refused, named (H-39)
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            continue
        if doc.get("accepted") is not None:
            judged += 1
        if doc.get("accepted") is True and isinstance(doc.get("files"), dict):
            if report_run(base, path) not in accepted_runs:  # no row holds this run: never counted (H-57)
                strays.append(path.relative_to(base).as_posix())
                continue
            digests.update(str(v) for v in doc["files"].values())
    return digests, judged, strays


def last_accepted_output(session: RuleSession) -> Path | None:
    """The newest accepted output that is a folder, ``None`` when there is none (S9).

    Read from the archived reports (``validation/<experiment>/<variant>/*.accept.json``),
    newest by modification time; the Validation pane proposes it as the deliverables
    folder before the first decision, so that a person can approve there.
    """
    base = Path(session.validation_dir)
    if not base.is_dir():
        return None
    found: list[tuple[float, Path]] = []
    for path in base.rglob(f"*{REPORT_SUFFIX}"):
        if path.is_symlink():
            continue
        try:
            doc = loads_json(path.read_text("utf-8"), path)
            made_s = path.stat().st_mtime
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == KIND and doc.get("accepted") is True \
                and isinstance(doc.get("output"), str):
            out = Path(doc["output"])
            if out.is_dir() and not out.is_symlink():
                found.append((made_s, out))
    return max(found)[1] if found else None


__all__ = ["ACCEPTED", "AcceptReport", "AcceptRule", "FORMATS", "KIND", "NamesCheck", "REJECTED", "UNJUDGED",
           "accept_protocol", "accepted_output_digests", "check_format", "check_names", "format_problem",
           "has_accept_rule", "last_accepted_output", "read_expected_names", "reason_line", "rule_of"]
