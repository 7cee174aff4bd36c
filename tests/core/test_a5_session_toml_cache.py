"""Opening a month-long session does not parse an unchanged ``session.toml`` again (A5, H-47, H-78).

``read_session_toml`` keeps the checked document in the sealed ``session-toml.json``
under the SHA-256 of the bytes it was read from (from 64 KiB): the next process finds it
and neither parses nor checks the file again. Work is bounded by counting the parses
(``tomlread.loads_toml``, behind every strict TOML read) and the free-text checks, never
by a stopwatch (A6). A hand edit of any byte is a new digest (read and checked as before),
a forged state reads as absent, and a small session is left without one.
"""

from __future__ import annotations

import hmac
import json
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import write_corpus
from helpers import cli, digest

from gpusession.core.experiment.plan import Experiment
from gpusession.core.files import tomlio, tomlread
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import HIDDEN
from gpusession.core.folder import caches
from gpusession.core.folder import session_toml as session_module
from gpusession.core.folder.caches import SESSION_TOML_STATE, SESSION_TOML_STATE_MIN_BYTES
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

#: Experiments of the large session (about 140 KB of ``session.toml``).
EXPERIMENTS = 300
#: A private key a person pastes by hand (64 hex digits), and the value it replaces, of its length.
HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
PLAIN = "p" * len(HEX_KEY)


