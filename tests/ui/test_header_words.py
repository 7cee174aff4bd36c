"""The header's words from typed values, never a cut of other words (A1, S6)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from helpers import TEST_NOW

from gpusession.core.folder.session import Session

#: Reads the clock (the package window and the session limit): run again a year ahead and a month back (A6).
pytestmark = pytest.mark.calendar


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
    from gpusession.ui.context import fmt_left

    assert fmt_left(timedelta(hours=3, minutes=5)) == "3h 05m left"
    assert fmt_left(timedelta(hours=-2)).startswith("ended") and not fmt_left(timedelta(hours=-2)).endswith("left")
    assert fmt_left(None) == "not set"



def test_d1_a1_the_limits_short_warning_is_made_by_the_limit_not_cut_from_its_words(session: Session) -> None:
    from gpusession.core.copyhome.limit import session_limit, set_limit

    set_limit(session, at=TEST_NOW - timedelta(hours=1))
    limit = session_limit(session, TEST_NOW)
    assert limit.passed()
    long, short = limit.warning_words(), limit.warning_words(short=True)
    assert "start no run; " in long and "start no run" not in short
    assert long.replace("start no run; ", "") == short  # the same words as the header said before
