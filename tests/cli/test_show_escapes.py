"""H-17 on ``show``: free text read from the session's files reaches the terminal escaped.

The package's GPU model with a control character is refused when ``session.toml`` is read
(so ``show`` never prints it); a variant id edited by hand in the results CSV is shown
as ``\\x1b``.
"""

from __future__ import annotations

import contextlib
import io
import threading
from pathlib import Path

from gpusession.cli import main
from gpusession.testing import FakeRunner, make_session


def _show(root: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--sessions-dir", str(root), "show", "visuals-test-01"])
    return rc, out.getvalue(), err.getvalue()


def test_h17_show_escapes_a_hand_edited_variant_id(sessions_root: Path) -> None:
    s = make_session(sessions_root, runs=1)
    FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event()).run()
    csv = s.folder / "resultats-bruts.csv"
    # ESC and BEL (a NUL in a CSV line is refused by Python 3.10's csv reader, not by 3.11's)
    csv.write_text(csv.read_text(encoding="utf-8").replace(",batch-8,", ",batch-8\x1b[31m\x07,"), encoding="utf-8")
    rc, out, _ = _show(sessions_root)
    assert rc == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "batch-8\\x1b[31m\\x07" in out


def test_h17_show_refuses_a_gpu_model_with_a_control_character(sessions_root: Path) -> None:
    s = make_session(sessions_root)
    toml = s.folder / "session.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        'gpu_model = "RTX A5000"', 'gpu_model = "RTX\\u001b[31m A5000"'), encoding="utf-8")
    rc, out, err = _show(sessions_root)
    assert rc == 2 and "\x1b" not in out + err
    assert "control character" in err
