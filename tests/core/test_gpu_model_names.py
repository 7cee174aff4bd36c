"""D8, S5: a GPU model as ordered against the name NVML reports, on real pairs of names."""

from __future__ import annotations

import pytest

from gpusession.core.folder.session import Session
from gpusession.core.gpu.hostfacts import HostKey, read_host_facts
from gpusession.core.money import host_check as hc
from gpusession.core.money import order as om
from gpusession.core.money.rates import form_factor_words, model_identity, model_matches
from gpusession.testing import GIB, FakeGpu, FakeNvml

#: (as ordered, as NVML names it): the same card.
SAME = [
    ("H100-SXM5-80G", "NVIDIA H100 80GB HBM3"),
    ("H100", "NVIDIA H100 80GB HBM3"),
    ("H100 SXM", "NVIDIA H100 80GB HBM3"),
    ("H100 PCIe", "NVIDIA H100 PCIe"),
    ("H100 NVL", "NVIDIA H100 NVL"),
    ("RTX 4090 24 GB", "NVIDIA GeForce RTX 4090"),
    ("RTX 4090", "NVIDIA GeForce RTX 4090"),
    ("4090", "NVIDIA GeForce RTX 4090"),
    ("RTX 4090D", "NVIDIA GeForce RTX 4090 D"),
    ("RTX 3090 Ti", "NVIDIA GeForce RTX 3090 Ti"),
    ("A100 80GB", "NVIDIA A100-SXM4-80GB"),
    ("A100 40GB", "NVIDIA A100-SXM4-80GB"),  # a memory difference: compared by memory
    ("A100 PCIe 80GB", "NVIDIA A100 80GB PCIe"),
    ("RTX A5000", "NVIDIA RTX A5000"),
    ("A5000", "NVIDIA RTX A5000"),
    ("RTX 5000 Ada", "NVIDIA RTX 5000 Ada Generation"),
    ("RTX 6000 Ada", "NVIDIA RTX 6000 Ada Generation"),
    ("L40S", "NVIDIA L40S"),
    ("L40", "NVIDIA L40"),
    ("V100 16GB", "Tesla V100-SXM2-16GB"),
    ("T4", "Tesla T4"),
    ("RTX 8000", "Quadro RTX 8000"),
    ("H200", "NVIDIA H200"),
    ("H200 141 GB", "NVIDIA H200"),
    ("B200", "NVIDIA B200"),
    ("GH200 480GB", "NVIDIA GH200 480GB"),
    ("A10G", "NVIDIA A10G"),
]

#: (as ordered, as NVML names it): another card.
OTHER = [
    ("RTX 4090", "NVIDIA GeForce RTX 4090 D"),
    ("RTX 4090 D", "NVIDIA GeForce RTX 4090"),
    ("RTX 4090", "NVIDIA GeForce RTX 4090 Laptop GPU"),
    ("RTX 3090", "NVIDIA GeForce RTX 3090 Ti"),
    ("RTX 4080", "NVIDIA GeForce RTX 4080 SUPER"),
    ("H100", "NVIDIA H200"),
    ("H200", "NVIDIA H100 80GB HBM3"),
    ("H100", "NVIDIA H100 NVL"),
    ("H100", "NVIDIA A100-SXM4-80GB"),
    ("A100", "NVIDIA A10"),
    ("A10", "NVIDIA A10G"),
    ("RTX A5000", "NVIDIA RTX 5000 Ada Generation"),
    ("RTX 5000 Ada", "Quadro RTX 5000"),
    ("RTX 4000 Ada", "NVIDIA RTX 4000 SFF Ada Generation"),
    ("RTX A5000", "NVIDIA RTX A4000"),
    ("RTX A6000", "NVIDIA RTX A5000"),
    ("L40", "NVIDIA L40S"),
    ("L40S", "NVIDIA L40"),
    ("B200", "NVIDIA GB200"),
]


@pytest.mark.parametrize(("ordered", "seen"), SAME)
def test_d8_the_same_card_under_its_nvml_name_matches_the_order(ordered: str, seen: str) -> None:
    assert model_matches(ordered, seen), (model_identity(ordered), model_identity(seen))


@pytest.mark.parametrize(("ordered", "seen"), OTHER)
def test_d8_another_card_never_matches_the_order(ordered: str, seen: str) -> None:
    assert not model_matches(ordered, seen), (model_identity(ordered), model_identity(seen))


def test_d8_a_name_of_only_brand_or_memory_words_matches_nothing() -> None:
    assert not model_matches("", "NVIDIA H100")
    assert not model_matches("NVIDIA 80GB", "NVIDIA")


def test_d8_the_nvml_name_of_a_sku_variant_is_an_order_deviation(session: Session) -> None:
    om.set_order(session, number="ORD-4090", gpu_model="RTX 4090", lots=1, days=7)
    (session.folder / "rates.toml").write_text(
        'schema = 1\ncurrency = "USD"\n[gpu."RTX 4090"]\ngpus_per_lot = 1\n', encoding="utf-8")
    seen = FakeGpu(name="NVIDIA GeForce RTX 4090 D", total_bytes=24 * GIB)
    host = HostKey("gpu-node-7", "boot-1")
    check = hc.record_host_check(session, read_host_facts(FakeNvml([seen]), host=host), None)
    assert check.deviation == ("deviation from order ORD-4090: GPU model seen "
                               "'NVIDIA GeForce RTX 4090 D', ordered 'RTX 4090'")
    right = FakeGpu(name="NVIDIA GeForce RTX 4090", total_bytes=24 * GIB)
    again = hc.record_host_check(session, read_host_facts(FakeNvml([right]), host=host), None)
    assert again.deviation is None


