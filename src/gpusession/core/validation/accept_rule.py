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

import hashlib
import json
import os
import stat
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from gpusession.core.files.errors import BadInput
from gpusession.core.files.nesting import TOO_DEEP, loads_json
from gpusession.core.files.secrets import mask_record, mask_text, shown
from gpusession.core.files.textio import decode_strict, not_plain, printable, read_bytes
from gpusession.core.records.kinds import ACCEPT_RULE, declares, protocol_kind

#: The stored name of this kind (protocol ``kind``, a row's ``quality_metric``, a report's
#: ``kind``): the registry's (:data:`gpusession.core.records.kinds.ACCEPT_RULE`).
KIND = ACCEPT_RULE.key
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
#: The largest accept report read, in bytes (H-71): a report lists each counted file's
#: name and SHA-256 (about 330 bytes with JSON's quotes), so 64 MiB holds 200,000 files,
#: the bound of a walked deliverables folder (H-54); a larger one is named, never read.
REPORT_MAX_BYTES = 64 * 1024 * 1024
#: Entries kept per list of a report (missing, extra, format problems…): a list past it is
#: cut and its full length kept, so the writer never passes :data:`REPORT_MAX_BYTES` (A4).
REPORT_LIST_MAX = 1000
#: The row's fact that ties an accepted output to the files its report lists (H-72):
#: ``3 files counted, list sha256: <64 hex digits>`` (:func:`files_digest`).
TIE_WORDS = "{n} files counted, list sha256: {digest}"


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
    if not protocol or protocol_kind(protocol) is not ACCEPT_RULE:
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
    """The rule's first stdout line: decoded, secrets masked, escaped, at most 200 characters.

    Source: H-74. The whole head the rule printed is masked before its first line is
    taken: a key body printed without its BEGIN line is found only as several lines of
    base64 together, never in its first line alone.
    """
    masked, _ = mask_text(stdout.decode("utf-8", errors="replace"))
    first = masked.split("\n", 1)[0].rstrip("\r")
    text = printable(first, keep="")
    return text if len(text) <= REASON_MAX_CHARS else text[:REASON_MAX_CHARS - 1] + "…"


# -- the report (V8) and the count (S10) -------------------------------------------------
def shown_files(files: Mapping[str, str]) -> dict[str, str]:
    """``files`` (name → SHA-256) as a report writes it: each name secret-masked (H-73).

    Source: H-73. Why: an output may name a file like a token (``ghp_…``); the report is a
    session file, so the name is kept as ``[HIDDEN: GitHub token].png`` with its digest,
    still counted. Two names hidden alike are kept apart as ``… (2)``, ``… (3)``.
    """
    out: dict[str, str] = {}
    for name, digest in files.items():
        said = mask_text(name)[0]
        key, i = said, 2
        while key in out:
            key, i = f"{said} ({i})", i + 1
        out[key] = digest
    return out


