"""The summary table of ``run`` and ``show`` (R6, D5): times, quality and the verdict at 80 columns.

Who calls it: :mod:`gpusession.commands.run_cmds` (after a run) and
:mod:`gpusession.commands.session_cmds` (``show``). Apart from :mod:`gpusession.commands._common`
because it reads the summary's record class (:mod:`gpusession.core.records.summary`, and
through it the results CSV's module): every command imports ``_common``, and ``gpusession
NAME`` paints its first frame without either (A5, ``tests/ui/test_startup_imports.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpusession.core.files.units import format_seconds, format_seconds_range
from gpusession.core.records.summary import SummaryRow


def _or_dash(value: Any) -> str:
    """An empty cell (not recorded) reads "-", never the word None."""
    return "-" if value is None else str(value)


#: The summary table reads at 80 columns (a small tmux pane; D5).
TABLE_WIDTH = 80


def _wrapped(head: str, text: str, indent: int) -> list[str]:
    """``head`` then ``text``, wrapped at :data:`TABLE_WIDTH`; continuation lines start at ``indent``."""
    import textwrap

    room = TABLE_WIDTH - len(head)
    if len(text) > room and room < 24:  # too little room beside the times: on the next line
        return [head.rstrip(), *textwrap.wrap(text, TABLE_WIDTH - 4, initial_indent="    ",
                                              subsequent_indent="    ", break_long_words=False)]
    parts = textwrap.wrap(text, room, break_long_words=False) or [""]
    return [head + parts[0], *(" " * indent + p for p in parts[1:])]


def format_summary(rows: Sequence[SummaryRow | Mapping[str, Any]]) -> str:
    """The summary table (R6, D5): times, quality and the verdict in words, at 80 columns.

    Args:
        rows: :func:`gpusession.core.records.summary.summary_rows` (or their ``to_json`` dicts).

    Returns:
        The table: per experiment, variant and phase the median and min–max, the quality
        figure and the verdict (``accepted``, ``REJECTED (…)``, ``not validated``); how
        complete the measurement is goes on the line below when not every run was measured
        ("1 failed…", "attempt 2: 2 of 18 runs done, the run was cancelled"). Standalone
        validations are listed apart, as validations, never as an experiment.
    """
    table = [raw if isinstance(raw, SummaryRow) else _row_of(raw) for raw in rows]
    runs = [r for r in table if not r.is_validation]
    checks = [r for r in table if r.is_validation]
    lines: list[str] = []
    if runs:
        ew = max([10] + [len(_or_dash(r.experiment_id)) for r in runs])  # columns fit their words
        vw = max([7] + [len(r.variant_words()) for r in runs])
        cells = [(format_seconds(r.median_seconds, "-"),
                  format_seconds_range(r.min_seconds, r.max_seconds, "-")) for r in runs]
        mw = max([6] + [len(m) for m, _ in cells])
        rw = max([7] + [len(x) for _, x in cells])
        qw = max([7] + [len(r.quality_words()) for r in runs])
        lines.append(f"{'experiment':<{ew}} {'variant':<{vw}} {'phase':<5} {'n':>3} {'median':>{mw}} "
                     f"{'min–max':>{rw}}  {'quality':<{qw}}  verdict")
        for r, (med, rng) in zip(runs, cells, strict=True):  # never a measured value as 0 (H-22)
            head = (f"{_or_dash(r.experiment_id):<{ew}} {r.variant_words():<{vw}} "
                    f"{_or_dash(r.phase):<5} {r.n:>3} {med:>{mw}} {rng:>{rw}}  "
                    f"{r.quality_words():<{qw}}  ")
            lines += _wrapped(head, r.verdict_words(), len(head))
            if not r.measured_in_full:  # the measurement's completeness, apart from the verdict (typed)
                lines += _wrapped(" " * (ew + 1) + "measured: ", r.outcome_words(), ew + 11)
    pooled = {str(r.experiment_id): r.attempts_pooled for r in runs if r.attempts_pooled > 1}
    for exp, n in pooled.items():  # the summary pools every attempt; each row's words are its own
        lines += _wrapped("", f"{exp}: the runs of {n} attempts pooled; a row's words about how "
                          "complete it is are those of the attempt that wrote it", 0)
    if checks:
        nw = max([6] + [len(_or_dash(r.variant_id)) for r in checks])
        qw = max([7] + [len(r.quality_words()) for r in checks])
        lines += ([""] if lines else []) + [
            "validations (`gpusession validate`, not timed):",
            f"{'output':<{nw}}  {'quality':<{qw}}  verdict"]
        for r in checks:
            head = f"{_or_dash(r.variant_id):<{nw}}  {r.quality_words():<{qw}}  "
            lines += _wrapped(head, r.verdict_words(), len(head))
    return "\n".join(lines)


def _row_of(d: Mapping[str, Any]) -> SummaryRow:
    names = SummaryRow.__dataclass_fields__
    data = {k: d.get(k) for k in names if k in d}
    if "rejections" in data:  # a list in JSON
        data["rejections"] = tuple(data["rejections"] or ())
    for k, default in (("runs", d.get("n", 0)), ("n", 0), ("failed", 0), ("median_seconds", None),
                       ("min_seconds", None), ("max_seconds", None), ("p95_seconds", None),
                       ("experiment_id", None), ("variant_id", None), ("phase", None)):
        data.setdefault(k, default)
    return SummaryRow(**data)  # type: ignore[arg-type]  # the keys are SummaryRow's fields
