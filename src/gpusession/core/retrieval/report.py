"""One Markdown report of a session for the person who approves the work (G§8).

It opens with the answer, in at most 10 lines: the verdict (distinct accepted corpora,
runs validated), the package cost and the cost per accepted deliverable (the figures of
``gpusession cost``), the variant to keep with its ratio (D5, D7) and the risks
(incidents, rejected variants, the copy home, time left). Then five sections, always
present (one with nothing to show says so): the results per variant and phase (R6:
median and min-max, failures kept, R7; the variants compared in words with an exact
test, D7; memory peaks, M2; each incident once; the charts), the validation verdicts
(V1), the cost (K1-K5), the environment seen (R10) and each experiment's protocol (V5,
R1-R5), and the need, decision, retrieval manifest (S4) and checklist progress.
``--html`` writes the same text as one self-contained page
(:mod:`gpusession.core.retrieval.report_html`).

PNG charts (durations per variant, load, cold and warm apart, every run a dot with its
median marked, on axes from 0; memory peaks likewise; past four experiments only the
answer's, beside one summary figure of every experiment, so a figure never grows with the
session, A5) are drawn with matplotlib, the
``report`` extra, imported only here (:mod:`gpusession.core.retrieval.plotting`, whatever
``MPLBACKEND`` says); where it cannot be imported the report says so in one line and how
to get them. An existing report is never overwritten silently:
``report.md`` becomes ``report-2.md``..., an explicit ``--out`` that exists is refused
without ``force``.

Who calls it: ``gpusession report NAME``. No torch, no textual.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpusession import __version__
from gpusession.core.copyhome.manifest import next_free_path, read_manifest
from gpusession.core.events.actions import ReportWrittenRecord
from gpusession.core.events.reading import JournalRead
from gpusession.core.experiment.derive import comparison_lines, derived_words
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import link_refused, refuse_link_or_special
from gpusession.core.files.secrets import mask_text
from gpusession.core.files.textio import read_plain
from gpusession.core.files.tomlio import read_toml, write_atomic_bytes
from gpusession.core.files.units import (
    byte_scale,
    format_seconds,
    format_seconds_range,
    significant,
)
from gpusession.core.folder.caches import file_signature
from gpusession.core.folder.corpus_pin import is_kept_corpus
from gpusession.core.folder.experiments import load_experiments
from gpusession.core.folder.journal_digest import journal_digest
from gpusession.core.folder.session import Session, refuse_session_data
from gpusession.core.money.answer import CostAnswer
from gpusession.core.money.cost import cost_report
from gpusession.core.money.kept_plan import session_plan
from gpusession.core.money.order import load_order
from gpusession.core.money.order_text import order_status_line
from gpusession.core.money.rates import format_usd
from gpusession.core.records.notefacts import energy_figure
from gpusession.core.records.ranks import RANKS_FILE, read_rank_frame
from gpusession.core.records.summary import (
    session_summary,
    validated_count,
    variant_words,
    verdict_count_words,
)
from gpusession.core.records.variants import compare_variants, spread_warnings
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.evidence import (
    ProbeReading,
    device_probe,
    fmt_bytes,
    latest_manifest,
    on_gpu_probe,
    order_match_probe,
    protocol_findings,
    snapshot_of,
)
from gpusession.core.retrieval.incidents import (
    PREDATES_LINE,
    SessionIncidents,
    pair_row_facts,
    row_facts,
    row_remarks,
    session_incidents,
)

# Every text shown in the report is made inert Markdown (H-45): printable() and more.
from gpusession.core.retrieval.mdtext import inert_markdown, md_text
from gpusession.core.retrieval.mdtext import md_text as printable
from gpusession.core.retrieval.session_facts import SessionFacts, Unmeasured, Verdict, session_facts
from gpusession.core.validation.report import without_output_digest

#: Section titles, in order; tests check that every one is present.
SECTIONS = (
    "Results per variant and phase",
    "Validation verdicts",
    "Cost",
    "Environment and protocol",
    "Need, decision and retrieval",
)
#: The summary the report opens with is at most this many lines (at 80 columns).
SUMMARY_LINES = 10


@dataclass(frozen=True)
class ReportWritten:
    """Where the report went, its chart files, why charts were left out (if so), its answer.

    ``answer``: the summary as printed lines (:func:`report_answer`), the same as the file's.
    """

    path: Path
    charts: list[Path] = field(default_factory=list)
    charts_note: str | None = None
    html: Path | None = None
    answer: list[str] = field(default_factory=list)


def _cell(value: Any) -> str:
    """A Markdown table cell: ``-`` for not measured (C3), pipes and newlines escaped."""
    if value is None:
        return "-"
    if isinstance(value, bool):  # spelled as in the CSV and TOML, not Python's True/False
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value or abs(value) == float("inf"):
            return str(value)
        text = significant(value, 6)  # never a measured value as 0 (H-22)
        return text.rstrip("0").rstrip(".") if "." in text else text
    return md_text(str(value)).replace("|", "\\|")  # H-17; Markdown and HTML escaped (H-45)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return out


def _when(dt: datetime | None) -> str:
    return dt.isoformat() if dt else "not set"


#: The report reads at 80 columns in a terminal: generated paragraphs wrap there.
WIDTH = 80


def _wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    """``text`` wrapped at :data:`WIDTH` columns (words never split, paths kept whole)."""
    import textwrap

    return textwrap.wrap(text, width=WIDTH, initial_indent=indent if first is None else first,
                         subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) or [first or indent]


def _flat(value: Any) -> str:
    """A stored value in a few words: lists joined, tables as ``key value`` pairs."""
    if isinstance(value, dict):
        return "(" + ", ".join(f"{k}: {_flat(v)}" for k, v in value.items()) + ")" if value else "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(_flat(v) for v in value) or "-"
    if isinstance(value, datetime):
        return value.isoformat()
    return _cell(value)


def _cycles(values: list[Any]) -> str:
    """``a, b, c × 5`` when ``values`` repeats one cycle, else the values joined."""
    n = len(values)
    for size in range(1, n // 2 + 1):
        if n % size == 0 and values == values[:size] * (n // size):
            return f"{', '.join(map(str, values[:size]))} × {n // size}"
    return ", ".join(map(str, values)) or "-"


def _runs_words(keys: list[tuple[Any, Any, Any, Any]]) -> str:
    """Who a grouped note is about: one run by name, or ``18 runs of batch-sweep (cold, warm)``."""
    if len(keys) == 1:
        exp, variant, phase, index = keys[0]
        if phase is None:
            return f"{_cell(exp)} / {_cell(variant)} (checked output)"
        return f"{_cell(exp)} / {_cell(variant)} / {phase} #{_cell(index)}"
    exps = list(dict.fromkeys(_cell(k[0]) for k in keys))
    phases = list(dict.fromkeys("checked output" if k[2] is None else str(k[2]) for k in keys))
    return f"{len(keys)} runs of {', '.join(exps)} ({', '.join(phases)})"


#: The last rows' facts worked out: ``{"last": (frame, the journal's signature, facts, its incidents)}``.
_FACTS: dict[str, tuple[pl.DataFrame, list[int] | None, list[Any], JournalRead]] = {}


def _row_facts(session: Session, frame: pl.DataFrame) -> tuple[list[Any], JournalRead]:
    """Each row's typed facts (:func:`row_facts`) and the journal's incidents, worked out once per report.

    From the journal's saved digest and the lines appended since
    (:func:`gpusession.core.folder.journal_digest.journal_digest`, A5): the records that
    ended runs, the ``incident`` records and the unreadable lines, never the whole journal
    decoded again while its prefix is the one folded (H-47). The notes, the incidents, the
    risks and the energy all ask; the same frame and the same journal bytes (its ``stat``
    signature) give the same facts, so they are matched once (10,000 rows each time). A
    journal that is not a plain file is read as before (its error said there).
    """
    sig = file_signature(session.journal_path)
    last = _FACTS.get("last")
    if last is not None and last[0] is frame and sig is not None and last[1] == sig:
        return last[2], last[3]
    digest = journal_digest(session.folder)
    if digest is None:
        read = session.journal_read()
        facts = row_facts(frame, read.records)
    else:
        read = digest.incidents_read()
        facts = pair_row_facts(frame, digest.row_facts_queues())
    _FACTS["last"] = (frame, sig, facts, read)
    return facts, read


def _grouped_notes(session: Session, frame: pl.DataFrame, limit: int = 12) -> list[str]:
    """Identical notes said once with the runs they concern, newest groups last.

    From each row's typed facts (:mod:`gpusession.core.retrieval.incidents`), its
    incidents left to the incidents' list and its load remark (what the phase column
    says) left out; an old row's through the old-folder adapter, a worker's name cut.
    """
    groups: dict[str, list[tuple[Any, Any, Any, Any]]] = {}
    facts = _row_facts(session, frame)[0]
    for r, f in zip(frame.iter_rows(named=True), facts, strict=True):
        key = without_output_digest(row_remarks(r, f))
        if not key:
            continue
        groups.setdefault(key, []).append((r["experiment_id"], r["variant_id"], r["phase"], r["run_index"]))
    out: list[str] = []
    for note, keys in list(groups.items())[:limit]:
        out.append(f"{_runs_words(keys)}: {_cell(note).rstrip('.')}.")
    if len(groups) > limit:
        out.append(f"… {len(groups) - limit} more different notes in resultats-bruts.csv.")
    return out


# -- sections --------------------------------------------------------------------------
def _need(items: list[cl.ChecklistItem], session: Session) -> list[str]:
    """The need and approval criteria as written before the work (stage 1 notes)."""
    stage1 = [i for i in items if i.stage == 1]
    out: list[str] = []
    for i in (i for i in stage1 if i.note or i.done):
        state = f"done {i.at.isoformat()}" if i.done and i.at else ("done" if i.done else "open")
        note = md_text(i.note) if i.note else "_no note written_"
        out += _wrap(f"**{md_text(i.text)}** ({state}): {note}", indent="  ", first="- ")
    silent = [i.id for i in stage1 if not i.note and not i.done]
    if not any(i.note for i in stage1):
        out.append(f"_No need or criteria written yet ({len(silent)} items of stage 1 open)._")
    elif silent:
        out += [""] + _wrap("Open, without a note: " + ", ".join(f"`{x}`" for x in silent) + ".")
    return out


def _env(session: Session, frame: pl.DataFrame, probes: Sequence[tuple[str, ProbeReading]]) -> list[str]:
    cols = ["gpu_model", "gpu_count", "device", "driver_version", "python_version",
            "torch_version", "runtime_version"]  # precision: in the protocol section
    timed = frame.filter(pl.col("phase").is_not_null()) if frame.height else frame  # a validation ran nothing
    if timed.height:
        env = timed.group_by("experiment_id", maintain_order=True).agg(
            [pl.col(c).drop_nulls().unique(maintain_order=True).cast(pl.String).str.join(", ")
             for c in cols]
        )
        header = ["GPU", "GPUs used", "device", "driver", "Python", "PyTorch", "runtime"]
        if env.height == 1:  # one experiment: named above the table, which then fits 80 columns
            out = [f"Observed by the runs of {_cell(env['experiment_id'][0])}, not taken from the order.", ""]
            out += _table(header, [[r[c] or None for c in cols] for r in env.iter_rows(named=True)])
        else:
            out = ["Observed by the runs, not taken from the order.", ""]
            out += _table(["experiment", *header],
                          [[r["experiment_id"]] + [r[c] or None for c in cols] for r in env.iter_rows(named=True)])
    else:
        out = ["Observed by the runs, not taken from the order."]
        out += ["", "_No run recorded yet._"]
    tables: list[tuple[str, dict[str, Any]]] = []
    exps = session.data.get("experiments")
    if isinstance(exps, dict):
        tables += [(f"experiment {k}", v["environment"]) for k, v in exps.items()
                   if isinstance(v, dict) and isinstance(v.get("environment"), dict)]
    top = session.data.get("environment")
    if isinstance(top, dict) and top and not any(t == top for _, t in tables):
        tables.append(("session", top))
    # said elsewhere: in the table above, in gpu_mapping, in the NVML line below, in the
    # protocol's last invocation
    in_table = {"device", "python_version", "torch_version", "gpu_count", "gpu_model",
                "driver_version", "runtime_version", "concurrent_load", "nvml_reason"}
    for label, table in tables:  # one wrapped paragraph, not one line per key
        mapped = {"gpu_uuid", "gpu_physical_index"} if "gpu_mapping" in table else set()
        unset = [str(k) for k, v in table.items() if v == "unset" and k != "observed_at"]
        pairs = [f"{k}: {_settings_words(_flat(v))}" for k, v in table.items()
                 if k not in in_table and k not in mapped and v not in ("unset", None, "-")
                 and _flat(v) != "-" and k != "observed_at"]
        if unset:  # the names stay in session.toml: an unset setting is said by count
            pairs.append(f"{len(unset)} settings variable(s) unset (named in session.toml)")
        named = f" ({label})" if len(tables) > 1 else ""
        out += [""] + _wrap(f"Also stored{named}: " + "; ".join(pairs) + ".")
    seen: set[str] = set()
    listed = False
    for label, probe in probes:
        if not probe.shown or probe.risk is not None:
            continue  # nothing to say, or a risk the summary already gives
        if not listed:
            out.append("")  # the list's blank line, once
            listed = True
        lines = [(i, _said_once(line.strip(), seen)) for i, line in enumerate(probe.text.splitlines())
                 if line.strip()]
        out += _wrap(f"**{label}:** {lines[0][1] if lines else '-'}", indent="  ", first="- ")
        for i, line in lines[1:]:
            if i == probe.recorded_line and frame.height:
                continue  # the table above says what the last run recorded
            out += _wrap(line, indent="    ", first="  - ")

    try:
        devs = [e for e in load_order(session).events if e.state == "deviation-noted"]
        if devs:
            out += ["", "Deviations recorded against the order:", ""]
            out += [f"- {e.at.isoformat()} order {printable(e.order_number or '')}: {printable(e.note)}"
                    for e in devs]
    except BadInput:
        pass
    return out


def _said_once(text: str, seen: set[str]) -> str:
    """``text`` with a long parenthesis already said earlier (``seen``) shortened to ``(as above)``."""
    import re

    def once(m: re.Match[str]) -> str:
        said = m.group(0)
        if len(said) < 30:
            return said
        if said in seen:
            return "(as above)"
        seen.add(said)
        return said

    return re.sub(r"\((?:[^()]|\([^()]*\))*\)", once, text)


def _bullets(key: str, value: Any, indent: str = "") -> list[str]:
    """``- key: value`` with nested tables as nested bullets, lists joined."""
    if isinstance(value, dict):
        out = [f"{indent}- {key}:"]
        for k, v in value.items():
            out += _bullets(str(k), v, indent + "  ")
        return out if len(out) > 1 else [f"{indent}- {key}: -"]
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return [f"{indent}- {key}: {_cell(', '.join(map(str, value))) if value else '-'}"]
        out = [f"{indent}- {key}:"]
        for n, v in enumerate(value, 1):
            out += _bullets(str(n), v, indent + "  ")
        return out
    if isinstance(value, datetime):
        return [f"{indent}- {key}: {value.isoformat()}"]
    return [f"{indent}- {key}: {_cell(value)}"]


#: What the report says of an experiment's definition, in this order; the rest is in
#: session.toml (the device is in the environment table, the last invocation in the journal).
_PROTOCOL_FIRST = ("workload", "corpus", "varied", "values", "precision", "context_limit", "scope",
                   "warmup_iterations", "runs_per_variant", "cold_runs_per_variant", "order",
                   "drawn_order", "seed")


def _definition_words(exp: dict[str, Any]) -> str:
    """``bbc-news on corpus/eval.jsonl; batch: 1, 4, 8; fp32, context limit 512, …``."""
    def has(k: str) -> bool:
        return exp.get(k) is not None

    said = []
    if has("workload"):
        said.append(_flat(exp["workload"]) + (f" on {_flat(exp['corpus'])}" if has("corpus") else ""))
    if has("varied"):
        said.append(f"{_flat(exp['varied'])}: {_flat(exp.get('values'))}")
    said += [f"{k.replace('_', ' ')} {_flat(exp[k])}" for k in ("precision", "context_limit", "scope")
             if has(k) and k != exp.get("varied")]  # a varied precision is in its values (A3)
    runs = []
    if has("warmup_iterations"):
        n = _flat(exp["warmup_iterations"])
        runs.append(f"{n} warm-up iteration{'' if n == '1' else 's'}")
    if has("runs_per_variant"):
        runs.append(f"{_flat(exp['runs_per_variant'])} warm runs per variant"
                    + (f" ({_flat(exp['cold_runs_per_variant'])} cold)" if has("cold_runs_per_variant") else ""))
    if has("order"):
        drawn = exp.get("drawn_order")
        runs.append(f"order {_flat(exp['order'])}" + (f" ({_cycles(drawn)})" if isinstance(drawn, list) else ""))
    if has("seed"):
        runs.append(f"seed {_flat(exp['seed'])}")
    return "; ".join(said + runs)


def _protocols(session: Session) -> list[str]:
    exps = session.data.get("experiments")
    if not isinstance(exps, dict) or not exps:
        return ["_No experiment defined._"]
    findings = protocol_findings(session)
    out: list[str] = []
    for exp_id, exp in exps.items():
        if not isinstance(exp, dict):
            continue
        text = f"**{_cell(exp_id)}:** {_definition_words(exp)}."
        proto = exp.get("protocol")
        if isinstance(proto, dict) and proto:
            text += " Validation: " + "; ".join(f"{k}: {_flat(v)}" for k, v in proto.items()) + "."
        else:
            text += " Validation protocol: _not stored_."
        if (found := findings.get(str(exp_id))) is not None:  # by its id, never by the line's words
            words, late = found
            text += " " + ("WARNING: " if late else "") + words[:1].upper() + words[1:] + "."
        out += ([""] if out else []) + _wrap(text)
    if not out:
        out = ["_No experiment defined._"]
    return out


def _results(session: Session, frame: pl.DataFrame, table: list[Any] | None = None) -> list[str]:
    if frame.height == 0:
        return ["_No run recorded yet._"]

    table = session_summary(session, frame) if table is None else table
    out: list[str] = []
    said = " (median, min–max in ms or s; no p95 below 20 runs)"
    sections: dict[str, list[list[Any]]] = {}
    partial: dict[str, list[str]] = {}  # groups not measured in full, per section (R7, D5)
    loads: dict[str, list[Any]] = {}  # the loads of each section, said in one line
    colds: dict[str, list[Any]] = {}  # single accepted cold runs, said in the same line
    checked: set[str] = set()  # the titles of `validate` outputs' sections (no times), by the row's type
    for r in table:  # 3 significant digits with a unit: a measured value never reads 0 (H-22)
        if r.attempt is not None:
            title = f"Experiment {_cell(r.experiment_id)}, attempt {r.attempt} (measured nothing)"
        elif r.is_validation:
            title = "Outputs checked with `gpusession validate` (not timed)"
            checked.add(title)
        else:  # the summary pools every attempt of the experiment, and says how many (D5)
            title = f"Experiment {_cell(r.experiment_id)}" + (
                f" ({r.attempts_pooled} attempts pooled)" if r.attempts_pooled > 1 else "")
        if r.is_validation:
            row: list[Any] = [r.variant_id, r.quality_words(), r.verdict_words()]
        else:  # the verdict beside the times, apart from how complete the measurement is (D5)
            row = [r.variant_words(), r.phase, r.n, format_seconds(r.median_seconds, "-"),
                   format_seconds_range(r.min_seconds, r.max_seconds, "-"),
                   r.quality_words(), r.verdict_words()]
            if not r.measured_in_full:  # said below the table: it fits 80 columns
                partial.setdefault(title, []).append(f"{r.variant_words()} {r.phase}: {r.outcome_words()}")
        if (r.phase == "load" and r.attempt is None and r.failed == 0 and r.validated == 0
                and r.median_seconds is not None):
            loads.setdefault(title, []).append(r)  # one line below the table, not one row each
            sections.setdefault(title, [])
            continue
        if (r.phase == "cold" and r.attempt is None and r.runs == 1 and r.n == 1
                and r.all_accepted and r.measured_in_full):
            colds.setdefault(title, []).append(r)  # a single accepted cold run: said in the line
            sections.setdefault(title, [])
            continue
        sections.setdefault(title, []).append(row)
    for n, (title, rows) in enumerate(sections.items()):
        header = (["output", "quality", "verdict"] if title in checked
                  else ["variant", "phase", "n", "median", "min–max", "quality", "verdict"])
        heading = _wrap(f"{title}{said if n == 0 and title not in checked else ''}:")
        out += (heading + [""] if n == 0 else ["", *heading, ""]) + (_table(header, rows) if rows else [])
        if title in loads or title in colds:
            out += ([""] if rows else []) + _wrap(_loads_and_colds(loads.get(title, []), colds.get(title, [])))
        if title in partial:  # how complete the measurement is, apart from the verdict
            out += ["", "Not measured in full:"]
            for line in partial[title]:
                out += _wrap(printable(line), indent="  ", first="- ")
    out += _compared(frame, table) + _replays(session, table)
    notes = _grouped_notes(session, frame)
    if notes:
        out += [""] + _wrap("Notes (identical notes said once): " + " ".join(notes))
    return out


def _settings_words(text: str) -> str:
    """``a=none, b=tf32, c=none, d=none`` said by its exceptions: ``b=tf32, the other 3 none``.

    For a setting that lists many named values (torch's ``fp32_precision``): the report
    says the few that differ, the rest by count; a value of other shape is kept as it is.
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) < 5 or not all(p.count("=") == 1 for p in parts):
        return text
    values = [p.split("=", 1)[1] for p in parts]
    common = max(set(values), key=values.count)
    if values.count(common) * 2 <= len(values):
        return text
    rest = [p for p, v in zip(parts, values, strict=True) if v != common]
    return ", ".join([*rest, f"the other {values.count(common)} {common}"])