def _month(s: Session) -> None:
    """``EXPERIMENTS`` experiments (copies of one definition), written in one update."""
    corpus = write_corpus(s.folder / "corpus" / "eval.jsonl", n=4)
    define_experiment(s, Experiment(
        id="e", workload="fake_workloads:Echo", corpus=str(corpus.relative_to(s.folder)),
        varied="batch", values=(1, 2), runs_per_variant=2, warmup_iterations=0,
        cold_runs_per_variant=0, device="cpu", params={"token": PLAIN},
    ))

    def copies(doc: dict[str, Any]) -> None:
        table = doc["experiments"]
        for k in range(EXPERIMENTS - 1):
            table[f"old-{k:03d}"] = dict(table["e"])

    s.update(copies)
    assert s.session_toml.stat().st_size > SESSION_TOML_STATE_MIN_BYTES


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Parses of ``session.toml`` and free-text checks of its document, counted."""
    got = {"parses": 0, "checks": 0}
    real_parse, real_mask = tomlread.loads_toml, session_module.mask_free_text

    def parse(text: str, path: Path, **kw: Any) -> dict[str, Any]:
        if Path(path).name == "session.toml":
            got["parses"] += 1
        return real_parse(text, path, **kw)

    def mask(doc: Any, file: Path | str | None = None) -> tuple[Any, list[str]]:
        got["checks"] += 1
        return real_mask(doc, file)

    monkeypatch.setattr(tomlread, "loads_toml", parse)
    monkeypatch.setattr(session_module, "mask_free_text", mask)
    return got


def _fresh_open(s: Session) -> Session:
    """``Session.open`` as a new process does it: nothing kept in memory."""
    session_module.SESSION_DOCS.clear()
    return Session.open(s.folder.parent, s.name, recover=False)


def test_a5_opening_twice_parses_session_toml_once(session: Session, work: dict[str, int]) -> None:
    _month(session)
    (session.folder / SESSION_TOML_STATE).unlink()  # as a session written before the state
    work.update(parses=0, checks=0)
    first = _fresh_open(session)
    assert work["parses"] == 1 and work["checks"] == 1
    assert (session.folder / SESSION_TOML_STATE).exists()  # the first open kept it
    second = _fresh_open(session)
    assert work["parses"] == 1 and work["checks"] == 1  # ... and the second read it
    assert second.data == first.data and len(second.data["experiments"]) == EXPERIMENTS
    assert second.data["created_at"] == first.data["created_at"]
    second.data["experiments"].clear()  # the caller's own copy
    assert len(_fresh_open(session).data["experiments"]) == EXPERIMENTS
    assert work["parses"] == 1


def test_a5_a_writer_keeps_the_state_for_the_next_open(session: Session, work: dict[str, int]) -> None:
    _month(session)
    session.update(lambda doc: doc["package"].__setitem__("lots", 2))
    work.update(parses=0, checks=0)
    assert _fresh_open(session).data["package"]["lots"] == 2
    assert work["parses"] == 0


def test_h47_a_same_size_hand_edit_is_read_and_checked(session: Session, work: dict[str, int]) -> None:
    _month(session)
    path = session.session_toml
    text = path.read_text("utf-8")
    size = path.stat().st_size
    path.write_text(text.replace(f'token = "{PLAIN}"', f'token = "{HEX_KEY}"', 1), "utf-8")
    assert path.stat().st_size == size
    work.update(parses=0, checks=0)
    s = _fresh_open(session)
    assert work["parses"] == 1 and work["checks"] == 1  # a new digest: read and checked in full
    hidden = [t for t in s.data["experiments"].values() if t["params"]["token"] == HIDDEN]
    assert len(hidden) == 1 and HEX_KEY not in json.dumps(s.data, default=str)
    warning = s.hidden["session.toml"]
    assert len(warning) == 1 and "params.token: hidden, it looked like a private key" in warning[0]
    again = _fresh_open(session)  # from the state: the same document and the same warning
    assert work["parses"] == 1
    assert again.data == s.data and again.hidden["session.toml"] == warning
    assert HEX_KEY not in (session.folder / SESSION_TOML_STATE).read_text("utf-8")
    path.write_text(text.replace("lots = 1\n", "lots = x\n"), "utf-8")  # same size, not TOML
    with pytest.raises(BadInput, match="session.toml"):
        _fresh_open(session)


def test_h78_a_forged_state_reads_as_absent(session: Session, work: dict[str, int]) -> None:
    _month(session)
    state_path = session.folder / SESSION_TOML_STATE
    state = json.loads(state_path.read_text("utf-8"))
    state["doc"]["package"]["lots"] = 5
    state.pop("check")
    canon = caches._canon(state | {"schema": 1})
    state["check"] = "hmac-sha256:" + hmac.new(b"\0" * 32, canon, "sha256").hexdigest()  # a guessed key
    state_path.write_text(json.dumps(state), "utf-8")
    work.update(parses=0, checks=0)
    s = _fresh_open(session)
    assert work["parses"] == 1  # read as absent: parsed and checked
    assert s.data["package"]["lots"] == 1
    assert caches.read_state(session.folder, SESSION_TOML_STATE) is not None  # written again


def test_a5_a_small_session_writes_no_state(capsys: pytest.CaptureFixture[str], session: Session) -> None:
    before = digest(session.folder)
    _fresh_open(session)
    code, _, _ = cli(capsys, session.folder.parent, "package", session.name, "--lots", "0")
    assert code == 2
    assert digest(session.folder) == before
    session.update(lambda doc: doc["package"].__setitem__("lots", 2))
    assert not (session.folder / SESSION_TOML_STATE).exists()


def test_a5_a_session_renamed_names_its_own_path_in_the_warnings(
        session: Session, work: dict[str, int]) -> None:
    _month(session)
    path = session.session_toml
    path.write_text(path.read_text("utf-8").replace(f'token = "{PLAIN}"', f'token = "{HEX_KEY}"', 1), "utf-8")
    _fresh_open(session)  # keeps the state
    moved = session.folder.rename(session.folder.parent / "moved")
    work.update(parses=0)
    s = Session.open(moved.parent, "moved", recover=False)
    assert work["parses"] == 0
    assert s.hidden["session.toml"][0].startswith(f"{moved / 'session.toml'}: ")


def test_a5_toml_values_round_trip_through_the_state() -> None:
    doc = {"at": datetime(2026, 11, 29, 14, tzinfo=timezone.utc), "day": date(2026, 11, 29),
           "t": time(14, 0, 1, 5), "local": datetime(2026, 11, 29, 14),
           "odd": {"$date": "2026-11-29"}, "odder": {"$table": {"$time": "x"}},
           "list": [{"$datetime": "not a date"}, 1.5, float("inf"), -0.0, 2**62, True, "s"]}
    back = caches.from_json_value(json.loads(json.dumps(caches.to_json_value(doc))))
    assert back == doc
    assert back["odd"] == {"$date": "2026-11-29"}  # a table a person wrote, never a date


def test_s6_the_state_is_no_sign_of_use() -> None:
    assert caches.is_state_file(SESSION_TOML_STATE) and caches.is_state_file(".session-toml.json.0a1b2c.tmp")
    assert not caches.is_state_file("session.toml")


def test_h47_a_state_made_by_other_checking_code_is_read_again(
        session: Session, work: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    core = Path(caches.__file__).resolve().parent.parent
    assert all((core / name).is_file() for name in caches.CHECKER_SOURCES)  # a module moved: named here
    _month(session)
    monkeypatch.setattr(caches, "checker_fingerprint", lambda: "sha256:" + "0" * 64)  # an upgrade
    work.update(parses=0, checks=0)
    _fresh_open(session)
    assert work["parses"] == 1 and work["checks"] == 1
    _fresh_open(session)
    assert work["parses"] == 1  # kept again under the new code


def test_h39_a_state_nested_past_any_bound_reads_as_absent(session: Session, work: dict[str, int]) -> None:
    _month(session)
    (session.folder / SESSION_TOML_STATE).write_text("[" * 1_000_000 + "]" * 1_000_000, "utf-8")
    assert caches.read_state(session.folder, SESSION_TOML_STATE) is None
    work.update(parses=0)
    assert len(_fresh_open(session).data["experiments"]) == EXPERIMENTS
    assert work["parses"] == 1


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Per free-text check of ``session.toml``'s writer, the experiments in the document checked."""
    seen: list[int] = []
    real = session_module.check_free_text

    def check(doc: Any, file: Path | str | None, **kw: Any) -> None:
        seen.append(len(doc.get("experiments", {})) if isinstance(doc, dict) else 0)
        real(doc, file, **kw)

    monkeypatch.setattr(session_module, "check_free_text", check)
    monkeypatch.setattr(tomlio, "check_free_text", check)  # the whole document's writer
    return seen


