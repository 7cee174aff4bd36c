"""A torchrun rank's load holds the same work as one process's load (R3), on stand-ins.

One process creates its CUDA context inside the load clock; a rank creates it when it
joins its group. The group's set-up is timed in two figures: the context goes into the
load, the join (rendezvous, NCCL start) is named in the load row's notes. No GPU: the
device and torch.distributed are stand-ins (a GPU twin is marked gpu).
"""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest

from gpusession.bench.device import TorchDevice
from gpusession.bench.phases import load_phase
from gpusession.bench.rank_group import RankGroup, setup_words
from gpusession.bench.ranks import RankEnv
from gpusession.bench.timing import SyncTimer, TorchCudaOps
from gpusession.bench.worker import with_group_setup

CONTEXT_NS = 400_000_000  # creating a CUDA context: 0.4 s, on the first call that needs it
JOIN_NS = 1_200_000_000  # the rendezvous and NCCL's start: 1.2 s
LOAD_NS = 1_000_000_000  # the model to the device: 1 s


class Gpus:
    """``torch.cuda`` of stand-in GPUs on a virtual clock: the first call that needs a context makes it."""

    def __init__(self) -> None:
        self.now = 0
        self.contexts: set[int] = set()

    def clock(self) -> int:
        return self.now

    def _touch(self, d: Any) -> None:
        i = d if isinstance(d, int) else int(d.index)
        if i not in self.contexts:  # CUDA 12: set_device creates the primary context
            self.contexts.add(i)
            self.now += CONTEXT_NS

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 2

    def set_device(self, i: int) -> None:
        self._touch(i)

    def synchronize(self, d: Any = None) -> None:
        self._touch(d)

    def memory_allocated(self, d: Any) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    def reset_peak_memory_stats(self, d: Any) -> None:
        pass


def _torch(gpus: Gpus, monkeypatch: pytest.MonkeyPatch) -> Any:
    def device(name: str) -> Any:
        kind, _, idx = str(name).partition(":")
        return SimpleNamespace(type=kind, index=int(idx) if idx else None)

    def init_process_group(backend: str, **kw: Any) -> None:
        gpus.now += JOIN_NS

    dist = types.SimpleNamespace(init_process_group=init_process_group, new_group=lambda backend: "gloo",
                                 all_gather_object=lambda out, obj, group=None: out.__setitem__(
                                     slice(None), [obj] * len(out)))
    torch = types.SimpleNamespace(cuda=gpus, device=device, distributed=dist)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    return torch


class Model:
    def __init__(self, gpus: Gpus) -> None:
        self.gpus = gpus

    def load(self, device: str, precision: str, context_limit: int | None) -> None:
        self.gpus.now += LOAD_NS


def _device(torch: Any, name: str) -> TorchDevice:
    dev = TorchDevice.__new__(TorchDevice)
    dev.torch, dev.device, dev.index = torch, name, int(name.split(":")[1])
    return dev


def _load_s(torch: Any, gpus: Gpus, name: str) -> dict[str, Any]:
    dev = _device(torch, name)
    timer = SyncTimer([name], TorchCudaOps(torch), clock=gpus.clock)
    return load_phase(dev, Model(gpus), {}, timer).figures(True)


@pytest.mark.parametrize("spelling", [None, "auto", "cuda"])
def test_r3_a_torchrun_load_row_holds_the_context_like_one_process(
        monkeypatch: pytest.MonkeyPatch, spelling: str | None) -> None:
    one = Gpus()
    alone = _load_s(_torch(one, monkeypatch), one, "cuda:1")  # one process: the context is in its clock
    assert alone["elapsed_s"] == pytest.approx((CONTEXT_NS + LOAD_NS) / 1e9)

    ranked = Gpus()
    torch = _torch(ranked, monkeypatch)
    group = RankGroup(RankEnv(1, 2, 1), spelling, clock=ranked.clock)  # the rank joins first
    assert group.device == "cuda:1" and ranked.contexts == {1}
    assert group.context_s == pytest.approx(CONTEXT_NS / 1e9)
    assert group.join_s == pytest.approx(JOIN_NS / 1e9)
    load = with_group_setup(_load_s(torch, ranked, group.device), group)
    assert load["elapsed_s"] == pytest.approx(alone["elapsed_s"])  # the same work, the same figure
    assert load["setup_note"] == ("the CUDA context (400 ms, created as the rank joined its torchrun "
                                  "group) is in the load; joining the group (rendezvous, NCCL start) "
                                  "took 1.20 s more, not in the load")


def test_r3_a_cpu_rank_names_its_join_and_adds_nothing_to_its_load(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = Gpus()
    _torch(gpus, monkeypatch)
    group = RankGroup(RankEnv(0, 2, 0), "cpu", clock=gpus.clock)
    assert group.context_s is None and group.join_s == pytest.approx(JOIN_NS / 1e9)
    load = with_group_setup({"elapsed_s": 0.5}, group)
    assert load["elapsed_s"] == 0.5
    assert load["setup_note"] == "joining the group took 1.20 s more, not in the load"
    assert setup_words(None, None) is None
