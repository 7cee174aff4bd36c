"""D8 through the CLI: ``check-host`` and ``run``'s first open on a server, on the fake NVML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli

from gpusession.core.folder import journal
from gpusession.core.folder.session import Session
from gpusession.core.gpu.hostfacts import HostKey, ProbeGpu, ProbeResult
from gpusession.core.money import host_check as hc
from gpusession.core.money import order as om
from gpusession.testing import GIB, FakeGpu, FakeNvml

PROBE = ProbeResult("measured", "measured 1 GPU(s) in 10.0 s", 10.0, "float16", 8192, 256 * 1024**2,
                    "2.13.0", (ProbeGpu("GPU-x", "NVIDIA RTX A5000", 99.5, 20.0, 21.0),))


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[FakeGpu]:
    """The real NVML readers on a fake NVML; the probe worker replaced by fixed figures."""
    from gpusession.bench import hostprobe
    from gpusession.core.gpu import nvml

    gpus = [FakeGpu()]
    monkeypatch.setattr(nvml, "_import_pynvml", lambda: FakeNvml(gpus))
    probes: list[int] = []

    def fake_probe() -> ProbeResult:
        probes.append(1)
        return PROBE

    monkeypatch.setattr(hostprobe, "run_probe", fake_probe)
    monkeypatch.setattr(hostprobe, "PROBES_RUN", probes, raising=False)
    return gpus


def test_d8_check_host_says_it_matches_and_keeps_the_probe(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    code, out, err = cli(capsys, sessions_root, "check-host", session.name)
    assert code == 0, err
    assert "order: matches the order ORD-7781: 1 × NVIDIA RTX A5000, 24.0 GiB each" in out
    assert "matmul 99.5 TFLOP/s" in out
    assert "host-check.toml" in out
    assert not (session.folder / journal.RUN_LOCK).exists()  # the run lock is given back
    (check,) = hc.load_host_checks(session).values()
    assert check.probe == PROBE


def test_d8_check_host_names_the_order_number_on_a_deviation(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    fake_gpu[0] = FakeGpu(name="NVIDIA RTX A4000", total_bytes=16 * GIB)
    code, out, _ = cli(capsys, sessions_root, "check-host", session.name, "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["order_number"] == "ORD-7781"
    assert doc["deviation"].startswith("deviation from order ORD-7781: GPU model seen 'NVIDIA RTX A4000'")
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert "ORDER DEVIATION: deviation from order ORD-7781" in out


def test_d8_check_host_never_probes_beside_a_measurement(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (session.folder / journal.RUN_LOCK).write_text(f"{holder.pid}")
        code, _, err = cli(capsys, sessions_root, "check-host", session.name)
    finally:
        holder.kill()
        holder.wait()
    assert code == 1
    assert "running" in err or "lock" in err or str(holder.pid) in err
    assert not (session.folder / hc.HOST_CHECK_TOML).exists()


def test_d8_check_host_without_a_gpu_records_nothing(
        session: Session, sessions_root: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.gpu import nvml

    monkeypatch.setattr(nvml, "_import_pynvml", lambda: FakeNvml(fail="NVML Shared Library Not Found"))
    code, out, err = cli(capsys, sessions_root, "check-host", session.name)
    assert code == 1
    assert out == ""
    assert err.strip() == ("check-host: no GPU visible (no NVIDIA driver found (NVML: NVML Shared "
                           "Library Not Found)): nothing checked, nothing recorded")
    assert not (session.folder / hc.HOST_CHECK_TOML).exists()


def test_d8_run_checks_once_per_host_before_measuring(session: Session, fake_gpu: list[FakeGpu]) -> None:
    from gpusession.bench import hostprobe
    from gpusession.commands.host_cmd import check_on_first_open

    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    server = HostKey("gpu-node-7", "boot-1")
    lines = check_on_first_open(session, host=server)
    assert lines[0] == "first open on this host: the GPU found, checked against the order"
    assert any("matches the order ORD-7781" in ln for ln in lines)
    assert check_on_first_open(session, host=server) == []
    assert hostprobe.PROBES_RUN == [1]  # type: ignore[attr-defined]
    assert check_on_first_open(session, host=HostKey("laptop", "b")) == []  # a copy elsewhere


def test_d8_run_headless_checks_the_host_before_it_measures(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.core.events.actions import HostCheckedRecord
    from gpusession.core.events.records import ExperimentStartedRecord

    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e",
                       "--workload", "command", "--values", "1", "--runs", "1", "--warmup", "0",
                       "--cold-runs", "0", "--device", "cpu", "--command", "true")
    assert code == 0, err
    for n in range(2):
        code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
        lines = out.splitlines()
        running = next(i for i, ln in enumerate(lines) if ln.startswith("running e"))
        said = [i for i, ln in enumerate(lines) if ln.startswith("first open on this host")]
        if n == 0:
            assert said and said[0] < running, out
            assert any("matches the order ORD-7781" in ln for ln in lines[:running])
        else:
            assert said == [], out  # the same host: checked once
    kinds = [type(r) for r in session.journal_records()
             if isinstance(r, (HostCheckedRecord, ExperimentStartedRecord))]
    assert kinds[0] is HostCheckedRecord and kinds.count(HostCheckedRecord) == 1
    from gpusession.bench import hostprobe

    assert hostprobe.PROBES_RUN == [1]  # type: ignore[attr-defined]


def test_d8_a_damaged_host_check_file_is_said_and_never_stops_a_run(
        session: Session, fake_gpu: list[FakeGpu]) -> None:
    from gpusession.commands.host_cmd import check_on_first_open

    (session.folder / hc.HOST_CHECK_TOML).write_text("hosts = [unclosed\n", encoding="utf-8")
    (line,) = check_on_first_open(session, host=HostKey("gpu-node-7", "boot-1"))
    assert line.startswith("warning: the GPU was not checked against the order: ")
    assert "host-check.toml" in line


def test_d8_check_host_exits_0_when_only_the_count_cannot_be_compared(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    om.set_order(session, number="ORD-A100", gpu_model="A100 80GB", lots=1, days=3)
    fake_gpu[0] = FakeGpu(name="NVIDIA A100-SXM4-80GB", total_bytes=80 * GIB)
    order_before = (session.folder / "order.toml").read_bytes()
    code, out, err = cli(capsys, sessions_root, "check-host", session.name)
    assert code == 0, out + err
    assert "count not compared: GPUs per lot of A100 80GB not in the rates file" in out
    assert "DEVIATION" not in out
    assert (session.folder / "order.toml").read_bytes() == order_before
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert "GPU check matches the order ORD-A100 as far as compared" in out


_KEY = "sk-ant-api03-" + "Q7vR2mXk9LpT4wZs8NbY3cHd6FgJ1aE5" * 3  # made up, shaped like a key


def test_d8_a_gpu_name_holding_a_key_never_stops_run_and_is_kept_masked(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    fake_gpu[0] = FakeGpu(name=f"NVIDIA RTX A5000 {_KEY}")
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e",
                       "--workload", "command", "--values", "1", "--runs", "1", "--warmup", "0",
                       "--cold-runs", "0", "--device", "cpu", "--command", "true")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", session.name, "--headless")
    assert code == 0, out + err
    assert "kept masked (they looked like a secret): GPU 0 name (API key)" in out, out
    assert any(ln.startswith("running e") for ln in out.splitlines())
    assert _KEY[:20] not in out + err
    (check,) = hc.load_host_checks(session).values()
    assert check.facts.gpus[0].name == "NVIDIA RTX A5000 [HIDDEN: API key]"


def test_d8_a_host_check_that_fails_on_first_open_is_said_and_the_run_goes_on(
        session: Session, fake_gpu: list[FakeGpu], monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.commands.host_cmd import check_on_first_open
    from gpusession.core.files.errors import BadInput

    def refused(*args: object, **kwargs: object) -> None:
        raise BadInput("refused: it contains an API key; nothing was written",
                       path=session.folder / hc.HOST_CHECK_TOML, field="hosts.x.gpus[0].name")

    monkeypatch.setattr(hc, "record_host_check", refused)
    (line,) = check_on_first_open(session, host=HostKey("gpu-node-7", "boot-1"))
    assert line.startswith("warning: the GPU was not checked against the order: ")
    assert "host-check.toml" in line and line.endswith("the run goes on")
    assert not (session.folder / journal.RUN_LOCK).exists()  # the run lock is given back


def test_d8_check_host_keeps_a_gpu_name_holding_a_key_masked(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=1, days=7)
    fake_gpu[0] = FakeGpu(name=f"NVIDIA RTX A5000 {_KEY}")
    code, out, err = cli(capsys, sessions_root, "check-host", session.name, "--no-probe")
    assert "kept masked (they looked like a secret): GPU 0 name (API key)" in out, err
    assert _KEY[:20] not in out + err
    assert code == 3  # the name NVML gave is not the ordered model's


def _bad_host_check(session: Session) -> tuple[Path, bytes]:
    path = session.folder / hc.HOST_CHECK_TOML
    path.write_text('schema = 1\n# my note\n[hosts."gpu-node-7 boot-1"]\nhostname = "gpu-node-7"\n'
                    'checked_at = "yesterday"\n', encoding="utf-8")
    return path, path.read_bytes()


def test_d8_show_names_the_file_and_field_of_a_host_check_that_does_not_read(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _bad_host_check(session)
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("GPU check")]
    assert line.startswith(f"GPU check unreadable: {path}: hosts.gpu-node-7 boot-1.checked_at: "
                           "expected a date-time")
    path.write_text("schema = 1\nhosts = 5\n", encoding="utf-8")
    code, out, _ = cli(capsys, sessions_root, "show", session.name)
    assert f"GPU check unreadable: {path}: hosts: expected" in out
    assert "not done yet" not in out


def test_d8_check_host_refuses_a_host_check_file_that_does_not_read_and_leaves_it(
        session: Session, sessions_root: Path, fake_gpu: list[FakeGpu],
        capsys: pytest.CaptureFixture[str]) -> None:
    from gpusession.bench import hostprobe

    path, before = _bad_host_check(session)
    code, out, err = cli(capsys, sessions_root, "check-host", session.name)
    assert code == 2
    assert f"{path}: hosts.gpu-node-7 boot-1.checked_at: expected a date-time" in err
    assert "nothing written" in err
    assert path.read_bytes() == before
    assert hostprobe.PROBES_RUN == []  # type: ignore[attr-defined]  # refused before the probe
    assert not (session.folder / journal.RUN_LOCK).exists()


def test_d8_first_open_says_a_host_check_file_that_does_not_read_and_writes_nothing(
        session: Session, fake_gpu: list[FakeGpu]) -> None:
    from gpusession.commands.host_cmd import check_on_first_open

    path, before = _bad_host_check(session)
    (line,) = check_on_first_open(session, host=HostKey("gpu-node-7", "boot-1"))
    assert line.startswith("warning: the GPU was not checked against the order: ")
    assert "checked_at" in line and str(path) in line
    assert path.read_bytes() == before
