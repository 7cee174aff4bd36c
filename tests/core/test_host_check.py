"""D8: the GPU found is checked against the order at the first open on a server (S5)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gpusession.core.events.actions import HostCheckedRecord
from gpusession.core.folder.session import Session
from gpusession.core.gpu.hostfacts import HostKey, ProbeGpu, ProbeResult, read_host_facts, this_host
from gpusession.core.money import host_check as hc
from gpusession.core.money import order as om
from gpusession.testing import GIB, FakeGpu, FakeNvml

SERVER = HostKey("gpu-node-7", "0b1c2d3e-boot-1")

PROBE = ProbeResult("measured", "measured 1 GPU(s) in 10.0 s", 10.0, "float16", 8192, 256 * 1024**2,
                    "2.13.0", (ProbeGpu("GPU-5f1c0a2e-0000-4000-8000-00000000a500", "NVIDIA RTX A5000",
                                        101.25, 24.5, 25.75),))


def _ordered(session: Session, model: str = "RTX A5000") -> Session:
    om.set_order(session, number="ORD-7781", gpu_model=model, lots=1, days=7)
    return session


def _a100_rates(session: Session) -> None:
    (session.folder / "rates.toml").write_text(
        'schema = 1\ncurrency = "USD"\n[gpu."A100 80GB"]\ngpus_per_lot = 1\n', encoding="utf-8")


def test_d8_a_matching_gpu_says_it_matches_the_order(session: Session) -> None:
    _ordered(session)
    facts = read_host_facts(FakeNvml(), host=SERVER)
    check = hc.record_host_check(session, facts, None)
    assert check.deviation is None
    assert check.order_words == "matches the order ORD-7781: 1 × NVIDIA RTX A5000, 24.0 GiB each"
    assert not om.load_order(session).has("deviation-noted")


def test_d8_another_model_is_an_order_deviation_naming_the_order_number(session: Session) -> None:
    _ordered(session)
    facts = read_host_facts(FakeNvml([FakeGpu(name="NVIDIA RTX A4000", total_bytes=16 * GIB)]), host=SERVER)
    check = hc.record_host_check(session, facts, None)
    assert check.deviation is not None
    assert "order ORD-7781" in check.deviation
    assert "GPU model seen 'NVIDIA RTX A4000', ordered 'RTX A5000'" in check.deviation
    assert check.order_words.startswith("ORDER DEVIATION: deviation from order ORD-7781")
    # recorded against the order number in the order's timeline (S5)
    devs = [e for e in om.load_order(session).events if e.state == "deviation-noted"]
    assert [e.order_number for e in devs] == ["ORD-7781"]
    assert devs[0].note == check.deviation


def test_d8_another_gpu_count_is_an_order_deviation(session: Session) -> None:
    _ordered(session)
    gpus = [FakeGpu(), FakeGpu(uuid="GPU-5f1c0a2e-0000-4000-8000-00000000a501")]
    check = hc.record_host_check(session, read_host_facts(FakeNvml(gpus), host=SERVER), None)
    assert check.deviation is not None
    assert "GPU count seen 2, ordered 1 lot(s) × 1 GPU(s) per lot = 1" in check.deviation


def test_d8_less_memory_than_the_ordered_model_names_is_an_order_deviation(session: Session) -> None:
    _a100_rates(session)
    _ordered(session, "A100 80GB")
    small = FakeGpu(name="NVIDIA A100 80GB PCIe", total_bytes=40 * GIB)
    check = hc.record_host_check(session, read_host_facts(FakeNvml([small]), host=SERVER), None)
    assert check.deviation == ("deviation from order ORD-7781: GPU memory seen 40.0 GiB per GPU, "
                               "ordered 80 GB ('A100 80GB')")
    # within the tolerance (ECC and the driver keep a few percent): matches
    full = FakeGpu(name="NVIDIA A100 80GB PCIe", total_bytes=81_559 * 1024**2)
    again = hc.record_host_check(session, read_host_facts(FakeNvml([full]), host=SERVER), None)
    assert again.deviation is None
    assert again.order_words.startswith("matches the order ORD-7781")


def test_d8_the_ordered_memory_is_read_from_the_model_only_when_it_names_one() -> None:
    assert om.ordered_memory_gb("H100 80GB HBM3") == 80
    assert om.ordered_memory_gb("A100-SXM4-40GB") == 40
    assert om.ordered_memory_gb("H200 141 GB") == 141
    assert om.ordered_memory_gb("RTX A5000") is None
    assert om.memory_deviation("RTX A5000", 1) is None


def test_d8_the_check_is_kept_per_host_and_boot_in_a_private_toml(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSESSION_PID_NAMESPACE", "host")  # PIDs named as on bare metal
    _ordered(session)
    hc.record_host_check(session, read_host_facts(FakeNvml(), host=SERVER), PROBE)
    path = session.folder / hc.HOST_CHECK_TOML
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    checks = hc.load_host_checks(session)
    assert list(checks) == ["gpu-node-7 0b1c2d3e-boot-1"]
    back = checks["gpu-node-7 0b1c2d3e-boot-1"]
    g = back.facts.gpus[0]
    assert (g.name, g.memory_total_bytes, g.pcie_generation, g.pcie_width) == ("NVIDIA RTX A5000", 24 * GIB, 4, 16)
    assert (g.power_limit_w, g.ecc_on, g.mig_on) == (230.0, False, False)
    assert g.processes == ("pid 4194000 (name unknown)",)
    assert back.probe == PROBE
    rec = [r for r in session.journal_records() if isinstance(r, HostCheckedRecord)]
    assert [(r.host, r.gpu_count, r.deviation, r.probe) for r in rec] == [
        ("gpu-node-7 0b1c2d3e-boot-1", 1, None, "measured")]


def test_d8_a_second_open_on_the_same_host_does_not_check_again(session: Session) -> None:
    _ordered(session)
    nvml = FakeNvml()
    assert hc.check_on_open(session, nvml=nvml, host=SERVER) is not None
    inits = nvml.init_calls
    assert hc.check_on_open(session, nvml=nvml, host=SERVER) is None
    assert nvml.init_calls == inits  # not even NVML was asked
    # a reboot of the same machine (GPUs may have been swapped) checks again
    rebooted = HostKey("gpu-node-7", "boot-2")
    assert hc.check_on_open(session, nvml=nvml, host=rebooted) is not None
    assert set(hc.load_host_checks(session)) == {SERVER.key, rebooted.key}


def test_d8_run_probes_once_on_a_host_the_tui_checked_without_probe(session: Session) -> None:
    _ordered(session)
    hc.check_on_open(session, nvml=FakeNvml(), host=SERVER)  # the TUI: NVML only
    calls: list[int] = []

    def probe() -> ProbeResult:
        calls.append(1)
        return PROBE

    assert hc.check_on_open(session, nvml=FakeNvml(), host=SERVER, probe=probe) is not None
    assert hc.check_on_open(session, nvml=FakeNvml(), host=SERVER, probe=probe) is None
    assert calls == [1]
    assert hc.load_host_checks(session)[SERVER.key].probe == PROBE


def test_d8_a_copy_checked_on_another_machine_is_never_checked_on_open(session: Session) -> None:
    _ordered(session)
    hc.check_on_open(session, nvml=FakeNvml(), host=SERVER)
    home = HostKey("laptop", "home-boot")
    nvml = FakeNvml()  # even a home machine with a GPU
    assert hc.check_on_open(session, nvml=nvml, host=home) is None
    assert nvml.init_calls == 0
    assert list(hc.load_host_checks(session)) == [SERVER.key]


def test_d8_no_gpu_records_nothing_and_says_so(session: Session) -> None:
    _ordered(session)
    for nvml in (FakeNvml(fail="NVML Shared Library Not Found"), FakeNvml([])):
        assert hc.check_on_open(session, nvml=nvml, host=SERVER) is None
        facts = read_host_facts(nvml, host=SERVER)
        with pytest.raises(Exception, match="no GPU visible .*nothing checked, nothing recorded"):
            hc.record_host_check(session, facts, None)
    assert not (session.folder / hc.HOST_CHECK_TOML).exists()
    assert not any(isinstance(r, HostCheckedRecord) for r in session.journal_records())


def test_d8_words_give_the_board_and_the_probe_figures_without_judging_them(session: Session) -> None:
    _ordered(session)
    gpu = FakeGpu(pcie_generation=1, ecc_on=True, mig_on=True, processes=[(0, 1)])
    check = hc.record_host_check(session, read_host_facts(FakeNvml([gpu]), host=SERVER), PROBE)
    text = "\n".join(hc.check_lines(check))
    assert "order: matches the order ORD-7781" in text
    assert "PCIe gen 1 x16 now, at most gen 4 x16; power limit 230 W; ECC on; MIG on" in text
    assert "unreadable process (NVML gave PID 0" in text
    assert "matmul 101.2 TFLOP/s, host→device 24.5 GB/s, device→host 25.8 GB/s" in text
    assert "no expected figure is implied" in text
    assert "D8" not in text and "S5" not in text


def test_d8_a_board_reading_nvml_refuses_is_unknown_with_the_reason(session: Session) -> None:
    from pynvml import NVMLError_NotSupported

    _ordered(session)
    gpu = FakeGpu(errors={"ecc": NVMLError_NotSupported(), "power_limit": NVMLError_NotSupported()})
    check = hc.record_host_check(session, read_host_facts(FakeNvml([gpu]), host=SERVER), None)
    g = check.facts.gpus[0]
    assert g.ecc_on is None and g.power_limit_w is None and g.pcie_width == 16
    assert g.unread is not None and "ECC mode" in g.unread and "power limit" in g.unread
    assert "power limit unknown; ECC unknown" in "\n".join(hc.check_lines(check))


def test_d8_deviation_words_feed_the_report(session: Session) -> None:
    _ordered(session)
    assert hc.deviation_words(session) == []
    hc.record_host_check(session, read_host_facts(FakeNvml([FakeGpu(name="NVIDIA RTX A4000")]),
                                                  host=SERVER), None)
    words = hc.deviation_words(session)
    assert len(words) == 1 and words[0].startswith("order deviation on gpu-node-7: deviation from order ORD-7781")


def test_d8_this_host_reads_hostname_and_boot_id(tmp_path: Path) -> None:
    boot = tmp_path / "boot_id"
    boot.write_text("6a1f\n", encoding="ascii")
    assert this_host(boot).boot_id == "6a1f"
    assert this_host(tmp_path / "absent").boot_id is None
    assert this_host(tmp_path / "absent").key.endswith(" boot-id-unknown")


def test_d8_an_order_deviation_is_in_the_report_risks_and_compare(session: Session) -> None:
    from gpusession.core.retrieval.compare import session_figures
    from gpusession.core.retrieval.report import render_report

    _ordered(session)
    assert session_figures(session).host_check == "not checked"
    hc.record_host_check(session, read_host_facts(FakeNvml([FakeGpu(name="NVIDIA RTX A4000")]),
                                                  host=SERVER), PROBE)
    text = render_report(session, nvml=FakeNvml([]))
    risks = " ".join(text.split()).split("**Risks:**", 1)[1].split(" - ")[0]
    assert "order deviation on gpu-node-7: deviation from order ORD-7781: GPU model seen" in risks
    fig = session_figures(session)
    assert (fig.host_check, fig.probe) == ("ORDER DEVIATION", "101 TFLOP/s, 24.5/25.8 GB/s")


def test_d8_one_wrong_card_among_the_right_ones_is_an_order_deviation(session: Session) -> None:
    om.set_order(session, number="ORD-7781", gpu_model="RTX A5000", lots=2, days=7)
    gpus = [FakeGpu(), FakeGpu(uuid="GPU-b", name="NVIDIA RTX A4000")]
    check = hc.record_host_check(session, read_host_facts(FakeNvml(gpus), host=SERVER), None)
    assert check.deviation == ("deviation from order ORD-7781: GPU model seen 'NVIDIA RTX A4000', "
                               "ordered 'RTX A5000'")


def test_d8_a_count_the_rates_file_cannot_check_is_said_not_compared_never_a_deviation(
        session: Session) -> None:
    _ordered(session, "A100 80GB")  # the bundled rates file has no A100: GPUs per lot unknown
    before = [e.state for e in om.load_order(session).events]
    seen = FakeGpu(name="NVIDIA A100-SXM4-80GB", total_bytes=80 * GIB)
    check = hc.record_host_check(session, read_host_facts(FakeNvml([seen]), host=SERVER), None)
    assert check.deviation is None
    assert check.order_words == ("matches the order ORD-7781 as far as compared: 1 × "
                                 "NVIDIA A100-SXM4-80GB, 80.0 GiB each; count not compared: "
                                 "GPUs per lot of A100 80GB not in the rates file")
    assert [e.state for e in om.load_order(session).events] == before  # nothing against the order
    assert hc.deviation_words(session) == []
    rec = [r for r in session.journal_records() if isinstance(r, HostCheckedRecord)]
    assert [r.deviation for r in rec] == [None]


def test_d8_a_real_deviation_beside_a_count_not_compared_is_recorded_without_the_note(
        session: Session) -> None:
    _ordered(session, "A100 80GB")
    seen = FakeGpu(name="NVIDIA A100-SXM4-40GB", total_bytes=40 * GIB)
    check = hc.record_host_check(session, read_host_facts(FakeNvml([seen]), host=SERVER), None)
    assert check.deviation == ("deviation from order ORD-7781: GPU memory seen 40.0 GiB per GPU, "
                               "ordered 80 GB ('A100 80GB')")
    assert check.order_words == (f"ORDER DEVIATION: {check.deviation}; count not compared: GPUs "
                                 "per lot of A100 80GB not in the rates file")
    (dev,) = [e for e in om.load_order(session).events if e.state == "deviation-noted"]
    assert dev.note == check.deviation


def test_d8_compare_with_order_keeps_an_unknown_count_out_of_the_deviation() -> None:
    from gpusession.core.money.rates import load_rates

    state = om.OrderState(om.OrderInfo("ORD-1", "A100 80GB", 1, 7))
    result = om.compare_order(state, load_rates(), "NVIDIA A100 80GB PCIe", 1)
    assert result == om.OrderComparison(
        None, ("count not compared: GPUs per lot of A100 80GB not in the rates file",))
    assert om.compare_with_order(state, load_rates(), "NVIDIA A100 80GB PCIe", 1) is None


def test_d8_a_rates_file_that_does_not_read_is_said_and_the_gpu_still_kept(session: Session) -> None:
    _ordered(session)
    (session.folder / "rates.toml").write_text("[gpu\n", encoding="utf-8")
    check = hc.record_host_check(session, read_host_facts(FakeNvml(), host=SERVER), None)
    assert check.deviation is None
    assert check.order_words.startswith("not compared: ") and "rates.toml" in check.order_words
    assert "no order recorded" not in check.order_words
    assert list(hc.load_host_checks(session)) == [SERVER.key]


_KEY = "sk-ant-api03-" + "Q7vR2mXk9LpT4wZs8NbY3cHd6FgJ1aE5" * 3  # made up, shaped like a key


def _session_text(session: Session) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace")
                   for p in session.folder.iterdir() if p.is_file())


def test_d8_a_gpu_name_holding_a_key_is_kept_masked_and_said(session: Session) -> None:
    _ordered(session)
    facts = read_host_facts(FakeNvml([FakeGpu(name=f"NVIDIA RTX A5000 {_KEY}")]), host=SERVER)
    check = hc.record_host_check(session, facts, None)
    assert check.facts.gpus[0].name == "NVIDIA RTX A5000 [HIDDEN: API key]"
    assert check.masked == ("GPU 0 name (API key)",)
    lines = hc.check_lines(check)
    assert "kept masked (they looked like a secret): GPU 0 name (API key)" in lines
    back = hc.load_host_checks(session)[SERVER.key]
    assert back.facts.gpus[0].name == "NVIDIA RTX A5000 [HIDDEN: API key]"
    assert back.masked == ("GPU 0 name (API key)",)
    assert _KEY[:20] not in _session_text(session)  # nor in the order's timeline, nor the journal


def test_d8_a_probe_and_a_hostname_holding_a_key_are_kept_masked(session: Session) -> None:
    _ordered(session)
    host = HostKey(_KEY, "boot-1")
    probe = ProbeResult("measured", "measured 1 GPU(s)", 10.0, "float16", 8192, 1, f"2.13.0 {_KEY}",
                        (ProbeGpu("GPU-x", f"NVIDIA RTX A5000 {_KEY}", 100.0, 20.0, 20.0),))
    first = hc.check_on_open(session, nvml=FakeNvml(), host=host, probe=lambda: probe)
    assert first is not None
    assert set(first.masked) == {"hostname (API key)", "probe GPU 0 name (API key)",
                                 "torch version (API key)"}
    assert first.probe is not None and first.probe.torch_version == "2.13.0 [HIDDEN: API key]"
    assert _KEY[:20] not in _session_text(session)
    # the masked hostname is the entry's key: the next open on this host finds it
    assert hc.check_on_open(session, nvml=FakeNvml(), host=host, probe=lambda: probe) is None


def test_d8_masking_twice_changes_nothing() -> None:
    from gpusession.core.gpu.hostfacts import mask_facts

    facts = read_host_facts(FakeNvml([FakeGpu(name=f"NVIDIA RTX A5000 {_KEY}")]), host=SERVER)
    assert mask_facts(facts) == facts
    assert facts.masked == ("GPU 0 name (API key)",)


def _checked_once(session: Session) -> Path:
    _ordered(session)
    hc.record_host_check(session, read_host_facts(FakeNvml(), host=SERVER), PROBE)
    return session.folder / hc.HOST_CHECK_TOML


@pytest.mark.parametrize(("edit", "field", "expected"), [
    (lambda t: "schema = 1\nhosts = 5\n# my note\n", "hosts", "tables, got the number 5"),
    (lambda t: t.replace('checked_at = 20', 'checked_at = "yesterday"\nwas = 20'),
     "hosts.gpu-node-7 0b1c2d3e-boot-1.checked_at", "expected a date-time with its UTC offset"),
    (lambda t: "\n".join(ln for ln in t.splitlines() if not ln.startswith("hostname")),
     "hosts.gpu-node-7 0b1c2d3e-boot-1.hostname", "missing: expected the machine's name"),
    (lambda t: t.replace('memory_total_bytes = ', 'memory_total_bytes = "lots" #'),
     "hosts.gpu-node-7 0b1c2d3e-boot-1.gpus[0].memory_total_bytes", "expected a whole number"),
    (lambda t: t.replace('status = "measured"', 'status = "fine"'),
     "hosts.gpu-node-7 0b1c2d3e-boot-1.probe.status", "expected one of measured, no-gpu, failed"),
])
def test_d8_a_host_check_file_that_does_not_read_is_named_and_never_replaced(
        session: Session, edit: object, field: str, expected: str) -> None:
    from gpusession.core.files.errors import BadInput

    path = _checked_once(session)
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")  # type: ignore[operator]
    before = path.read_bytes()
    with pytest.raises(BadInput) as read:
        hc.load_host_checks(session)
    assert read.value.path == path and read.value.field == field
    assert expected in read.value.message
    assert "\n" not in str(read.value)
    with pytest.raises(BadInput, match="nothing checked, nothing written") as write:
        hc.record_host_check(session, read_host_facts(FakeNvml(), host=SERVER), None)
    assert write.value.field == field
    assert path.read_bytes() == before  # the edit, and its note, kept
    assert hc.deviation_words(session)[0].startswith("host check unreadable (")


def test_d8_a_check_time_without_its_utc_offset_is_named(session: Session) -> None:
    from gpusession.core.files.errors import BadInput

    path = _checked_once(session)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("+00:00\n", "\n").replace("Z\n", "\n"), encoding="utf-8")
    with pytest.raises(BadInput, match="checked_at: expected a date-time with its UTC offset"):
        hc.load_host_checks(session)
