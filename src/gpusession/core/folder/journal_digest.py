"""What ``show`` and ``report`` need of the journal, folded and kept at an offset (A5, H-47).

Source: A5 (a refresh costs the new work, not the session), R7, S7, H-47.
Why: ``show`` and ``report`` decoded the whole journal, typed (JSON, the depth check and
the field checks of 39,000 records in a month-long session: about a second), at every
call; what they use of it is small and folds line by line. Who calls it:
:meth:`gpusession.core.folder.session.Session.journal_facts` (the summary's facts) and the
report's rows' facts and incidents (:mod:`gpusession.core.retrieval.report`).

``journal-digest.json`` (:data:`gpusession.core.folder.caches.JOURNAL_DIGEST`, sealed as
every state file is, H-78) holds, at a line end of the journal (``offset``, ``lines``):
the fold of the summary's facts (:class:`gpusession.core.events.facts.FactsFold`), the
typed facts of each record that ended a run (``run_finished``, ``load_finished``,
``run_recovered``: the fields :meth:`RowFacts.from_record` reads, under the row's
``(experiment, phase, variant, index)``), the ``incident`` records as written, the lines
that did not read (number and why), the journal's ``stat`` signature and the CRC-32 of
its bytes before the offset. While the signature holds nothing is read but the state;
when the journal grew, its bytes before the offset are read for their CRC-32 (no line
decoded) and only the bytes after it decoded; a journal replaced, shrunk, rewritten at
its size or edited before the offset is decoded whole once (H-47). Written
atomically, only once the bytes decoded pass :data:`DIGEST_MIN_SAVE_BYTES` (a small
session is left as found), never an error when the disk refuses; a digest over the state
files' bound (:data:`gpusession.core.folder.caches.STATE_MAX_BYTES`, some 20,000 rows'
facts) is not written, and each call decodes the whole journal as before.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpusession.core.events import (
    Event,
    IncidentRecord,
    LoadFinishedRecord,
    RunFinishedRecord,
    RunRecoveredRecord,
)
from gpusession.core.events.facts import FactsFold, JournalFacts, ProtocolFold
from gpusession.core.events.reading import JournalRead, Unreadable, decode_lines
from gpusession.core.events.scan import split_at_last_line_end
from gpusession.core.experiment.keys import RunKey
from gpusession.core.files.errors import BadInput
from gpusession.core.files.names import JOURNAL
from gpusession.core.folder.caches import JOURNAL_DIGEST, read_state, write_state
from gpusession.core.folder.journal_state import (
    _CHUNK_BYTES,
    JOURNAL_REWRITE_BYTES,
    _signature,
    read_journal_span,
)
from gpusession.core.records.notefacts import Remark, RowFacts

#: Journal bytes decoded before the digest is written (again): a smaller journal is decoded
#: whole in milliseconds and its folder left as found; past it a refresh decodes at most
#: this much besides the two windows.
DIGEST_MIN_SAVE_BYTES = JOURNAL_REWRITE_BYTES
#: The digest's own version: a fold written by code that folded otherwise reads as absent.
DIGEST_VERSION = 1

#: A row's journal key: ``(experiment, phase, variant, run index)``.
RowKey = tuple[str, str, str, int]
#: The fields of a record that ended a run which :meth:`RowFacts.from_record` reads.
_FACT_FIELDS = ("incidents", "energy_j", "energy_unread", "energy_unsupported", "remarks")
#: The records that end a run and carry its row's facts.
_ROW_ENDS = (RunFinishedRecord, LoadFinishedRecord, RunRecoveredRecord)


def row_key(rec: Event) -> RowKey | None:
    """``(experiment, phase, variant, index)`` of the row a record ends, ``None`` if unnamed."""
    exp = getattr(rec, "experiment_id", None)
    phase = getattr(rec, "phase", None)
    variant = getattr(rec, "variant_id", None)
    index = getattr(rec, "run_index", None)
    if exp is not None and phase is not None and variant is not None and isinstance(index, int):
        return str(exp), str(phase), str(variant), index
    try:
        key = RunKey.parse(str(getattr(rec, "run_key", None)))
    except BadInput:
        return None
    return key.experiment_id, key.phase, key.variant_id, key.run_index


def row_facts_entry(rec: Event) -> tuple[RowKey, dict[str, Any]] | None:
    """The row key and the typed facts' fields of a record that ended a run; ``None`` for another record or one without facts."""
    if not isinstance(rec, _ROW_ENDS):
        return None
    fields = {name: getattr(rec, name, None) for name in _FACT_FIELDS}
    if RowFacts.from_record(SimpleNamespace(**fields)) is None:
        return None
    key = row_key(rec)
    return None if key is None else (key, fields)


