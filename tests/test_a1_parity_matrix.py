"""One answer everywhere (A1, S8, S10, K3, D5): a matrix of sessions read through every front end.

Each session of :data:`CASES` is built once for the module; every front end's output is
read as a person (or a script) reads it, and five figures are extracted from it: the
count of accepted deliverables, their unit, the count's source, the cost per deliverable
(USD minor units) and the variant to keep; plus the verdict of each variant. The figures
a front end shows must be the same in every front end that shows them
(:func:`disagreements`) and the same as the session's one record
(:func:`gpusession.core.money.answer.session_answer`).

What each front end shows is :data:`SHOWS` (a front end that does not show a figure is not
compared on it; the test asserts each one gives at least what :data:`SHOWS` says).

The mutation check (:func:`test_a1_a_front_end_with_a_divisor_of_its_own_is_caught`)
makes one front end at a time (the report's section 3, the Cost pane, ``compare``) divide
by a count of its own (every decision of approvals.toml) and asserts the comparison names
that front end, and only it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import RENDER, RULE, SESSION_START, TEST_NOW
from textual.widgets import DataTable, Static
from ui.pilot import settle

from gpusession.cli import main
from gpusession.core.folder.session import Session

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar

#: A session beside the matrix's, nothing run nor decided: what ``compare`` is given with each.
OTHER = "other-session"

#: The package of every session: RTX A5000, 1 lot, 7 days: 55.00 USD (bundled rates).
PACKAGE_USD_MINOR = 5500


# --- the sessions -------------------------------------------------------------------------


def _cli(root: Path, *args: str) -> tuple[int, str, str]:
    """``gpusession --sessions-dir ROOT ARGS...`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--sessions-dir", str(root), *args])
        except SystemExit as exc:  # argparse refuses with exit 2
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _ok(root: Path, *args: str) -> str:
    code, out, err = _cli(root, *args)
    assert code == 0, f"{args}: exit {code}\n{out[-2000:]}\n{err[-2000:]}"
    return out


def _files(folder: Path, contents: list[bytes]) -> list[str]:
    """PNG-headed files ``visual-01.png`` … with ``contents``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, body in enumerate(contents, 1):
        p = folder / f"visual-{i:02d}.png"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
        paths.append(str(p))
    return paths


def _sweep(s: Session) -> None:
    """Define ``batch-sweep``: batch 1/4/8, 2 runs each, a classification corpus."""
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment

    define_experiment(s, Experiment(id="batch-sweep", workload="bbc-news", varied="batch", values=(1, 4, 8),
                                    runs_per_variant=2, warmup_iterations=0, cold_runs_per_variant=0,
                                    params={"model_dir": "models"}))


def _fake_run(s: Session, *, accepted: bool) -> None:
    """``batch-sweep`` run by the fake runner: macro-F1 rows, every one accepted or none."""
    from gpusession.testing import FakeRunner

    _sweep(s)
    FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event(), accepted=accepted).run()


def _corpus(root: Path, s: Session, tmp: Path) -> None:
    """(1) A classification corpus judged by its quality rule: every variant accepted."""
    _fake_run(s, accepted=True)


def _rule(root: Path, s: Session, tmp: Path) -> None:
    """(2) An accept rule (a person's program) accepts 3 distinct files of each run."""
    _ok(root, "package", s.name, "--unit", "visual")
    (s.folder / "render.py").write_text(RENDER)
    (s.folder / "rule.py").write_text(RULE)
    (s.folder / "expected.txt").write_text("v-1.png\nv-2.png\nv-3.png\n")
    _ok(root, "experiment", s.name, "define", "--id", "render", "--workload", "command",
        "--values", "1,2", "--runs", "2", "--warmup", "0", "--cold-runs", "0",
        "--command", f"{sys.executable} render.py {{output}} 3",
        "--expected-outputs", "expected.txt", "--deliverable-format", "png",
        "--accept", f"{sys.executable} rule.py {{output}} {s.folder / 'rule-ran'} 'looks right' 0")
    _ok(root, "run", s.name, "--headless")


def _approved(root: Path, s: Session, tmp: Path) -> None:
    """(3) 18 files approved by a named person, in the declared unit ``visual``."""
    paths = _files(tmp / "approved", [bytes([i]) * 8 for i in range(18)])
    _ok(root, "package", s.name, "--unit", "visual")
    _ok(root, "approve", s.name, *paths, "--by", "Ana Reviewer")


def _mixed(root: Path, s: Session, tmp: Path) -> None:
    """(4) 5 files: 4 approved, 1 rejected, then one approved file changed after its approval: 3."""
    paths = _files(tmp / "mixed", [bytes([i]) * 8 for i in range(5)])
    _ok(root, "package", s.name, "--unit", "visual")
    _ok(root, "approve", s.name, *paths[:4], "--by", "Ana Reviewer")
    _ok(root, "reject", s.name, paths[4], "--by", "Ana Reviewer", "--why", "blurred")
    with open(paths[0], "ab") as fh:
        fh.write(b"edited after its approval")


def _nothing(root: Path, s: Session, tmp: Path) -> None:
    """(5) Nothing accepted: every run of every variant fails its quality rule."""
    _fake_run(s, accepted=False)


def _fastest_rejected(root: Path, s: Session, tmp: Path) -> None:
    """(6) The fastest variant (batch-8) fails its quality rule; batch-4 is the one to keep."""
    from gpusession.core.records.results import ResultRow

    _sweep(s)
    for i in range(1, 4):
        for variant, elapsed_s, quality in (("batch-1", 1.0, 0.95), ("batch-4", 0.5, 0.93), ("batch-8", 0.2, 0.5)):
            ok = quality >= 0.9
            s.results.append(ResultRow(
                experiment_id="batch-sweep", variant_id=variant, phase="warm", run_index=i,
                batch=int(variant.split("-")[1]), elapsed_seconds=elapsed_s + 0.01 * i,
                corpus_revision="sha256:eval-1", expected_ids=100, observed_ids=100, ids_match=True,
                format_valid=True, quality_metric="macro_f1", quality_value=quality,
                quality_threshold=0.9, quality_tolerance=0.0, corpus_accepted=ok))


def _twins(root: Path, s: Session, tmp: Path) -> None:
    """(7) Three files approved, two of them byte-identical: 2 deliverables by SHA-256 (K4)."""
    paths = _files(tmp / "twins", [b"same", b"same", b"other"])
    _ok(root, "package", s.name, "--unit", "visual")
    _ok(root, "approve", s.name, *paths, "--by", "Ana Reviewer")


@dataclasses.dataclass(frozen=True)
class Case:
    """One session of the matrix and what it must say everywhere."""

    build: Callable[[Path, Session, Path], None]
    count: int | None  #: the count every cost divides by (None: not measured, K3)
    unit: str  #: the unit's singular noun
    source: str  #: corpora, accept-rule, approved
    verdicts: dict[str, str]  #: variant → "accepted" / "REJECTED"; {} for no experiment
    keep: str | None  #: the variant to keep; None where none is named; TIMED: by the clock

    @property
    def per_minor(self) -> int | None:
        """The cost per deliverable, computed here on its own (K2: rounded once, half-up)."""
        if not self.count:
            return None
        return int((Decimal(PACKAGE_USD_MINOR) / self.count).quantize(Decimal(1), ROUND_HALF_UP))


#: The variant to keep of a command timed for real (the rule's case): the faster of two, by
#: chance; every front end must still name the same one.
TIMED = "the faster, measured"
ALL_ACCEPTED = {"batch-1": "accepted", "batch-4": "accepted", "batch-8": "accepted"}
CASES: dict[str, Case] = {
    "corpus": Case(_corpus, 1, "corpus", "corpora", ALL_ACCEPTED, "batch-8"),
    "rule": Case(_rule, 3, "visual", "accept-rule", {"batch-1": "accepted", "batch-2": "accepted"}, TIMED),
    "approved": Case(_approved, 18, "visual", "approved", {}, None),
    "mixed": Case(_mixed, 3, "visual", "approved", {}, None),
    "nothing": Case(_nothing, 0, "corpus", "corpora",
                    {"batch-1": "REJECTED", "batch-4": "REJECTED", "batch-8": "REJECTED"}, None),
    "fastest-rejected": Case(_fastest_rejected, 1, "corpus", "corpora",
                             {"batch-1": "accepted", "batch-4": "accepted", "batch-8": "REJECTED"}, "batch-4"),
    "twins": Case(_twins, 2, "visual", "approved", {}, None),
}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Session]]:
    """Each case's session, built on first use and kept for the module (one sessions root)."""
    from gpusession.core.copyhome.limit import set_limit
    from gpusession.core.folder.package import Package

    root = tmp_path_factory.mktemp("parity") / "sessions"
    root.mkdir()
    built: dict[str, Session] = {}
    Session.create(root, OTHER, package=Package(gpu_model="RTX A5000", lots=1, days=7, start=SESSION_START))

    def get(case: str) -> Session:
        if case not in built:
            s = Session.create(root, case, package=Package(gpu_model="RTX A5000", lots=1, days=7,
                                                           start=SESSION_START))
            set_limit(s, at=datetime(2099, 12, 31, tzinfo=timezone.utc))  # as the `session` fixture (D1)
            CASES[case].build(root, s, root.parent / f"{case}-files")
            built[case] = Session.open(root, case)
        return built[case]

    with pytest.MonkeyPatch.context() as mp:  # the module's fixtures run before the tests' clock
        for key, value in _env(tmp_path_factory).items():
            mp.setenv(key, value)
        yield get


_ENV: dict[str, str] = {}


def _env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The clock and the state and config folders of the whole module (made once).

    One state folder for the module: its sealing key seals the caches the sessions were
    built with, so each test reads them as the commands that built them left them.
    """
    if not _ENV:
        _ENV.update(GPUSESSION_NOW=TEST_NOW.isoformat(), GPUSESSION_PID_NAMESPACE="host",
                    XDG_STATE_HOME=str(tmp_path_factory.mktemp("parity-state")),
                    XDG_CONFIG_HOME=str(tmp_path_factory.mktemp("parity-config")))
    return _ENV


@pytest.fixture(autouse=True)
def _module_env(_state_home: None, _clock: None, tmp_path_factory: pytest.TempPathFactory,
                monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test of the module under the module's clock and folders (after conftest's own)."""
    for key, value in _env(tmp_path_factory).items():
        monkeypatch.setenv(key, value)


# --- reading every front end ----------------------------------------------------------------


def _app(session: Session) -> Any:
    """The app the CLI builds, with the fakes of the Pilot tests and the module's clock."""
    from gpusession.testing import FakeClock, FakeNvml, fixed_host_memory
    from gpusession.ui.app import build_app

    return build_app(session, clock=FakeClock(TEST_NOW), nvml=FakeNvml(), host_memory=fixed_host_memory,
                     poll_s=0, tz=timezone.utc)


def _table(app: Any, selector: str) -> list[list[str]]:
    """The header and rows of the DataTable at ``selector``, as text."""
    t = app.screen.query_one(selector, DataTable)
    return [[str(c.label) for c in t.columns.values()]] + [[str(c) for c in t.get_row_at(i)]
                                                           for i in range(t.row_count)]


def _screen(app: Any) -> str:
    """The screen's words, wrapping taken out."""
    return " ".join(" ".join(strip.text.split()) for strip in app.screen._compositor.render_strips())


async def read_panes(session: Session) -> dict[str, Any]:
    """The Cost, Run and Validation panes' rendered text (Pilot, 160×60: no line cut short)."""
    app = _app(session)
    said: dict[str, Any] = {}
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        await settle(pilot, app)
        said["cost pane"] = "\n".join(app.screen.pane("cost").lines)
        await pilot.press("2")
        await settle(pilot, app)
        said["run pane"] = _screen(app)
        said["run pane table"] = _table(app, "#run-summary-table")
        await pilot.press("4")
        await settle(pilot, app)
        said["validation pane status"] = str(app.screen.query_one("#val-status", Static).render())
        found = app.screen.query("#deliv-status")
        said["deliverables status"] = str(found.first(Static).render()) if found else ""
    return said


def read_cli(root: Path, name: str) -> dict[str, Any]:
    """Every CLI front end's output for session ``name`` (text, JSON, files)."""
    said: dict[str, Any] = {}
    for key, args in {"cost": ("cost", name), "cost --json": ("cost", name, "--json"),
                      "show": ("show", name), "show --json": ("show", name, "--json"),
                      "status": ("status", name), "status --json": ("status", name, "--json"),
                      "list --json": ("list", "--json"),
                      "deliverables": ("deliverables", name), "deliverables --json": ("deliverables", name, "--json")}.items():
        said[key] = _ok(root, *args)
    # compare: beside a session of another kind, never ranked (exit 3), its figures said
    for key, args in {"compare": ("compare", name, OTHER), "compare --json": ("compare", name, OTHER, "--json")}.items():
        code, out, err = _cli(root, *args)
        assert code in (0, 3), err
        said[key] = out
    _ok(root, "report", name, "--html")
    folder = root / name
    said["report.md"] = (folder / "report.md").read_text(encoding="utf-8")
    said["report.html"] = (folder / "report.html").read_text(encoding="utf-8")
    for fmt in ("markdown", "csv", "hyperfine-json"):
        code, out, err = _cli(root, "export", name, "--format", fmt)
        said[f"export {fmt}"] = out if code == 0 else f"exit {code}: {err.strip()}"
    return said




# --- what each front end says: the figures, extracted from what a person reads -------------

#: The fields compared; a front end gives those it shows (:data:`SHOWS`).
FIELDS = ("count", "unit", "source", "per_minor", "keep", "verdicts")

_COUNT = frozenset({"count", "unit", "source"})
#: What each front end shows at least, in every case of the matrix. Beside these: section 3
#: says the count it divides by when it shows a cost; the Cost pane says the variant to keep
#: when an experiment was defined; the exports exist only with a timed run (else exit 2, said).
SHOWS: dict[str, frozenset[str]] = {
    "cost": _COUNT | {"per_minor"}, "cost --json": _COUNT | {"per_minor"},
    "show": _COUNT | {"verdicts"}, "show --json": _COUNT | {"verdicts"},
    "status": frozenset({"count", "unit"}),  # the tmux line: no room for the source
    "status --json": _COUNT, "list --json": _COUNT,
    "report.md summary": _COUNT | {"per_minor", "keep"}, "report.html summary": _COUNT | {"per_minor", "keep"},
    "report.md section 1": frozenset({"verdicts"}), "report.md section 3": frozenset({"per_minor"}),
    "report.html section 1": frozenset({"verdicts"}), "report.html section 3": frozenset({"per_minor"}),
    "export markdown": frozenset({"verdicts"}), "export csv": frozenset({"verdicts"}),
    "export json": frozenset({"verdicts"}),
    "deliverables": _COUNT, "deliverables --json": _COUNT,
    "compare": frozenset({"count", "unit", "per_minor", "keep"}),
    "compare --json": _COUNT | {"per_minor", "keep"},
    "Cost pane": _COUNT | {"per_minor"},
    "Run pane": frozenset({"verdicts", "keep"}),
    "Validation pane": _COUNT,
}

#: ``Cost per accepted deliverable: 55.00 USD ÷ 18 approved visuals = 3.06 USD per visual`` (the
#: report's section 3, in the session's unit) or ``… ÷ 18 = 3.06 USD`` (``cost``); group 3: the unit
COST_LINE = re.compile(r"Cost per accepted deliverable: [\d.]+ USD ÷ (\d+)(?: [^=]*)? = ([\d.]+) USD"
                       r"(?: per ((?:accepted )?\w+))?")
NOT_SHOWN = "Cost per accepted deliverable: not shown"
ACCEPTED_LINE = re.compile(r"Accepted deliverables: (\d+) distinct \((.*?)\); a repetition")
#: ``55.00 USD ÷ 18 approved visuals = 3.06 USD per visual`` (a count in the session's unit)
PER_UNIT = re.compile(r"[\d.]+ USD ÷ (\d+) (?:approved|accepted) (\w+) = ([\d.]+) USD per (\w+)")
#: ``batch-4 of batch-sweep has the lowest…`` / ``batch-4 of batch-sweep, warm median…``
KEEP = re.compile(r"Keep:\*{0,2} (?:none is faster beyond noise[^;]*; )?(\S+) of \S+(?: has the lowest|, warm)")
NO_KEEP = re.compile(r"Keep:\*{0,2} no accepted variant")


def _flat(text: str) -> str:
    """Words of ``text`` on one line: HTML tags and wrapping taken out."""
    return " ".join(re.sub(r"<[^>]+>", " ", text).split()).replace("&amp;", "&")


def _minor(usd: str) -> int:
    """``3.06`` → 306 (USD minor units)."""
    return int((Decimal(usd) * 100).to_integral_value())


def _singular(noun: str) -> str:
    """``visuals`` → ``visual``, ``corpora`` → ``corpus``."""
    if noun in ("corpus", "corpora"):
        return "corpus"
    return noun[:-1] if noun.endswith("s") else noun


def _source(words: str) -> str:
    """The count's source from its words (S10): approved, accept-rule or corpora."""
    if "approved by a person" in words:
        return "approved"
    if "rule" in words:
        return "accept-rule"
    assert "corpora" in words or "corpus" in words, words
    return "corpora"


def _verdict(words: str) -> str:
    """``REJECTED (quality 0.500 below …)`` → ``REJECTED``; ``accepted`` stays."""
    word = words.strip().split(" ", 1)[0].rstrip(";")
    assert word in ("accepted", "REJECTED"), words
    return word


def _cost_text(text: str) -> dict[str, Any]:
    """``cost`` and the Cost pane: the cost line, the accepted line, the unit's line, keep."""
    got: dict[str, Any] = {}
    if (m := COST_LINE.search(text)) is not None:
        got.update(count=int(m.group(1)), per_minor=_minor(m.group(2)))
    else:
        assert NOT_SHOWN in text, text
        got["per_minor"] = None
    if (m := ACCEPTED_LINE.search(text)) is not None:
        got.update(count=int(m.group(1)), source=_source(m.group(2)))
    if (m := PER_UNIT.search(text.splitlines()[0])) is not None:
        got.update(count=int(m.group(1)), unit=m.group(4), per_minor=_minor(m.group(3)))
    elif got.get("source") == "corpora":
        got["unit"] = "corpus"  # the unit of a corpora count is said only in its source's words
    if (m := KEEP.search(text)) is not None:
        got["keep"] = m.group(1)
    elif NO_KEEP.search(text):
        got["keep"] = None
    return got


def _cost_json(doc: dict[str, Any]) -> dict[str, Any]:
    d = doc["deliverables"]
    return {"count": doc["accepted_count"], "per_minor": doc["cost_per_accepted_usd_minor"],
            "source": d["source"], "unit": _singular(d["unit"].split()[-1])}


def _show_text(text: str) -> dict[str, Any]:
    """``show``: the ``accepted`` line and the verdict beside each warm variant."""
    m = re.search(r"^accepted\s+(\d+) (?:distinct )?(?:approved|accepted) (\w+)(?: \((.*)\))?$", text, re.M)
    assert m is not None, text
    got: dict[str, Any] = {"count": int(m.group(1)), "unit": _singular(m.group(2))}
    got["source"] = _source(m.group(3) or m.group(2))  # a corpora count names no other source
    lines = text.splitlines()
    verdicts = {}
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) > 3 and parts[2] == "warm" and parts[3].isdigit():
            after = lines[i + 1].strip() if i + 1 < len(lines) else ""
            verdicts[parts[1]] = "accepted" if parts[-1] == "accepted" else _verdict(after)
    got["verdicts"] = verdicts
    return got


def _show_json(doc: dict[str, Any]) -> dict[str, Any]:
    d = doc["deliverables"]
    return {"count": d["count"], "source": d["source"], "unit": _singular(d["unit"].split()[-1]),
            "verdicts": {r["variant_id"]: _verdict(r["verdict"]) for r in doc["summary"] if r["phase"] == "warm"}}


def _status_text(text: str) -> dict[str, Any]:
    """``status`` (the tmux line): ``· 18 approved visuals ·``; ``? visuals`` reads as no count."""
    m = re.search(r" · (\d+|\?) (?:distinct )?(?:approved |accepted )?(\w+)", text.split(" left · ", 1)[1])
    assert m is not None, text
    return {"count": None if m.group(1) == "?" else int(m.group(1)), "unit": _singular(m.group(2))}


def _status_json(doc: dict[str, Any]) -> dict[str, Any]:
    """``status --json`` or a row of ``list --json``: the kept count, else the corpora."""
    d = doc["deliverables"]
    if d is None:  # no unit of the session's own: the distinct accepted corpora are the count
        return {"count": doc["accepted_corpora"], "source": "corpora", "unit": "corpus"}
    return {"count": d["count"], "source": d["source"], "unit": _singular(d["unit"])}


def _deliverables_text(text: str) -> dict[str, Any]:
    """``deliverables``: its last line, ``count: 3 approved visuals (approved by a person, …)``
    (``no accepted corpus yet``: 0), then what it left out after a ``;``."""
    m = re.search(r"^count: (\d+|no) (?:approved |accepted )?(\w+)(?: yet)? \((.*)\)(?:; .*)?$", text, re.M)
    assert m is not None, text
    return {"count": 0 if m.group(1) == "no" else int(m.group(1)), "unit": _singular(m.group(2)),
            "source": _source(m.group(3))}


def _deliverables_json(doc: dict[str, Any]) -> dict[str, Any]:
    d = doc["deliverables"]
    return {"count": d["count"], "source": d["source"], "unit": _singular(d["unit"].split()[-1])}


def _compare_text(text: str, name: str) -> dict[str, Any]:
    """``compare``: this session's column (count, cost per deliverable, time per deliverable)."""
    rows = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        label, *cells = re.split(r"\s{2,}", line.strip())
        rows[label] = cells
    mine = rows["session"].index(name)
    count, per, time = (rows[k][mine] for k in ("distinct accepted deliverables", "cost per accepted deliverable",
                                                 "time per accepted deliverable"))
    got: dict[str, Any] = {}
    if (m := re.fullmatch(r"(\d+|no) (?:approved |accepted )?(\w+)(?: yet)?", count)) is not None:
        got.update(count=0 if m.group(1) == "no" else int(m.group(1)), unit=_singular(m.group(2)))
    else:
        assert count == "not measured", count
        got["count"] = None
    m = re.fullmatch(r"([\d.]+) USD(?: per (\w+))?", per)
    got["per_minor"] = _minor(m.group(1)) if m else None
    assert m or per == "not shown", per
    m = re.search(r"\((\S+)\)$", time)
    got["keep"] = m.group(1) if m else None
    assert m or time == "no accepted variant", time
    return got


def _compare_json(doc: dict[str, Any], name: str) -> dict[str, Any]:
    mine = next(s for s in doc["sessions"] if s["name"] == name)
    d = mine["deliverables"]
    return {"count": mine["accepted_count"], "per_minor": mine["cost_per_accepted_usd_minor"],
            "source": d["source"], "unit": _singular(d["unit"].split()[-1]),
            "keep": mine["recommended"]["variant_id"] if mine["recommended"] else None}


def _sections(md: str) -> dict[str, str]:
    """The report's summary (``""``) and its sections by number (``"1"``, ``"3"``)."""
    head, *rest = re.split(r"^## ", md, flags=re.M)
    out = {"": head}
    for part in rest:
        out[part.split(".", 1)[0]] = part
    return out


def _md_verdicts(section: str) -> dict[str, str]:
    """The verdict cell of each warm row of the report's results table (section 1)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ")]
    return {r[0]: _verdict(r[-1]) for r in rows if len(r) > 2 and r[1] == "warm"}


def _section3(flat: str) -> dict[str, Any]:
    if (m := COST_LINE.search(flat)) is not None:
        assert m.group(3) is not None, f"section 3 divides by a count without its unit (S8): {m.group(0)}"
        return {"count": int(m.group(1)), "per_minor": _minor(m.group(2)), "unit": _singular(m.group(3).split()[-1])}
    assert NOT_SHOWN in flat, flat[:600]
    return {"per_minor": None}


def _summary(flat: str) -> dict[str, Any]:
    """The report's first lines (Markdown's ``**Verdict:**`` or the page's words, flattened)."""
    got: dict[str, Any] = {}
    flat = flat.replace("**", "")
    if (m := re.search(r"Verdict: (\d+) (?:distinct )?(?:approved |accepted )?(\w+)", flat)) is not None:
        got.update(count=int(m.group(1)), unit=_singular(m.group(2)))
        if got["unit"] == "corpus":
            got["source"] = "corpora"
    if (m := PER_UNIT.search(flat)) is not None:
        got.update(count=int(m.group(1)), unit=m.group(4), per_minor=_minor(m.group(3)),
                   source=_source(flat.split("(count: ", 1)[1]))
    elif (m := re.search(r"; ([\d.]+) USD per accepted deliverable", flat)) is not None:
        got.update(per_minor=_minor(m.group(1)), source="corpora")
    else:
        assert "no cost per accepted deliverable" in flat, flat
        got["per_minor"] = None
    if (m := KEEP.search(flat)) is not None:
        got["keep"] = m.group(1)
    elif NO_KEEP.search(flat) or "Keep:" not in flat:
        got["keep"] = None
    return got


def _report_md(md: str) -> dict[str, dict[str, Any]]:
    """The report's summary, its results table (section 1) and its cost section (section 3)."""
    parts = _sections(md)
    return {"report.md summary": _summary(_flat(parts[""])),
            "report.md section 1": {"verdicts": _md_verdicts(parts.get("1", ""))},
            "report.md section 3": _section3(_flat(parts["3"]))}


def _report_html(html: str) -> dict[str, dict[str, Any]]:
    """The HTML page's summary (before its first section), results table (section 1) and cost section (section 3)."""
    summary = _summary(_flat(re.split(r"<h2[^>]*>", html, maxsplit=1)[0].split("<body", 1)[-1]))
    results = html.split("1. Results", 1)[1].split("2. Validation", 1)[0]
    verdicts = {}
    for row in re.findall(r"<tr>(.*?)</tr>", results, re.S):
        cells = [_flat(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if len(cells) > 2 and cells[1] == "warm":
            verdicts[cells[0]] = _verdict(cells[-1])
    section3 = _flat(html.split("3. Cost", 1)[1].split("4. Environment", 1)[0])
    return {"report.html summary": summary, "report.html section 1": {"verdicts": verdicts}, "report.html section 3": _section3(section3)}


def _exports(said: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The verdict of each variant in the Markdown, CSV and JSON exports (hyperfine's layouts)."""
    import polars as pl

    if said["export markdown"].startswith("exit 2:"):  # no timed run: nothing to export (said, exit 2)
        return {}
    md = {}
    for line in said["export markdown"].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `"):
            md[cells[0].strip("`").split()[-1]] = _verdict(cells[-1])
    frame = pl.read_csv(io.StringIO(said["export csv"]))
    csv = {c.split()[-1]: _verdict(v) for c, v in zip(frame["command"], frame["gpusession_verdict"], strict=True)}
    doc = json.loads(said["export hyperfine-json"])
    hyperfine = {r["command"].split()[-1]: _verdict(r["gpusession_verdict"]) for r in doc["results"]}
    return {"export markdown": {"verdicts": md}, "export csv": {"verdicts": csv},
            "export json": {"verdicts": hyperfine}}