def _loads_and_colds(loads: list[Any], colds: list[Any]) -> str:
    """``Loads (model to device, not validated): 4, 157–220 ms. One cold run each: …``."""
    said = []
    if loads:
        lo = min(float(r.min_seconds) for r in loads)
        hi = max(float(r.max_seconds) for r in loads)
        said.append(f"Loads (model to device, not validated): {sum(r.n for r in loads)}, "
                    f"{format_seconds_range(lo, hi)}.")
    if colds:
        said.append("One cold run each (a new worker's first run), accepted: "
                    + ", ".join(f"{_cell(r.variant_words())} {format_seconds(r.median_seconds)}" for r in colds) + ".")
    return " ".join(said)


def _compared(frame: pl.DataFrame, table: list[Any]) -> list[str]:
    """The variants compared in words, and the spread warnings (D5, D7)."""
    out: list[str] = []
    comparisons = compare_variants(frame, table)
    for exp in dict.fromkeys(c.experiment_id for c in comparisons):
        mine = [c for c in comparisons if c.experiment_id == exp]
        out += ["", *_wrap(f"{_cell(exp)}, variants compared (exact two-sided Mann–Whitney test):")]
        for c in mine:
            out += _wrap(printable(c.words()), indent="  ", first="- ")
    spread = spread_warnings(frame)
    if spread and not comparisons:
        out.append("")
    if spread:
        tail = "" if any(w.first_after_load for w in spread) else "; none the first after a load"
        out += _wrap("Spread over 20 % of the median: "
                     + ", ".join(printable(w.short_words()) for w in spread) + tail + ".",
                     indent="  ", first="- ")
    return out


