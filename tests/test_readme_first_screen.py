"""The README's first screen: one sentence, a real picture of the TUI (a file in the
repository, remade by the script it names), the install, a quick start for real work and
the tmux line; the demo and test commands stay its first two fenced blocks (CI)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _fenced(n: int) -> str:
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", README, flags=re.S | re.M)
    return blocks[n - 1].strip()


def test_the_first_40_lines_hold_the_sentence_picture_install_quick_start_and_tmux() -> None:
    first = "\n".join(README.splitlines()[:40])
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


def test_the_demo_and_test_commands_stay_the_first_two_fenced_blocks() -> None:
    assert _fenced(1).endswith("gpusession demo --headless")
    assert _fenced(2).endswith('python3 -m pytest -m "not slow"')  # .ci/run runs the slow ones after it


def test_the_moved_pages_exist() -> None:
    for link in re.findall(r"\]\((docs/[^)#]+)\)", README):
        assert (ROOT / link).exists(), link


def test_the_report_chart_and_its_html_page_are_shown_as_pictures_the_script_makes() -> None:
    """The report's chart and its HTML page are real PNGs in the repository, remade by the
    script the first screen names (chart copied as drawn, page captured by Chromium)."""
    script = (ROOT / "scripts" / "readme-shots.sh").read_text(encoding="utf-8")
    for name in ("report-durations.png", "report-html.png"):
        assert f"](docs/img/{name})" in README, name
        assert (ROOT / "docs" / "img" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert name in script, name
    assert "--screenshot=" in script and "report demo --html" in script
