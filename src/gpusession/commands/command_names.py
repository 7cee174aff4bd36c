"""The CLI's command names and the module that registers each, without argparse.

Why apart from :mod:`gpusession.commands.parser`: the command line looks a word up here to
tell a command from a session's name (``gpusession NAME`` opens the TUI) before it knows
whether it needs the parser; ``gpusession NAME`` reads its words without argparse
(:func:`gpusession.cli.open_words`, A5). :mod:`gpusession.commands.parser` builds from it.
"""

from __future__ import annotations

#: Each command (aliases included) and the module under ``gpusession.commands`` that
#: registers it; ``None``: it needs the whole parser. Checked against the whole parser by
#: ``tests/cli/test_parser_commands.py``.
COMMAND_MODULES: dict[str, str | None] = {
    "new": "session_cmds", "list": "session_cmds", "show": "session_cmds", "package": "session_cmds",
    "status": "status_cmd", "open": "tui",
    "demo": "run_cmds", "run": "run_cmds", "experiment": "run_cmds",
    "agent": "agent_cmd", "validate": "validate_cmd", "cost": "cost_cmds", "order": "cost_cmds",
    "rates": "rates_cmd",
    "approve": "deliverables_cmd", "reject": "deliverables_cmd", "deliverables": "deliverables_cmd",
    "compare": "compare_cmd", "export": "compare_cmd", "check-host": "host_cmd",
    "checklist": "checklist_cmds", "manifest": "checklist_cmds", "verify-copy": "checklist_cmds",
    "report": "checklist_cmds", "pull": "pull_cmd",
    "completion": None,
}
