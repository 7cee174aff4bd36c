"""One answer everywhere (A1, S10, K3): the same count, unit, source and cost per deliverable
from every front end, for a matrix of sessions.

Each session goes through ``cost`` (text and ``--json``), ``report`` (its summary, its
section 3 and the HTML page), ``show --json``, ``status --json`` and the tmux line,
``list --json``, ``compare --json`` and the Cost pane (Pilot). The figure each front end
gives is read back from what a person reads and compared with the one expected: a front
end that chose a divisor of its own (the report's section 3 once divided by the corpora
while its first lines divided by the approvals) fails here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, run_rule_experiment
from ui.pilot import MakeApp, settle, text_of

from gpusession.core.folder.session import Session

pytestmark = pytest.mark.calendar


@dataclass(frozen=True)
class Expected:
    """What every front end must say of one session."""

    count: int | None  #: the count every cost divides by; None: not measured
    source: str | None  #: approved, accept-rule, corpora
    noun: str  #: "approved visual", "accepted corpus"

    @property
    def per_usd(self) -> str | None:
        """The cost per deliverable as printed (55.00 USD package), or None when not shown."""
        if not self.count:
            return None
        from decimal import ROUND_HALF_UP, Decimal

        return f"{(Decimal(5500) / self.count).quantize(Decimal(1), ROUND_HALF_UP) / 100:.2f} USD"

    @property
    def per_minor(self) -> int | None:
        return None if self.per_usd is None else int(self.per_usd.split()[0].replace(".", ""))


def _files(folder: Path, contents: list[bytes]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, body in enumerate(contents, 1):
        p = folder / f"visual-{i:02d}.png"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
        paths.append(str(p))
    return paths


def _visuals(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp: Path) -> Expected:
    paths = _files(tmp / "visuals", [bytes([i]) * 8 for i in range(18)])
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    assert cli(capsys, root, "approve", s.name, *paths, "--by", "Ana Reviewer")[0] == 0
    return Expected(18, "approved", "approved visual")


def _mixed(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp: Path) -> Expected:
    """5 files: 4 approved, 1 rejected; then one approved file changed after its approval."""
    paths = _files(tmp / "mixed", [bytes([i]) * 8 for i in range(5)])
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    assert cli(capsys, root, "approve", s.name, *paths[:4], "--by", "Ana")[0] == 0
    assert cli(capsys, root, "reject", s.name, paths[4], "--by", "Ana", "--why", "blurred")[0] == 0
    with open(paths[0], "ab") as fh:
        fh.write(b"edited after its approval")
    return Expected(3, "approved", "approved visual")


def _twins(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp: Path) -> Expected:
    """Three files approved, two of them byte-identical: one deliverable by SHA-256 (K4)."""
    paths = _files(tmp / "twins", [b"same", b"same", b"other"])
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    assert cli(capsys, root, "approve", s.name, *paths, "--by", "Ana")[0] == 0
    return Expected(2, "approved", "approved visual")


def _nothing(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp: Path) -> Expected:
    assert cli(capsys, root, "package", s.name, "--unit", "visual")[0] == 0
    return Expected(None, None, "approved visual")


def _corpus(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp: Path) -> Expected:
    """Five repetitions of one accepted corpus and one rejected run: one deliverable (K4)."""
    from gpusession.core.records.results import ResultRow

    for i in range(5):
        s.results.append(ResultRow(experiment_id="e", variant_id="batch-1", phase="warm", run_index=i + 1,
                                   elapsed_seconds=0.1, corpus_revision="c1", ids_match=True,
                                   format_valid=True, corpus_accepted=True))
    s.results.append(ResultRow(experiment_id="e", variant_id="batch-8", phase="warm", run_index=1,
                               elapsed_seconds=0.01, corpus_revision="c1", ids_match=False,
                               format_valid=True, corpus_accepted=False))
    return Expected(1, "corpora", "accepted corpus")


def _rule(capsys: pytest.CaptureFixture[str], root: Path, s: Session, tmp: Path) -> Expected:
    """An experiment whose outputs a rule accepts: 3 distinct files, whatever the repetitions."""
    run_rule_experiment(capsys, root, s)
    return Expected(3, "accept-rule", "accepted visual")


CASES = {"visuals": _visuals, "mixed": _mixed, "twins": _twins, "nothing": _nothing, "corpus": _corpus,
         "rule": _rule}


def _flat(text: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", text).split()).replace("&amp;", "&")


def _per_in_section3(flat: str) -> str | None:
    """The figure of section 3's "Cost per accepted deliverable: … = X USD", None when not shown."""
    section = flat.split("3. Cost", 1)[1]
    m = re.search(r"Cost per accepted deliverable: [\d.]+ USD ÷ (\d+) [^=]+ = ([\d.]+ USD) per ", section)  # in the unit (S8)
    if m is None:
        assert "Cost per accepted deliverable: not shown" in section, section[:600]
        return None
    return m.group(2)


