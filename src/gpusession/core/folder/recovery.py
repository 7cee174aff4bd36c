"""Crash recovery of a session folder on reopen (S7, R7).

Why it exists: a crash, a kill or a power loss at any instant must leave a readable
session that loses at most the run in flight, and that run is recorded as an incident.
Who calls it: :meth:`gpusession.core.folder.session.Session.recover` (on every writable open).
It reads the journal as typed records (:mod:`gpusession.core.events`) and names runs
with :class:`gpusession.core.folder.journal.RunKey`. No textual, no torch.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from gpusession.core.events import (
    Event,
    ExperimentStartedRecord,
    IncidentRecord,
    LoadFinishedRecord,
    LoadStartedRecord,
    RunFinishedRecord,
    RunRecoveredRecord,
    RunStartedRecord,
)
from gpusession.core.events.reading import CUT_KIND, UNREADABLE_KIND, JournalRead, cut_run_start
from gpusession.core.experiment.plan import Experiment
from gpusession.core.experiment.record import UNKNOWN, record_words
from gpusession.core.files.errors import BadInput, GpusessionError
from gpusession.core.files.names import SESSION_TOML
from gpusession.core.files.safefile import write_private_bytes
from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import clean_stale_tmp
from gpusession.core.files.tomlread import read_toml
from gpusession.core.folder import journal
from gpusession.core.records.notefacts import Incident, Remark, RowFacts, notes_cell
from gpusession.core.records.results import ResultRow, ResultsFile
from gpusession.core.records.summary import UNFINISHED_KIND


class Recoverable(Protocol):
    """What recovery needs of a session (:class:`gpusession.core.folder.session.Session`)."""

    @property
    def folder(self) -> Path:
        """The session folder."""
        ...

    @property
    def journal_path(self) -> Path:
        """The session's ``journal.jsonl``."""
        ...

    @property
    def results(self) -> ResultsFile:
        """The session's results CSV (C1)."""
        ...

    def journal(self, event: str | Event, **fields: Any) -> None:
        """Append one record to the journal and fsync (S7).

        Args:
            event: a typed record, or the name of an untyped one.
            **fields: the untyped record's fields (only with a name).
        """
        ...

def cut_journal_line(path: Path) -> dict[str, Any] | None:
    """When the journal's last line was cut, what it still says (``{}`` if nothing useful).

    A cut ``run_started`` / ``load_started`` line still names its run
    (:func:`gpusession.core.events.reading.cut_run_start`), so the run in flight is
    recovered as an incident row like any other (S7); its :class:`RunKey` completes what
    the cut took. ``None`` when the journal ends cleanly.
    """
    if not path.exists() or path.stat().st_size == 0:
        return None
    raw = path.read_bytes()
    if raw.endswith(b"\n"):
        return None
    fields = cut_run_start(raw[raw.rfind(b"\n") + 1 :].decode("utf-8", errors="replace"))
    if not fields:
        return {}
    try:
        key = journal.RunKey.parse(str(fields["run_key"]))
    except BadInput:
        return fields
    fields.update(experiment_id=key.experiment_id, phase=key.phase, variant_id=key.variant_id,
                  run_index=key.run_index)
    return fields


#: Name prefix of a worker's spec file in ``runs/<experiment>/`` (``.worker-<name>.json``).
SPEC_PREFIX = ".worker-"


def remove_worker_specs(folder: Path) -> list[Path]:
    """Remove the worker spec files ``.worker-*.json`` left in ``folder``.

    A spec is the settings one worker group read at its start; once the group has ended
    it serves nothing (the journal and ``session.toml`` say what ran, and recovery reads
    only the journal), so the runner removes it then, and recovery removes the ones a
    crash left. Only plain files are removed: a link or a folder of that name is left
    as it is (a run refuses it before it measures).

    Args:
        folder: a ``runs/<experiment>`` folder (missing: nothing to do).

    Returns:
        The files removed.
    """
    removed: list[Path] = []
    if not folder.is_dir() or folder.is_symlink():
        return removed
    for spec in folder.glob(f"{SPEC_PREFIX}*.json"):
        if spec.is_symlink() or not spec.is_file():
            continue
        try:
            spec.unlink()
        except OSError:
            continue
        removed.append(spec)
    return removed


