"""The Memory pane (key 3, ``ui/panes/memory.py``): allocator and NVML figures labelled, the poller.

Pilot tests: the app is built by the factory the CLI uses (``build_app``) with fakes
(``make_app`` in ``tests/ui/conftest.py``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from ui.pilot import (
    SIZE,
    HeldRead,
    MakeApp,
    background_started,
    glyphs,
    rounds_until,
    settle,
    text_of,
    workers_done,
)

from gpusession.core.records.results import ResultRow
from gpusession.testing import FakeNvml, fixed_host_memory
from gpusession.ui.panes import memory as memory_mod
from gpusession.ui.panes.memory import MemoryPane

#: a frame of the Memory pane's module
MEMORY_PANE = re.compile(r"gpusession[/\\]ui[/\\]panes[/\\]memory\.py$")
#: a held read gives up after this long, so a failing test ends (it is never reached when green)
HOLD_S = 30


async def test_h07_no_nvml_says_why_and_still_shows_host_memory(
    session: Any, make_app: MakeApp
) -> None:
    app = make_app(nvml=FakeNvml(fail="NVML Shared Library Not Found"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        assert "CPU only" in text_of(app, "#session-header")
        gpu = text_of(app, "#mem-gpu")
        assert "no NVIDIA driver found" in gpu and "Host memory is still shown" in gpu
        assert "Host RAM   used 20.0 GiB of 64.0 GiB" in text_of(app, "#mem-host")
        assert "container limit 48.0 GiB" in text_of(app, "#mem-host")


async def test_m2_m3_h04_allocator_figures_labelled_never_added_never_cache(
    session: Any, make_app: MakeApp
) -> None:
    gib = 1024**3
    session.results.append(ResultRow(
        experiment_id="batch-sweep", variant_id="batch-8", phase="warm", run_index=5, device="cuda:0",
        baseline_allocated_bytes=1 * gib, baseline_reserved_bytes=2 * gib,
        peak_allocated_bytes=3 * gib, peak_reserved_bytes=5 * gib, elapsed_seconds=0.1,
    ))

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        alloc = text_of(app, "#mem-alloc")
        gpu = text_of(app, "#mem-gpu")
        assert "PyTorch allocator, this process only" in alloc
        assert "peak allocated     3.00 GiB" in alloc and "peak reserved      5.00 GiB" in alloc
        assert "8.00 GiB" not in alloc  # allocated + reserved is never shown (M2)
        assert "2.00 GiB" in alloc  # baseline reserved, on its own
        assert "cache" not in (alloc + gpu).lower()  # M2
        assert "other processes" in alloc and "outside the" in alloc  # M3
        assert "device total used 3.00 GiB of 24.0 GiB" in gpu  # H-04 / NVML label


async def test_a5_key_3_reads_the_results_csv_off_the_event_loop_and_says_so_meanwhile(
    session: Any, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pane's first show: the last run's row is read in a worker (held here by an
    event, never a sleep), the allocator part says so meanwhile; the loop reads the CSV 0 times."""
    from gpusession.core.records.results import ResultsFile

    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                     run_index=1, device="cpu", elapsed_seconds=0.2))
    held = HeldRead(monkeypatch, ResultsFile, "read", MEMORY_PANE, HOLD_S)  # each read of the CSV the pane asks for
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await background_started(app)
        await workers_done(pilot, app)
        await pilot.press("3")
        await rounds_until(pilot, lambda: bool(held.reads))
        assert text_of(app, "#mem-alloc") == memory_mod.READING_ALLOC  # the key answered meanwhile
        held.release.set()
        await workers_done(pilot, app)
        assert "not measured" in text_of(app, "#mem-alloc")
    assert held.reads == [False]


async def test_m4_cpu_run_allocator_not_measured(session: Any, make_app: MakeApp) -> None:
    session.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                                     run_index=1, device="cpu", elapsed_seconds=0.2))

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "not measured" in text_of(app, "#mem-alloc")
        assert "0 B" not in text_of(app, "#mem-alloc")