def files_digest(files: Mapping[str, Any]) -> str:
    """SHA-256 of a report's ``files`` mapping as written: sorted keys, compact JSON, UTF-8 (H-72).

    The run records it in the row's notes when the rule accepts (:data:`TIE_WORDS`), so a
    digest added to the report afterwards is seen without hashing any output again.
    """
    text = json.dumps(files, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def files_digests_of_runs(records: Iterable[Any]) -> dict[RunKey, str]:
    """The files digest each run journalled when the rule accepted it (``run_finished.files_digest``, H-72).

    The typed place the count ties an accept report to its run; the newest record of a
    run measured again wins. A run absent here was journalled before the digest was typed
    (or not accepted): its row's notes are read by the old-folder adapter
    (:func:`gpusession.core.records.old_words.files_digest_from_old_notes`).
    """
    out: dict[RunKey, str] = {}
    for rec in records:
        digest = getattr(rec, "files_digest", None)
        exp, variant = getattr(rec, "experiment_id", None), getattr(rec, "variant_id", None)
        phase, index = getattr(rec, "phase", None), getattr(rec, "run_index", None)
        if (isinstance(digest, str) and isinstance(index, int) and exp is not None and variant is not None
                and phase is not None):
            out[(str(exp), str(variant), str(phase), index)] = digest
    return out


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
    #: files left out because their list would pass :data:`REPORT_MAX_BYTES` (H-71)
    files_past_bound: int = 0

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
            "quality_metric": ACCEPT_RULE.row_marker,
            "corpus_accepted": self.corpus_accepted,
        }

    def accepted_files_digest(self) -> str | None:
        """The digest of the files list the report holds when the rule accepted, else ``None`` (H-72).

        :func:`files_digest` of :func:`shown_files`: journalled typed with the run
        (``run_finished.files_digest``) and said in the row's note (:data:`TIE_WORDS`).
        """
        return files_digest(shown_files(self.files)) if self.corpus_accepted else None

    def note(self) -> str | None:
        """The row's note: the failed checks and the rule's reason (escaped, ≤ 200 characters)."""
        out = []
        if not self.ids_match and n_words(self.names):
            out.append(f"output names: {n_words(self.names)}")
        if not self.format_valid:
            out.append(f"format: {'; '.join(self.format_problems[:3])}")
        if self.verdict is not None:
            out.append(f"accept rule: {self.verdict}" + (f" ({self.reason})" if self.reason else ""))
        if (digest := self.accepted_files_digest()) is not None:  # what the count may believe (H-72)
            out.append(TIE_WORDS.format(n=len(self.files), digest=digest))
        if self.files_past_bound:
            out.append(f"not counted: the list of its {self.files_past_bound:,} files would pass the "
                       f"{REPORT_MAX_BYTES:,} bytes an accept report may hold")
        if self.not_counted:
            shown = ", ".join(printable(n, keep="") for n in self.not_counted[:5])
            more = f" and {len(self.not_counted) - 5} more" if len(self.not_counted) > 5 else ""
            out.append(f"not counted (no regular file inside the output): {shown}{more}")
        elif not (self.ids_match and self.format_valid):
            out.append("accept rule not run (names or format failed first)")
        return "; ".join(out) or None

    def to_json(self) -> dict[str, Any]:
        """The archived report (V8): every text secret-masked (H-73), lists cut (H-71).

        Each list keeps its first :data:`REPORT_LIST_MAX` entries; its full length is under ``cut``.
        """
        n = self.names
        lists = {"missing": list(n.missing) if n else [], "extra": list(n.extra) if n else [],
                 "duplicates": list(n.duplicates) if n else [], "format_problems": self.format_problems,
                 "not_counted": self.not_counted}
        cut = {k: len(v) for k, v in lists.items() if len(v) > REPORT_LIST_MAX}
        kept = {k: v[:REPORT_LIST_MAX] for k, v in lists.items()}
        doc = mask_record({
            "schema": 1, "kind": KIND, "output": self.output_path, "accepted": self.corpus_accepted,
            "names": None if n is None else {"expected": len(n.expected), "observed": len(n.observed),
                                              "missing": kept["missing"], "extra": kept["extra"],
                                              "duplicates": kept["duplicates"]},
            "format_problems": kept["format_problems"], "verdict": self.verdict, "reason": self.reason,
            "exit_code": self.exit_code, "not_counted": kept["not_counted"]})
        doc["files"] = shown_files(self.files)  # digests under names: masked by name only
        if cut:
            doc["cut"] = cut
        if self.files_past_bound:
            doc["files_past_bound"] = self.files_past_bound
        return doc

    def encoded(self) -> bytes:
        """The archived report as JSON bytes, never past :data:`REPORT_MAX_BYTES` (A4, H-71).

        Source: H-71. Why: the reader refuses a larger report, so the writer never writes
        one. A list of files past the bound (hundreds of thousands of files and no expected
        names) is dropped before the row's note is made, so the row records the digest of
        no file and the run counts none (said in its note).
        """
        data = _json_bytes(self.to_json())
        if len(data) > REPORT_MAX_BYTES and self.files:
            self.files_past_bound, self.files = len(self.files), {}
            data = _json_bytes(self.to_json())
        return data


def _json_bytes(doc: Any) -> bytes:
    """``doc`` as indented UTF-8 JSON; ASCII escapes where a name holds an undecodable byte."""
    try:
        return json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, indent=1).encode("ascii")


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
    return declares(session.data, ACCEPT_RULE)


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


