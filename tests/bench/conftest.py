"""Fixtures of the bench tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def ranks_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes (and torchrun ranks) import the fake workloads; one thread each on 2 cores."""
    from fake_workloads import with_tests_on_path

    with_tests_on_path(monkeypatch)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