async def test_h05_gpus_identified_by_uuid_with_processes(session: Any, make_app: MakeApp) -> None:
    from gpusession.testing import FakeGpu

    gpus = [FakeGpu(name="NVIDIA H200", uuid="GPU-aaaa"), FakeGpu(name="NVIDIA H200", uuid="GPU-bbbb", processes=[])]

    app = make_app(nvml=FakeNvml(gpus, as_bytes=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        gpu = text_of(app, "#mem-gpu")
        assert "GPU 0 NVIDIA H200 (GPU-aaaa)" in gpu and "GPU 1 NVIDIA H200 (GPU-bbbb)" in gpu
        assert "pid 4194000" in gpu and "no compute process seen by NVML" in gpu
        assert "NVIDIA driver 535.104.05" in gpu  # bytes from old bindings (H-06)
        assert "GPU: 2× NVIDIA H200" in text_of(app, "#session-header")


async def test_memory_poller_samples_on_its_own_timer(session: Any, make_app: MakeApp) -> None:
    app = make_app(poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")  # the pane (and its poller) is built when first shown
        await pilot.pause(0.6)
        mem = app.screen.query_one(MemoryPane)
        assert mem.samples >= 4
        assert len(mem._host_hist) == mem.samples


async def test_memory_poller_initialises_nvml_once(session: Any, make_app: MakeApp) -> None:
    nvml = FakeNvml()

    app = make_app(nvml=nvml, poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")  # the pane (and its poller) is built when first shown
        # Wait for 5 samples (at most 15 s: a loaded CI machine is slow), then check
        # NVML was initialised once for all of them.
        for _ in range(150):
            await pilot.pause(0.1)
            if app.screen.query_one(MemoryPane).samples >= 5:
                break
        await app.workers.wait_for_complete()
        assert app.screen.query_one(MemoryPane).samples >= 5
        # one for the poller's whole life, one for the checklist's evidence probe, one
        # for the header's reading before the memory pane is shown
        assert nvml.init_calls == 3


async def test_m2_memory_history_bars_scaled_0_to_100_percent(
    session: Any, make_app: MakeApp
) -> None:
    from dataclasses import replace

    from gpusession.testing import GIB

    readings = iter([20 * GIB, 22 * GIB] * 50)  # 31 % and 34 % of 64 GiB

    def host() -> Any:
        return replace(fixed_host_memory(), used_bytes=next(readings))

    app = make_app(host_memory=host, poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        mem = app.screen.query_one(MemoryPane)
        while mem.samples < 6:
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        bars = glyphs(app.screen.query_one("#mem-spark-host")).strip()
        assert bars and set(bars) <= {"▂", "▃"}, bars  # never empty → full for 3 points
        label = text_of(app, "#mem-hist-label")
        assert "bars 0–100%" in label and "host RAM used 31%–34%" in label, label
        assert "min→max" not in label


async def test_h18_memory_pane_keeps_a_gpu_whose_memory_nvml_cannot_read(
    session: Any, make_app: MakeApp
) -> None:
    """GPU 1 answers "Not Supported" for memory and for its process list: the pane keeps
    all three GPUs, says which figures are unknown and why, never 0 or ``None``, and the
    history bar sums only the GPUs whose memory was read."""
    import pynvml

    from gpusession.testing import FakeGpu

    gpus = [FakeGpu(uuid=f"GPU-{i}{i}{i}{i}-0000", processes=[(1000 + i, 2**20)]) for i in range(3)]
    gpus[1].errors["memory"] = pynvml.NVMLError_NotSupported()
    gpus[1].errors["processes"] = pynvml.NVMLError_NotSupported()
    app = make_app(nvml=FakeNvml(gpus))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await settle(pilot, app)
        gpu = text_of(app, "#mem-gpu")
        assert "GPU 0 " in gpu and "GPU 1 " in gpu and "GPU 2 " in gpu
        assert "GPU 1 NVIDIA RTX A5000 (GPU-1111-0000): memory unknown (NVML: Not Supported)" in gpu
        assert "processes unknown (NVML could not list them: Not Supported)" in gpu
        assert "None" not in gpu
        pane = app.screen.query_one(MemoryPane)
        assert pane.samples >= 1


def test_soak_failed_nvml_is_not_asked_again_and_keeps_nothing_per_reading() -> None:
    """A poller whose NVML failed to start gets the same reason each second: NVML is
    asked once, and no exception (with its traceback and frames) is kept per reading."""
    from gpusession.core.gpu.nvml import NvmlSession

    fake = FakeNvml(fail="NVML Shared Library Not Found")
    nvml = NvmlSession(fake)
    snaps = [nvml.read() for _ in range(20)]
    assert not snaps[0].available and "NVML Shared Library Not Found" in (snaps[0].reason or "")
    assert all(s is snaps[0] for s in snaps)
    assert fake.init_calls == 1


@pytest.mark.slow
async def test_soak_memory_poller_keeps_nothing_per_tick(
    session: Any, make_app: MakeApp
) -> None:
    """Idle on the memory pane (no NVML driver, the common CPU-only case): after many
    refresh ticks, no worker, widget or history entry is kept per tick (a chained
    traceback kept each tick's worker, future and task alive)."""
    import gc

    from textual.worker import Worker

    def counts(app: Any) -> tuple[int, int, int]:
        gc.collect()
        workers = sum(1 for o in gc.get_objects() if isinstance(o, Worker))
        mem = app.screen.query_one(MemoryPane)
        return workers, len(list(app.screen.walk_children(with_self=True))), len(mem._host_hist)

    async def until_samples(pilot: Any, n: int) -> None:
        for _ in range(300):  # at most 30 s on a loaded machine
            if app.screen.query_one(MemoryPane).samples >= n:
                return
            await pilot.pause(0.1)
        raise AssertionError(f"fewer than {n} samples")

    app = make_app(nvml=FakeNvml(fail="NVML Shared Library Not Found"), poll_s=0.01)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await until_samples(pilot, 10)
        workers0, nodes0, _ = counts(app)
        await until_samples(pilot, 40)
        workers1, nodes1, hist1 = counts(app)
        mem = app.screen.query_one(MemoryPane)
        assert mem.samples >= 40
        assert nodes1 == nodes0  # refreshes update widgets, never mount new ones
        assert hist1 == min(mem.samples, 120)  # the history is bounded (120 samples)
        assert workers1 <= workers0 + 2, (workers0, workers1)  # one or two in flight at most


async def test_m3_what_the_allocator_leaves_out_is_worded_by_what_is_shown_above(
    session: Any, make_app: MakeApp
) -> None:
    """No NVML: no "device total above" (there is none); with NVML: it is named."""
    app = make_app(nvml=FakeNvml(fail="NVML Shared Library Not Found"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await pilot.pause()
        alloc = text_of(app, "#mem-alloc")
        assert "above" not in alloc
        assert "no device total is shown: NVML is not available here" in alloc
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await pilot.pause()
        assert "the NVML device total above includes them" in text_of(app, "#mem-alloc")


async def test_m2_allocator_figures_shown_per_rank(session: Any, make_app: MakeApp) -> None:
    """A run across ranks: each rank's own four figures, under its device and UUID, never added."""
    from gpusession.core.records.ranks import append_rank_rows

    gib = 1024**3
    session.results.append(ResultRow(
        experiment_id="two", variant_id="batch-8", phase="warm", run_index=2, device="cuda:0",
        gpu_count=2, baseline_allocated_bytes=1 * gib, baseline_reserved_bytes=2 * gib,
        peak_allocated_bytes=6 * gib, peak_reserved_bytes=7 * gib, elapsed_seconds=0.1,
        notes="2 ranks: slowest rank 1",
    ))
    per_rank = [
        {"rank": 0, "world_size": 2, "device": "cuda:0", "gpu_uuid": "GPU-aaaa", "ok": True,
         "elapsed_s": 0.09, "baseline_allocated_bytes": 1 * gib, "baseline_reserved_bytes": 2 * gib,
         "peak_allocated_bytes": 3 * gib, "peak_reserved_bytes": 4 * gib},
        {"rank": 1, "world_size": 2, "device": "cuda:1", "gpu_uuid": "GPU-bbbb", "ok": True,
         "elapsed_s": 0.1, "baseline_allocated_bytes": 1 * gib, "baseline_reserved_bytes": 2 * gib,
         "peak_allocated_bytes": 6 * gib, "peak_reserved_bytes": 7 * gib},
    ]
    ranks_csv = session.runs_dir / "two" / "ranks.csv"
    append_rank_rows(ranks_csv, "warm:batch-8:1", "warm", [{**r, "peak_reserved_bytes": 9 * gib} for r in per_rank])
    append_rank_rows(ranks_csv, "warm:batch-8:2", "warm", per_rank)

    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        alloc = text_of(app, "#mem-alloc")
        assert "each rank's own process (2 ranks" in alloc and "keeps the largest peaks" in alloc
        assert "this process only" not in alloc
        assert "rank 0 on cuda:0 (GPU-aaaa)" in alloc and "rank 1 on cuda:1 (GPU-bbbb)" in alloc
        assert alloc.index("rank 0 on") < alloc.index("peak reserved      4.00 GiB") < alloc.index("rank 1 on")
        assert "peak reserved      7.00 GiB" in alloc
        assert "9.00 GiB" not in alloc  # another run's ranks are not this run's
        assert "11.0 GiB" not in alloc and "10.0 GiB" not in alloc  # never added over ranks (M2)


@pytest.mark.slow
async def test_memory_pane_without_a_readable_ranks_table_keeps_the_row(
    session: Any, make_app: MakeApp
) -> None:
    gib = 1024**3
    session.results.append(ResultRow(
        experiment_id="two", variant_id="batch-8", phase="warm", run_index=1, device="cuda:0",
        peak_allocated_bytes=6 * gib, peak_reserved_bytes=7 * gib, elapsed_seconds=0.1,
    ))
    (session.runs_dir / "two").mkdir(parents=True)
    (session.runs_dir / "two" / "ranks.csv").write_text("run_key,rank\nwarm:batch-8:1,not-a-number\n")

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        alloc = text_of(app, "#mem-alloc")
        assert "peak reserved      7.00 GiB" in alloc and "this process only" not in alloc
        assert "the largest over its ranks" in alloc and "ranks.csv could not be read" in alloc


def test_ranks_on_the_cpu_are_said_once_not_per_rank() -> None:
    from gpusession.ui.panes.memory import allocator_lines

    row = {"experiment_id": "r2", "variant_id": "batch-4", "phase": "warm", "run_index": 2}
    ranks = [{"rank": 0, "device": "cpu", "ok": True}, {"rank": 1, "device": "cpu", "ok": True}]
    lines = allocator_lines(row, None, ranks)
    assert "    every rank on cpu: not measured (no GPU allocator in that run, e.g. on CPU: empty, not 0)" in lines
    assert not any("rank 0 on" in ln for ln in lines) and len(lines) == 4


def _record_updates(pane: MemoryPane) -> dict[str, list[bool]]:
    """Each Static of the pane records the ``layout`` flag of every update it gets."""
    from textual.widgets import Static

    seen: dict[str, list[bool]] = {}
    for sel in ("#mem-host", "#mem-gpu", "#mem-hist-label", "#mem-alloc"):
        widget = pane.query_one(sel, Static)
        original = widget.update

        def update(content: Any = "", *, layout: bool = True, _sel: str = sel, _orig: Any = original) -> None:
            seen.setdefault(_sel, []).append(layout)
            _orig(content, layout=layout)

        widget.update = update  # type: ignore[method-assign]
    return seen


async def _until_samples(pilot: Any, pane: MemoryPane, n: int) -> None:
    for _ in range(300):  # at most 30 s on a loaded machine
        if pane.samples >= n:
            return
        await pilot.pause(0.1)
    raise AssertionError(f"fewer than {n} samples")


async def test_idle_memory_pane_redraws_only_what_changed_without_layout(
    session: Any, make_app: MakeApp
) -> None:
    """Idle (the same host and GPU readings each tick): the host, GPU and allocator texts
    are not updated again, and the history label (its sample count changes each tick)
    is redrawn without a layout of the screen."""
    app = make_app(poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        pane = app.screen.query_one(MemoryPane)
        # past 9 samples: the label (wrapped at 80 columns) keeps its length until 99
        await _until_samples(pilot, pane, 12)
        seen = _record_updates(pane)
        start = pane.samples
        await _until_samples(pilot, pane, start + 5)
        await pilot.pause(0.1)
        assert "#mem-host" not in seen and "#mem-gpu" not in seen and "#mem-alloc" not in seen, seen
        assert seen.get("#mem-hist-label") and not any(seen["#mem-hist-label"]), seen
        assert f"last {pane.samples} samples" in text_of(app, "#mem-hist-label")


async def test_h12_hidden_memory_pane_keeps_sampling_and_shows_the_latest_when_shown(
    session: Any, make_app: MakeApp
) -> None:
    """Another pane shown: the readings go on (the header and the history need them) but
    nothing is laid out; shown again, the pane shows the latest reading."""
    app = make_app(poll_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        pane = app.screen.query_one(MemoryPane)
        await _until_samples(pilot, pane, 2)
        await pilot.press("1")
        await pilot.pause(0.1)
        seen = _record_updates(pane)
        start = pane.samples
        await _until_samples(pilot, pane, start + 5)
        assert not any(flag for flags in seen.values() for flag in flags), seen
        await pilot.press("3")
        await pilot.pause(0.1)
        count = pane.samples
        label = text_of(app, "#mem-hist-label")
        assert any(f"last {n} samples" in label for n in (count - 1, count, count + 1)), (label, count)
        assert "Host RAM   used 20.0 GiB of 64.0 GiB" in text_of(app, "#mem-host")