def _panes(said: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Cost pane (its own session's lines), the Run pane (summary table, keep), the Validation pane."""
    cost = _cost_text(said["cost pane"].split("\nOther sessions", 1)[0])  # not the other sessions' table
    table = said["run pane table"]
    header = table[0]
    run: dict[str, Any] = {"verdicts": {r[0]: _verdict(r[header.index("verdict")]) for r in table[1:]
                                        if r[header.index("phase")] == "warm"}}
    if (m := KEEP.search(said["run pane"])) is not None:
        run["keep"] = m.group(1)
    elif NO_KEEP.search(said["run pane"]) or not run["verdicts"]:
        run["keep"] = None
    # the pane's top line: the session's count in its unit with its source (S10), every kind
    m = re.search(r"^\d+ runs?; (\d+) (?:approved|accepted) (\w+)(?:; [^(]*)? \((.*)\)\. v: re-read$",
                  said["validation pane status"])
    assert m is not None, said["validation pane status"]
    validation = {"count": int(m.group(1)), "unit": _singular(m.group(2)), "source": _source(m.group(3))}
    deliverables = said["deliverables status"]
    if deliverables:  # the deliverables box under it says the same count, in the same words
        assert deliverables.startswith("Deliverables") and m.group(0).split("; ", 1)[1].split(". v:")[0] in deliverables, (
            deliverables, said["validation pane status"])
    return {"Cost pane": cost, "Run pane": run, "Validation pane": validation}


def figures(said: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    """Every front end's figures, by front end, from their raw outputs (:func:`read_cli`, :func:`read_panes`)."""
    out: dict[str, dict[str, Any]] = {
        "cost": _cost_text(said["cost"]),
        "cost --json": _cost_json(json.loads(said["cost --json"])),
        "show": _show_text(said["show"]),
        "show --json": _show_json(json.loads(said["show --json"])),
        "status": _status_text(said["status"]),
        "status --json": _status_json(json.loads(said["status --json"])),
        "list --json": _status_json(next(r for r in json.loads(said["list --json"])["sessions"]
                                         if r["name"] == name)),
        "deliverables": _deliverables_text(said["deliverables"]),
        "deliverables --json": _deliverables_json(json.loads(said["deliverables --json"])),
        "compare": _compare_text(said["compare"], name),
        "compare --json": _compare_json(json.loads(said["compare --json"]), name),
    }
    out.update(_report_md(said["report.md"]))
    out.update(_report_html(said["report.html"]))
    out.update(_exports(said))
    out.update(_panes(said))
    return out


def disagreements(by_front_end: dict[str, dict[str, Any]]) -> list[str]:
    """One line per field whose front ends do not all give the same value (empty: one answer).

    ``{"cost": {"count": 18, …}, "report.md section 3": {"count": 1, …}}`` →
    ``["count: 18 in cost; 1 in report.md section 3"]``. A front end that does not show a
    field has no key for it and is not compared.
    """
    out = []
    for name in FIELDS:
        values: dict[str, list[str]] = {}
        for front_end, got in by_front_end.items():
            if name in got:
                values.setdefault(json.dumps(got[name], sort_keys=True), []).append(front_end)
        if len(values) > 1:
            out.append(f"{name}: " + "; ".join(f"{v} in {', '.join(fes)}" for v, fes in values.items()))
    return out


# --- the tests --------------------------------------------------------------------------------


async def _figures(session: Session) -> dict[str, dict[str, Any]]:
    said = read_cli(session.folder.parent, session.name)
    said.update(await read_panes(session))
    return figures(said, session.name)


def _wanted(case: Case) -> dict[str, Any]:
    want = {"count": case.count, "unit": case.unit, "source": case.source, "per_minor": case.per_minor,
            "verdicts": case.verdicts, "keep": case.keep}
    if case.keep == TIMED:
        del want["keep"]
    return want


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
async def test_a1_every_front_end_gives_the_same_count_unit_source_cost_verdicts_and_keep(
        case: str, matrix: Callable[[str], Session]) -> None:
    from gpusession.core.money.answer import session_answer

    s = matrix(case)
    got = await _figures(s)
    assert disagreements(got) == []
    want = _wanted(CASES[case])
    answer = session_answer(s)  # the one record the front ends render
    assert answer.count is not None
    assert (answer.accepted, answer.count.source, answer.per.per_accepted_usd_minor) == (
        want["count"], want["source"], want["per_minor"])
    wrong = {(fe, name): (value, want[name]) for fe, fields in got.items() for name, value in fields.items()
             if name in want and value != want[name]}
    assert wrong == {}
    # each front end gives at least what SHOWS says it shows: nothing compared goes unread
    timed = bool(CASES[case].verdicts)  # no timed run: nothing to export (exit 2, said)
    assert set(got) == {fe for fe in SHOWS if timed or not fe.startswith("export")}
    assert {fe: sorted(SHOWS[fe] - set(fields)) for fe, fields in got.items()} == {fe: [] for fe in got}


async def test_d5_a_rejected_fastest_variant_is_never_an_unsaid_reference(
        matrix: Callable[[str], Session]) -> None:
    """The Markdown export's 1.00 reference is the fastest, rejected one: the table and a line say REJECTED."""
    s = matrix("fastest-rejected")
    code, out, err = _cli(s.folder.parent, "export", s.name, "--format", "markdown")
    assert code == 0, err
    [reference] = [line for line in out.splitlines() if "| 1.00 |" in line]
    assert "`batch-sweep batch-8`" in reference and "| REJECTED (" in reference, out
    assert "is the fastest, not a variant to keep: REJECTED" in out, out


def _every_decision(answer: Any, session: Session) -> Any:
    """``answer`` divided by a count of a front end's own: every decision of approvals.toml
    (rejected and changed files included), the package total divided again (K2)."""
    from gpusession.core.folder.approvals import load_approvals
    from gpusession.core.money.cost import cost_per_accepted

    n = len(load_approvals(session))
    total = answer.inputs.package_total()
    return dataclasses.replace(answer, count=dataclasses.replace(answer.count, n=n),
                               per=cost_per_accepted(total.total_usd_minor, n))


def _sabotage_report(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.retrieval import report

    real = report._cost_report
    monkeypatch.setattr(report, "_cost_report", lambda s, answer: real(s, _every_decision(answer, s)))


def _sabotage_cost_pane(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.ui.panes import cost

    real = cost.load_facts  # the pane renders the session's record: its answer divided again

    def own(s: Session) -> Any:
        facts = real(s)
        return dataclasses.replace(facts, answer=_every_decision(facts.answer, s))

    monkeypatch.setattr(cost, "load_facts", own)


def _sabotage_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.retrieval import compare

    real = compare.session_facts  # compare renders the session's record: its answer divided again

    def own(s: Session, *a: Any, **kw: Any) -> Any:
        facts = real(s, *a, **kw)
        return dataclasses.replace(facts, answer=_every_decision(facts.answer, s))

    monkeypatch.setattr(compare, "session_facts", own)


#: One front end made to choose its own divisor → the front ends that must then disagree.
SABOTAGES: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], set[str]]] = {
    "report section 3": (_sabotage_report, {"report.md section 3", "report.html section 3"}),
    "Cost pane": (_sabotage_cost_pane, {"Cost pane"}),
    "compare": (_sabotage_compare, {"compare", "compare --json"}),
}


def outliers(by_front_end: dict[str, dict[str, Any]], name: str) -> set[str]:
    """The front ends whose ``name`` differs from the value most front ends give."""
    votes: dict[str, set[str]] = {}
    for front_end, got in by_front_end.items():
        if name in got:
            votes.setdefault(json.dumps(got[name], sort_keys=True), set()).add(front_end)
    most = max(votes.values(), key=len, default=set())
    return {fe for fes in votes.values() if fes is not most for fe in fes}


@pytest.mark.slow
@pytest.mark.parametrize("sabotaged", list(SABOTAGES))
async def test_a1_a_front_end_with_a_divisor_of_its_own_is_caught(
        sabotaged: str, matrix: Callable[[str], Session], monkeypatch: pytest.MonkeyPatch) -> None:
    """One front end divides by every decision (5: 4 approved, one of them changed since, 1
    rejected) instead of the one count (3): the comparison names it, and only it."""
    sabotage, caught = SABOTAGES[sabotaged]
    s = matrix("mixed")
    sabotage(monkeypatch)
    got = await _figures(s)
    found = disagreements(got)
    assert [line.split(":", 1)[0] for line in found] == ["count", "per_minor"], found
    assert outliers(got, "count") == outliers(got, "per_minor") == caught, found
    assert {got[fe]["count"] for fe in caught} == {5} and {got[fe]["per_minor"] for fe in caught} == {1100}


@pytest.mark.slow
async def test_a1_an_approval_made_in_the_tui_then_a_define_keeps_one_count_everywhere(
        matrix: Callable[[str], Session], tmp_path: Path) -> None:
    """One file approved by ``approve``, one more by ``a`` in the Validation pane, then an
    ``experiment define``: every front end (status and the JSON ones included) says 2."""
    from textual.widgets import Input

    from gpusession.core.folder.package import Package

    root = matrix("approved").folder.parent
    s = Session.create(root, "approved-in-tui", package=Package(gpu_model="RTX A5000", lots=1, days=7,
                                                                 start=SESSION_START))
    paths = _files(tmp_path / "tui", [b"one", b"two"])
    _ok(root, "package", s.name, "--unit", "visual")
    _ok(root, "approve", s.name, paths[0], "--by", "Ana Reviewer")
    app = _app(Session.open(root, s.name))
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await settle(pilot, app)
        table = app.screen.query_one("#deliv-table", DataTable)
        table.focus()
        table.move_cursor(row=1)
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#field-by", Input).value = "Bo"
        await pilot.press("ctrl+s")
        await settle(pilot, app)
    want = {"count": 2, "unit": "visual", "source": "approved", "per_minor": 2750}
    got = await _figures(Session.open(root, s.name))
    assert disagreements(got) == []
    assert {fe: {k: v for k, v in f.items() if k in want and v != want[k]} for fe, f in got.items()} == {
        fe: {} for fe in got}
    _ok(root, "experiment", s.name, "define", "--id", "later", "--workload", "command", "--values", "1",
        "--command", f"{sys.executable} -c pass")
    got = await _figures(Session.open(root, s.name))
    assert disagreements(got) == []
    assert {fe: {k: v for k, v in f.items() if k in want and v != want[k]} for fe, f in got.items()} == {
        fe: {} for fe in got}
