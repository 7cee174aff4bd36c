"""``gpusession compare``: sessions side by side, ranked only on the same work (D6, K3, K4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, digest

from gpusession.core.experiment.plan import schedule
from gpusession.core.folder.experiments import get_experiment
from gpusession.core.folder.package import Package
from gpusession.core.records.results import ResultRow
from gpusession.testing import FIXED_START, make_session

L40S_RATES = """schema = 1
currency = "USD"

[gpu."L40S"]
gpus_per_lot = 1

[gpu."L40S".package_price_usd]
3 = "41.00"
"""


def _measure(session: Any, *, revision: str = "sha256:eval-1", warm_s: float = 0.1,
             accepted: bool = True, scale: dict[int, float] | None = None) -> None:
    """Rows of ``batch-sweep`` written through the session's results writer, as a runner does."""
    exp = get_experiment(session, "batch-sweep")
    for sr in schedule(exp):
        batch = int(sr.variant_id.rsplit("-", 1)[-1])
        elapsed = (warm_s if sr.phase == "warm" else 5 * warm_s) * (scale or {}).get(batch, 1 / batch)
        session.results.append(ResultRow(
            experiment_id=exp.id, variant_id=sr.variant_id, corpus_revision=revision,
            model_revision="m-1", tokenizer_revision="t-1", device="cuda", precision="fp32",
            phase=sr.phase, run_index=sr.run_index, batch=batch, expected_ids=100, observed_ids=100,
            ids_match=True, format_valid=True, quality_metric="macro_f1", quality_threshold=0.9,
            quality_tolerance=0.01, quality_value=0.95 if accepted else 0.5, corpus_accepted=accepted,
            elapsed_seconds=round(elapsed + 0.001 * sr.run_index, 6)))


@pytest.fixture
def two_cards(sessions_root: Path) -> tuple[Any, Any]:
    """An RTX A5000 7-day session and an L40S 3-day one (its price in the session's rates file)."""
    a5000 = make_session(sessions_root, "a5000-7d", runs=3)
    _measure(a5000, warm_s=0.1)
    l40s = make_session(sessions_root, "l40s-3d", runs=3)
    l40s.set_package(Package("L40S", 1, 3, FIXED_START))
    (l40s.folder / "rates.toml").write_text(L40S_RATES, encoding="utf-8")
    _measure(l40s, warm_s=0.05)
    return a5000, l40s


def test_d6_two_sessions_of_different_gpus_give_one_table_and_a_ranking(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, two_cards: tuple[Any, Any]) -> None:
    before = digest(sessions_root)
    code, out, err = cli(capsys, sessions_root, "compare", "a5000-7d", "l40s-3d")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["session", "a5000-7d", "l40s-3d"]
    table = "\n".join(lines[:7])
    for label in ("GPU", "package", "distinct accepted deliverables", "cost per accepted deliverable",
                  "time per accepted deliverable", "quality"):
        assert label in table
    assert "RTX A5000 × 1 lot" in table and "L40S × 1 lot" in table
    assert "7 days, 55.00 USD" in table and "3 days, 41.00 USD" in table
    assert "14.5 ms (batch-8)" in table and "8.25 ms (batch-8)" in table  # 0.1 / 8 + 0.002, 0.05 / 8 + 0.002
    assert "Same work:" in out and "corpus revision" in out
    ranking = out[out.index("Ranked by cost per accepted deliverable"):]
    assert ranking.index("1. l40s-3d: 41.00 USD") < ranking.index("2. a5000-7d: 55.00 USD")
    assert "1.34× the first" in ranking  # 55.00 / 41.00, exact decimal
    assert max(len(line) for line in lines) <= 80
    assert digest(sessions_root) == before  # compare writes nothing


def test_d6_different_corpus_revisions_are_named_and_not_ranked(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, two_cards: tuple[Any, Any]) -> None:
    other = make_session(sessions_root, "a5000-other", runs=3)
    _measure(other, revision="sha256:eval-2")
    code, out, _ = cli(capsys, sessions_root, "compare", "a5000-7d", "a5000-other")
    assert code == 3
    assert "Not the same work:" in out
    assert "corpus revision differs: a5000-7d: sha256:eval-1; a5000-other: sha256:eval-2" in out
    assert "Not ranked" in out and "--allow-different" in out and "Ranked by" not in out
    # the table is still there
    assert "cost per accepted deliverable" in out and "55.00 USD" in out
    code, out, _ = cli(capsys, sessions_root, "compare", "a5000-7d", "a5000-other", "--json")
    data = json.loads(out)
    assert code == 3 and data["same_work"] is False and data["ranking"] is None
    assert [d["key"] for d in data["differences"]] == ["corpus_revision"]


