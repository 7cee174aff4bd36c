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
