"""Sessions compared in the same terms: which card to rent (D6, K1-K4, D5).

Who calls it: ``gpusession compare`` (:mod:`gpusession.commands.compare_cmd`). Each
session's count and cost per deliverable come from its one record
(:func:`gpusession.core.retrieval.session_facts.session_facts`, the figures ``gpusession cost``
and ``show`` print; the package total through :func:`gpusession.core.money.cost.cost_report`,
taking the order's package where the session sets none), its time from the record's variant
to keep, the fastest accepted over its experiments (D5). Sessions are ranked only
when they ran the same work (D6): the corpus revision and the protocol (classes, metric,
threshold, tolerance, stopwatch scope, precision, context limit, model and tokenizer
revisions); a difference is named and blocks the ranking unless the caller allows it.
Sessions that count different deliverables (another unit or another kind) are never
ranked: a cost per accepted corpus is no cost per approved visual (S8, S10).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.files.units import format_seconds
from gpusession.core.folder.experiments import load_experiments
from gpusession.core.folder.session import Session, list_sessions
from gpusession.core.folder.unit import unit_of
from gpusession.core.money.cost import cost_report
from gpusession.core.money.count import DeliverableCount, cost_line
from gpusession.core.money.host_check import load_host_checks
from gpusession.core.money.order import load_order
from gpusession.core.money.rates import format_usd
from gpusession.core.records.summary import accepted_revisions
from gpusession.core.retrieval.json_contract import package_json
from gpusession.core.retrieval.plotting import ChartsUnavailable, pyplot_agg
from gpusession.core.retrieval.session_facts import session_facts

if TYPE_CHECKING:
    import polars as pl

#: The terms two sessions must share to be ranked (D6, R1, R2, V5): ``(key, words)``. The
#: keys are results CSV columns, except ``classes`` and ``scope``, which come from the
#: experiments' definitions (``session.toml``).
WORK_TERMS: tuple[tuple[str, str], ...] = (
    ("corpus_revision", "corpus revision"),
    ("model_revision", "model revision"),
    ("tokenizer_revision", "tokenizer revision"),
    ("classes", "declared classes"),
    ("quality_metric", "metric"),
    ("quality_threshold", "threshold"),
    ("quality_tolerance", "tolerance"),
    ("scope", "stopwatch scope"),
    ("precision", "precision"),
    ("context", "context limit"),
    ("unit", "unit of the deliverables"),  # S8: fixed before the comparison (seed 000 §5)
    ("kind", "kind of deliverable"),  # S9, S10: a corpus accepted is no file approved
)
#: The terms that say what a cost divides by: sessions that differ on one are never ranked,
#: ``--allow-different`` or not (S8, S10): a cost per accepted corpus is no cost per approved visual.
COUNT_TERMS = frozenset({"unit", "kind"})
#: ``compare --json``'s contract version (C6): 2 since each session's package is under
#: ``package``, its counts under ``accepted_corpora``, ``accepted_count`` and
#: ``deliverables`` (the object ``show`` gives), as ``show`` and ``cost`` say them.
COMPARE_SCHEMA_VERSION = 2
#: How a term no measured row recorded reads.
NOT_RECORDED = "not recorded"
#: The sentence that says how to rank sessions whose work differs anyway.
ALLOW_WORDS = "give --allow-different to rank them anyway"


@dataclass(frozen=True)
class SessionFigures:
    """One session's column of the comparison (K1-K4, D5).

    Attributes:
        name: the session's name.
        folder: its folder (a home copy given as a path is named by it).
        gpu_model, days, lots, gpu_count: the package (``None``: not set); ``gpu_count`` is
            lots × GPUs per lot from the rates file.
        package_total_usd_minor: full package price × lots in cents (K1); ``None``: not known.
        accepted: the count the cost divides by: the session's one count (S10), else its
            distinct accepted corpora (K3, K4); ``None`` while nothing was validated.
        cost_per_accepted_usd_minor: package total ÷ ``accepted``, rounded once (cents);
            ``None`` with :attr:`cost_reason`.
        cost_reason: why the cost per accepted deliverable is not shown.
        experiment_id, variant_id: the recommended variant (accepted, fastest warm median).
        warm_median_s, warm_min_s, warm_max_s: its warm runs, in seconds.
        quality: its quality figure in words (``macro-F1 0.950``; ``-``: none).
        work: per :data:`WORK_TERMS` key, the distinct values its measured rows hold.
        host_check: the newest host check against the order in words (D8).
        probe: that check's probe figures in short (the slowest GPU's), for the
            renter's comparison of rentals; no expected figure is implied.
        start, end: the session's package window, ISO 8601 with offset (``None``: not set).
        accepted_corpora: distinct accepted corpora (K4), the figure ``show`` gives
            under the same key (C6).
        deliverables: the session's count as ``show --json`` gives it (count, source,
            unit; S8, S10); ``None`` when it does not read.
        count_words: the count in its unit (``18 approved visuals``); ``None``: not counted.
        unit: the unit when the session counts in its own (``visual``); ``None`` for the
            plain corpora of a classification session.
        per_unit_line: the line ``cost NAME`` prints for such a session,
            ``55.00 USD ÷ 18 approved visuals = 3.06 USD per visual`` (S10); ``None`` otherwise.
        count_problem: why the session's count does not read, naming the file (H-39).
    """

    name: str
    folder: str
    gpu_model: str | None
    days: int | None
    lots: int | None
    gpu_count: int | None
    package_total_usd_minor: int | None
    accepted: int | None
    cost_per_accepted_usd_minor: int | None
    cost_reason: str | None
    experiment_id: str | None = None
    variant_id: str | None = None
    warm_median_s: float | None = None
    warm_min_s: float | None = None
    warm_max_s: float | None = None
    quality: str = "-"
    work: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    host_check: str = "not checked"
    probe: str = "not run"
    start: str | None = None
    end: str | None = None
    accepted_corpora: int | None = None
    deliverables: Mapping[str, Any] | None = None
    count_words: str | None = None
    unit: str | None = None
    per_unit_line: str | None = None
    count_problem: str | None = None

    def cells(self) -> list[str]:
        """The column's cells, in the order of :data:`ROW_LABELS`."""
        gpu = printable(self.gpu_model) if self.gpu_model else "package not set"
        if self.lots:
            gpu += f" × {self.lots} lot" + ("s" if self.lots > 1 else "")
        package = (f"{self.days} days, {format_usd(self.package_total_usd_minor)}" if self.days
                   else "not set")
        if self.days and self.package_total_usd_minor is None:
            package = f"{self.days} days, price not in the rates file"
        per = (format_usd(self.cost_per_accepted_usd_minor) if self.cost_per_accepted_usd_minor is not None
               else "not shown")
        if self.unit and self.cost_per_accepted_usd_minor is not None:
            per += f" per {self.unit}"
        accepted = self.count_words or ("not measured" if self.accepted is None else str(self.accepted))
        return [gpu, package, accepted,
                per, self.time_words(), self.quality, printable(self.host_check), self.probe]

    def time_words(self) -> str:
        """``688 ms (batch-16)``, the recommended variant's warm median; why when none."""
        if self.warm_median_s is None:
            return "no accepted variant"
        return f"{format_seconds(self.warm_median_s)} ({printable(str(self.variant_id))})"

    def source_line(self) -> str | None:
        """``NAME: 55.00 USD ÷ 18 approved visuals = 3.06 USD per visual (count: approved by a person, …)``.

        The line ``cost NAME`` prints, with the count's one source named (S10); ``None``
        for a plain classification session (its table cells say it all).
        """
        if self.unit is None or self.deliverables is None:
            return None
        said = self.per_unit_line or f"{self.count_words}; the package is not set"
        return f"{printable(self.name)}: {printable(said)} (count: {self.deliverables['source_words']})"

    def to_json(self) -> dict[str, Any]:
        """Plain data: cents as integers, seconds as numbers, the work terms as lists.

        The keys of ``show``, ``list`` and ``status`` for the same facts (C6):
        ``package`` (``gpu_model``, ``lots``, ``days``, ``start``, ``end``),
        ``accepted_corpora`` and ``deliverables``; ``accepted_count`` and
        ``per_unit_line`` as ``cost --json`` gives them.
        """
        return {
            "name": self.name, "folder": self.folder,
            "package": {"gpu_model": self.gpu_model, "lots": self.lots, "days": self.days,
                        "start": self.start, "end": self.end},
            "gpu_count": self.gpu_count,
            "package_total_usd_minor": self.package_total_usd_minor,
            "accepted_corpora": self.accepted_corpora,
            "accepted_count": self.accepted,
            "cost_per_accepted_usd_minor": self.cost_per_accepted_usd_minor,
            "cost_per_accepted_reason": self.cost_reason,
            "deliverables": None if self.deliverables is None else dict(self.deliverables),
            "per_unit_line": self.per_unit_line,
            "recommended": None if self.variant_id is None else {
                "experiment_id": self.experiment_id, "variant_id": self.variant_id,
                "warm_median_s": self.warm_median_s, "warm_min_s": self.warm_min_s,
                "warm_max_s": self.warm_max_s, "quality": self.quality,
            },
            "work": {k: list(v) for k, v in self.work.items()},
            "host_check": self.host_check, "probe": self.probe,
        }


