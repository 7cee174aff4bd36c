#!/usr/bin/env bash
# The README's pictures, from a real run: the demo is run (a real classifier, timed on
# this machine), then the TUI is opened on it at 80x24, its Run pane captured with
# Textual's save_screenshot (SVG) and turned into PNG by rsvg-convert (Debian:
# apt-get install -y librsvg2-bin). The report's duration chart is copied as drawn, and
# the HTML report is opened by headless Chromium (Debian: apt-get install -y chromium) at a
# phone's width and captured as PNG.
#
#   scripts/readme-shots.sh                  # runs the demo in a temporary folder
#   scripts/readme-shots.sh SESSIONS_DIR     # uses the demo session already there
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/img
mkdir -p "$out"
command -v rsvg-convert >/dev/null || { echo "readme-shots: rsvg-convert not found (apt-get install -y librsvg2-bin)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=${1:-$work/sessions}
export XDG_STATE_HOME="$work/state"  # the shots never change the folder `status` remembers
if [[ ! -d "$root/demo" ]]; then
    python3 -m gpusession --sessions-dir "$root" demo --headless --device cpu >"$work/demo.log"
fi
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || { echo "readme-shots: chromium not found (apt-get install -y chromium)" >&2; exit 2; }
python3 -m gpusession --sessions-dir "$root" report demo --html --out "$work/report.md" >/dev/null
python3 - "$root" "$work" <<'PY'
import asyncio
import sys
from pathlib import Path

from gpusession.core.folder.session import Session
from gpusession.ui.app import build_app

root, work = Path(sys.argv[1]), Path(sys.argv[2])


async def shoot() -> None:
    app = build_app(Session.open(root, "demo"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        await app.main.build_all_panes()
        await app.workers.wait_for_complete()
        await pilot.press("2")
        await pilot.pause(0.5)
        app.save_screenshot("tui-run-80x24.svg", str(work))


asyncio.run(shoot())
PY
rsvg-convert --background-color=white -o "$out/tui-run-80x24.png" "$work/tui-run-80x24.svg"
cp "$work/report-durations.png" "$out/report-durations.png"
# the page as a reader sees it; --no-sandbox only where this runs as root (as the test does)
sandbox=(); [[ $(id -u) -eq 0 ]] && sandbox=(--no-sandbox)
"$chromium" --headless "${sandbox[@]}" --disable-gpu --no-first-run --user-data-dir="$work/profile" \
    --window-size=600,1400 --hide-scrollbars --screenshot="$out/report-html.png" \
    "file://$work/report.html" >/dev/null 2>&1
echo "wrote $out/tui-run-80x24.png, $out/report-durations.png and $out/report-html.png"
