"""The Keep line says "none is faster beyond noise" first when nothing differs (D5, D7).

A rerun of the same demo may name another variant; the words must not read as a decision.
"""

from __future__ import annotations

import pytest

from gpusession.core.records.results import rows_frame
from gpusession.core.records.summary import summary_rows
from gpusession.core.records.variants import compare_variants
from gpusession.core.retrieval.keep import keep_words

pytest.importorskip("scipy")

from test_variants import _rows  # noqa: E402 - after the skip: scipy is needed


def _keep(times: dict[str, list[float | None]]) -> str:
    frame = rows_frame(_rows(times))
    table = summary_rows(frame)
    return keep_words(table, compare_variants(frame, table), "sweep")


def test_d7_keep_says_noise_first_when_no_variant_differs_beyond_it() -> None:
    words = _keep({"batch-1": [1.1, 1.3, 1.5, 1.7, 1.9], "batch-4": [1.0, 1.2, 1.4, 1.6, 1.8]})
    assert words == ("none is faster beyond noise with 5 runs (p = 0.69); batch-4 of sweep has the lowest warm "
                     "median, 1.40 s, 1.1× faster than batch-1"), words


def test_d7_keep_names_the_variant_when_it_is_faster_beyond_noise() -> None:
    words = _keep({"batch-1": [2.0, 2.1, 2.2, 2.3, 2.4], "batch-4": [1.0, 1.1, 1.2, 1.3, 1.4]})
    assert words.startswith("batch-4 of sweep, warm median 1.20 s; 1.8× faster than batch-1, beyond noise"), words
    assert "none is faster" not in words


def test_d7_three_runs_can_never_tell_variants_apart_and_keep_says_so() -> None:
    words = _keep({"a": [2.0, 2.1, 2.2], "b": [1.0, 1.1, 1.2]})
    assert words.startswith("none is faster beyond noise with 3 runs (p = 0.1); b of sweep has the lowest"), words