def _replays(session: Session, table: list[Any]) -> list[str]:
    """Each derived experiment beside the one it replays: time and verdict before → after (D4, D5)."""
    try:
        exps = load_experiments(session)
    except BadInput:
        return []  # the experiments section of `show` says why they do not read
    by_id = {e.id: e for e in exps}
    out: list[str] = []
    for e in exps:
        if e.derived_from is None or e.derived_from not in by_id:
            continue
        out += ["", *_wrap(printable(f"{e.id}, one change replayed ({derived_words(e, by_id)}):"))]
        for line in comparison_lines(by_id[e.derived_from], e, table):
            out += _wrap(printable(line), indent="  ", first="- ")
    return out


def _incidents(session: Session, frame: pl.DataFrame) -> list[str]:
    """Every incident once, grouped: the rows' incident notes and the journal's incidents (R7, S7).

    A failure is a typed fact of its row (recorded in the journal beside the run) and a
    journal incident ("worker warm: …"); said once here, with the runs it concerns and
    how many times the journal recorded it. A journal line that does not read is one of
    them. Rows older than typed facts: their incidents as their notes say them, one per
    row, and one line saying so.
    """
    found = _incident_groups(session, frame)
    if not len(found):
        return []
    groups = found.incidents
    out = ["", "Incidents recorded in the journal and the rows (each said once):", ""]
    for g in groups[-30:]:
        who = [_runs_words(list(g.runs))] if g.runs else []
        ats = [a for a in g.times if a is not None]
        if ats:
            who.append(_cell(ats[-1]) if len(ats) == 1 else f"{len(ats)} times, last {_cell(ats[-1])}")
        said = f"{'; '.join(who)}: {_cell(g.words)}" if who else _cell(g.words)
        out += _wrap(said, indent="  ", first="- ")
    if len(groups) > 30:
        out.append(f"- … {len(groups) - 30} earlier in journal.jsonl")
    for who_, notes in found.legacy[-30:]:  # as written, one per row
        out += _wrap(f"{_runs_words([who_])}: {_cell(notes)}", indent="  ", first="- ")
    if found.legacy:
        out += [""] + _wrap(PREDATES_LINE.format(n=len(found.legacy)))
    return out


