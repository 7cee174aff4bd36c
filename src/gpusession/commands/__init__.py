"""Subcommands of the ``gpusession`` CLI, one module per pane's job.

Each module exposes ``register(subparsers)``, adding its parsers with
``set_defaults(func=...)``; ``func(args) -> int`` returns the exit code and raises
:class:`gpusession.core.files.errors.BadInput` for bad input. No module here imports textual
or torch at import time.
"""
