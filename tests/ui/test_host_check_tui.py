"""D8 in the TUI: the first open on a server checks the GPU against the order (NVML only)."""

from __future__ import annotations

from typing import Any

from ui.pilot import SIZE, MakeApp, settle

from gpusession.core.money import host_check as hc
from gpusession.core.money import order as om
from gpusession.testing import FakeGpu, FakeNvml


def _toasts(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_d8_first_open_in_the_tui_checks_and_says_a_deviation(session: Any, make_app: MakeApp) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    app = make_app(nvml=FakeNvml([FakeGpu(name="NVIDIA RTX A4000")]), check_host=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        said = " ".join(_toasts(app))
    assert "ORDER DEVIATION: deviation from order ORD-7781" in said
    assert f"gpusession check-host {session.name}" in said
    (check,) = hc.load_host_checks(session).values()
    assert check.probe is None  # no 10 s probe behind the person's back


async def test_d8_a_second_open_on_the_same_host_says_nothing(session: Any, make_app: MakeApp) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    for n in range(2):
        app = make_app(nvml=FakeNvml(), check_host=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            said = " ".join(_toasts(app))
        assert ("matches the order ORD-7781" in said) == (n == 0)
    assert len(hc.load_host_checks(session)) == 1


async def test_d8_no_gpu_in_the_tui_records_nothing(session: Any, make_app: MakeApp) -> None:
    app = make_app(nvml=FakeNvml(fail="NVML Shared Library Not Found"), check_host=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert not any("GPU check" in t or "order" in t for t in _toasts(app))
    assert not (session.folder / hc.HOST_CHECK_TOML).exists()