def test_d6_allow_different_ranks_and_says_the_work_differs(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, two_cards: tuple[Any, Any]) -> None:
    other = make_session(sessions_root, "a5000-other", runs=3)
    other.set_package(Package("RTX A5000", 1, 3, FIXED_START))
    _measure(other, revision="sha256:eval-2")
    code, out, err = cli(capsys, sessions_root, "compare", "a5000-7d", "a5000-other", "--allow-different")
    assert code == 0, err
    assert "corpus revision differs" in out
    assert "Ranked although the work differs" in out
    assert out.index("1. a5000-other: 23.57 USD") < out.index("2. a5000-7d: 55.00 USD")
    code, out, _ = cli(capsys, sessions_root, "compare", "a5000-7d", "a5000-other", "--allow-different",
                       "--json")
    assert code == 0 and json.loads(out)["ranking"] == ["a5000-other", "a5000-7d"]


@pytest.mark.parametrize("name", ["a5000-7d", "l40s-3d"])
def test_d6_compare_agrees_with_cost_on_each_session(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, two_cards: tuple[Any, Any], name: str) -> None:
    code, out, _ = cli(capsys, sessions_root, "cost", "--session", name, "--json")
    assert code == 0
    cost = json.loads(out)
    code, out, _ = cli(capsys, sessions_root, "compare", "a5000-7d", "l40s-3d", "--json")
    assert code == 0
    mine = next(s for s in json.loads(out)["sessions"] if s["name"] == name)
    assert mine["cost_per_accepted_usd_minor"] == cost["cost_per_accepted_usd_minor"] is not None
    assert mine["package_total_usd_minor"] == cost["total_usd_minor"]
    assert mine["accepted_count"] == cost["accepted_count"] == 1
    assert mine["accepted_corpora"] == cost["accepted_corpora"] == 1
    assert mine["package"] == cost["package"] and mine["deliverables"] == cost["deliverables"]
    assert isinstance(mine["cost_per_accepted_usd_minor"], int)  # cents, never a float (K2)


def test_d6_the_time_is_the_recommended_variant_never_a_faster_rejected_one(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    fast_rejected = make_session(sessions_root, "mixed", runs=3)
    _measure(fast_rejected, warm_s=0.1)
    # batch-8 of a later corpus is faster and rejected: never the time per deliverable
    exp = get_experiment(fast_rejected, "batch-sweep")
    fast_rejected.results.append(ResultRow(
        experiment_id=exp.id, variant_id="batch-8", phase="warm", run_index=9, batch=8,
        corpus_revision="sha256:eval-1", ids_match=False, format_valid=True, quality_metric="macro_f1",
        quality_value=0.95, corpus_accepted=False, elapsed_seconds=0.001))
    plain = make_session(sessions_root, "plain", runs=3)
    _measure(plain, warm_s=0.1)
    code, out, _ = cli(capsys, sessions_root, "compare", "mixed", "plain", "--json")
    data = json.loads(out)
    mixed = data["sessions"][0]["recommended"]
    assert mixed["variant_id"] == "batch-4"  # batch-8 holds a rejected run
    assert data["sessions"][1]["recommended"]["variant_id"] == "batch-8"


def test_d6_pulled_home_copies_are_given_as_folders_and_left_unchanged(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        two_cards: tuple[Any, Any]) -> None:
    home = tmp_path / "home"
    for s in two_cards:
        shutil.copytree(s.folder, home / s.name)
    before = digest(home)
    code, out, err = cli(capsys, tmp_path / "elsewhere", "compare", str(home / "a5000-7d"),
                         str(home / "l40s-3d"), "--json")
    assert code == 0, err
    assert json.loads(out)["ranking"] == ["l40s-3d", "a5000-7d"]
    assert digest(home) == before


def test_d6_one_session_or_an_unknown_one_is_bad_input(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, two_cards: tuple[Any, Any],
        tmp_path: Path) -> None:
    code, _, err = cli(capsys, sessions_root, "compare", "a5000-7d")
    assert code == 2 and "two or more sessions" in err
    code, _, err = cli(capsys, sessions_root, "compare", "a5000-7d", "nope")
    assert code == 2 and "no session 'nope'" in err
    code, _, err = cli(capsys, sessions_root, "compare", "a5000-7d", str(tmp_path))
    assert code == 2 and "not a session folder" in err


def test_d6_compare_html_is_one_page_with_the_table_the_ranking_and_the_cost_chart(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        two_cards: tuple[Any, Any]) -> None:
    """The same figures as the table, a cost chart inline, nothing fetched, never over a file."""
    import shutil
    import stat
    import subprocess

    before = digest(sessions_root)
    page = tmp_path / "cards.html"
    code, out, err = cli(capsys, sessions_root, "compare", "a5000-7d", "l40s-3d", "--html", str(page))
    assert code == 0, err
    assert f"wrote {page}" in out and stat.S_IMODE(page.stat().st_mode) == 0o600
    text = page.read_text(encoding="utf-8")
    words = " ".join(text.split())
    assert "3 days, 41.00 USD" in words and "7 days, 55.00 USD" in words and "1.34× the first" in words
    assert "<svg" in text and "<!--" not in text.split("</style>", 1)[1]
    import re

    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text) and "src=" not in text  # nothing to fetch
    assert digest(sessions_root) == before  # the sessions are read, never written
    again = cli(capsys, sessions_root, "compare", "a5000-7d", "l40s-3d", "--html", "--out", str(page))
    assert again[0] == 2 and "exists" in again[2] and page.read_text(encoding="utf-8") == text
    inside = cli(capsys, sessions_root, "compare", "a5000-7d", "l40s-3d", "--html", "--out",
                 str(sessions_root / "a5000-7d" / "c.html"))
    assert inside[0] == 2 and "inside session a5000-7d" in inside[2]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed (apt-get install chromium): the page's text was checked, not its rendering")
    dom = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    shown = " ".join(dom.split())
    assert "41.00 USD" in shown and "l40s-3d" in shown and "<svg" in dom