@dataclass
class JournalDigest:
    """The journal's digest (module docstring), JSON-ready; read through its methods.

    Attributes:
        lines: journal lines folded (the next line's number is ``lines + 1``).
        facts: the summary's facts folded.
        protocol: when each experiment's protocol was stored and first measured (V5).
        row_facts: ``[experiment, phase, variant, index, kept]`` per record that ended a
            run, ``kept`` as :meth:`_kept` keeps its facts' fields (a month's rows repeat
            most of their remarks' strings: 9 MB → under 2 MB).
        texts: the remarks' strings, each once.
        incidents: ``[line, record as written]`` per ``incident`` record.
        unreadable: ``[line, why]`` per line that did not read.
    """

    lines: int = 0
    facts: FactsFold = field(default_factory=FactsFold)
    protocol: ProtocolFold = field(default_factory=ProtocolFold)
    row_facts: list[list[Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    incidents: list[list[Any]] = field(default_factory=list)
    unreadable: list[list[Any]] = field(default_factory=list)
    _text_ids: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    #: The rows' facts as saved (one JSON text), parsed on first use: ``show`` never parses them.
    _rows_text: str | None = field(default=None, repr=False, compare=False)

    def _rows(self) -> None:
        """Parse the saved rows' facts (:attr:`_rows_text`) once, when first asked.

        Raises:
            TypeError, ValueError: another shape (sealed by this user's gpusession: not expected).
        """
        if self._rows_text is None:
            return
        rows, texts = json.loads(self._rows_text)
        if not (isinstance(rows, list) and isinstance(texts, list) and all(isinstance(t, str) for t in texts)
                and all(isinstance(r, list) and len(r) == 5 and isinstance(r[4], dict | list) for r in rows)):
            raise TypeError("not the rows' facts of a journal digest")
        self.row_facts, self.texts, self._rows_text = rows, texts, None

    def _text(self, text: str) -> int:
        if not self._text_ids and self.texts:
            self._text_ids.update((t, i) for i, t in enumerate(self.texts))
        i = self._text_ids.get(text)
        if i is None:
            i = self._text_ids[text] = len(self.texts)
            self.texts.append(text)
        return i

    def _kept(self, fields: dict[str, Any]) -> dict[str, Any] | list[int]:
        """``fields`` as kept in the digest (:meth:`row_facts_queues` reads them back).

        A row with no incident and no energy reading whose remarks are ``{"kind", "text"}``
        of strings (nearly every row): the flat list of the indexes of those strings in
        :attr:`texts`; another: ``fields`` themselves.
        """
        remarks = fields.get("remarks")
        if (fields.get("incidents") == [] and fields.get("energy_j") is None and fields.get("energy_unread") is None
                and fields.get("energy_unsupported") is None and isinstance(remarks, list)
                and all(isinstance(r, dict) and r.keys() == {"kind", "text"} and isinstance(r["kind"], str)
                        and isinstance(r["text"], str) for r in remarks)):
            return [i for r in remarks for i in (self._text(r["kind"]), self._text(r["text"]))]
        return fields

    def feed(self, raw: bytes) -> JournalDigest:
        """Fold the journal bytes ``raw`` that follow the lines folded; returns itself."""
        self._rows()
        for number, item in decode_lines(raw, self.lines + 1):
            if isinstance(item, Unreadable):
                self.unreadable.append([item.line, item.reason])
                continue
            self.facts.feed((item,))
            self.protocol.feed((item,))
            entry = row_facts_entry(item)
            if entry is not None:
                self.row_facts.append([*entry[0], self._kept(entry[1])])
            elif isinstance(item, IncidentRecord):
                self.incidents.append([number, item.to_json()])
        self.lines += raw.count(b"\n")
        return self

    def journal_facts(self) -> JournalFacts:
        """The summary's facts (:func:`gpusession.core.events.facts.journal_facts` of the journal)."""
        return self.facts.facts()

    def row_facts_queues(self) -> dict[RowKey, list[RowFacts]]:
        """Each row key's facts, oldest first (new lists: :func:`~gpusession.core.retrieval.incidents.pair_row_facts` pops them)."""
        self._rows()
        queues: dict[RowKey, list[RowFacts]] = {}
        said: dict[tuple[int, int], Remark] = {}  # each remark once: most rows repeat most of theirs
        texts = self.texts
        for exp, phase, variant, index, kept in self.row_facts:
            if isinstance(kept, list):  # no incident, no energy: RowFacts.from_record's answer, without its walk
                facts: RowFacts | None = RowFacts(remarks=tuple(
                    said.get(pair) or said.setdefault(pair, Remark(texts[pair[0]], texts[pair[1]]))
                    for pair in zip(kept[::2], kept[1::2], strict=True)))
            else:
                facts = RowFacts.from_record(SimpleNamespace(**kept))
            if facts is not None:
                queues.setdefault((exp, phase, variant, index), []).append(facts)
        return queues

    def incidents_read(self) -> JournalRead:
        """The journal's ``incident`` records and its unreadable lines (what the report's incidents read)."""
        records: list[Event] = [IncidentRecord.from_json(data) for _line, data in self.incidents]
        return JournalRead(records, [line for line, _data in self.incidents],
                           [Unreadable(line, why) for line, why in self.unreadable])

    def as_json(self) -> dict[str, Any]:
        """The digest's fields, JSON-ready; the rows' facts and their strings as one JSON text.

        Why one text: ``show`` reads the digest for the summary's facts only, and a JSON
        string of 2 MB is read (and sealed) as one scan, not parsed into 60,000 objects.
        """
        return {"lines": self.lines, "facts": self.facts.as_json(), "protocol": self.protocol.as_json(),
                "incidents": self.incidents,
                "unreadable": self.unreadable,
                "rows": self._rows_text if self._rows_text is not None else
                json.dumps([self.row_facts, self.texts], ensure_ascii=False, separators=(",", ":"))}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> JournalDigest:
        """The inverse of :meth:`as_json`.

        Raises:
            TypeError, ValueError, KeyError, AttributeError: another shape.
        """
        lines, incidents, unreadable, rows = doc["lines"], doc["incidents"], doc["unreadable"], doc["rows"]
        if not (isinstance(lines, int) and isinstance(incidents, list) and isinstance(unreadable, list)
                and isinstance(rows, str)
                and all(isinstance(i, list) and len(i) == 2 and isinstance(i[1], dict) for i in incidents)
                and all(isinstance(u, list) and len(u) == 2 for u in unreadable)):
            raise TypeError("not a journal digest")
        return cls(lines, FactsFold.from_json(doc["facts"]), ProtocolFold.from_json(doc["protocol"]),
                   incidents=incidents, unreadable=unreadable,
                   _rows_text=rows)


def _prefix_crc(fd: int, offset: int) -> int:
    """The CRC-32 of the journal's first ``offset`` bytes, read in chunks (memory stays flat).

    Why the whole prefix, not its first and last 4 KiB: a line edited by hand at its own
    length in the middle, then a line appended by gpusession, leaves both windows and a
    growing size (H-47); reading 15 MB for a CRC costs some 50 ms, decoding them typed a second.
    """
    crc, at = 0, 0
    while at < offset:
        chunk = read_journal_span(fd, at, min(_CHUNK_BYTES, offset - at))
        if not chunk:
            break
        crc, at = zlib.crc32(chunk, crc), at + len(chunk)
    return crc


def _resumed(fd: int, st: os.stat_result, state: dict[str, Any] | None) -> tuple[JournalDigest, int, int] | None:
    """The digest the state holds, its offset and the CRC-32 of the journal before it, when that prefix is unchanged.

    Refused (``None``: the whole journal is decoded again, H-47) for another version or
    shape, another file (inode, device), one that shrank, one rewritten at the same size,
    and one that grew but whose bytes before the offset are not the ones folded (their
    CRC-32, :func:`_prefix_crc`); an unchanged ``stat`` signature reads nothing.
    """
    if state is None or state.get("version") != DIGEST_VERSION:
        return None
    offset, sig, crc = state.get("offset"), state.get("stat"), state.get("crc")
    if not (isinstance(offset, int) and isinstance(sig, list) and len(sig) == 5 and isinstance(crc, int)):
        return None
    now = _signature(st)
    if sig[3:] != now[3:] or offset > st.st_size or st.st_size < sig[0]:
        return None
    if now != sig and (st.st_size == sig[0] or _prefix_crc(fd, offset) != crc):
        return None
    try:
        return JournalDigest.from_json(state["digest"]), offset, crc
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


#: The last digest returned: ``{"last": (journal path, its stat signature, digest)}``; callers only read it.
_LAST: dict[str, tuple[Path, list[int], JournalDigest]] = {}


def journal_digest(folder: Path, *, min_save_bytes: int = DIGEST_MIN_SAVE_BYTES) -> JournalDigest | None:
    """The journal's digest now: the saved one moved by the bytes appended since, else the whole journal's (A5).

    The same facts as decoding the whole journal (:func:`gpusession.core.events.reading.read_journal`);
    a last line without its end of line is decoded each call, never saved. The digest is
    written again when it was refused (and at least ``min_save_bytes`` were decoded) or
    after :data:`JOURNAL_REWRITE_BYTES` of new lines; a write refused is no error.

    Args:
        folder: the session folder.
        min_save_bytes: fewer journal bytes decoded than this write nothing.

    Returns:
        An empty digest for a missing journal; ``None`` when it cannot be read or is not a
        plain file (the caller reads it as before, and says why).
    """
    path = Path(folder) / JOURNAL
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return JournalDigest()
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        last = _LAST.get("last")
        if last is not None and last[0] == path and last[1] == _signature(st):
            return last[2]  # the same bytes: ``report`` asks from three sections
        resumed = _resumed(fd, st, read_state(folder, JOURNAL_DIGEST))
        digest, offset, crc = resumed if resumed is not None else (JournalDigest(), 0, 0)
        complete, cut = split_at_last_line_end(read_journal_span(fd, offset, st.st_size - offset))
        digest.feed(complete)
        if (resumed is None or len(complete) >= JOURNAL_REWRITE_BYTES) and len(complete) >= min_save_bytes:
            write_state(folder, JOURNAL_DIGEST, {
                "version": DIGEST_VERSION, "offset": offset + len(complete), "stat": _signature(st),
                "crc": zlib.crc32(complete, crc), "digest": digest.as_json()})
        if cut:
            digest = copy.deepcopy(digest).feed(cut)
        _LAST["last"] = (path, _signature(st), digest)
        return digest
    except OSError:
        return None
    finally:
        os.close(fd)


__all__ = ["DIGEST_MIN_SAVE_BYTES", "DIGEST_VERSION", "JournalDigest", "journal_digest", "row_facts_entry", "row_key"]
