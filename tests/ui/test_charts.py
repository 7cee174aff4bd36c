"""Charts (``ui/charts.py``): small differences look small.

Plain functions: no app is built here.
"""

from __future__ import annotations


def test_r6_bar_glyphs_067_vs_068_s_are_one_height() -> None:
    from gpusession.ui.charts import bar_glyphs

    assert bar_glyphs([0.067, 0.068, 0.067], 6) == "█" * 6  # from a 0 s floor: one height
    assert set(bar_glyphs([0.067, 0.068], 10, high=0.2)) == {"▃"}
    assert bar_glyphs([0.0, 1.0], 2, high=1.0) == "▁█"
    assert bar_glyphs([], 4) == "    "  # nothing measured is not drawn as zero