def _incident_groups(session: Session, frame: pl.DataFrame) -> SessionIncidents:
    """The session's incidents, each once (:func:`gpusession.core.retrieval.incidents.session_incidents`)."""
    facts, read = _row_facts(session, frame)
    return session_incidents(frame, facts, read)


def _journal_incidents(session: Session) -> list[str]:
    """The incidents of the session (:func:`_incidents` over its rows and its journal)."""
    return _incidents(session, session.results.read())


def _memory(session: Session, frame: pl.DataFrame) -> list[str]:
    if frame.height == 0 or frame.get_column("peak_reserved_bytes").drop_nulls().len() == 0:
        return ["Memory peaks: none measured (CPU runs: the cells are empty, not 0)."]
    mem = (
        frame.filter(pl.col("peak_allocated_bytes").is_not_null() | pl.col("peak_reserved_bytes").is_not_null())
        .group_by(["experiment_id", "variant_id", "phase"], maintain_order=True)
        .agg(pl.col("peak_allocated_bytes").max(), pl.col("peak_reserved_bytes").max())
    )
    out = _wrap("Memory peaks: the highest per variant and phase, PyTorch allocator. Allocated is part of "
                "reserved: the two are never added, and their difference is not \"the cache\". "
                "Other processes and memory outside the allocator are not covered.")
    tables: dict[str, list[list[Any]]] = {}
    for r in mem.iter_rows(named=True):  # one table per experiment, so a row fits 80 columns
        tables.setdefault(_cell(r["experiment_id"]), []).append(
            [r["variant_id"], r["phase"], _bytes_short(r["peak_allocated_bytes"]),
             _bytes_short(r["peak_reserved_bytes"])])
    for exp, rows in tables.items():
        out += ["", f"Experiment {exp}:", ""]
        out += _table(["variant", "phase", "peak allocated", "peak reserved"], rows)
    return out + _rank_memory(session, mem)


def _rank_memory(session: Session, mem: pl.DataFrame) -> list[str]:
    """Each rank's own highest peaks, for experiments run across ranks."""
    out: list[str] = []
    for exp in mem.get_column("experiment_id").unique(maintain_order=True).to_list():
        path = session.runs_dir / str(exp) / RANKS_FILE
        try:
            ranks = read_rank_frame(path)
        except BadInput as exc:
            out += ["", *_wrap(f"Experiment {_cell(exp)} ran across ranks, but its per-rank table "
                               f"cannot be read: {exc}")]
            continue
        ranks = ranks.filter(pl.col("peak_reserved_bytes").is_not_null() | pl.col("peak_allocated_bytes").is_not_null())
        if ranks.height == 0:
            continue
        per = (
            ranks.with_columns(pl.col("run_key").str.split(":").list.get(0, null_on_oob=True).alias("phase"),
                               pl.col("run_key").str.split(":").list.get(1, null_on_oob=True).alias("variant"))
            .group_by(["variant", "phase", "rank"], maintain_order=True)
            .agg(pl.col("device").last(), pl.col("peak_allocated_bytes").max(), pl.col("peak_reserved_bytes").max())
        )  # in the order the runs were made, ranks in order within each run
        rows = [[r["variant"], r["phase"], r["rank"], r["device"], _bytes_short(r["peak_allocated_bytes"]),
                 _bytes_short(r["peak_reserved_bytes"])] for r in per.iter_rows(named=True)]
        out += ["", *_wrap(f"Experiment {_cell(exp)}, each rank's own highest peak (the table above keeps "
                           f"the largest over ranks; every run's figures are in runs/{exp}/{RANKS_FILE}):"), ""]
        out += _table(["variant", "phase", "rank", "device", "peak allocated", "peak reserved"], rows)
    return out


def _bytes_short(n: int | None) -> str | None:
    """``1.20 GiB`` (the exact byte count is in resultats-bruts.csv); ``None`` = not measured."""
    if n is None:
        return None
    scale, unit = byte_scale(n)
    return f"{n} B" if unit == "B" else f"{n / scale:.2f} {unit}"


#: The lines of a validation report the verdicts table reads: table headers and the keys
#: it shows (``corpus_accepted``, ``verdict``, each check's ``passed``/``checked``, the
#: quality's ``value``), as the product's TOML writer puts them, at the start of a line.
_VERDICT_LINES = re.compile(
    r"^(?:\[[^\n]*\]|(?:schema|corpus_accepted|verdict|passed|checked|value)[ \t]*=[^\n]*)$", re.M)
#: The checks of a validation report, by their table and as the verdict names them (V1).
_CHECKS = (("ids", "IDs"), ("format", "format"), ("quality", "quality"), ("overlap", "overlap"))
#: Larger reports are read whole (and refused past the TOML bound, H-48, as every reader does).
_VERDICT_READ_BYTES = 256 * 1024