def read_report(path: Path) -> tuple[Any, str | None]:
    """An archived accept report's JSON, or why it was not read: ``(doc, None)`` / ``(None, why)``.

    Source: H-70, H-71. Why: the workload runs in the session folder and may leave a FIFO
    named ``*.accept.json`` (opening it waits for a writer, past SIGTERM) or a 3 GB file
    under ``validation/``; every command that counts reads these. So the file is opened
    without following a link or waiting (``O_NOFOLLOW | O_NONBLOCK``), checked to be a
    regular file of at most :data:`REPORT_MAX_BYTES` (``fstat``) before a byte is read.

    Returns:
        ``(parsed JSON, None)``, or ``(None, words)`` for a link, a FIFO, a device, a
        folder, a file past the bound, unreadable bytes or text that is not JSON.

    Raises:
        BadInput: JSON nested past the bound (H-39), naming the file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            return None, "is a symbolic link; a report is read only as the file itself (nothing was read)"
        return None, f"cannot be read ({exc.strerror or exc})"
    too_big = (f"holds more than {REPORT_MAX_BYTES:,} bytes, the most an accept report may hold "
               "(200,000 files' names and SHA-256); nothing was read")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, not_plain(Path(path), st.st_mode).message
        if st.st_size > REPORT_MAX_BYTES:
            return None, too_big
        data = b""
        while len(data) <= REPORT_MAX_BYTES and (chunk := os.read(fd, 1024 * 1024)):
            data += chunk  # a file that grew since fstat stops past the bound
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if len(data) > REPORT_MAX_BYTES:
        return None, too_big
    try:
        return loads_json(data.decode("utf-8"), path), None  # nested past the bound: refused, named (H-39)
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 (byte {exc.start}); not a report gpusession wrote"
    except ValueError as exc:
        return None, f"is not JSON ({exc}); not a report gpusession wrote"


#: A run as the results rows name it: ``(experiment, variant, phase, run index)``.
RunKey = tuple[str, str, str, int]


def accepted_output_digests(session: RuleSession, accepted_runs: Mapping[RunKey, str | None]
                            ) -> tuple[set[str], int, list[str]]:
    """Distinct SHA-256 of the files of every accepted output, how many were judged, and what was left out (S10).

    Read from the archived reports (``validation/<experiment>/<variant>/*.accept.json``).
    A report counts only when a row of ``resultats-bruts.csv`` holds its run accepted by
    the rule (H-57) and records the digest of the very ``files`` it lists (H-72,
    :func:`files_digest`): a report made by hand, left by a run whose row is gone, or with
    digests added since, is named and never counted. So is a file that is no plain report
    (a link, a FIFO, a device, past :data:`REPORT_MAX_BYTES`, not JSON: H-70, H-71,
    :func:`read_report`). Nothing is hashed again: the digests are the report's.

    Args:
        session: the session (its validation folder).
        accepted_runs: the runs the results rows say the rule accepted, each with the
            files digest its row records (``None``: none, or more than one).

    Returns:
        ``(digests, judged, left_out)``; ``left_out`` says each report not counted, as
        ``validation/<path>: why``.
    """
    digests: set[str] = set()
    judged = 0
    left_out: list[str] = []
    base = Path(session.validation_dir)
    if not base.is_dir():
        return digests, 0, left_out
    for path in sorted(base.rglob(f"*{REPORT_SUFFIX}")):
        where = f"validation/{path.relative_to(base).as_posix()}"
        doc, why = read_report(path)
        if why is not None:
            left_out.append(f"{where}: {why}")
            continue
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            continue
        if doc.get("accepted") is not None:
            judged += 1
        files = doc.get("files")
        if doc.get("accepted") is True and isinstance(files, dict):
            run = report_run(base, path)
            if run is None or run not in accepted_runs:  # no row holds this run: never counted (H-57)
                left_out.append(f"{where}: no row of resultats-bruts.csv holds this run")
                continue
            recorded = accepted_runs[run]
            if recorded is None:
                left_out.append(f"{where}: the row of its run records no digest of the files it accepted")
                continue
            if files_digest(files) != recorded:  # a digest added or changed since the rule judged (H-72)
                left_out.append(f"{where}: its files are not those the rule accepted (their digest "
                                "differs from the one the row of its run records)")
                continue
            digests.update(str(v) for v in files.values())
    return digests, judged, left_out


def last_accepted_output(session: RuleSession) -> Path | None:
    """The newest accepted output that is a folder, ``None`` when there is none (S9).

    Read from the archived reports (``validation/<experiment>/<variant>/*.accept.json``),
    newest by modification time; the Validation pane proposes it as the deliverables
    folder before the first decision, so that a person can approve there. A report that
    does not read as one (:func:`read_report`: a FIFO, a link, past the bound) is passed
    over: this is a proposal, the count names it.
    """
    base = Path(session.validation_dir)
    if not base.is_dir():
        return None
    found: list[tuple[float, Path]] = []
    for path in base.rglob(f"*{REPORT_SUFFIX}"):
        try:
            doc, why = read_report(path)
            made_s = path.lstat().st_mtime
        except (OSError, BadInput):
            continue
        if why is None and isinstance(doc, dict) and doc.get("kind") == KIND and doc.get("accepted") is True \
                and isinstance(doc.get("output"), str):
            out = Path(doc["output"])
            if out.is_dir() and not out.is_symlink():
                found.append((made_s, out))
    return max(found)[1] if found else None


__all__ = ["ACCEPTED", "AcceptReport", "AcceptRule", "FORMATS", "KIND", "NamesCheck", "REJECTED", "UNJUDGED",
           "REPORT_MAX_BYTES", "RunKey", "TIE_WORDS", "accept_protocol", "accepted_output_digests", "check_format",
           "check_names", "files_digest", "format_problem", "has_accept_rule", "last_accepted_output",
           "files_digests_of_runs", "read_expected_names", "read_report",
           "reason_line", "rule_of", "shown_files"]
