"""The Memory pane's GPU history bar follows the GPU in use, never the sum of every GPU.

Pilot test: the app is built by ``build_app`` with the fake NVML (8 GPUs, one busy).
"""

from __future__ import annotations

from typing import Any

from ui.pilot import SIZE, MakeApp, settle, text_of

from gpusession.testing import GIB, FakeGpu, FakeNvml
from gpusession.ui.charts import Bars


def _eight_gpus(busy: int) -> FakeNvml:
    gpus = [FakeGpu(name="NVIDIA H200", uuid=f"GPU-{i:04d}-0000", total_bytes=100 * GIB, used_bytes=0,
                    processes=[]) for i in range(8)]
    gpus[busy].used_bytes = 90 * GIB
    gpus[busy].processes = [(4_194_001, 89 * GIB)]
    return FakeNvml(gpus)


async def test_h04_history_bar_of_an_eight_gpu_host_shows_the_busy_gpu(session: Any, make_app: MakeApp) -> None:
    app = make_app(nvml=_eight_gpus(busy=5))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await pilot.pause(0.05)
        bars = app.screen.query_one("#mem-spark-gpu", Bars)
        assert bars.data and abs(bars.data[-1] - 0.9) < 1e-9  # not 90 / 800 (11%)
        label = " ".join(text_of(app, "#mem-hist-label").split())
        assert "GPU 5 device total used 90%" in label and "the GPU in use, of 8" in label


async def test_h04_history_bar_of_one_gpu_keeps_its_plain_words(session: Any, make_app: MakeApp) -> None:
    app = make_app(nvml=FakeNvml([FakeGpu(total_bytes=100 * GIB, used_bytes=25 * GIB)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await pilot.pause(0.05)
        label = " ".join(text_of(app, "#mem-hist-label").split())
        assert "GPU device total used 25% (bottom)" in label