def _verdict_doc(path: Path, seen: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the verdicts table shows of one validation report, parsed by tomllib from those lines alone.

    A report is 3-4 KB, most of it the checks' words and first offending IDs: a session
    of 10,000 runs would spend seconds parsing what the table never shows (A5). Where
    the lines alone cannot be trusted (a multi-line string, a larger file, text that is
    not UTF-8, lines that do not parse or lack the verdict) the whole file is read by
    :func:`~gpusession.core.files.tomlio.read_toml`, with its errors.

    ``seen``: the documents already parsed, by the text of their lines: runs with the same
    verdict have the same lines, parsed once (the document is shared: read, never changed).

    Returns:
        The document: ``schema``, ``corpus_accepted``, ``verdict``, and the ``ids``,
        ``format``, ``quality`` (with ``value``) and ``overlap`` tables.

    Raises:
        BadInput: the file is not a plain file, or (read whole) as :func:`read_toml`.
    """
    from gpusession.core.files.tomlio import SCHEMA_VERSION, tomllib

    try:
        raw = read_plain(path, max_bytes=_VERDICT_READ_BYTES + 1)
        if len(raw) > _VERDICT_READ_BYTES or b'"""' in raw or b"'''" in raw:
            raise ValueError("read whole")
        lines = "\n".join(_VERDICT_LINES.findall(raw.decode("utf-8")))
        doc = seen.get(lines) if seen is not None else None
        if doc is None:
            doc = tomllib.loads(lines)
            if seen is not None:
                seen[lines] = doc
        schema = doc.get("schema")
        if not (type(schema) is int and 1 <= schema <= SCHEMA_VERSION and "corpus_accepted" in doc):
            raise ValueError("read whole")
        return doc
    except (OSError, ValueError, tomllib.TOMLDecodeError):  # UnicodeDecodeError is a ValueError
        return read_toml(path, field_bound=False)  # an archive: it quotes the corpus (H-48)


def _validation(session: Session, frame: pl.DataFrame) -> list[str]:
    out: list[str] = []  # the count of distinct accepted corpora is the summary's verdict
    vdir = session.validation_dir
    reports = sorted(p for p in vdir.rglob("*.toml")  # the kept corpus is no run
                     if not is_kept_corpus(p.relative_to(vdir))) if vdir.is_dir() else []
    rows = []
    word = {True: "PASS", False: "FAIL", None: "-"}
    parsed: dict[str, dict[str, Any]] = {}
    for path in reports:
        try:
            doc = _verdict_doc(path, parsed)
        except BadInput as exc:
            rows.append([path.relative_to(vdir).as_posix(), f"unreadable: {exc}",
                         None, None, None, None])
            continue

        def passed(section: str, doc: dict[str, Any] = doc) -> str:
            sec = doc.get(section)
            if isinstance(sec, dict) and sec.get("checked") is False:
                return "not checked"
            return word.get(sec.get("passed")) if isinstance(sec, dict) else "-"  # type: ignore[return-value]

        quality = doc.get("quality") if isinstance(doc.get("quality"), dict) else {}
        value = quality.get("value") if isinstance(quality, dict) else None
        rel = path.relative_to(vdir).with_suffix("").as_posix()
        verdict = doc.get("corpus_accepted")
        failed = ", ".join(label for key, label in _CHECKS  # the checks' typed verdicts, never the verdict's words
                           if isinstance(doc.get(key), dict) and doc[key].get("passed") is not True)
        shown = "ACCEPTED" if verdict is True else (
            f"REJECTED ({failed} failed)" if verdict is False and failed else "REJECTED" if verdict is False else "-")
        rows.append([rel, shown, passed("ids"),
                     passed("format"), f"{passed('quality')} ({value:.4f})" if isinstance(value, float)
                     else passed("quality"), passed("overlap")])
    # the names of `validate --session` rows (no phase): their reports lie at the top of validation/
    standalone = set(frame.filter(pl.col("phase").is_null())["variant_id"].drop_nulls().to_list()
                     ) if frame.height else set()
    if rows:  # identical verdicts said once, with how many runs share them
        same: dict[tuple[Any, ...], list[str]] = {}
        for row in rows:
            same.setdefault(tuple(row[1:]), []).append(str(row[0]))
        grouped = []
        for verdict, names in same.items():
            # a report at the top of validation/ is a standalone `validate --session`, listed
            # as a validation, never counted as a run of an experiment of the same name
            checks = [n for n in names if n in standalone]
            runs = [n for n in names if n not in standalone]
            tops = list(dict.fromkeys(n.split("/", 1)[0] for n in runs))
            if len(runs) == 1:
                grouped.append([runs[0], *verdict])
            elif runs:
                grouped.append([f"{len(runs)} runs of {', '.join(tops)}", *verdict])
            if len(checks) == 1:
                grouped.append([f"validation {checks[0]}", *verdict])
            elif checks:
                grouped.append([f"{len(checks)} validations ({', '.join(checks)})", *verdict])
        out += _table(["run", "verdict", "IDs", "format", "quality", "overlap"], grouped)
    elif frame.height:
        per = frame.group_by(["experiment_id", "variant_id"], maintain_order=True).agg(
            pl.col("corpus_accepted").fill_null(False).sum().alias("accepted"),
            validated_count().alias("validated"),  # a failed or cut run is not validated
            pl.len().alias("runs"),
        )
        out += ["No validation report in validation/; from the results rows:", ""]
        out += _table(["experiment", "variant", "runs", "validated", "accepted"],
                      [[r["experiment_id"], r["variant_id"], r["runs"], r["validated"], r["accepted"]]
                       for r in per.iter_rows(named=True)])
    else:
        out.append("_No validation yet._")
    return out


def _cost_report(session: Session, answer: CostAnswer) -> Any:
    """The session's cost report, computed as ``gpusession cost`` computes it (K1-K7).

    The count and its source are the session's one answer (:func:`session_answer`, A1):
    the summary and this section divide by the same count.

    Returns:
        A :class:`~gpusession.core.money.cost.CostReport`; a string saying why when it
        cannot be computed; ``None`` while the package is not set.
    """
    pkg = session.package
    if not (pkg.gpu_model and pkg.days and pkg.lots):
        return None
    if answer.inputs is None:
        return f"cost not computed: {answer.problem}"
    try:
        kept = session_plan(session)  # K6: priced as `cost NAME` prices it
        return cost_report(answer.inputs.rates, pkg.gpu_model, pkg.days, pkg.lots,
                           accepted=answer.accepted,  # not measured while nothing is validated (K3)
                           accepted_source=answer.source_words(),
                           # S8: section 3 divides by the count in the session's unit
                           count_words=(None if answer.count is None
                                        else (answer.count.words(), answer.count.unit.singular)),
                           extensions=False,
                           plan=list(kept.durations_days) if kept is not None else None,
                           plan_source=f"the plan kept with the package of session {session.name}")
    except BadInput as exc:
        return f"cost not computed: {exc}"


def _cost(session: Session, rep: Any) -> list[str]:
    """Section 3: the lines of ``gpusession cost`` in one paragraph.

    Less the GPU line and the measured count (the verdict says it); from the same
    :class:`CostAnswer` as the summary (A1).
    """
    pkg = session.package
    if rep is None:
        return [f"_Package not fully set (GPU, lots, days): `gpusession package {session.name} ...`._"]
    lines = [rep] if isinstance(rep, str) else rep.lines(gpu=False, measured_count=False,
                                                         projection="Counted so far, never projected")
    said = [f"Package window: {_when(pkg.start)} → {_when(pkg.end)}"] + [line.rstrip(".") for line in lines]
    return _wrap(". ".join(said) + ".")


def _energy(facts: SessionFacts) -> list[str]:
    """The GPU energy per deliverable of the session's record (divided by its one count, S10) and per run.

    Nothing on CPU only.
    """
    if facts.energy_gpu_runs == 0:
        return []
    count = facts.answer.count
    noun = count.noun() if count is not None else "accepted deliverable"
    per, total = facts.energy_per_deliverable_j, facts.energy_j
    if isinstance(per, Unmeasured) or isinstance(total, Unmeasured) or count is None:
        why = per.reason if isinstance(per, Unmeasured) else "the count does not read"
        lines = [f"Energy per {noun}: not shown — {why}."]
    else:
        lines = [f"Energy per {noun}: {energy_figure(total)} J over {facts.energy_gpu_runs} measured runs "
                 f"(failed ones included) ÷ {count.words()} = {energy_figure(per)} J (GPU only, NVML's counter)."]
    if facts.energy_per_variant:
        lines.append("Median energy per run: " + "; ".join(
            f"{exp} {variant} {energy_figure(j)} J ({runs} runs)" for exp, variant, j, runs in facts.energy_per_variant)
            + ".")
    out: list[str] = [""]
    for line in lines:
        out += _wrap(line)
    return out


def _retrieval(session: Session) -> list[str]:
    man = latest_manifest(session)
    if man is None:
        return _wrap(f"_No manifest of approved deliverables yet: `gpusession manifest {session.name} "
                     "--deliverables DIR`._")
    try:  # the manifest's own checked reader (S4): its error names the file and line
        entries = read_manifest(man)
        total = sum(e.size_bytes for e in entries)
        head = f"{man.name}: {len(entries)} deliverable(s), {fmt_bytes(total)}, with SHA-256."
    except BadInput as exc:  # a hand-edited manifest must not stop the report
        head = f"{man.name}: unreadable ({exc})"
    return _wrap(f"{head} After the copy home, on your own computer: `gpusession verify-copy "
                 f"{man.name} COPY_DIR`, then open the files it names *from the copy* (a sample left "
                 "on the remote machine is not your archive).")


def _decision(items: dict[str, cl.ChecklistItem], session: Session) -> tuple[list[str], str]:
    """The decision notes of stage 8 (one paragraph each), and a sentence naming those not written."""
    out: list[str] = []
    missing: list[str] = []
    for item_id, label in (("g8.decision", "What the trial decided"),
                           ("g8.handover", "What still needs validating / for a colleague"),
                           ("g8.keep-accepted", "Resume note")):
        it = items.get(item_id)
        if it and it.note:
            out += ([""] if out else []) + _wrap(f"**{label}:** {md_text(it.note)}")  # H-45
        else:
            missing.append(f"`{item_id}`")
    said = (f"_Decision notes not written yet: {', '.join(missing)}_ (`gpusession checklist "
            f"{session.name} note ID TEXT`)." if missing else "")
    return out, said


def _need_and_decision(items: list[cl.ChecklistItem], by_id: dict[str, cl.ChecklistItem],
                       session: Session) -> list[str]:
    """The need, the decision notes, the retrieval and the checklist's progress."""
    written, missing = _decision(by_id, session)
    need = _need(items, session)
    blank = not any(i.note or i.done for i in items if i.stage == 1)  # then `_need` is its one sentence
    unwritten = need[0] if blank else None
    out = ([] if unwritten else need) + ([""] + written if written and not unwritten else written)
    tail = " ".join(x for x in [unwritten, missing, *_retrieval(session), *_progress(items)] if x)
    return out + ([""] if out else []) + _wrap(tail)


def _progress(items: list[cl.ChecklistItem]) -> list[str]:
    """Done / total items of the stages with anything done, in one wrapped paragraph.

    How many of them gpusession's own records ticked (S11) is said beside the count.
    """
    parts = []
    for stage in cl.STAGES:
        st = [i for i in items if i.stage == stage]
        if any(i.done for i in st):
            parts.append(f"{stage}: {sum(i.done for i in st)}/{len(st)}")
    done = sum(i.done for i in items)
    recorded = sum(1 for i in items if i.done and i.ticked_by == cl.PRODUCT)
    by = f", {recorded} ticked by gpusession's records" if recorded else ""
    per = f" (stage {', '.join(parts)}; others 0)" if done else ""
    return _wrap(f"Checklist: {done} of {len(items)} items done{by}{per}.")


# -- charts ------------------------------------------------------------------------------
#: What the report says in place of its charts under ``--no-charts``.
NO_CHARTS_NOTE = "Charts not drawn (--no-charts); `gpusession report NAME` draws them."
#: The phases drawn apart, each in its own panel (a load and a warm run are not comparable).
PHASES = ("load", "cold", "warm")
#: The panels from left to right: the warm runs, which the variants are compared on, first.
PANELS = ("warm", "cold", "load")
#: The most experiments drawn one row of panels each; past it, the answer's and one summary figure.
CHART_EXPERIMENTS = 4
#: The most experiment names on the summary figure's axis.
OVERVIEW_TICKS = 12


def _pyplot() -> Any:
    """Pyplot on matplotlib's Agg backend whatever ``MPLBACKEND`` says (H-42).

    Raises:
        ChartsUnavailable: it cannot be had (its ``note`` says how to get it).
    """
    from gpusession.core.retrieval.plotting import pyplot_agg

    return pyplot_agg()


#: Horizontal offsets of the dots of one variant (runs drawn side by side, never hidden).
_SPREAD = 0.22


def _offsets(count: int) -> list[float]:
    """``count`` offsets evenly across ±:data:`_SPREAD` (one run: centred)."""
    if count <= 1:
        return [0.0] * count
    return [-_SPREAD + 2 * _SPREAD * i / (count - 1) for i in range(count)]


def _duration_figure(plt: Any, timed: pl.DataFrame) -> Any:
    """Every run of each variant as a dot, its median as a line; warm, cold and load apart.

    One row of panels per experiment; every axis starts at 0, so a small difference
    does not look large. With 3–5 runs a dot per run hides nothing a bar would.
    """
    groups = timed.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True).agg(
        pl.col("elapsed_seconds").median().alias("median"), pl.col("elapsed_seconds").alias("runs"))
    exps = list(dict.fromkeys(groups["experiment_id"].to_list()))
    widest = max((groups.filter(pl.col("experiment_id") == e).get_column("variant_id").n_unique()
                  for e in exps), default=1)
    fig, axes = plt.subplots(len(exps), len(PANELS), squeeze=False,
                             figsize=(max(7.5, 1.1 * widest * len(PANELS)), 3.2 * len(exps)))
    for row, exp in enumerate(exps):
        for col, phase in enumerate(PANELS):
            ax = axes[row][col]
            g = groups.filter((pl.col("experiment_id") == exp) & (pl.col("phase") == phase))
            names = [variant_words(v, phase) for v in g["variant_id"].to_list()]
            med, runs = g["median"].to_list(), g["runs"].to_list()
            xs = list(range(len(names)))
            top = 0.0
            for x, m, values in zip(xs, med, runs, strict=True):
                ax.scatter([x + d for d in _offsets(len(values))], values, s=18, color="#4a7ab5",
                           zorder=3)
                ax.hlines(m, x - _SPREAD - 0.08, x + _SPREAD + 0.08, color="black", linewidth=1.5,
                          zorder=4)
                top = max(top, *values)
            ax.set_ylim(bottom=0, top=top * 1.15 or 1.0)
            ax.set_xlim(-0.6, max(len(names), 1) - 0.4)
            ax.set_xticks(xs)
            turn = len(names) > 4 or max((len(n) for n in names), default=0) > 10
            ax.set_xticklabels(names, fontsize=8, rotation=30 if turn else 0, ha="right" if turn else "center")
            ax.set_title(f"{exp}: {phase}" if len(exps) > 1 else phase, fontsize=10)
            if not names:
                ax.text(0.5, 0.5, "no run", ha="center", va="center", transform=ax.transAxes, fontsize=9)
            if col == 0:
                ax.set_ylabel("seconds (dot: one run; line: median)", fontsize=8)
    fig.suptitle("Durations per variant: every run a dot, median marked, axis from 0", fontsize=11)
    fig.tight_layout()
    return fig


