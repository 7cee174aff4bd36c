"""The unit fixed once (S8), accepted by a rule or a named person (S9), one source for the count (S10)."""

from __future__ import annotations

import json
import os
import unicodedata
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gpusession.core.events.deliverable_records import DeliverableDecidedRecord, UnitSetRecord
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.approvals import decide, file_states, load_approvals
from gpusession.core.folder.session import Session
from gpusession.core.folder.unit import DEFAULT_UNIT, FIXED_WORDS, check_unit, set_unit, unit_of
from gpusession.core.money.count import APPROVED, CORPORA, cached_words, cost_line, session_count
from gpusession.core.validation.accept_rule import (
    AcceptReport,
    accept_protocol,
    check_format,
    check_names,
    read_expected_names,
    reason_line,
    rule_of,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def _visuals(folder: Path, n: int = 18) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(1, n + 1):
        p = folder / f"visual-{i:02d}.png"
        p.write_bytes(PNG + bytes([i]))
        out.append(p)
    return out


# -- S8: the unit fixed once ---------------------------------------------------------------
def test_s8_a_session_without_a_unit_keeps_the_accepted_corpus(session: Session) -> None:
    assert unit_of(session.data) == DEFAULT_UNIT
    assert DEFAULT_UNIT.words(2) == "2 accepted corpora" and DEFAULT_UNIT.words(1) == "1 accepted corpus"


def test_s8_the_unit_is_stored_with_its_plural_and_journaled(session: Session) -> None:
    unit, changed = set_unit(session, "visual", expected_count=18)
    assert changed and unit.words(18) == "18 visuals" and unit.words(1) == "1 visual"
    session.reload()
    assert unit_of(session.data).expected_count == 18
    unit, _ = set_unit(session, "analysis", plural="analyses")
    assert unit.words(3) == "3 analyses"
    records = [r for r in session.journal_records() if isinstance(r, UnitSetRecord)]
    assert [r.unit for r in records] == ["visual", "analysis"]


@pytest.mark.parametrize("bad", ["", "   ", "a\x1bb", "x" * 41, "visual;rm", "two  spaces"])
def test_s8_a_unit_is_a_short_noun(bad: str) -> None:
    with pytest.raises(BadInput, match="short noun"):
        check_unit(bad)


def test_s8_the_unit_is_refused_once_something_is_approved_unless_forced(session: Session, tmp_path: Path) -> None:
    set_unit(session, "visual")
    files = _visuals(tmp_path / "out", 2)
    decide(session, files[:1], decision="approved", by="Ana")
    before = (session.folder / "session.toml").read_bytes()
    with pytest.raises(BadInput) as exc:
        set_unit(session, "figure")
    assert exc.value.message == FIXED_WORDS
    assert (session.folder / "session.toml").read_bytes() == before  # nothing written
    unit, changed = set_unit(session, "figure", force_note="the client calls them figures")
    assert changed and unit.singular == "figure"
    last = [r for r in session.journal_records() if isinstance(r, UnitSetRecord)][-1]
    assert last.forced and last.note == "the client calls them figures" and last.previous == "visual"
    # the expected count alone may still change
    unit, _ = set_unit(session, None, expected_count=20)
    assert unit.singular == "figure" and unit.expected_count == 20


# -- S9: accepted by a rule ----------------------------------------------------------------
def test_s9_expected_names_follow_the_id_rules(tmp_path: Path) -> None:
    f = tmp_path / "expected.txt"
    f.write_text("a.png\nb.png\n\n\n")
    assert read_expected_names(f) == ["a.png", "b.png"]  # empty lines at the end ignored
    f.write_text("a.png\n\nb.png\n")
    with pytest.raises(BadInput, match="empty line") as exc:
        read_expected_names(f)
    assert exc.value.line == 2
    f.write_text("café.png\n" + unicodedata.normalize("NFD", "café.png") + "\n")
    with pytest.raises(BadInput, match="another Unicode form") as exc:
        read_expected_names(f)
    assert exc.value.line == 2
    f.write_text("../x.png\n")
    with pytest.raises(BadInput, match="inside the output folder"):
        read_expected_names(f)


def test_s9_missing_extra_and_normalization_duplicates_are_named(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _visuals(out, 3)
    (out / "notes.txt").write_text("x")
    expected = ["visual-01.png", "visual-02.png", "visual-03.png", "visual-04.png"]
    check = check_names(out, expected)
    assert not check.ok and check.missing == ("visual-04.png",) and check.extra == ("notes.txt",)
    assert "1 missing ('visual-04.png')" in check.words() and "1 extra ('notes.txt')" in check.words()
    # two forms of one name on disk: one name twice (H-16 applied to file names)
    (out / "notes.txt").unlink()
    (out / "visual-04.png").write_bytes(PNG)
    (out / unicodedata.normalize("NFC", "é.png")).write_bytes(PNG)
    (out / unicodedata.normalize("NFD", "é.png")).write_bytes(PNG)
    if len(os.listdir(out)) == 6:  # a file system that keeps both forms
        check = check_names(out, [*expected, "é.png"])
        assert check.duplicates and not check.ok


def test_s9_formats_are_checked_by_their_bytes(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(PNG)
    (tmp_path / "b.png").write_bytes(b"GIF89a")
    assert check_format(tmp_path, ["a.png", "b.png"], "png") == ["b.png: does not start like a PNG file"]
    (tmp_path / "c.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    (tmp_path / "d.svg").write_text("<html/>")
    (tmp_path / "e.json").write_text("{")
    problems = check_format(tmp_path, ["c.svg", "d.svg"], "svg") + check_format(tmp_path, ["e.json"], "json")
    assert problems[0].startswith("d.svg: the root element is html") and problems[1].startswith("e.json: not JSON")


def test_s9_the_reason_is_masked_escaped_and_short() -> None:
    assert reason_line(b"ok: 18 visuals\nsecond line") == "ok: 18 visuals"
    assert "\x1b" not in reason_line(b"bad \x1b[31m red")
    assert len(reason_line(b"x" * 500)) == 200
    key = b"-----BEGIN OPENSSH PRIVATE KEY-----"
    assert "HIDDEN" in reason_line(b"leaked " + key + b" abc") or key.decode() not in reason_line(key)


def test_s9_an_accept_rule_never_mixes_with_classes() -> None:
    with pytest.raises(BadInput, match="never both"):
        accept_protocol(accept="python3 check.py {output}", expected_outputs=None, deliverable_format=None,
                        classification={"classes": "a,b"})
    proto = accept_protocol(accept="python3 check.py {output}", expected_outputs="e.txt", deliverable_format="png")
    rule = rule_of(proto)
    assert rule is not None and rule.argv == ("python3", "check.py", "{output}") and rule.timeout_s == 60
    assert rule_of({"classes": ["a"]}) is None


def test_s9_a_rejected_output_fills_the_seed_columns(tmp_path: Path) -> None:
    names = check_names(tmp_path, [])
    report = AcceptReport(str(tmp_path), names, verdict="rejected", reason="text cut")
    fields = report.row_fields()
    assert fields["quality_metric"] == "accept-rule" and fields["corpus_accepted"] is False
    assert "rejected by the accept rule: text cut" in (report.defect_words() or "")
    assert report.note() == "accept rule: rejected (text cut)"


# -- S9: accepted by a person --------------------------------------------------------------
def test_s9_a_decision_keeps_the_digest_who_and_when(session: Session, tmp_path: Path) -> None:
    files = _visuals(tmp_path / "out", 2)
    at = datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc)
    decide(session, files, decision="approved", by="Ana Reviewer", text="readable", now=at)
    stored = load_approvals(session)
    assert set(stored) == {"visual-01.png", "visual-02.png"}
    d = stored["visual-01.png"]
    assert d.by == "Ana Reviewer" and d.at == at and d.text == "readable" and len(d.sha256) == 64
    assert oct((session.folder / "approvals.toml").stat().st_mode & 0o777) == "0o600"
    assert [r.path for r in session.journal_records() if isinstance(r, DeliverableDecidedRecord)] == [
        "visual-01.png", "visual-02.png"]


def test_s9_a_rejection_needs_a_reason_and_a_file_outside_is_refused(session: Session, tmp_path: Path) -> None:
    files = _visuals(tmp_path / "out", 1)
    with pytest.raises(BadInput, match="--why"):
        decide(session, files, decision="rejected", by="Ana")
    with pytest.raises(BadInput, match="technical files"):
        decide(session, [session.folder / "session.toml"], decision="approved", by="Ana",
               deliverables=session.folder.parent)
    decide(session, files, decision="approved", by="Ana")
    other = _visuals(tmp_path / "elsewhere", 1)
    with pytest.raises(BadInput, match="relative to"):
        decide(session, other, decision="approved", by="Ana", deliverables=tmp_path / "elsewhere")
    with pytest.raises(BadInput, match="not inside"):
        decide(session, other, decision="approved", by="Ana")


def test_s9_a_secret_in_the_criteria_is_refused_and_nothing_written(session: Session, tmp_path: Path) -> None:
    files = _visuals(tmp_path / "out", 1)
    with pytest.raises(BadInput, match="refused"):
        decide(session, files, decision="approved", by="Ana",
               text="abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon "
                    "abandon about")
    assert not (session.folder / "approvals.toml").exists()


# -- S10: one source for the count ---------------------------------------------------------
def test_s10_eighteen_approved_give_3_06_per_visual_and_a_rejected_one_3_24(session: Session, tmp_path: Path) -> None:
    set_unit(session, "visual", expected_count=18)
    files = _visuals(tmp_path / "out")
    decide(session, files, decision="approved", by="Ana")
    count = session_count(session)
    assert (count.n, count.source) == (18, APPROVED)
    assert cost_line(5500, count) == "55.00 USD ÷ 18 approved visuals = 3.06 USD per visual"
    decide(session, files[-1:], decision="rejected", by="Ana", text="bars cut")
    assert cost_line(5500, session_count(session)) == "55.00 USD ÷ 17 approved visuals = 3.24 USD per visual"


def test_s10_a_file_edited_after_its_approval_is_not_counted_and_is_named(session: Session, tmp_path: Path) -> None:
    set_unit(session, "visual")
    files = _visuals(tmp_path / "out", 3)
    decide(session, files, decision="approved", by="Ana")
    with open(files[1], "ab") as fh:
        fh.write(b"edited")
    count = session_count(session)
    assert count.n == 2
    assert any("visual-02.png  changed after approval on" in w for w in count.not_counted)
    states = {s.path: s.state for s in file_states(session)}
    assert states["visual-02.png"] == "changed"


def test_s10_identical_files_count_once(session: Session, tmp_path: Path) -> None:
    set_unit(session, "visual")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("a.png", "b.png"):
        (out / name).write_bytes(PNG)  # the same bytes twice: one deliverable
    decide(session, [out / "a.png", out / "b.png"], decision="approved", by="Ana")
    assert session_count(session).n == 1


def test_s10_nothing_approved_gives_the_package_cost_only(session: Session, tmp_path: Path) -> None:
    """A measured zero is said as one (C3): ``0 approved visuals``, never "yet"."""
    set_unit(session, "visual")
    files = _visuals(tmp_path / "out", 1)
    decide(session, files, decision="rejected", by="Ana", text="blurred")
    count = session_count(session)
    assert count.n == 0
    assert cost_line(5500, count) == "55.00 USD for the package; 0 approved visuals"


def test_s9_a1_a_file_changed_after_its_approval_is_said_never_yet(session: Session, tmp_path: Path) -> None:
    """The only approved file edited since: ``0 approved visuals``, then that file and "approve it again"."""
    set_unit(session, "visual")
    [file] = _visuals(tmp_path / "out", 1)
    decide(session, [file], decision="approved", by="Ana")
    with open(file, "ab") as fh:
        fh.write(b"edited after its approval")
    count = session_count(session)
    assert count.n == 0
    words = count.words()
    assert words.startswith("0 approved visuals; ") and "yet" not in words, words
    assert "changed after approval" in words and words.endswith("approve it again"), words
    assert cost_line(5500, count) == f"55.00 USD for the package; {words}"


def test_s10_without_decisions_the_corpora_count_and_its_unit(session: Session) -> None:
    count = session_count(session)
    assert count.source == CORPORA and count.n is None


def test_s10_the_status_cache_is_read_without_hashing_and_goes_stale_on_a_change(
        session: Session, tmp_path: Path) -> None:
    set_unit(session, "visual")
    files = _visuals(tmp_path / "out", 2)
    decide(session, files, decision="approved", by="Ana")
    session_count(session)
    assert cached_words(session.folder) is None  # a reader writes nothing
    session_count(session, cache=True)
    doc = cached_words(session.folder)
    assert doc is not None and doc["short"] == "2 visuals"
    with open(files[0], "ab") as fh:
        fh.write(b"x")
    assert cached_words(session.folder) is None
    json.loads((session.folder / "count-cache.json").read_text())  # still readable


def test_s9_the_define_form_keeps_an_accept_rule_it_does_not_show() -> None:
    from gpusession.core.experiment.form import DefineForm, experiment_from_form
    from gpusession.core.experiment.plan import Experiment

    proto = accept_protocol(accept=None, expected_outputs="e.txt", deliverable_format="png")
    base = Experiment(id="render", workload="command", values=(1,), scope="full-chain",
                      params={"command": ["python3", "render.py", "{output}"]}, protocol=proto)
    again = experiment_from_form(DefineForm(classes="", runs_per_variant="3"), base=base)
    assert again.protocol == proto and again.runs_per_variant == 3
