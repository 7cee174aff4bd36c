"""The header's words from typed values, never a cut of other words (A1, S6)."""

from __future__ import annotations


def test_a1_the_headers_gpu_words_come_from_the_snapshots_fields() -> None:
    """``gpu_short`` says the same as before (``2× H100 80GB HBM3``), built from the fields, not a cut of words."""
    from types import SimpleNamespace

    from gpusession.ui.header import gpu_short, gpu_words

    def gpu(name: str) -> SimpleNamespace:
        return SimpleNamespace(name=name)

    two = SimpleNamespace(available=True, gpus=[gpu("NVIDIA H100 80GB HBM3"), gpu("NVIDIA H100 80GB HBM3"),
                                                gpu("RTX A5000")])
    assert gpu_words(two) == "GPU: 2× NVIDIA H100 80GB HBM3, 1× RTX A5000"
    assert gpu_short(two) == "2× H100 80GB HBM3, 1× RTX A5000"
    assert gpu_short(SimpleNamespace(available=True, gpus=[])) == "CPU only"
    assert gpu_short(SimpleNamespace(available=False, gpus=[gpu("X")])) == "CPU only"
    assert gpu_short(None) == "GPU not read yet"


def test_a1_s6_time_left_says_ended_by_the_sign_of_the_duration() -> None:
    from datetime import timedelta

    from gpusession.ui.context import fmt_left

    assert fmt_left(timedelta(hours=3, minutes=5)) == "3h 05m left"
    assert fmt_left(timedelta(hours=-2)).startswith("ended") and not fmt_left(timedelta(hours=-2)).endswith("left")
    assert fmt_left(None) == "not set"