def _memory_figure(plt: Any, mem: pl.DataFrame) -> Any:
    """Peak allocated and reserved of every run as dots, side by side (never added); axis from 0.

    A short line marks each variant and phase's highest peak (the figure the table gives).
    """
    g = mem.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True).agg(
        pl.col("peak_allocated_bytes").fill_null(0), pl.col("peak_reserved_bytes").fill_null(0))
    several = g.get_column("experiment_id").n_unique() > 1
    rows = list(g.iter_rows(named=True))
    names = [(f"{r['experiment_id']}\n" if several else "") + f"{r['variant_id']}\n{r['phase']}" for r in rows]
    divisor, unit = byte_scale(max((max(r["peak_reserved_bytes"], default=0) for r in rows), default=0))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(names)), 4.0))
    xs = list(range(len(names)))
    for column, shift, colour, label in (("peak_allocated_bytes", -0.2, "#4a7ab5", "peak allocated"),
                                         ("peak_reserved_bytes", 0.2, "#d08c3a", "peak reserved")):
        for x, r in zip(xs, rows, strict=True):
            values = [v / divisor for v in r[column]]
            ax.scatter([x + shift + d / 3 for d in _offsets(len(values))], values, s=14, color=colour,
                       zorder=3, label=label if x == 0 else None)
            ax.hlines(max(values, default=0), x + shift - 0.12, x + shift + 0.12, color=colour,
                      linewidth=1.5, zorder=4)
    ax.set_xticks(xs)
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"{unit} (PyTorch allocator; side by side, never added)")
    ax.set_title("Memory peaks per variant and phase (dot: one run; line: highest)")
    ax.legend()
    fig.tight_layout()
    return fig


def _drawn(timed: pl.DataFrame, answered: Sequence[str]) -> tuple[list[str], int]:
    """The experiments drawn one row of panels each, and how many timed experiments are not.

    All of them up to :data:`CHART_EXPERIMENTS`; past that the experiments of the answer
    (``answered``, the ones the variant to keep is named for), else the first timed
    ones, at most :data:`CHART_EXPERIMENTS`: a figure grows with what is drawn, never
    with the session (a row of panels per experiment of 500 was 176,000 pixels tall).
    """
    exps = [str(e) for e in timed.get_column("experiment_id").unique(maintain_order=True).to_list()]
    if len(exps) <= CHART_EXPERIMENTS:
        return exps, 0
    known = set(exps)
    drawn = [e for e in dict.fromkeys(answered) if e in known][:CHART_EXPERIMENTS] or exps[:CHART_EXPERIMENTS]
    return drawn, len(exps) - len(drawn)


