"""Subcommands of the ``gpusession`` CLI, one module per pane's job.

Each job has two modules: its parser under :mod:`gpusession.commands.parsers` (same
name; ``register(subparsers)`` adds the subcommands with ``set_defaults(func=Handler(...))``)
and its handlers here (``cmd_*(args) -> int`` returns the exit code and raises
:class:`gpusession.core.files.errors.BadInput` for bad input). ``--help`` builds the
parsers only; a handler's module is imported when its command runs
(:mod:`gpusession.commands.dispatch`). ``status`` and ``completion`` are light and
register themselves. No module here imports textual or torch at import time.
"""
