"""Hostile world, round 5: an output encoding that cannot hold our words (``PYTHONIOENCODING=ascii``).

``cost`` ended in ``UnicodeEncodeError`` at its first ``÷``: every command escapes what the
encoding cannot hold (``\\xf7``) and never prints a traceback.
"""

from __future__ import annotations

from helpers import RunCli

from gpusession.core.folder.session import Session


def test_an_ascii_output_gets_escapes_never_a_traceback(run_cli: RunCli, session: Session) -> None:
    env = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}
    for args in (("cost", session.name), ("status", session.name), ("show", session.name),
                 ("list",), ("nosuchcommand", "x", "y")):
        done = run_cli(*args, env=env)
        said = done.stdout + done.stderr
        assert "Traceback" not in said and "UnicodeEncodeError" not in said, (args, said[-1500:])
        assert said.isascii(), args
    done = run_cli("cost", session.name, env=env)
    assert done.returncode == 0 and "\\u2014" in done.stdout  # "GPU: RTX A5000 — …", escaped


def test_no_json_printer_writes_nan_or_infinity(capsys: object) -> None:
    """``allow_nan`` is off in every printer: a NaN reaching an output is a bug said in one
    line (exit 1), never a ``NaN`` token ``jq`` refuses."""
    import pytest

    from gpusession.commands._common import print_json
    from gpusession.core.files.errors import Failure
    from gpusession.core.retrieval.json_contract import json_text

    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(Failure) as exc:
            print_json({"median_s": bad})
        assert "not a number" in str(exc.value)
        with pytest.raises(Failure):
            json_text({"x": [1.0, bad]})
    assert json_text({"x": 1.5}) == '{"x": 1.5}'


def test_the_state_folders_made_under_umask_000_are_private(tmp_path: object, monkeypatch: object) -> None:
    """``umask 000`` left ``~/.local/state/gpusession`` and the parents gpusession made at 0777."""
    import os
    import stat
    from pathlib import Path

    from gpusession.core.folder.root import remember_sessions_dir

    state = Path(str(tmp_path)) / "home" / ".local" / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))  # type: ignore[attr-defined]
    old = os.umask(0)
    try:
        remember_sessions_dir(Path(str(tmp_path)) / "sessions")
    finally:
        os.umask(old)
    made = [state / "gpusession", state, state.parent, state.parent.parent]
    assert (state / "gpusession" / "last-sessions-dir").exists()
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in made} == {p.name: 0o700 for p in made}
