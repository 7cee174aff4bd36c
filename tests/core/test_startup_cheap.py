"""What opening a session does cheaply, and gives the same results.

``Session.needs_recovery`` decides without the typed events whether crash recovery has
work; when it says no, ``recover_locked`` must find nothing to do. The seed-phrase check
loads the BIP-39 lists only for text that could hold 12 wordlist words in a row.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import NewSession

from gpusession.core.files import secrets
from gpusession.core.folder.recovery import SPEC_PREFIX
from gpusession.core.folder.session import Session
from gpusession.core.records.results import ResultRow


def _clean(s: Session) -> None:
    pass


def _finished_run(s: Session) -> None:
    s.journal("run_started", run_key="e/v/warm/0", experiment_id="e", variant_id="v", phase="warm", run_index=0)
    s.journal("run_finished", run_key="e/v/warm/0")


def _finished_load(s: Session) -> None:
    s.journal("load_started", run_key="e/v/load/0", experiment_id="e", variant_id="v", phase="load", run_index=0)
    s.journal("load_finished", run_key="e/v/load/0", ok=True)


def _run_in_flight(s: Session) -> None:
    _finished_run(s)
    s.journal("run_started", run_key="e/v/warm/1", experiment_id="e", variant_id="v", phase="warm", run_index=1)


def _load_in_flight(s: Session) -> None:
    s.journal("load_started", run_key="e/v/load/0", experiment_id="e", variant_id="v", phase="load", run_index=0)


def _stale_lock(s: Session) -> None:
    _finished_run(s)
    (s.folder / ".run.lock").write_text("999999999")  # a dead PID


def _cut_journal(s: Session) -> None:
    _finished_run(s)
    with open(s.journal_path, "ab") as fh:
        fh.write(b'{"event": "run_started", "run_key": "e/v/warm/1", "at": "2026')


def _cut_csv(s: Session) -> None:
    s.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", elapsed_seconds=1.0))
    with open(s.results.path, "ab") as fh:
        fh.write(b"e,v,,,,,,,,,,,,,,,warm,1")  # a crash in the middle of a row


def _leftover_tmp(s: Session) -> None:
    tmp = s.folder / ".order.toml.abc123.tmp"
    tmp.write_text("half")
    old = tmp.stat().st_mtime - 60
    os.utime(tmp, (old, old))


def _leftover_worker_spec(s: Session) -> None:
    _finished_run(s)
    exp = s.folder / "runs" / "e"
    exp.mkdir(parents=True)
    (exp / f"{SPEC_PREFIX}0.json").write_text("{}")


def _invocation_never_ended(s: Session) -> None:
    """The runner stopped (killed in its warm-up, or after releasing its lock) with no end record."""
    s.journal("experiment_started", experiment_id="e", runs=["warm:v:1", "warm:v:2"])
    _finished_run(s)


def _invocation_ended(s: Session) -> None:
    _invocation_never_ended(s)
    s.journal("experiment_finished", experiment_id="e", runs_done=2, runs_scheduled=2)


CASES: dict[str, tuple[Callable[[Session], None], bool]] = {
    "invocation never ended": (_invocation_never_ended, True),
    "invocation ended": (_invocation_ended, False),
    "clean": (_clean, False),
    "finished run": (_finished_run, False),
    "finished load": (_finished_load, False),
    "run in flight": (_run_in_flight, True),
    "load in flight": (_load_in_flight, True),
    "stale lock": (_stale_lock, True),
    "cut journal line": (_cut_journal, True),
    "cut csv row": (_cut_csv, True),
    "leftover temporary file": (_leftover_tmp, True),
    "leftover worker spec": (_leftover_worker_spec, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_s7_needs_recovery_says_no_only_when_recovery_finds_nothing(
    case: str, sessions_root: Path, new_session: NewSession
) -> None:
    setup, expected = CASES[case]
    s = new_session("t1")
    setup(s)
    reopened = Session.open(sessions_root, "t1", recover=False)
    assert reopened.needs_recovery() is expected
    recovered = reopened.recover()
    if not expected:
        assert recovered == [] and not list(s.folder.rglob(f"{SPEC_PREFIX}*"))
    else:
        # what recovery left needs nothing more
        assert Session.open(sessions_root, "t1", recover=False).needs_recovery() is False


def test_s7_open_recovers_a_run_in_flight_after_the_cheap_check(sessions_root: Path, new_session: NewSession) -> None:
    s = new_session("t1")
    _run_in_flight(s)
    reopened = Session.open(sessions_root, "t1")
    assert len(reopened.recovered) == 1 and reopened.results.read().height == 1


def test_seed_list_lengths_and_stop_words_match_the_lists() -> None:
    from gpusession.core.files import detectors

    words = [w for lst in detectors.seed_wordlists().values() for w in lst]
    ascii_lengths = [len(w) for w in words if w.isascii()]
    assert (min(ascii_lengths), max(ascii_lengths)) == detectors.SEED_ASCII_LENGTHS
    assert max(len(w) for w in words if not w.isascii()) == detectors.SEED_OTHER_MAX_LENGTH
    assert detectors.NOT_SEED_WORDS.isdisjoint(words)
    assert all(detectors.NOT_SEED_WORDS.isdisjoint(p) for p in detectors.prefixes().values())


def test_prose_does_not_load_the_wordlists_and_a_phrase_is_still_found() -> None:
    secrets.bip39_wordlists.cache_clear()
    prose = ("Check that the GPU is visible with nvidia-smi before you start any run, then "
             "copy the results home and verify the copy; it is the last step of the day.")
    doc, warnings = secrets.mask_free_text({"note": prose})
    assert doc == {"note": prose} and warnings == []
    assert secrets.bip39_wordlists.cache_info().currsize == 0
    phrase = ("abandon ability able about above absent absorb abstract absurd abuse access "
              "accident")
    doc, warnings = secrets.mask_free_text({"note": phrase})
    assert doc == {"note": secrets.HIDDEN} and len(warnings) == 1
    assert "seed phrase" in warnings[0]
