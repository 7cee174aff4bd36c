"""The cyclic GC waits for the TUI's first frame, and only for it (A5).

``gpusession NAME`` pauses the collector from the moment the command line knows it opens
the TUI; ``run_app`` freezes what start-up made and resumes the collector once the first
frame is painted. Whatever ends the command (the app, a refusal before it), the collector
is on again when ``main`` returns; no other command touches it.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from gpusession.testing import make_session

#: ``gpusession --sessions-dir ROOT NAME`` headless: whether the collector runs while the
#: Checklist pane mounts (before the first frame), right after the first frame, and once
#: ``main`` returned.
SCRIPT = textwrap.dedent(
    """
    import gc
    import sys
    import textual.app
    from gpusession.ui import screens
    from gpusession.ui.panes import checklist

    seen = []
    mount = checklist.ChecklistPane.on_mount
    after = screens.MainScreen.after_first_frame
    run = textual.app.App.run

    def on_mount(self):
        seen.append(f"mount:{gc.isenabled()}")
        mount(self)

    def probe(self):
        seen.append(f"frame:{gc.isenabled()}")
        after(self)
        self.app.exit(0)

    def headless(self, *args, **kwargs):
        return run(self, headless=True, size=(80, 24))

    checklist.ChecklistPane.on_mount = on_mount
    screens.MainScreen.after_first_frame = probe
    textual.app.App.run = headless
    from gpusession.cli import main

    code = main(["--sessions-dir", sys.argv[1], sys.argv[2]])
    seen.append(f"end:{gc.isenabled()}")
    print(" ".join(seen))
    sys.exit(code)
    """
)


def test_a5_the_collector_is_paused_before_the_first_frame_and_runs_after_it(tmp_path: Path) -> None:
    s = make_session(tmp_path, "bench")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), s.name],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["mount:False", "frame:True", "end:True"]


def test_a5_a_tui_refused_before_its_app_leaves_the_collector_on(
    session: Any, capsys: Any, monkeypatch: Any
) -> None:
    """A bad ``session.toml`` ends ``gpusession NAME`` before ``run_app``: the collector is on again."""
    from helpers import cli

    import gpusession.ui.app as ui_app

    session.session_toml.write_text("schema = 1\ncreated_at = 5\n", encoding="utf-8")
    monkeypatch.setattr(ui_app, "run_app", lambda s: 0)
    assert gc.isenabled()
    code, _, _ = cli(capsys, session.folder.parent, session.name)
    assert code == 2
    assert gc.isenabled()


def test_a5_the_app_ended_before_its_first_frame_resumes_the_collector(session: Any) -> None:
    from gpusession.ui.app import build_app

    app = build_app(session)
    try:
        app.pause_gc_until_first_frame()
        assert not gc.isenabled() and app.gc_paused
        app.resume_gc()
        assert gc.isenabled() and not app.gc_paused
        app.resume_gc()  # once only
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
