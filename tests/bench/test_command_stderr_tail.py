"""A failed run of a command workload keeps the last lines of its stderr in its row (masked, escaped)."""

from __future__ import annotations

import sys
from typing import Any

from gpusession.bench.runner import Runner
from gpusession.bench.worker import stderr_words
from gpusession.core.experiment.plan import Experiment
from gpusession.core.folder.experiments import define_experiment
from gpusession.core.folder.session import Session

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"


def _exp(session: Session, **kw: Any) -> Experiment:
    base: dict[str, Any] = {"id": "e", "workload": "command", "varied": "batch", "values": (1,),
                            "runs_per_variant": 1, "cold_runs_per_variant": 0, "warmup_iterations": 0,
                            "scope": "full-chain"}
    base.update(kw)
    return define_experiment(session, Experiment(**base))


def test_failed_command_rows_keep_the_last_stderr_lines_masked_and_escaped(session: Session) -> None:
    script = ("import sys\n"
              "for i in range(8): print('line', i, file=sys.stderr)\n"
              f"print('key ' + 'ghp_' + '{TOKEN[4:]}', file=sys.stderr)\n"  # made when run
              "print('bell \\x07 esc \\x1b[2J', file=sys.stderr)\n"
              "sys.exit(7)\n")
    exp = _exp(session, params={"command": [sys.executable, "-c", script]})
    Runner(session, exp.id).run()
    rows = [r for r in session.results.rows() if r.phase == "warm"]
    assert rows and rows[0].elapsed_seconds is None
    notes = rows[0].notes or ""
    assert "exited with code 7" in notes and "its stderr ended:" in notes
    assert "line 7" in notes and "line 0" not in notes  # the last lines only
    assert TOKEN not in notes and "HIDDEN" in notes
    assert "\x1b" not in notes and "\\x1b[2J" in notes


def test_stderr_words_is_bounded_and_empty_without_stderr() -> None:
    assert stderr_words(b"") == "" and stderr_words(None) == ""
    assert len(stderr_words(b"x" * 5000)) < 1100


def test_h59_a_private_key_on_stderr_leaves_no_line_of_it_in_the_row_or_the_journal(session: Session) -> None:
    """An RSA key (28 lines) printed on stderr by a command that fails: the row's tail and
    the journal hold none of its body lines nor its END line, only that a key was hidden."""
    import base64
    import os

    body = base64.b64encode(os.urandom(1300)).decode()  # 1,736 characters: 26 full lines
    lines = ["-----BEGIN RSA PRIVATE KEY-----", *[body[i:i + 64] for i in range(0, 26 * 64, 64)],
             "-----END RSA PRIVATE KEY-----"]
    assert len(lines) == 28
    script = ("import sys\n"
              f"sys.stderr.write({chr(10).join(lines)!r} + '\\n')\n"
              "print('done', file=sys.stderr)\n"
              "sys.exit(3)\n")
    (session.folder / "leak.py").write_text(script)  # never in session.toml: it refuses a key
    exp = _exp(session, params={"command": [sys.executable, str(session.folder / "leak.py")]})
    Runner(session, exp.id).run()
    rows = [r for r in session.results.rows() if r.phase == "warm"]
    notes = rows[0].notes or ""
    journal = session.journal_path.read_text(encoding="utf-8")
    csv_text = (session.folder / "resultats-bruts.csv").read_text(encoding="utf-8")
    assert "exited with code 3" in notes and "HIDDEN: private key" in notes and "done" in notes
    for line in lines[1:]:  # body and END line: none of them kept anywhere
        assert line not in csv_text and line not in journal, line


def test_h75_a_key_body_without_its_armour_on_stderr_leaves_no_line_in_the_row_or_the_journal(
        session: Session) -> None:
    """The attack's case: 26 body lines of a PKCS#8 key, no BEGIN and no END line, then a line
    of the program's own; the row's tail says a key was hidden and keeps that line."""
    import base64
    import os

    der = bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8") + os.urandom(1192)
    b64 = base64.b64encode(der).decode()
    body = [b64[i:i + 64] for i in range(0, len(b64), 64)]
    assert len(body) == 26 and len(body[-1]) < 64
    script = ("import sys\n"
              f"sys.stderr.write({chr(10).join(body)!r} + '\\n')\n"
              "print('after the key', file=sys.stderr)\n"
              "sys.exit(3)\n")
    (session.folder / "leak.py").write_text(script)
    exp = _exp(session, params={"command": [sys.executable, str(session.folder / "leak.py")]})
    Runner(session, exp.id).run()
    notes = next(r.notes or "" for r in session.results.rows() if r.phase == "warm")
    journal = session.journal_path.read_text(encoding="utf-8")
    csv_text = (session.folder / "resultats-bruts.csv").read_text(encoding="utf-8")
    assert "exited with code 3" in notes and "HIDDEN: private key" in notes and "after the key" in notes
    for line in body:
        assert line[-20:] not in csv_text and line[-20:] not in journal, line
