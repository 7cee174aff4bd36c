"""Placeholder: this command module is filled in by its issue."""

from __future__ import annotations

from typing import Any


def register(sub: Any) -> None:
    """Register no subcommand yet."""
