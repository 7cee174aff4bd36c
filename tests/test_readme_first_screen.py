"""The README is a front page: its first screen (60 lines) holds what it is, a real picture
of the TUI (a file in the repository, remade by the script it names), the two commands (the
demo's and the tests', its first two fenced blocks: CI runs the second), the install and a
10-line quick start; the whole page is under 3,000 words and the rest lives in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")


def _fenced(n: int) -> str:
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", README, flags=re.S | re.M)
    return blocks[n - 1].strip()


def test_the_first_60_lines_hold_the_two_commands_picture_install_quick_start_and_tmux() -> None:
    first = "\n".join(README.splitlines()[:60])
    assert _fenced(1) in first and _fenced(2) in first
    picture = re.search(r"!\[[^\]]+\]\((docs/img/[^)]+\.png)\)", first)
    assert picture, first
    png = ROOT / picture.group(1)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    script = re.search(r"\((scripts/[^)]+\.sh)\)", first)
    assert script and (ROOT / script.group(1)).is_file()
    assert "save_screenshot" in (ROOT / script.group(1)).read_text(encoding="utf-8")
    assert "pip install ." in first and "pipx install ." in first and "torch" in first
    for step in ("gpusession new", "check-host", "define", "gpusession run", "gpusession report",
                 "gpusession manifest", "gpusession pull", "gpusession verify-copy"):
        assert step in first, step
    assert "status --format tmux" in first
    quick = next(b for b in re.findall(r"^```[^\n]*\n(.*?)^```", first, flags=re.S | re.M)
                 if "gpusession new" in b)
    assert len(quick.strip().splitlines()) <= 10, quick


def test_the_readme_is_under_3000_words_and_says_where_it_sits_beside_nvitop_and_hyperfine() -> None:
    assert len(README.split()) < 3000, len(README.split())
    for tool in ("nvitop", "gpustat", "hyperfine"):
        assert tool in README, tool
    assert "next pane" in README  # nvitop/gpustat: the live readout stays beside us
    for page in ("docs/guide.md", "docs/cli.md", "LICENSE"):
        assert f"]({page})" in README, page


def test_the_demo_and_test_commands_stay_the_first_two_fenced_blocks() -> None:
    assert _fenced(1).endswith("gpusession demo --headless")
    assert _fenced(2).endswith('python3 -m pytest -m "not slow"')  # .ci/run runs the slow ones after it


def test_the_moved_pages_exist() -> None:
    for link in re.findall(r"\]\((docs/[^)#]+)\)", README):
        assert (ROOT / link).exists(), link
    for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", GUIDE):  # relative to docs/
        assert (ROOT / "docs" / link).exists(), link


def test_the_report_chart_and_its_html_page_are_shown_as_pictures_the_script_makes() -> None:
    """The report's chart and its HTML page are real PNGs in the repository, shown by the
    guide and remade by the script the first screen names (chart copied as drawn, page
    captured by Chromium)."""
    script = (ROOT / "scripts" / "readme-shots.sh").read_text(encoding="utf-8")
    for name in ("report-durations.png", "report-html.png"):
        assert f"](img/{name})" in GUIDE, name
        assert (ROOT / "docs" / "img" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert name in script, name
    assert "--screenshot=" in script and "report demo --html" in script