def test_a5_a_write_checks_the_experiment_that_changed_not_the_others(
        session: Session, checked: list[int], work: dict[str, int]) -> None:
    _month(session)
    checked.clear()
    work.update(parses=0, checks=0)
    session.update(lambda doc: doc["experiments"]["old-007"].__setitem__("runs_per_variant", 3))
    assert sum(checked) == 1  # the top level (no experiment) and the one experiment changed
    session.update(lambda doc: doc["experiments"].__setitem__("new", dict(doc["experiments"]["e"])))
    assert sum(checked) == 2
    text = session.session_toml.read_text("utf-8")
    back = tomlread.tomllib.loads(text)  # the file is one TOML document: the parts compose
    assert back["experiments"]["old-007"]["runs_per_variant"] == 3 and len(back["experiments"]) == EXPERIMENTS + 1
    assert list(back["experiments"]) == list(session.data["experiments"])  # in their order
    (session.folder / SESSION_TOML_STATE).unlink()
    fresh = _fresh_open(session)  # parsed and checked whole by the reader
    assert fresh.data == session.data and fresh.hidden["session.toml"] == []


def test_a4_a_changed_experiment_its_reader_refuses_is_not_written(session: Session) -> None:
    _month(session)
    before = digest(session.folder)
    with pytest.raises(BadInput, match="run_timeout_s.*nothing was written"):
        session.update(lambda doc: doc["experiments"]["old-007"].__setitem__("run_timeout_s", 10**9))
    with pytest.raises(BadInput, match="nothing was written"):  # a key pasted into a changed experiment
        session.update(lambda doc: doc["experiments"]["old-008"]["params"].__setitem__("token", HEX_KEY))
    with pytest.raises(BadInput, match="nothing was written"):  # ... or at the top level
        session.update(lambda doc: doc.__setitem__("note", HEX_KEY))
    assert digest(session.folder) == before


def test_h47_after_a_hand_edit_the_next_write_checks_the_whole_document(
        session: Session, checked: list[int]) -> None:
    _month(session)
    path = session.session_toml
    path.write_text(path.read_text("utf-8").replace("lots = 1\n", "lots = 2\n"), "utf-8")
    s = _fresh_open(session)  # read by the reader: its experiments passed no writer's check
    checked.clear()
    s.update(lambda doc: doc["experiments"]["old-007"].__setitem__("runs_per_variant", 3))
    assert checked == [EXPERIMENTS]  # the whole document, once
    checked.clear()
    s.update(lambda doc: doc["experiments"]["old-008"].__setitem__("runs_per_variant", 3))
    assert sum(checked) == 1  # what it wrote is its own again
    checked.clear()
    _fresh_open(session).update(lambda doc: doc["package"].__setitem__("lots", 3))
    assert sum(checked) == 0  # ... across processes too (the sealed state says so)


def test_a5_an_open_from_the_state_copies_the_document_once(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """The open hands its conversion of the state to the caller and keeps the state's JSON
    form: no second copy until the same process reads the file again, and that read's
    document is the caller's own too."""
    _month(session)
    copies = {"own_copy": 0, "converted": 0}
    real_copy, real_convert = session_module.own_copy, session_module.from_json_value

    def own_copy(value: Any) -> Any:  # recursive: the whole document's copies are counted
        copies["own_copy"] += isinstance(value, dict) and "created_at" in value
        return real_copy(value)

    def convert(value: Any) -> Any:
        copies["converted"] += isinstance(value, dict) and "created_at" in value
        return real_convert(value)

    monkeypatch.setattr(session_module, "own_copy", own_copy)
    monkeypatch.setattr(session_module, "from_json_value", convert)
    first = _fresh_open(session)
    assert copies == {"own_copy": 0, "converted": 0}  # the state's one conversion is the caller's
    first.data["experiments"].clear()  # the caller's own: nothing kept is changed
    again, _ = session_module.read_session_toml(session.session_toml)
    assert copies == {"own_copy": 1, "converted": 1}
    assert len(again["experiments"]) == EXPERIMENTS
    again["experiments"].clear()
    third, _ = session_module.read_session_toml(session.session_toml)
    assert len(third["experiments"]) == EXPERIMENTS and copies == {"own_copy": 2, "converted": 1}