@pytest.mark.parametrize("case", list(CASES))
async def test_a1_every_front_end_gives_the_same_count_and_cost(
        case: str, capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session,
        new_session: Any, tmp_path: Path, make_app: MakeApp) -> None:
    want = CASES[case](capsys, sessions_root, session, tmp_path)
    name = session.name
    said: dict[str, Any] = {}

    # cost: the text and --json
    code, out, err = cli(capsys, sessions_root, "cost", name)
    assert code == 0, err
    m = re.search(r"Cost per accepted deliverable: [\d.]+ USD ÷ (\d+) = ([\d.]+ USD)", out)
    said["cost text"] = (int(m.group(1)), m.group(2)) if m else (None, None)
    if want.source != "corpora":  # a count in the session's unit leads, with the same figure
        first = out.splitlines()[0]
        per_unit = re.search(r"= ([\d.]+ USD) per visual$", first)
        said["cost text, first line"] = (want.count if per_unit else None, per_unit.group(1) if per_unit else None)
    code, out, err = cli(capsys, sessions_root, "cost", name, "--json")
    data = json.loads(out)
    said["cost --json"] = (data["accepted_count"], data["cost_per_accepted_usd_minor"])

    # report: the summary, section 3 and the HTML page, one figure
    code, out, err = cli(capsys, sessions_root, "report", name, "--html")
    assert code == 0, err
    md = (session.folder / "report.md").read_text(encoding="utf-8")
    flat_md = _flat(md)
    summary = _flat("\n".join(md.split("\n## ", 1)[0].splitlines()))
    m = re.search(r"([\d.]+ USD) per (?:visual|accepted deliverable)", summary)
    said["report summary"] = (want.count if m else None, m.group(1) if m else None)
    said["report section 3"] = (want.count if (p := _per_in_section3(flat_md)) else None, p)
    flat_html = _flat((session.folder / "report.html").read_text(encoding="utf-8"))
    said["report.html section 3"] = (want.count if (p := _per_in_section3(flat_html)) else None, p)

    # show, status, list: the count and its source (no price is read there)
    code, out, err = cli(capsys, sessions_root, "show", name, "--json")
    d = json.loads(out)["deliverables"]
    said["show --json"] = (d["count"], d["source"])
    code, out, err = cli(capsys, sessions_root, "status", name, "--json")
    doc = json.loads(out)
    d = doc["deliverables"]
    said["status --json"] = ((d["count"], d["source"]) if d is not None
                             else (doc["accepted_corpora"] or None, "corpora"))
    code, out, err = cli(capsys, sessions_root, "list", "--json")
    row = next(r for r in json.loads(out)["sessions"] if r["name"] == name)
    d = row["deliverables"]
    said["list --json"] = ((d["count"], d["source"]) if d is not None
                           else (row["accepted_corpora"] or None, "corpora"))

    # compare: a second session beside it, ranked or not, the same figure for this one
    other = new_session("other-session")
    code, out, err = cli(capsys, sessions_root, "compare", name, other.name, "--json", "--allow-different")
    assert code in (0, 3), err  # 3: another unit or kind of deliverable is never ranked (S8, S10)
    mine = next(s for s in json.loads(out)["sessions"] if s["name"] == name)
    said["compare --json"] = (mine["accepted_count"], mine["cost_per_accepted_usd_minor"])

    # the Cost pane (key 6), as a person sees it
    app = make_app(session=Session.open(sessions_root, name))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        pane = app.screen.pane("cost")
        shown = _flat(text_of(app, "#cost-report"))
        m = re.search(r"Cost per accepted deliverable: [\d.]+ USD ÷ (\d+) = ([\d.]+ USD)", shown)
        said["Cost pane"] = (int(m.group(1)), m.group(2)) if m else (None, None)
        said["Cost pane record"] = (pane.answer.accepted, pane.answer.per.per_accepted_usd_minor)

    by_figure = {"cost text": (want.count, want.per_usd), "cost --json": (want.count, want.per_minor),
                 "cost text, first line": (want.count, want.per_usd),
                 "report summary": (want.count, want.per_usd), "report section 3": (want.count, want.per_usd),
                 "report.html section 3": (want.count, want.per_usd),
                 "show --json": (want.count, want.source if want.count is not None or want.source else "approved"),
                 "status --json": (want.count, want.source or "approved"),
                 "list --json": (want.count, want.source or "approved"),
                 "compare --json": (want.count, want.per_minor), "Cost pane": (want.count, want.per_usd),
                 "Cost pane record": (want.count, want.per_minor)}
    if want.count is None:  # nothing counted: the source is the session's unit's, the figure a question
        for key in ("show --json", "status --json", "list --json"):
            by_figure[key] = (None, said[key][1])
    expected = {k: by_figure[k] for k in said}
    assert said == expected


