"""Fixtures of the Pilot and snapshot tests: the UI's session (fixed dates) and the app
built with fakes. Plain helpers (``settle``, ``text_of`` ...) are in ``tests/ui/pilot.py``.

A GPU machine's image has no textual (nor pytest-asyncio): every test module here is then
skipped with the reason (``MAY_BE_ABSENT`` in ``tests/conftest.py``). So this file imports
textual and the UI only inside its fixtures: a conftest that fails to import is an error
for the whole folder, not a skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ui.pilot import MakeApp


@pytest.fixture
def session(sessions_root: Path) -> Any:
    """The UI's session: :func:`gpusession.testing.make_session`, fixed dates and ``batch-sweep``.

    Overrides the shared ``session`` in this folder: the app runs on a clock fixed at
    ``FIXED_NOW``, so the package window (``FIXED_START`` + 7 days) and the snapshots do
    not move.
    """
    from gpusession.testing import make_session

    return make_session(sessions_root)


@pytest.fixture
def make_app(request: pytest.FixtureRequest) -> MakeApp:
    """Build the app the CLI builds (``build_app``), with fakes, for the ``session`` fixture
    (or the session passed as ``session=``).

    A clock fixed at ``FIXED_NOW``, a fake NVML, a fixed host memory reading, no memory
    polling and UTC for local times; override any of them by keyword, e.g.
    ``make_app(runner_factory=FakeRunner.factory(), poll_s=0.1)``. Build it after the
    test has set the session up (the app reads the session when it starts).
    """
    from datetime import timezone

    from gpusession.testing import FIXED_NOW, FakeClock, FakeNvml, fixed_host_memory
    from gpusession.ui.app import build_app

    def make(session: Any = None, **kw: Any) -> Any:
        if session is None:
            session = request.getfixturevalue("session")
        kw.setdefault("clock", FakeClock(FIXED_NOW))
        kw.setdefault("nvml", FakeNvml())
        kw.setdefault("host_memory", fixed_host_memory)
        kw.setdefault("poll_s", 0)
        kw.setdefault("tz", timezone.utc)
        return build_app(session, **kw)

    return make