#: The row labels of the table, one per cell of :meth:`SessionFigures.cells`.
ROW_LABELS = ("GPU", "package", "distinct accepted deliverables", "cost per accepted deliverable",
              "time per accepted deliverable", "quality", "GPU check", "probe")


@dataclass(frozen=True)
class Difference:
    """One work term on which the sessions differ (D6).

    Attributes:
        key: the :data:`WORK_TERMS` key.
        words: the term in words (``corpus revision``).
        values: per session name, the values its measured rows hold.
    """

    key: str
    words: str
    values: Mapping[str, tuple[str, ...]]

    def line(self) -> str:
        """``corpus revision differs: a: 5f3c…; b: 9e1d…``."""
        said = "; ".join(f"{printable(name)}: {_values_words(self.key, v)}" for name, v in self.values.items())
        return f"{self.words} differs: {said}"


def _values_words(key: str, values: tuple[str, ...]) -> str:
    if not values:
        return NOT_RECORDED
    if key.endswith("revision"):  # a digest: its first 12 digits tell two apart
        values = tuple(v if len(v) <= 16 else v[:12] + "…" for v in values)
    return ", ".join(printable(v) for v in values)


@dataclass(frozen=True)
class Comparison:
    """Sessions side by side, and whether they may be ranked (D6).

    Attributes:
        sessions: one :class:`SessionFigures` per session, in the order given.
        differences: the work terms that differ (empty: the same work).
        allow_different: rank even where the work differs (said with the ranking).
    """

    sessions: tuple[SessionFigures, ...]
    differences: tuple[Difference, ...]
    allow_different: bool = False

    @property
    def same_work(self) -> bool:
        """Whether every work term matches across the sessions (D6)."""
        return not self.differences

    @property
    def same_deliverables(self) -> bool:
        """Whether the sessions count deliverables of one unit and one kind (S8, S10)."""
        return not any(d.key in COUNT_TERMS for d in self.differences)

    @property
    def ranked(self) -> bool:
        """Whether a ranking is given: the same deliverables, and the same work or ``allow_different``."""
        return self.same_deliverables and (self.same_work or self.allow_different)

    def ranking(self) -> list[SessionFigures]:
        """Sessions with a cost per accepted deliverable, cheapest first (ties: the faster).

        Empty when :attr:`ranked` is false; a session without the cost is never ranked.
        """
        if not self.ranked:
            return []
        costed = [s for s in self.sessions if s.cost_per_accepted_usd_minor is not None]
        return sorted(costed, key=lambda s: (exact_cost(s) or 0,
                                             float("inf") if s.warm_median_s is None else s.warm_median_s))

    def lines(self, allow_hint: str = ALLOW_WORDS) -> list[str]:
        """The table, whether the work is the same (what differs), then the ranking or why not.

        Args:
            allow_hint: how to rank anyway, said where the ranking is refused (the TUI
                names the command).
        """
        out = _table(self.sessions)
        out.append("")
        for line in self._said(allow_hint):  # 80 columns, continuation lines indented
            indent = " " * (len(line) - len(line.lstrip()) + 4)
            out.extend(textwrap.wrap(line, 80, subsequent_indent=indent, break_long_words=False,
                                     break_on_hyphens=False) or [""])
        return out

    def _said(self, allow_hint: str) -> list[str]:
        """The lines below the table, unwrapped: the work (what differs), the ranking."""
        said: list[str] = []
        if self.same_work:
            unrecorded = [w for k, w in WORK_TERMS if not any(s.work.get(k) for s in self.sessions)]
            matched = [w for k, w in WORK_TERMS if w not in unrecorded]
            said.append("Same work: " + (", ".join(matched) or "nothing recorded") + " match"
                        + (f"; not recorded in any: {', '.join(unrecorded)}." if unrecorded else "."))
        else:
            said.append("Not the same work:")
            said.extend(f"  {d.line()}" for d in self.differences)
        sourced = [line for s in self.sessions if (line := s.source_line()) is not None]
        if sourced:  # S10: the line `cost NAME` prints, with the count's source
            said.append("Cost per accepted deliverable, with the count's source:")
            said.extend(f"  {line}" for line in sourced)
        said.extend(f"{printable(s.name)}: count unreadable ({printable(s.count_problem)}); its accepted "
                    "deliverables are not counted here" for s in self.sessions if s.count_problem)  # H-39
        said.extend(self._ranking_lines(allow_hint))
        return said

    def _ranking_lines(self, allow_hint: str) -> list[str]:
        if not self.same_deliverables:  # S8, S10: said in one line, whatever was allowed
            said = "; ".join(d.line() for d in self.differences if d.key in COUNT_TERMS)
            return [f"Not ranked: the sessions do not count the same deliverables ({said}); a cost per "
                    "one is no cost per the other, even with --allow-different."]
        if not self.ranked:
            return ["Not ranked: the sessions did not run the same work; " + allow_hint + "."]
        ranked = self.ranking()
        head = ("Ranked although the work differs (--allow-different), by cost per accepted deliverable:"
                if not self.same_work else "Ranked by cost per accepted deliverable, cheapest first:")
        out = [head]
        first = exact_cost(ranked[0]) if ranked else None
        for i, s in enumerate(ranked, 1):
            ratio = ""
            mine = exact_cost(s)
            if i > 1 and first and mine is not None:  # exact costs, never the rounded cents (H-44)
                times = Decimal(mine.numerator) / Decimal(mine.denominator) / (
                    Decimal(first.numerator) / Decimal(first.denominator))
                ratio = f", {times.quantize(Decimal('0.01'))}× the first"
                if mine == exact_cost(ranked[i - 2]):
                    ratio += f", tied with {printable(ranked[i - 2].name)}"
            out.append(f"  {i}. {printable(s.name)}: {format_usd(s.cost_per_accepted_usd_minor)} per "
                       f"accepted deliverable{ratio}; {s.time_words()} per deliverable")
        for s in self.sessions:
            if s.cost_per_accepted_usd_minor is None:
                out.append(f"  not ranked: {printable(s.name)} — {s.cost_reason}")
        return out

    def markdown(self, allow_hint: str = ALLOW_WORDS) -> str:
        """The comparison as Markdown (``compare --html``): the same figures and words as :meth:`lines`.

        The table is a pipe table (a cell's ``|`` escaped); below it what differs and the
        ranking, then the chart of the cost per accepted deliverable (``compare-cost.png``,
        drawn inline by the page).
        """
        def cell(text: str) -> str:
            return printable(text).replace("|", "\\|")

        cols = [[s.name, *s.cells()] for s in self.sessions]
        rows = ["| | " + " | ".join(cell(c[0]) for c in cols) + " |",
                "| --- |" + " --- |" * len(cols)]
        rows += ["| " + label + " | " + " | ".join(cell(c[i + 1]) for c in cols) + " |"
                 for i, label in enumerate(ROW_LABELS)]
        text = ["# Which card to rent: sessions compared", "", *rows, ""]
        for line in self._said(allow_hint):  # an indented line is an item of the line above
            if line.startswith("  "):
                text.append(f"- {line.strip()}")
            else:
                text += ["", line, ""]
        if any(s.cost_per_accepted_usd_minor is not None for s in self.sessions):
            text += ["", "![cost per accepted deliverable](compare-cost.png)"]
        return "\n".join(text) + "\n"

    def to_json(self) -> dict[str, Any]:
        """Plain data (``compare --json``): sessions, differences, ranking (names) or ``None``."""
        return {
            "schema_version": COMPARE_SCHEMA_VERSION,
            "sessions": [s.to_json() for s in self.sessions],
            "same_work": self.same_work,
            "differences": [{"term": d.words, "key": d.key, "values": {n: list(v) for n, v in d.values.items()}}
                            for d in self.differences],
            "allow_different": self.allow_different,
            "ranking": [s.name for s in self.ranking()] if self.ranked else None,
            "lines": self.lines(),
        }


