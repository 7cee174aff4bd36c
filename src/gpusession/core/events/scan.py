"""A cheap look at the journal: the runs and invocations it started and never ended (S7).

Why it exists: ``gpusession status`` (tmux's status line, every few seconds) and
:meth:`gpusession.core.folder.session.Session.needs_recovery` (every open) must know
whether runs are in flight without paying for the record classes; this module parses only
the lines that name a run or invocation start or end, with the standard library, and
imports nothing of gpusession. It agrees with the typed reader
(:mod:`gpusession.core.events.reading`): a run line whose run fields do not fit counts
for nothing in either. Who calls it: those two, through ``reading`` or directly.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Integer fields of typed records hold 64-bit signed values (a run index, a PID, bytes).
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
#: A longer line is not parsed here (the typed reader's bound).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Record names that start a timed run (a worker's load is one too) and that end one.
RUN_OPENS = ("run_started", "load_started")
RUN_CLOSES = ("run_finished", "load_finished", "run_recovered")
#: Record names that start and end an invocation of an experiment.
INVOCATION_START = "experiment_started"
INVOCATION_ENDS = ("experiment_finished", "experiment_incomplete")
INCIDENT = "incident"
#: ``kind`` of the incident recovery writes once for a journal line that does not read,
#: and of the one for a last line cut by a crash (both name the ``line``).
UNREADABLE_KIND = "unreadable_journal_line"
CUT_KIND = "partial_journal_line"
_TAGS = tuple(f'"{n}"'.encode() for n in (*RUN_OPENS, *RUN_CLOSES, INVOCATION_START, *INVOCATION_ENDS, INCIDENT))
_OPEN_TAGS = tuple(f'"{n}"'.encode() for n in RUN_OPENS)
_RUN_TAGS = tuple(f'"{n}"'.encode() for n in (*RUN_OPENS, *RUN_CLOSES))
_CUT_KEY = rb'"run_key": "([^"\\]+)"'  # compiled when a cut line is met (start-up stays cheap)


def _run_line_fits(rec: dict[str, Any]) -> bool:
    """Whether a run record's run fields fit as :func:`gpusession.core.events.reading.decode_line` checks them.

    So a line the typed reader notes as unreadable never counts as a run in flight
    here: recovery (which reads typed) and ``status`` (which reads this) agree.
    """
    if rec.get("event") == "run_recovered":  # its record has no other run field
        return all(rec.get(n) is None or isinstance(rec.get(n), str) for n in ("at", "run_key"))
    names = ("at", "run_key", "experiment_id", "variant_id", "phase", *(("worker",) if rec.get("event") in RUN_OPENS else ()))
    if any(rec.get(n) is not None and not isinstance(rec.get(n), str) for n in names):
        return False
    index = rec.get("run_index")
    return index is None or (isinstance(index, int) and not isinstance(index, bool)
                             and _INT_MIN <= index <= _INT_MAX)


class OpenWork:
    """What a journal started and never ended, from a cheap look (S7).

    Attributes:
        run_keys: runs (and loads) started with no end record; a cut last line that
            starts a run still names its run.
        experiments: experiments whose newest invocation has no end record and no
            incident of kind ``unfinished_kind`` after it.
        unsaid_lines: run lines (1-based) that do not read -- not JSON, or run fields
            of the wrong type -- and that no incident has said yet (recovery says each once).
        last_experiment: the experiment of the newest run, load or invocation started
            (``None``: none); its ``runs/<experiment>/`` is where a runner's worker specs
            were last written (:meth:`gpusession.core.folder.session.Session.needs_recovery`).
    """

    __slots__ = ("experiments", "last_experiment", "run_keys", "unsaid_lines")

    def __init__(self, run_keys: frozenset[str], experiments: frozenset[str],
                 unsaid_lines: frozenset[int] = frozenset(), last_experiment: str | None = None) -> None:
        """Hold the sets (a plain class: a dataclass costs start-up time)."""
        self.run_keys = run_keys
        self.experiments = experiments
        self.unsaid_lines = unsaid_lines
        self.last_experiment = last_experiment


class JournalFold:
    """The running state of :func:`open_work` over the journal's complete lines, fed in pieces (S7, A5).

    Source: S7, A5 (figures kept up to date, not recounted). Why: ``status`` (tmux,
    every few seconds) keeps this state at a journal offset and folds only the lines
    appended since, so one refresh costs the new bytes, not a 15 MB journal. Feeding the
    journal in any number of pieces, each ending at a line end, gives the state one
    :func:`open_work` over the whole gives; a last piece without its newline (a line cut
    by a crash, or being written) is looked at by :meth:`result` and never folded.

    Attributes:
        lines: complete lines folded (the 1-based number of the last one).
        keys: runs started with no end yet.
        unended: ``{experiment: True}`` for an invocation not yet ended (only with
            ``unfinished_kind``).
        bad: run lines (1-based) that do not read; ``said``: lines an incident has said.
        last: the experiment of the newest run, load or invocation started (``None``: none).
    """

    __slots__ = ("bad", "keys", "last", "lines", "said", "tags", "unended", "unfinished_kind")

    def __init__(self, unfinished_kind: str | None = None) -> None:
        """An empty fold (no line read); ``unfinished_kind`` as :func:`open_work` takes it."""
        self.unfinished_kind = unfinished_kind
        self.tags = _RUN_TAGS if unfinished_kind is None else _TAGS
        self.lines = 0
        self.keys: set[str] = set()
        self.unended: dict[str, bool] = {}
        self.bad: set[int] = set()
        self.said: set[int] = set()
        self.last: str | None = None

    def feed(self, complete: bytes) -> None:
        """Fold ``complete``: whole lines, each ended by a newline (a trailing piece without one is refused).

        Raises:
            ValueError: ``complete`` does not end at a line end.
        """
        if not complete:
            return
        if not complete.endswith(b"\n"):
            raise ValueError("a journal piece folded must end at a line end")
        lines = complete.split(b"\n")
        lines.pop()  # the empty piece after the last newline
        first = self.lines
        for index, line in enumerate(lines, start=first + 1):
            self._line(index, line)
        self.lines = first + len(lines)

    def _line(self, number: int, line: bytes) -> None:
        """Fold the complete line ``number`` (1-based)."""
        if not any(tag in line for tag in self.tags) or len(line) > MAX_LINE_BYTES:
            return
        try:
            rec = json.loads(line.decode("utf-8", "replace"))  # decoded as the typed reader does
        except (ValueError, RecursionError):
            self.bad.add(number)
            return
        if not isinstance(rec, dict):
            return
        name, key, exp = rec.get("event"), rec.get("run_key"), rec.get("experiment_id")
        # a run line the typed reader finds unreadable counts for nothing (recovery skips it too)
        if (name in RUN_OPENS or name in RUN_CLOSES) and not _run_line_fits(rec):
            self.bad.add(number)
        elif (name in RUN_OPENS or name in RUN_CLOSES) and key:
            if name in RUN_OPENS:
                self.keys.add(key)
                if isinstance(exp, str) and exp:
                    self.last = exp
            else:
                self.keys.discard(key)
        elif name == INCIDENT and rec.get("kind") in (UNREADABLE_KIND, CUT_KIND) and isinstance(rec.get("line"), int):
            self.said.add(rec["line"])
        if self.unfinished_kind is None or not isinstance(exp, str):
            return
        if name == INVOCATION_START:
            self.unended[exp] = True
            self.last = exp or self.last
        elif name in INVOCATION_ENDS or (name == INCIDENT and rec.get("kind") == self.unfinished_kind):
            self.unended[exp] = False

    def result(self, cut: bytes = b"") -> OpenWork:
        """What the folded lines left open, with ``cut`` (the bytes after the last line end) as the last line.

        A cut last line that does not read and starts a run still names its run; one
        that reads is folded as any line (in a copy: the fold itself is unchanged).
        """
        keys, unended, bad, said = set(self.keys), dict(self.unended), set(self.bad), set(self.said)
        last = self.last
        if cut and any(tag in cut for tag in self.tags) and len(cut) <= MAX_LINE_BYTES:
            probe = JournalFold(self.unfinished_kind)
            probe.keys, probe.unended, probe.bad, probe.said = keys, unended, bad, said
            try:
                json.loads(cut.decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                m = re.search(_CUT_KEY, cut)
                if m and any(tag in cut for tag in _OPEN_TAGS):  # a cut last line still names its run
                    keys.add(m.group(1).decode("utf-8", "replace"))
            else:
                probe._line(self.lines + 1, cut)
                last = probe.last if probe.last is not None else last
        return OpenWork(frozenset(keys), frozenset(e for e, on in unended.items() if on), frozenset(bad - said),
                        last)


def split_at_last_line_end(raw: bytes) -> tuple[bytes, bytes]:
    """``(complete lines, cut)``: ``raw`` split just after its last newline."""
    end = raw.rfind(b"\n") + 1
    return raw[:end], raw[end:]


def open_work(raw: bytes, unfinished_kind: str | None = None) -> OpenWork:
    """The runs and invocations the journal bytes ``raw`` left open (S7; ``status``, reopen).

    Only the lines naming a run or invocation start or end, or an incident, are parsed;
    a line that does not read is skipped (:func:`gpusession.core.events.reading.read_journal`
    notes it). The fold of :class:`JournalFold` over the whole: the same state that
    ``status`` keeps at an offset and moves by the lines appended since.

    Args:
        raw: the journal's bytes.
        unfinished_kind: the incident ``kind`` recovery writes once for an invocation
            that never ended (:data:`gpusession.core.records.summary.UNFINISHED_KIND`);
            ``None``: only the runs are looked at (``experiments`` is empty).
    """
    complete, cut = split_at_last_line_end(raw)
    fold = JournalFold(unfinished_kind)
    fold.feed(complete)
    return fold.result(cut)


_CLOSE_TAGS = tuple(f'"{n}"'.encode() for n in RUN_CLOSES)


def run_end_counts(raw: bytes) -> dict[str, int]:
    """How many times the journal bytes ``raw`` ended each run: ``{"e:warm:batch-4:2": 1}`` (S7).

    The runner writes a run's results row before it journals the run's end, once per
    run, so a key with more rows than ends holds a row copied by hand. Only the lines
    naming a run end are parsed; a line that does not read counts for nothing.
    """
    counts: dict[str, int] = {}
    for line in raw.split(b"\n"):
        if not any(tag in line for tag in _CLOSE_TAGS) or len(line) > MAX_LINE_BYTES:
            continue
        try:
            rec = json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict) and rec.get("event") in RUN_CLOSES and _run_line_fits(rec):
            key = rec.get("run_key")
            if isinstance(key, str) and key:
                counts[key] = counts.get(key, 0) + 1
    return counts


__all__ = [
    "CUT_KIND", "INCIDENT", "INVOCATION_ENDS", "INVOCATION_START", "MAX_LINE_BYTES", "RUN_CLOSES",
    "RUN_OPENS", "UNREADABLE_KIND", "JournalFold", "OpenWork", "open_work", "run_end_counts",
    "split_at_last_line_end",
]