async def test_a1_compare_never_ranks_accepted_corpora_against_approved_files(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, new_session: Any, tmp_path: Path) -> None:
    corpus, files = new_session("corpus-session"), new_session("files-session")
    _corpus(capsys, sessions_root, corpus, tmp_path)
    paths = _files(tmp_path / "files", [b"one"])
    assert cli(capsys, sessions_root, "approve", files.name, *paths, "--by", "Ana")[0] == 0
    code, out, err = cli(capsys, sessions_root, "compare", corpus.name, files.name, "--json")
    assert code == 3, err  # not ranked: the work differs (D6)
    doc = json.loads(out)
    assert [(s["accepted_count"], s["cost_per_accepted_usd_minor"]) for s in doc["sessions"]] == [(1, 5500), (1, 5500)]
    assert doc["same_work"] is False and doc["ranking"] in (None, []), doc["ranking"]
    assert any("unit of the deliverables" in str(d) for d in doc["differences"]), doc["differences"]
    code, out, err = cli(capsys, sessions_root, "compare", corpus.name, files.name)
    words = " ".join(out.split())
    assert "accepted corpus" in words and "approved deliverable" in words, words


def test_a1_a_report_made_again_never_leaves_a_page_with_the_old_figures(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, session: Session, tmp_path: Path) -> None:
    """``report --html`` then a file edited after its approval, then ``report`` alone: the page
    beside report.md says the new count, as the Markdown does (one record, A1)."""
    _visuals(capsys, sessions_root, session, tmp_path)
    assert cli(capsys, sessions_root, "report", session.name, "--html")[0] == 0
    assert "= 3.06 USD per visual" in _flat((session.folder / "report.html").read_text())
    with open(tmp_path / "visuals" / "visual-01.png", "ab") as fh:
        fh.write(b"edited after its approval")
    code, _, err = cli(capsys, sessions_root, "report", session.name)
    assert code == 0, err
    for name in ("report.md", "report.html"):
        flat = _flat((session.folder / name).read_text())
        assert "17 approved visuals = 3.24 USD per visual" in flat and "3.06" not in flat, name