def cost_chart_svg(comparison: Comparison) -> str | None:
    """The cost per accepted deliverable of each session as an inline SVG bar chart (D6).

    The axis starts at 0; a session without the figure has no bar and says why in its
    label. ``None`` when matplotlib cannot be imported or no session has the figure;
    an unusable ``MPLBACKEND`` is ignored (H-42, :mod:`gpusession.core.retrieval.plotting`).
    """
    costed = [s for s in comparison.sessions if s.cost_per_accepted_usd_minor is not None]
    if not costed:
        return None
    import io


    try:
        plt = pyplot_agg()
    except ChartsUnavailable:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.5 * len(comparison.sessions)))
    names = [printable(s.name) for s in comparison.sessions]
    values = [(s.cost_per_accepted_usd_minor or 0) / 100 for s in comparison.sessions]
    ax.barh(names, values, color="#4878b0")
    ax.set_xlim(left=0)
    ax.invert_yaxis()
    ax.set_xlabel("USD per accepted deliverable (package cost ÷ the session's distinct accepted count)")
    for y, s in enumerate(comparison.sessions):
        ax.annotate(format_usd(s.cost_per_accepted_usd_minor) if s.cost_per_accepted_usd_minor is not None
                    else f"not shown: {s.cost_reason}", (values[y], y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    # matplotlib writes each label into a comment too (a session's name): dropped, the
    # drawn glyphs stay, so no name can close the comment and become markup
    svg = re.sub(r"<metadata>.*?</metadata>|<!--.*?-->", "", buf.getvalue(), flags=re.S)
    return svg[svg.index("<svg"):] if "<svg" in svg else None


def _table(sessions: Sequence[SessionFigures]) -> list[str]:
    """The figures as a table: one row per figure, one column per session."""
    cols = [[printable(s.name), *s.cells()] for s in sessions]
    label_w = max(len(label) for label in ROW_LABELS) + 2
    widths = [max(len(c) for c in col) + 2 for col in cols]
    rows = []
    for i, label in enumerate(("session", *ROW_LABELS)):
        cells = "".join(col[i].ljust(w) for col, w in zip(cols, widths, strict=True))
        rows.append((label.ljust(label_w) + cells).rstrip())
    return rows


def _host_check_cells(session: Session) -> tuple[str, str]:
    """The newest host check in short: against the order, and its probe's figures (D8)."""
    try:
        checks = list(load_host_checks(session).values())
    except (BadInput, OSError):
        return "unreadable", "not run"
    if not checks:
        return "not checked", "not run"
    c = max(checks, key=lambda c: c.facts.checked_at)
    words = ("ORDER DEVIATION" if c.deviation else "form factor not checked"
             if c.form_factor_unchecked else "matches the order")
    p = c.probe
    measured = [g for g in (p.gpus if p else ()) if g.matmul_tflops is not None]
    if p is None or p.status != "measured" or not measured:
        return words, "not run" if p is None else p.status
    g = min(measured, key=lambda g: g.matmul_tflops or 0.0)

    def gb(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    return words, f"{g.matmul_tflops:.0f} TFLOP/s, {gb(g.h2d_gb_per_s)}/{gb(g.d2h_gb_per_s)} GB/s"


def session_figures(session: Session, rates_path: Path | None = None) -> SessionFigures:
    """One session's figures: package, cost per accepted deliverable, time, quality, work.

    The cost is what ``gpusession cost --session NAME`` says (the same core functions,
    the package taken from the session, else from its recorded order); the time is the
    warm median of the recommended variant, the fastest accepted one over the session's
    experiments (D5): a faster variant that was rejected or not validated is never taken.

    Raises:
        BadInput: an unreadable results CSV, rates file, order or experiment definition.
    """
    frame = session.results.read()
    facts = session_facts(session, rates_path, frame=frame)  # the session's one record (A1, S10)
    answer = facts.answer
    if answer.inputs is None:
        raise answer.errors[0]
    inputs = answer.inputs
    pkg = inputs.package
    order = load_order(session).order
    gpu = pkg.gpu_model or (order.gpu_model if order else None)
    days = pkg.days or (order.days if order else None)
    lots = pkg.lots or (order.lots if order else None)
    total = per = count = None
    reason: str | None = "the package is not set (GPU model, days, lots)"
    full, count_problem = answer.count, answer.count_problem  # a count that does not read is said (H-39)
    in_unit = full if answer.in_unit else None
    accepted = answer.accepted
    line = None
    if gpu and days and lots:
        rep = cost_report(inputs.rates, gpu, days, lots, accepted=accepted, extensions=False)
        total, count = rep.total, rep.per_accepted
        per, reason = count.per_accepted_usd_minor, count.reason
        if in_unit is not None:  # the line `cost NAME` prints (one builder)
            line = cost_line(total.total_usd_minor, in_unit)
    times = package_json(session.package)
    figures = SessionFigures(
        name=session.name, folder=str(session.folder), gpu_model=gpu, days=days, lots=lots,
        gpu_count=total.gpu_count if total else None,
        package_total_usd_minor=total.total_usd_minor if total else None,
        accepted=accepted, cost_per_accepted_usd_minor=per, cost_reason=reason,
        work=work_terms(session, frame, full), start=times["start"], end=times["end"],
        accepted_corpora=len(accepted_revisions(frame)),
        deliverables=full.to_json() if full is not None else None,
        count_words=full.words() if full is not None and (in_unit is not None or full.n is not None) else None,
        unit=in_unit.unit.singular if in_unit is not None else None, per_unit_line=line,
        count_problem=count_problem)
    host_check, probe = _host_check_cells(session)
    figures = replace(figures, host_check=host_check, probe=probe)
    kept = facts.best_keep()  # the record's variant to keep, fastest over its experiments (D5)
    best = kept.best if kept is not None else None
    if best is None:
        return figures
    return replace(figures, experiment_id=best.experiment_id, variant_id=best.variant_id,
                   warm_median_s=best.median_seconds, warm_min_s=best.min_seconds,
                   warm_max_s=best.max_seconds, quality=best.quality_words())


def work_terms(session: Session, frame: pl.DataFrame,
               count: DeliverableCount | None = None) -> dict[str, tuple[str, ...]]:
    """Per :data:`WORK_TERMS` key, the distinct values of the session's measured work.

    Only the cold and warm rows count (a load row holds no corpus; a standalone
    validation is not a timed run); ``classes`` and ``scope`` come from the definitions
    of the experiments those rows belong to. Numbers read as written (``0.9``). ``unit``
    is what ``count`` counts (``approved visual``, ``accepted corpus``) and ``kind`` the
    kind of deliverable counted (``approved files``), so a session of accepted corpora is
    never ranked against one of approved files (S8, S10); the declared unit and no kind
    when the count does not read.

    Raises:
        BadInput: an unreadable experiment definition.
    """
    import polars as pl


    measured = frame.filter(pl.col("phase").is_in(["cold", "warm"])) if frame.height else frame
    out: dict[str, tuple[str, ...]] = {}
    for key, _words in WORK_TERMS:
        if key in measured.columns:
            values = measured[key].drop_nulls().unique().to_list()
            out[key] = tuple(sorted(_plain(v) for v in values))
    ids = set(measured["experiment_id"].drop_nulls().to_list()) if measured.height else set()
    exps = [e for e in load_experiments(session) if e.id in ids]
    out["classes"] = tuple(sorted({", ".join(str(c) for c in (e.protocol or {}).get("classes", ()))
                                   for e in exps if e.protocol}))
    out["scope"] = tuple(sorted({e.scope for e in exps}))

    # S8, S10: what is counted and by which kind: one approved visual is no accepted corpus
    out["unit"] = (count.noun() if count is not None else unit_of(session.data).singular,)
    if count is not None:  # a count that does not read has no kind here: never ranked, never blocks
        out["kind"] = (count.kind.name,)
    return out


def _plain(value: Any) -> str:
    """A cell as text: ``0.9``, ``512``, ``fp16`` (never ``0.9000000001`` from a float's repr)."""
    if isinstance(value, float):
        return format(Decimal(repr(value)).normalize(), "f")
    return str(value)


def exact_cost(s: SessionFigures) -> Fraction | None:
    """The package total ÷ the count, exact (cents), for ranking; ``None`` when not shown.

    Why: ranked on the cents rounded once for people, 1.833 ¢ and 1.684 ¢ both read 2 ¢
    and the order was the arguments'; the ranking compares the exact quotients (K2).
    """
    if s.cost_per_accepted_usd_minor is None or not s.accepted or s.package_total_usd_minor is None:
        return None
    return Fraction(s.package_total_usd_minor, s.accepted)


def differences(sessions: Sequence[SessionFigures]) -> tuple[Difference, ...]:
    """The work terms whose values are not the same in every session (D6)."""
    out = []
    for key, words in WORK_TERMS:
        # a session whose count does not read has no kind: it has no cost to rank either
        values = {s.name: tuple(s.work.get(key, ())) for s in sessions if key != "kind" or key in s.work}
        if len(set(values.values())) > 1:
            out.append(Difference(key, words, values))
    return tuple(out)


def compare_sessions(sessions: Sequence[Session], *, allow_different: bool = False,
                     rates_path: Path | None = None) -> Comparison:
    """Compare sessions: one figure set each, what differs, a ranking when allowed (D6).

    Args:
        sessions: two or more open sessions (names may repeat for home copies: each is
            named by its folder then).
        allow_different: rank even when the work differs (the ranking says so).
        rates_path: a rates file for every session (default: each session's own, else
            the bundled one; K7).

    Returns:
        The comparison; :meth:`Comparison.lines` and :meth:`Comparison.to_json` render it.

    Raises:
        BadInput: fewer than two sessions, or a session file is unreadable.
    """
    if len(sessions) < 2:
        raise BadInput("give two or more sessions to compare (names or folders)", field="sessions")
    figures = [session_figures(s, rates_path) for s in sessions]
    names = [f.name for f in figures]
    if len(set(names)) < len(names):  # two copies of one session: named by their folders
        from dataclasses import replace

        figures = [replace(f, name=f.folder) for f in figures]
    return Comparison(tuple(figures), differences(figures), allow_different)


#: How many other sessions of the folder the Cost pane compares (the most recent first).
FOLDER_MAX_SESSIONS = 8


def folder_comparison_lines(session: Session, *, limit: int = FOLDER_MAX_SESSIONS,
                            allow_hint: str = ALLOW_WORDS) -> list[str]:
    """The Cost pane's comparison of ``session`` with the other sessions of its folder (D6).

    The same table and the same words as ``gpusession compare``, this session first;
    a folder that does not open is named in one line, never a reason to show nothing.

    Args:
        session: the open session; its folder's parent holds the others.
        limit: at most this many other sessions, the most recently modified first.
        allow_hint: how to rank anyway (:meth:`Comparison.lines`).

    Returns:
        The lines; empty when the folder holds no other session that opens.
    """
    others: list[Session] = []
    broken: list[str] = []
    root = session.folder.parent
    for summary in list_sessions(root):
        if summary.name == session.name:
            continue
        if summary.error is not None:
            broken.append(f"{printable(summary.name)}: not compared ({printable(summary.error)})")
            continue
        if len(others) < limit:
            try:
                others.append(Session.open(root, summary.name, recover=False))
            except (BadInput, OSError) as exc:
                broken.append(f"{printable(summary.name)}: not compared ({printable(str(exc))})")
    if not others:
        return broken
    try:
        lines = compare_sessions([session, *others]).lines(allow_hint)
    except (BadInput, OSError) as exc:  # one unreadable file: said, the pane keeps its own figures
        return [f"other sessions not compared: {printable(str(exc))}", *broken]
    return ["Other sessions of this folder, in the same terms:", *lines, *broken]


__all__ = ["ALLOW_WORDS", "cost_chart_svg", "FOLDER_MAX_SESSIONS", "folder_comparison_lines", "Comparison", "Difference", "NOT_RECORDED", "ROW_LABELS", "SessionFigures",
           "WORK_TERMS", "compare_sessions", "differences", "session_figures", "work_terms"]
