"""What the TUI's first frame does not wait for stays out of it.

Checked in a fresh interpreter on the real opening path (``Session.open`` of a folder on
disk, then the app headless at 80×24): at the moment the first frame is painted
(``MainScreen.after_first_frame``), neither psutil (process handling), crash recovery
and the record classes (``core.events.records``: nothing to recover), the BIP-39 lists (no text that could be a
seed phrase), the package-end warning's modules, the results table's modules (no row
is read before it), ``importlib.resources`` (the bundled checklist is read through the
package's loader), polars nor the report's scipy and matplotlib have been imported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from gpusession.testing import make_session

SCRIPT = textwrap.dedent(
    """
    import sys
    from gpusession.core.folder.session import Session
    from gpusession.ui import screens
    from gpusession.ui.app import build_app

    WATCH = ("psutil", "gpusession.core.folder.recovery", "gpusession.core.events.records", "mnemonic",
             "gpusession.core.retrieval.status", "scipy", "matplotlib", "polars",
             "gpusession.core.records.results", "gpusession.core.records.summary", "importlib.resources")
    seen = []
    after = screens.MainScreen.after_first_frame

    def probe(self):
        seen.extend(m for m in WATCH if m in sys.modules)
        seen.append("FRAME")
        after(self)
        self.app.exit(0)

    screens.MainScreen.after_first_frame = probe
    # opened as `gpusession NAME` opens it (commands/tui.py): a bad file is said in its pane
    app = build_app(Session.open(sys.argv[1], sys.argv[2], check_files=False))
    app.run(headless=True, size=(80, 24))
    print(" ".join(seen))
    """
)


#: The same probe, the app started as a person starts it: ``gpusession --sessions-dir ROOT NAME``
#: (the command line parsed, ``commands.tui`` and ``commands._common`` loaded, ``run_app``).
CLI_SCRIPT = textwrap.dedent(
    """
    import sys
    import textual.app
    from gpusession.ui import screens

    WATCH = ("psutil", "gpusession.core.folder.recovery", "gpusession.core.events.records", "mnemonic",
             "gpusession.core.retrieval.status", "scipy", "matplotlib", "polars",
             "gpusession.core.records.results", "gpusession.core.records.summary", "csv",
             "importlib.resources", "argparse")
    seen = []
    after = screens.MainScreen.after_first_frame
    run = textual.app.App.run

    def probe(self):
        seen.extend(m for m in WATCH if m in sys.modules)
        seen.append("FRAME")
        after(self)
        self.app.exit(0)

    def headless(self, *args, **kwargs):
        return run(self, headless=True, size=(80, 24))

    screens.MainScreen.after_first_frame = probe
    textual.app.App.run = headless
    from gpusession.cli import main

    code = main(["--sessions-dir", sys.argv[1], sys.argv[2]])
    print(" ".join(seen))
    sys.exit(code)
    """
)


def _first_frame_modules(root: Path, name: str, script: str = SCRIPT) -> list[str]:
    done = subprocess.run([sys.executable, "-c", script, str(root), name],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_first_frame_imports_no_psutil_recovery_events_or_wordlists(tmp_path: Path) -> None:
    s = make_session(tmp_path, "bench")
    assert _first_frame_modules(tmp_path, s.name) == ["FRAME"]


def test_a_crash_left_behind_is_still_recovered_before_the_first_frame(tmp_path: Path) -> None:
    s = make_session(tmp_path, "bench")
    s.journal("run_started", run_key="e/v/warm/0", experiment_id="e", variant_id="v", phase="warm",
              run_index=0)
    seen = _first_frame_modules(tmp_path, s.name)
    assert "gpusession.core.folder.recovery" in seen and seen[-1] == "FRAME"
    assert len(s.results.rows()) == 1  # the run in flight got its incident row


def test_first_frame_of_a_checklist_holding_the_products_evidence_loads_no_wordlist(tmp_path: Path) -> None:
    """The evidence gpusession writes beside the items (commands, paths, NVML's words) is
    checked for secrets on every read; it reads as prose, so the seed lists stay unloaded."""
    from gpusession.core.retrieval import checklist

    s = make_session(tmp_path, "bench")
    checklist.collect_evidence(s)  # what the TUI writes after its first frame
    assert "gpusession" in (s.folder / "checklist.toml").read_text(encoding="utf-8")
    assert _first_frame_modules(tmp_path, s.name) == ["FRAME"]


def test_a5_gpusession_name_paints_its_first_frame_without_the_results_modules(tmp_path: Path) -> None:
    """Through the command line too: ``commands._common`` (every command's helpers) loads
    neither the summary's record class nor the results CSV's module (the summary table
    ``run`` and ``show`` print lives in ``commands.summary_table``), and the words
    ``NAME`` are read without argparse (``cli.open_words``)."""
    s = make_session(tmp_path, "bench")
    assert _first_frame_modules(tmp_path, s.name, CLI_SCRIPT) == ["FRAME"]