def _overview_figure(plt: Any, timed: pl.DataFrame) -> Any:
    """One panel for every experiment: each variant's warm median as a dot, axis from 0.

    The summary figure of a session with more experiments than are drawn one by one:
    one point per experiment and variant, a fixed size whatever their number, at most
    :data:`OVERVIEW_TICKS` experiments named on the axis (the tables name them all).
    """
    warm = timed.filter(pl.col("phase") == "warm")
    exps = [str(e) for e in timed.get_column("experiment_id").unique(maintain_order=True).to_list()]
    at = {e: n for n, e in enumerate(exps)}
    medians = warm.group_by(["experiment_id", "variant_id"], maintain_order=True).agg(
        pl.col("elapsed_seconds").median().alias("median"))
    fig, ax = plt.subplots(figsize=(10.0, 4.0))
    xs = [at[str(e)] for e in medians.get_column("experiment_id").to_list()]
    ys = medians.get_column("median").to_list()
    ax.scatter(xs, ys, s=8, color="#4a7ab5", zorder=3)
    ax.set_ylim(bottom=0, top=max(ys, default=0.0) * 1.15 or 1.0)
    ax.set_xlim(-1, max(len(exps), 1))
    step = max(1, -(-len(exps) // OVERVIEW_TICKS))
    ticks = list(range(0, len(exps), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels([exps[i] for i in ticks], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("seconds (dot: a variant's warm median)", fontsize=8)
    ax.set_title(f"Warm median of each variant, all {len(exps)} experiments, axis from 0", fontsize=10)
    fig.tight_layout()
    return fig


def _figures(frame: pl.DataFrame, answered: Sequence[str] = ()) -> tuple[Any, list[tuple[str, Any]], str | None]:
    """``(pyplot, [(name, figure)], note)``: the charts of ``frame``, or why there are none.

    Up to :data:`CHART_EXPERIMENTS` timed experiments, every one is drawn; past that, the
    answer's (:func:`_drawn`) and one summary figure of all (:func:`_overview_figure`),
    and the note says how many are not drawn and where their figures are.
    """
    from gpusession.core.retrieval.plotting import ChartsUnavailable

    try:
        plt = _pyplot()
    except ChartsUnavailable as exc:
        return None, [], exc.note
    timed = frame.filter(pl.col("elapsed_seconds").is_not_null() & pl.col("phase").is_in(PHASES))
    if timed.height == 0:
        return plt, [], "Charts left out: no measured duration yet."
    drawn, left = _drawn(timed, answered)
    mem = frame.filter(pl.col("peak_reserved_bytes").is_not_null())
    note = None
    if left:
        timed_all, timed = timed, timed.filter(pl.col("experiment_id").is_in(drawn))
        mem = mem.filter(pl.col("experiment_id").is_in(drawn))
        which = "of the answer" if set(drawn) <= set(answered) else "timed first"
        note = (f"Charts: {_plural(len(drawn), 'experiment', 'experiments')} {which} drawn "
                f"({', '.join(drawn)}) and every experiment's warm medians in one figure; the other "
                f"{left} are not drawn one by one: their figures are in the tables of section 1 and "
                "in resultats-bruts.csv.")
    figures = [("durations", _duration_figure(plt, timed))]
    if left:
        figures.append(("overview", _overview_figure(plt, timed_all)))
    if mem.height:
        figures.append(("memory", _memory_figure(plt, mem)))
    return plt, figures, note


def _svg_text(fig: Any) -> str:
    """``fig`` as inline SVG text: no XML prolog, no DOCTYPE, no metadata, no comment."""
    import re

    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # the XML prolog and DOCTYPE have no place inline
    # labels live in comments (a variant's name): dropped, the drawn glyphs stay
    return re.sub(r"<metadata>.*?</metadata>|<!--.*?-->", "", svg, flags=re.S)


def _charts(frame: pl.DataFrame, stem: Path, *, force: bool, svg: bool = False,
            answered: Sequence[str] = ()) -> tuple[list[Path], str | None, list[tuple[str, str]]]:
    """Draw each chart once: its PNG next to the report and, with ``svg``, its SVG text.

    ``answered``: the experiments of the report's answer, drawn first when not all are
    (:func:`_figures`).

    Returns:
        ``(png paths, note, [(name, svg text)])``; the note says why charts were left out
        (or partly: the error). Never raises.
    """
    paths: list[Path] = []
    svgs: list[tuple[str, str]] = []

    def target(suffix: str) -> Path:
        p = stem.with_name(f"{stem.name}-{suffix}.png")
        p = p if force else next_free_path(p)
        refuse_session_data(p, what="report")  # a session's own file is never a chart
        if p.is_symlink():  # matplotlib would write through it
            raise link_refused(p)
        return p

    figures: list[tuple[str, Any]] = []
    plt = None
    try:
        plt, figures, note = _figures(frame, answered)
        for suffix, fig in figures:
            if svg:  # the same figure for the HTML page (inline: no file, no request)
                svgs.append((suffix, _svg_text(fig)))
            p = target(suffix)
            png = io.BytesIO()  # drawn in memory, written 0600 like every session file
            fig.savefig(png, format="png", dpi=110)
            write_atomic_bytes(p, png.getvalue())
            paths.append(p)
    except Exception as exc:  # noqa: BLE001 - matplotlib documents no exception set; a chart must never cost the report, and the note names the error
        return paths, f"Charts partly left out: drawing failed ({type(exc).__name__}: {exc}).", svgs
    finally:
        if plt is not None:  # pyplot keeps each figure until it is closed
            for _, fig in figures:
                plt.close(fig)
    return paths, note, svgs


# -- assembly ----------------------------------------------------------------------------
def _live_probes(session: Session, nvml: Any) -> list[tuple[str, ProbeReading]]:
    """Device, order match and on-GPU evidence read now (nothing recorded, nothing ticked)."""
    snap = snapshot_of(nvml)
    return [("Device check now (NVML) and in the last run", device_probe(session, snap)),
            ("Order match", order_match_probe(session, snap, record=False)),
            ("On the GPU", on_gpu_probe(session))]


def _plan_words(session: Session) -> str | None:
    """``plan 3.25 d: the 7-day package covers it; the 3-day one does not``, or ``None`` (K6)."""
    try:
        kept = session_plan(session)
    except BadInput as exc:
        return f"plan not read: {exc}"
    return kept.words(session.package) if kept is not None else None


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _summary(session: Session, facts: SessionFacts, table: list[Any], cost: Any,
             probes: Sequence[tuple[str, ProbeReading]] = ()) -> tuple[list[str], list[str]]:
    """The first lines: the verdict, the cost, the variant to keep, the risks (D5, D7, K3).

    A rendering of the session's record (:class:`SessionFacts`, A1): its count, cost,
    verdicts, keep and risks; the live GPU probes' risks are added after the copy home.
    At most :data:`SUMMARY_LINES` lines at 80 columns: one experiment's recommendation
    per line, the others counted.

    Returns:
        ``(lines, experiments)``: the lines, and the experiments whose variant to keep
        they name (the answer's experiments, which the charts draw).
    """
    answer = facts.answer
    timed = [r for r in table if r.phase in ("cold", "warm") and r.attempt is None]
    runs = sum(r.runs for r in timed)
    validated = sum(r.validated for r in timed)
    accepted_rows = sum(r.accepted for r in timed)
    rejected = list(dict.fromkeys(v.variant_id for v in facts.verdicts if v.verdict is Verdict.REJECTED))
    n_acc = len({v.variant_id for v in facts.verdicts if v.verdict is Verdict.ACCEPTED} - set(rejected))
    corpora = facts.accepted_corpora or 0
    counted = answer.count.words() if answer.in_unit and answer.count else None  # S10: one source
    if validated == 0 and counted is not None and answer.accepted is not None:  # decided files, no run judged
        verdict = (f"**Verdict:** {counted}; "
                   + ("no timed run." if runs == 0 else f"none of {_plural(runs, 'run', 'runs')} validated."))
    elif validated == 0:  # not measured, never "0 accepted" (K3)
        verdict = f"**Verdict:** not validated: none of {_plural(runs, 'run', 'runs')} validated yet."
    else:
        verdict = (f"**Verdict:** {counted or _plural(corpora, 'distinct corpus', 'distinct corpora') + ' accepted'}; "
                   f"{validated} of {runs} runs validated, {accepted_rows} accepted"
                   + (f" ({verdict_count_words(n_acc, len(rejected))})." if rejected else "."))
    out = _wrap(verdict, indent="  ", first="- ")
    if cost is None:
        out += _wrap("**Cost:** package not fully set (GPU, lots, days).", indent="  ", first="- ")
    elif isinstance(cost, str):
        out += _wrap(f"**Cost:** {cost}.", indent="  ", first="- ")
    elif (in_unit := answer.per_unit_line()) is not None:  # S8, S10
        out += _wrap(f"**Cost:** {in_unit} (count: {answer.source_words()}).", indent="  ", first="- ")
    else:
        t_ = cost.total
        per = cost.per_accepted
        each = (f"{format_usd(per.per_accepted_usd_minor)} per accepted deliverable"
                if per.per_accepted_usd_minor is not None else
                f"no cost per accepted deliverable yet ({per.reason.split(';')[0]})")
        if (problem := answer.count_problem) is not None:  # said, naming the file (H-39)
            each = f"no cost per accepted deliverable: the count does not read ({problem})"
        out += _wrap(f"**Cost:** {format_usd(t_.total_usd_minor)} for the package ({t_.gpu_model}, "
                     f"{t_.days} days × {_plural(t_.lots, 'lot', 'lots')}); {each}.", indent="  ", first="- ")
    if (plan := _plan_words(session)) is not None:  # K6: the plan beside the package
        out[-1] = out[-1].removesuffix(".") + ";"
        out += _wrap(f"{plan}.", indent="  ", first="  ")
    risks = _risk_lines(facts, probes)
    keep: list[str] = []
    named: list[str] = []
    for n, kept in enumerate(facts.keep):  # as many experiments as the 10 lines hold, the rest counted
        lines = _wrap(f"**Keep:** {kept.words(cell=_cell)}.", indent="  ", first="- ")
        room = SUMMARY_LINES - len(out) - len(risks) - len(keep) - (1 if n < len(facts.keep) - 1 else 0)
        if len(lines) > room:
            keep.append(f"- **Keep:** … {len(facts.keep) - n} more experiments: see the results.")
            break
        keep += lines
        named.append(str(kept.experiment_id))
    return (out + keep + risks)[:SUMMARY_LINES], named


def _risk_lines(facts: SessionFacts, probes: Sequence[tuple[str, ProbeReading]]) -> list[str]:
    """The risks line: the record's risks, each live probe's risk after the copy home's.

    The record's risks are incidents, rejected variants and files, the copy home, the GPU
    and the time left; a probe's risk is its typed
    :attr:`~gpusession.core.retrieval.evidence.ProbeReading.risk`.
    """
    risks: list[str] = []
    for risk in facts.risks:
        risks.append(risk.words)
        if risk.kind == "copy_home":
            risks += [probe.risk for _, probe in probes if probe.risk is not None]
    return _wrap(f"**Risks:** {'; '.join(risks)}.", indent="  ", first="- ")


@dataclass(frozen=True)
class _Head:
    """What the first lines are made of, read once for the whole report."""

    now: datetime
    items: list[Any]
    frame: pl.DataFrame
    table: list[Any]
    cost: Any
    probes: list[tuple[str, ProbeReading]]
    summary: list[str]
    answer: CostAnswer
    #: the session's record the summary and the cost section render (A1)
    facts: SessionFacts
    #: the experiments the summary names a variant to keep for (drawn first by the charts)
    answered: list[str] = field(default_factory=list)


def _head(session: Session, now: datetime | None, nvml: Any | None, frame: pl.DataFrame | None) -> _Head:
    """Read what the summary needs and word the summary (:func:`_summary`)."""
    now = now or utcnow()
    items = cl.load_checklist(session)
    frame = session.results.read() if frame is None else frame
    facts = session_facts(session, frame=frame, now=now, rows_read=_row_facts(session, frame))  # the one record (A1)
    table = list(facts.summary) if frame.height else []
    answer = facts.answer
    cost = _cost_report(session, answer)
    probes = _live_probes(session, nvml)
    summary, answered = _summary(session, facts, table, cost, probes)
    return _Head(now, items, frame, table, cost, probes, summary, answer, facts, answered)


def _title(session: Session) -> list[str]:
    return [f"# Session report: {session.name}", ""]


def _finish(text_lines: list[str]) -> str:
    """The Markdown of ``text_lines``: one secret check on the whole text, then inert (H-45).

    Inert last: a mask's ``[HIDDEN: …]`` followed by ``(`` must not become a link.
    """
    return inert_markdown(mask_text("\n".join(text_lines).rstrip() + "\n")[0])


def _answer(head: _Head) -> list[str]:
    """The summary as printed lines, ``**`` marks dropped: what ``report`` and the demo print (D5).

    Rendered from the summary the report is made of, never read back from the page.
    """
    return [ln.replace("**", "") for ln in _finish(head.summary).splitlines() if ln.strip()]


def report_answer(session: Session, *, now: datetime | None = None, nvml: Any | None = None,
                  frame: pl.DataFrame | None = None) -> list[str]:
    """The report's answer (verdict, cost, variant to keep, risks) without writing it (D5).

    Raises:
        BadInput: a malformed session file (as :func:`render_report`).
    """
    return _answer(_head(session, now, nvml, frame))


def _joined(text: list[str], after: list[str]) -> list[str]:
    """``after`` as a paragraph of its own, or one sentence ending the paragraph of words before it.

    Joined only when ``after`` is one line and ``text`` ends in words (no table, list,
    heading or picture): the report keeps to 80 lines (D5) when the runs' spread adds one.
    """
    last = text[-1] if text else ""
    if len(after) == 1 and last.strip() and not last.lstrip().startswith(("|", "-", "!", "#", "*")):
        return text + after
    return text + [""] + after


def _render(session: Session, head: _Head, charts: Sequence[Path], charts_note: str | None) -> str:
    """The whole report from its :class:`_Head` (see :func:`render_report`)."""
    now, items, frame, table, cost, probes = head.now, head.items, head.frame, head.table, head.cost, head.probes
    by_id = {i.id: i for i in items}
    lines = _title(session) + head.summary
    generated = f"Generated {now.isoformat(timespec='minutes')} by gpusession {__version__}."
    try:
        generated += f" Order: {order_status_line(load_order(session), now)}."
    except BadInput:
        pass
    lines += [""] + _wrap(generated)
    chart_lines = [f"![{p.stem}]({p.name})" for p in charts] + ([charts_note] if charts_note else [])
    bodies = {
        "Results per variant and phase": _joined(_results(session, frame, table), _memory(session, frame))
        + _incidents(session, frame) + ([""] + chart_lines if chart_lines else []),
        "Validation verdicts": _validation(session, frame),
        "Cost": _cost(session, cost) + _energy(head.facts),
        "Environment and protocol": _env(session, frame, probes) + [""] + _protocols(session),
        "Need, decision and retrieval": _need_and_decision(items, by_id, session),
    }
    for n, title in enumerate(SECTIONS, 1):  # a heading, then its text (CommonMark needs no blank)
        lines += ["", f"## {n}. {title}"] + bodies[title]
    # one secret check on the whole text: whatever a note or an incident held is hidden
    return _finish(lines)


def render_report(session: Session, *, now: datetime | None = None,
                  charts: Sequence[Path] = (), charts_note: str | None = None,
                  nvml: Any | None = None, frame: pl.DataFrame | None = None) -> str:
    """The report's Markdown text: a summary of at most 10 lines, then the sections.

    The summary (:func:`_summary`) answers first: is the work accepted, what did it cost
    per accepted deliverable, which variant to keep (D5, D7, K3), and the risks; the
    sections (:data:`SECTIONS`) follow, each incident said once.

    Args:
        session: an open session.
        now: the generation time shown (aware); default now.
        charts: PNG files to link (next to the report).
        charts_note: why charts were left out, if they were.
        nvml: an NVML module, fake or snapshot for the device evidence; default the real one.
        frame: the results CSV as :meth:`~gpusession.core.records.results.ResultsFile.read`
            returns it, when the caller has read it already; default read here.

    Raises:
        BadInput: a malformed session file (checklist.toml, results CSV).
    """
    return _render(session, _head(session, now, nvml, frame), charts, charts_note)


def write_report(session: Session, *, out: Path | None = None, force: bool = False,
                 now: datetime | None = None, nvml: Any | None = None,
                 html: bool = False, keep: bool = False, charts: bool = True,
                 on_answer: Callable[[list[str]], None] | None = None) -> ReportWritten:
    """Write the report (and its charts) atomically; never overwrite silently.

    Args:
        session: an open session.
        out: the Markdown file; default ``<session>/report.md``, replaced with its charts
            and page (the latest report replaces the last, so repeated calls pile nothing).
        force: overwrite an existing ``out``.
        keep: without ``out``, keep earlier reports: the next free ``report-2.md``...
        now: the generation time shown (aware); default now.
        nvml: an NVML module, fake or snapshot (tests); default the real one.
        html: also write the same text as one self-contained HTML page next to it
            (``report.html`` beside ``report.md``; charts inline as SVG), mode 0600.
        charts: draw the charts; ``False`` (``--no-charts``): the text only, matplotlib
            never imported, and the report says so in one line.
        on_answer: called with the report's first lines (:func:`report_answer`, the same
            lines as the file will hold) as soon as they are known, before the charts are
            drawn and the sections worded, so a command can print the answer at once.

    Raises:
        BadInput: ``out`` (or its HTML page) exists without ``force``; its folder does not exist; ``out``
            is (or leads through a link to) a session's file other than an earlier
            report, even with ``force`` (:func:`gpusession.core.folder.session.refuse_session_data`).
    """
    if out is None:
        target = session.folder / "report.md"
        if keep and not force:
            target = next_free_path(target)
        force = force or not keep  # the latest replaces the last (its charts and page too)
        # a page left by an earlier --html would say the old figures beside the new text:
        # it is made again from the same record (A1)
        html = html or (not keep and target.with_suffix(".html").is_file())
    else:
        target = Path(out)
        refuse_session_data(target, what="report")
        refuse_link_or_special(target, writing=True)  # --force replaces a regular file only (H-55)
        if target.exists() and not force:
            raise BadInput("exists; pass --force to overwrite it, or choose another --out", path=target)
    if not target.parent.is_dir():
        raise BadInput("folder of the report does not exist", path=target.parent)
    page = target.with_suffix(".html") if html else None
    if page is not None:
        refuse_session_data(page, what="report")
        refuse_link_or_special(page, writing=True)
        if os.path.lexists(page) and not force:
            raise BadInput("exists; pass --force to overwrite it, or choose another --out", path=page)
    head = _head(session, now, nvml, None)
    if on_answer is not None:  # the answer does not wait for the charts (nor for matplotlib)
        on_answer(_answer(head))
    svgs: list[tuple[str, str]] = []
    if charts:
        chart_paths, note, svgs = _charts(head.frame, target.with_suffix(""), force=force, svg=page is not None,
                                          answered=head.answered)
    else:
        chart_paths, note = [], NO_CHARTS_NOTE
    text = _render(session, head, chart_paths, note)
    write_atomic_bytes(target, text.encode("utf-8"))
    if page is not None:
        from gpusession.core.retrieval.report_html import markdown_to_html

        named = dict(svgs)
        page_text = markdown_to_html(text, title=f"Session report: {session.name}", charts=named)
        write_atomic_bytes(page, mask_text(page_text)[0].encode("utf-8"))  # mode 0600

    session.journal(ReportWrittenRecord(path=str(target), charts=[str(p) for p in chart_paths]
                                        + ([str(page)] if page is not None else [])))
    return ReportWritten(target, chart_paths, note, page, _answer(head))


__all__ = ["SECTIONS", "ReportWritten", "render_report", "report_answer", "write_report"]