class _FinishedRuns:
    """The runs a journal records as finished, read only when first asked.

    A run is finished once ``run_finished`` (a load: ``load_finished``) names its run
    key: the runner writes and fsyncs the run's row before it journals that record.
    Items are ``(experiment_id, phase, variant_id, run_index)``, as in the results CSV.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._keys: set[tuple[str, str, str, int]] | None = None

    def __contains__(self, key: object) -> bool:
        if self._keys is None:
            self._keys = set()
            for rec in journal.read_records(self._path):
                if isinstance(rec, (RunFinishedRecord, LoadFinishedRecord)) and rec.run_key:
                    try:
                        k = journal.RunKey.parse(rec.run_key)
                    except BadInput:
                        continue
                    self._keys.add((k.experiment_id, k.phase, k.variant_id, k.run_index))
        return key in self._keys


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _repair_files(session: Recoverable) -> tuple[list[str], dict[str, Any] | None]:
    """Note a cut journal line, mend the CSV's last line, remove stale temporary files (S7).

    Returns:
        The incidents' sentences, and what a cut last journal line still says
        (:func:`cut_journal_line`).
    """
    incidents: list[str] = []
    path = session.journal_path
    cut_start = cut_journal_line(path)
    if cut_start is not None:  # the next append terminates the cut line first
        msg = f"the last line of {path.name} was cut (crash or full disk); it is kept as is"
        line = path.read_bytes().count(b"\n") + 1
        session.journal(IncidentRecord(kind=CUT_KIND, line=line, message=msg))
        incidents.append(msg)
    kept = session.results.complete_last_row(_FinishedRuns(path))
    if kept is not None:  # a hand edit dropped the newline of a complete row: nothing was lost
        kept_key = journal.RunKey(*kept).format()
        msg = (f"the last row of {session.results.path.name} (run {kept_key}, finished per the "
               "journal) had no final newline; the row is kept and the newline added")
        session.journal(IncidentRecord(kind="csv_newline_added", run_key=kept_key, message=msg))
    tail = session.results.recover_partial_tail()
    if tail is not None:
        csv_name = session.results.path.name
        keep = session.folder / f"{csv_name}.partial-{_stamp()}"
        write_private_bytes(keep, tail, sync=True)
        msg = f"incomplete last line of {csv_name} ({len(tail)} bytes) moved to {keep.name}"
        session.journal(IncidentRecord(kind="partial_csv_row", message=msg))
        incidents.append(msg)
    stale = clean_stale_tmp(session.folder)
    if stale:
        names = ", ".join(printable(str(p.relative_to(session.folder)), keep="") for p in stale[:5])
        more = f" and {len(stale) - 5} more" if len(stale) > 5 else ""
        msg = (f"{len(stale)} temporary file(s) left by an interrupted write removed "
               f"({names}{more}); the files they were for are unchanged")
        session.journal(IncidentRecord(kind="stale_temporary_file", message=msg))
        incidents.append(msg)
    return incidents, cut_start


def _say_unreadable(session: Recoverable, read: JournalRead) -> list[str]:
    """Say once each journal line that does not read: an incident naming its line (S7).

    A line an incident already names (this one, or the cut last line's) is not said again.

    Returns:
        The notes said ("unreadable journal line 7: ...").
    """
    said = {r.line for r in read.records if isinstance(r, IncidentRecord) and r.kind in (UNREADABLE_KIND, CUT_KIND)}
    out: list[str] = []
    for bad in read.unreadable:
        if bad.line not in said:
            session.journal(IncidentRecord(kind=UNREADABLE_KIND, line=bad.line, message=bad.note))
            out.append(bad.note)
    return out


def _open_runs(records: list[Event], cut_start: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Runs (and loads) started and never ended: ``{run key → where and when it started}``."""
    open_runs: dict[str, dict[str, Any]] = {}
    starts: dict[str, int] = {}  # a run measured again (run --resume) starts twice
    for rec in records:
        if isinstance(rec, (RunStartedRecord, LoadStartedRecord)):  # a load is timed too
            if rec.run_key:
                starts[rec.run_key] = starts.get(rec.run_key, 0) + 1
                open_runs[rec.run_key] = {
                    "at": rec.at, "experiment_id": rec.experiment_id, "variant_id": rec.variant_id,
                    "phase": rec.phase, "run_index": rec.run_index, "starts": starts[rec.run_key],
                }
        elif isinstance(rec, (RunFinishedRecord, LoadFinishedRecord, RunRecoveredRecord)):
            if rec.run_key:
                open_runs.pop(rec.run_key, None)
    if cut_start is not None and cut_start.get("run_key"):
        open_runs.setdefault(cut_start["run_key"], cut_start)
    return open_runs


def _recover_run(session: Recoverable, key: str, started: dict[str, Any],
                 in_csv: dict[tuple[Any, ...], int]) -> str:
    """Record the run ``key`` lost in flight: its incident row, unless its row was written (R7, S7).

    ``in_csv`` counts the rows of each run: a run started ``n`` times (measured again
    by ``run --resume`` after an earlier start was cut) has its row when it has ``n``.

    Returns:
        The sentence said for it.
    """
    run = (str(started.get("experiment_id")), str(started.get("phase")),
           str(started.get("variant_id")), started.get("run_index"))
    # its row was written; only the journal's end of it was lost
    if in_csv.get(run, 0) >= int(started.get("starts") or 1):
        note = ("run in flight when gpusession stopped; its row was written before the "
                "stop, so it is kept as measured and no incident row is added")
        session.journal(RunRecoveredRecord(run_key=key, message=note))
        return f"run {key}: {note}"
    facts = RowFacts(incidents=(Incident("run_lost", str(started.get("at"))),),
                     remarks=(Remark("record", lost_run_record(session, started.get("experiment_id"))),))
    note = notes_cell(facts) or ""
    session.results.append(
        ResultRow(
            experiment_id=started.get("experiment_id"),
            variant_id=started.get("variant_id"),
            phase=started.get("phase"),
            run_index=started.get("run_index"),
            # no corpus was validated (a load validates none, a cut run's output never
            # was): the cell stays empty, never false (C3)
            notes=note,
        )
    )
    session.journal(RunRecoveredRecord(run_key=key, message=note, **facts.record_fields()))
    session.journal(IncidentRecord(kind="run_lost", run_key=key, message=note))
    return f"run {key}: {note}"


def lost_run_record(session: Recoverable, experiment_id: Any) -> str:
    """The record at the end of a lost run's incident row, as every row ends (seed §2, §4).

    From the experiment as ``session.toml`` defines it and the code revision its last
    worker observed (``experiments.<id>.environment.code_revision``); an experiment no
    longer defined or a ``session.toml`` that does not read gives ``scope=unknown;
    code=unknown; tolerance=unknown (…)`` (recovery never fails on it).
    """
    try:
        table = read_toml(session.folder / SESSION_TOML).get("experiments", {}).get(str(experiment_id))
        exp = Experiment.from_toml(str(experiment_id), table)
        env = table.get("environment")
        code = env.get("code_revision") if isinstance(env, dict) else None
        return record_words(exp, code if isinstance(code, str) else None)
    except (OSError, GpusessionError, AttributeError, TypeError, ValueError):
        return (f"scope={UNKNOWN}; code={UNKNOWN}; tolerance={UNKNOWN} "
                "(the experiment is not defined in session.toml)")


def recover_locked(session: Recoverable) -> list[str]:
    """Recover what a crash left in ``session``'s folder; the caller holds the folder lock.

    * A cut last journal line is noted (kept as is; the next record starts a new line),
      and each other journal line that does not read is said once (its number and why).
    * A last line of the results CSV without its newline is kept (the newline added,
      noted in the journal) when it is a full row of the 38 columns whose run the
      journal records as finished (a hand edit). Any other incomplete last line is cut
      off, kept in ``resultats-bruts.csv.partial-<time>`` and noted.
    * Temporary files of interrupted atomic writes (``.<name>.<random>.tmp``) are
      removed and noted.
    * Once no live process holds the run lock: worker spec files
      (``runs/<experiment>/.worker-*.json``) are removed (they serve nothing after their
      group); a run with ``run_started`` (a worker load: ``load_started``) and no
      ``run_finished`` (``load_finished``, ``run_recovered``) gets a row (elapsed empty,
      ``corpus_accepted`` empty: no corpus was validated; the incident in ``notes``, R7)
      and an ``incident`` record -- unless the results CSV already holds that run's row
      (the crash came between the row and the journal's end of it): then only
      ``run_recovered`` is journaled, so a run is in the CSV exactly once, as a
      measurement or as an incident, never both; the newest invocation of an experiment
      that has no end record gets one ``incident`` saying how far it got
      (:func:`unfinished_invocations`); the stale lock is removed.

    Returns:
        One sentence per incident recovered.
    """
    incidents, cut_start = _repair_files(session)
    read = journal.read_all(session.journal_path)
    incidents += _say_unreadable(session, read)
    if journal.lock_holder(session.folder) is not None:
        return incidents
    runs = session.folder / "runs"
    if runs.is_dir() and not runs.is_symlink():  # no run is alive: its specs serve nothing
        for exp_dir in runs.iterdir():
            remove_worker_specs(exp_dir)
    killed = (session.folder / journal.RUN_LOCK).exists()  # a stale lock: no `finally` ran
    records = read.records
    open_runs = _open_runs(records, cut_start)
    in_csv = session.results.run_key_counts() if open_runs else {}
    for key, started in open_runs.items():
        incidents.append(_recover_run(session, key, started, in_csv))
    for exp_id, msg in unfinished_invocations(records, killed=killed):
        session.journal(IncidentRecord(kind=UNFINISHED_KIND, experiment_id=exp_id, message=msg))
        incidents.append(msg)
    journal.release_lock(session.folder)
    return incidents


def unfinished_invocations(records: list[Event], *, killed: bool) -> list[tuple[str, str]]:
    """The newest invocation of each experiment that has no end record, not yet said (S7).

    Only for a journal whose runner is gone (no live process holds the run lock): its
    newest ``experiment_started`` is followed by no ``experiment_finished`` /
    ``experiment_incomplete`` (:func:`gpusession.core.folder.journal.run_progress`), and no
    :data:`UNFINISHED_KIND` incident names it after that start, so each is said once.

    Args:
        records: the journal's typed records, oldest first.
        killed: whether the runner left its lock (it was killed: no clean-up ran).

    Returns:
        ``(experiment_id, sentence)`` per such invocation, e.g. "the run of e started at
        … ended without finishing: 2 of 10 runs done (its process was killed …)".
    """
    started: dict[str, None] = {}  # experiments, in the order they first started
    said: set[str] = set()  # an UNFINISHED_KIND incident follows the newest start
    for rec in records:
        if isinstance(rec, ExperimentStartedRecord) and rec.experiment_id:
            started.setdefault(rec.experiment_id)
            said.discard(rec.experiment_id)
        elif isinstance(rec, IncidentRecord) and rec.kind == UNFINISHED_KIND and rec.experiment_id:
            said.add(rec.experiment_id)
    how = ("its process was killed or the machine stopped" if killed
           else "its process stopped without recording its end")
    out: list[tuple[str, str]] = []
    for exp_id in started:
        progress = journal.run_progress(records, exp_id)
        if exp_id in said or progress is None or progress.ended:
            continue
        out.append((exp_id, f"the run of {exp_id} started at {progress.started_at} ended without "
                            f"finishing: {progress.runs_done} of {progress.runs_scheduled} runs done ({how})"))
    return out


__all__ = [
    "SPEC_PREFIX", "UNFINISHED_KIND", "Recoverable", "cut_journal_line", "recover_locked",
    "remove_worker_specs", "unfinished_invocations",
]