def test_d8_an_a100_40gb_ordered_and_an_80gb_seen_differ_by_memory_only() -> None:
    state = om.OrderState(om.OrderInfo("ORD-1", "A100 40GB", 1, 7, gpus_per_lot=1))
    from gpusession.core.money.rates import load_rates

    dev = om.compare_with_order(state, load_rates(), "NVIDIA A100-SXM4-80GB", 1,
                                observed_memory_bytes=80 * GIB)
    assert dev == ("deviation from order ORD-1: GPU memory seen 80.0 GiB per GPU, ordered "
                   "40 GB ('A100 40GB')")


#: (as ordered, as NVML names it, difference?, not checked?): the form factor (H-61).
FORMS = [
    ("H100 SXM", "NVIDIA H100 PCIe", True, False),
    ("H100 PCIe", "NVIDIA H100 SXM5 80GB", True, False),
    ("A100 SXM4 80GB", "NVIDIA A100 80GB PCIe", True, False),
    ("H100 SXM", "NVIDIA H100 80GB HBM3", False, True),  # NVML names an SXM card without it
    ("H100 PCIe", "NVIDIA H100 80GB HBM3", False, True),
    ("H100 PCIe", "NVIDIA H100 PCIe", False, False),
    ("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", False, False),
    ("H100", "NVIDIA H100 PCIe", False, False),  # the order states none: nothing to check
]


@pytest.mark.parametrize(("ordered", "seen", "differs", "unchecked"), FORMS)
def test_h61_the_form_factor_stated_is_compared_and_one_not_stated_is_not_checked(
        ordered: str, seen: str, differs: bool, unchecked: bool) -> None:
    difference, not_checked = form_factor_words(ordered, seen)
    assert (difference is not None, not_checked is not None) == (differs, unchecked)
    if not_checked:
        assert not_checked.startswith("form factor not checked")


def _h100_order(session: Session, model: str) -> None:
    om.set_order(session, number="ORD-H100", gpu_model=model, lots=1, days=7)
    (session.folder / "rates.toml").write_text(
        f'schema = 1\ncurrency = "USD"\n[gpu."{model}"]\ngpus_per_lot = 1\n', encoding="utf-8")


def test_h61_an_sxm_order_on_a_pcie_card_is_a_deviation_in_every_reader(session: Session) -> None:
    from gpusession.core.gpu.nvml import GpuReading, NvmlSnapshot
    from gpusession.core.retrieval.compare import _host_check_cells
    from gpusession.core.retrieval.evidence import order_match_evidence

    _h100_order(session, "H100 SXM")
    seen = FakeGpu(name="NVIDIA H100 PCIe", total_bytes=80 * GIB)
    check = hc.record_host_check(session, read_host_facts(FakeNvml([seen]), host=HostKey("n", "b")), None)
    assert check.deviation == ("deviation from order ORD-H100: form factor seen PCIe "
                               "('NVIDIA H100 PCIe'), ordered SXM")
    assert "matches" not in check.order_words
    assert _host_check_cells(session)[0] == "ORDER DEVIATION"
    snap = NvmlSnapshot(True, None, "550.54.15", (GpuReading(0, "GPU-1", "NVIDIA H100 PCIe", 80 * GIB, 0, ()),))
    words = order_match_evidence(session, snap, record=False)
    assert words.startswith("DEVIATION") and "form factor seen PCIe" in words


def test_h61_an_sxm_card_nvml_names_without_its_form_factor_is_said_not_checked(session: Session) -> None:
    from gpusession.core.gpu.nvml import GpuReading, NvmlSnapshot
    from gpusession.core.money.host_check import load_host_checks
    from gpusession.core.retrieval.compare import _host_check_cells
    from gpusession.core.retrieval.evidence import order_match_evidence

    _h100_order(session, "H100 SXM")
    seen = FakeGpu(name="NVIDIA H100 80GB HBM3", total_bytes=80 * GIB)
    check = hc.record_host_check(session, read_host_facts(FakeNvml([seen]), host=HostKey("n", "b")), None)
    assert check.deviation is None  # never a false difference
    assert "matches" not in check.order_words
    assert "form factor not checked" in check.order_words
    assert [c.form_factor_unchecked for c in load_host_checks(session).values()] == [True]
    assert _host_check_cells(session)[0] == "form factor not checked"
    snap = NvmlSnapshot(True, None, "550.54.15",
                        (GpuReading(0, "GPU-1", "NVIDIA H100 80GB HBM3", 80 * GIB, 0, ()),))
    words = order_match_evidence(session, snap, record=False)
    assert words.startswith("form factor not checked") and "matches" not in words


@pytest.mark.parametrize(("ordered", "pci_id", "deviation"), [
    ("H100 SXM", 0x2330, None),  # NVML's name says nothing; the PCI device id says SXM5
    ("H100 PCIe", 0x2330, "deviation from order ORD-H100: form factor seen SXM ('NVIDIA H100 80GB "
                          "HBM3', PCI device id 0x2330), ordered PCIe"),
])
def test_h61_the_pci_device_id_tells_the_form_factor_a_name_does_not(
        ordered: str, pci_id: int, deviation: str | None, session: Session) -> None:
    from gpusession.core.money.host_check import load_host_checks

    _h100_order(session, ordered)
    seen = FakeGpu(name="NVIDIA H100 80GB HBM3", total_bytes=80 * GIB, pci_device_id=pci_id)
    check = hc.record_host_check(session, read_host_facts(FakeNvml([seen]), host=HostKey("n", "b")), None)
    assert check.deviation == deviation
    assert not check.form_factor_unchecked
    assert check.order_words.startswith("matches" if deviation is None else "ORDER DEVIATION")
    (kept,) = load_host_checks(session).values()
    assert [g.pci_device_id for g in kept.facts.gpus] == [pci_id]  # kept as evidence, read back