#: What an image built for notebooks sets; ``import matplotlib`` refuses it with ValueError.
NOTEBOOK_BACKEND = {"MPLBACKEND": "module://matplotlib_inline.backend_inline"}


def test_h42_compare_html_writes_its_page_with_the_chart_under_an_unusable_backend(
        run_cli: Any, tmp_path: Path, two_cards: tuple[Any, Any]) -> None:
    pytest.importorskip("matplotlib")
    page = tmp_path / "cards.html"
    r = run_cli("compare", "a5000-7d", "l40s-3d", "--html", str(page), env=NOTEBOOK_BACKEND)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    text = page.read_text(encoding="utf-8")
    assert "<svg" in text and "not inline" not in text


def test_h42_compare_html_without_matplotlib_says_how_to_get_the_chart(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path,
        two_cards: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name: str, *a: Any, **k: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    page = tmp_path / "cards.html"
    code, _, err = cli(capsys, sessions_root, "compare", "a5000-7d", "l40s-3d", "--html", str(page))
    assert code == 0, err
    words = " ".join(page.read_text(encoding="utf-8").split())
    assert "<svg" not in words and "matplotlib is not installed" in words and "pip install" in words


def test_h44_compare_ranks_on_exact_costs_and_says_ties(sessions_root: Path, new_session: Any) -> None:
    """1.833 ¢ and 1.684 ¢ both read 2 ¢ once rounded: the ranking compares the exact
    quotients (the cheaper first, whatever the order given), and an exact tie is said."""
    from dataclasses import replace

    from gpusession.core.retrieval.compare import Comparison, session_figures

    base = session_figures(new_session("base"))
    a = replace(base, name="a", package_total_usd_minor=5500, accepted=3000, cost_per_accepted_usd_minor=2)
    b = replace(base, name="b", package_total_usd_minor=5500, accepted=3266, cost_per_accepted_usd_minor=2)
    c = replace(base, name="c", package_total_usd_minor=11000, accepted=6532, cost_per_accepted_usd_minor=2)
    comparison = Comparison((a, b, c), ())
    assert [s.name for s in comparison.ranking()] == ["b", "c", "a"]
    said = [ln for ln in comparison.lines() if ln.lstrip()[:2] in ("1.", "2.", "3.")]
    assert said[0].lstrip().startswith("1. b: 0.02 USD") and "tied" not in said[0]
    assert "2. c:" in said[1] and "1.00× the first, tied with b" in said[1]
    assert "3. a:" in said[2] and "1.09× the first" in said[2]
