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

PNG charts (durations per variant, load, cold and warm apart, on axes from 0; memory
peaks) are drawn with matplotlib, a dependency imported only here; where it cannot be
imported the report says they were left out and why. An existing report is never overwritten silently:
``report.md`` becomes ``report-2.md``..., an explicit ``--out`` that exists is refused
without ``force``.

Who calls it: ``gpusession report NAME``. No torch, no textual.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpusession import __version__
from gpusession.core.experiment.derive import comparison_lines, derived_words
from gpusession.core.files.clock import utcnow
from gpusession.core.files.errors import BadInput
from gpusession.core.files.safefile import link_refused
from gpusession.core.files.secrets import mask_text
from gpusession.core.files.textio import printable
from gpusession.core.files.tomlio import read_toml, write_atomic_bytes
from gpusession.core.files.units import (
    byte_scale,
    format_seconds,
    format_seconds_range,
    significant,
)
from gpusession.core.folder.experiments import load_experiments
from gpusession.core.folder.session import Session, refuse_session_data
from gpusession.core.records.summary import accepted_unique_corpora, validated_count, variant_words
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.evidence import fmt_bytes, latest_manifest, protocol_evidence
from gpusession.core.retrieval.manifest import next_free_path, read_manifest
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
    """Where the report went, its chart files, and why charts were left out (if so)."""

    path: Path
    charts: list[Path] = field(default_factory=list)
    charts_note: str | None = None
    html: Path | None = None


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
    return printable(str(value)).replace("|", "\\|").replace("\n", " ")  # H-17


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


#: The note of every successful load row, once the worker's name is taken out.
LOAD_REMARK = "load (model to device, timed once per process)"


def _grouped_notes(frame: pl.DataFrame, limit: int = 12) -> list[str]:
    """Identical notes said once with the runs they concern, newest groups last.

    A worker's name inside a note (``load of worker cold-batch-1-1``) does not make it a
    different note.
    """
    import re

    groups: dict[str, list[tuple[Any, Any, Any, Any]]] = {}
    with_notes = frame.filter(pl.col("notes").is_not_null() & (pl.col("notes") != ""))
    for r in with_notes.iter_rows(named=True):
        key = without_output_digest(re.sub(r" of worker \S+", "", str(r["notes"])))  # each row's own
        key = _split_incident(key)[0]  # an incident: said once, with the incidents
        if key in (LOAD_REMARK, ""):  # says what the phase column already says
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
        out += _wrap(f"**{i.text}** ({state}): {i.note or '_no note written_'}", indent="  ", first="- ")
    silent = [i.id for i in stage1 if not i.note and not i.done]
    if not any(i.note for i in stage1):
        out.append(f"_No need or criteria written yet ({len(silent)} items of stage 1 open)._")
    elif silent:
        out += [""] + _wrap("Open, without a note: " + ", ".join(f"`{x}`" for x in silent) + ".")
    return out


def _env(session: Session, frame: pl.DataFrame, probes: list[tuple[str, str]]) -> list[str]:
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
        pairs = [f"{k}: {_flat(v)}" for k, v in table.items()
                 if k not in in_table and k not in mapped and v not in ("unset", None, "-")
                 and _flat(v) != "-" and k != "observed_at"]
        if unset:  # the names stay in session.toml: an unset setting is said by count
            pairs.append(f"{len(unset)} settings variable(s) unset (named in session.toml)")
        named = f" ({label})" if len(tables) > 1 else ""
        out += [""] + _wrap(f"Also stored{named}: " + "; ".join(pairs) + ".")
    seen: set[str] = set()
    for n, (label, text) in enumerate(probes):
        if "nothing to compare" in text or text.startswith(("not available yet", "WARNING",
                                                             "NVML now: not available")):
            continue  # nothing to say, or a warning the summary's risks already give
        if not any(line.startswith("- **") for line in out[-n - 3:]):
            out.append("")  # the list's blank line, once
        lines = [_said_once(line.strip(), seen) for line in text.splitlines() if line.strip()]
        out += _wrap(f"**{label}:** {lines[0] if lines else '-'}", indent="  ", first="- ")
        for line in lines[1:]:
            if line.startswith("last run (experiment") and frame.height:
                continue  # the table above says what the last run recorded
            out += _wrap(line, indent="    ", first="  - ")
    from gpusession.core.money.order import load_order

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
    said += [f"{k.replace('_', ' ')} {_flat(exp[k])}" for k in ("precision", "context_limit", "scope") if has(k)]
    runs = []
    if has("warmup_iterations"):
        runs.append(f"{_flat(exp['warmup_iterations'])} warm-up iterations")
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
    evidence = protocol_evidence(session).splitlines()
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
        mine = [line.split(": ", 1)[1] for line in evidence if line.startswith(f"{exp_id}: ")]
        if mine:
            text += " " + "; ".join(m[:1].upper() + m[1:] for m in mine) + "."
        out += ([""] if out else []) + _wrap(text)
    if not out:
        out = ["_No experiment defined._"]
    return out


def _results(session: Session, frame: pl.DataFrame, table: list[Any] | None = None) -> list[str]:
    if frame.height == 0:
        return ["_No run recorded yet._"]
    from gpusession.core.records.summary import session_summary

    table = session_summary(session, frame) if table is None else table
    out: list[str] = []
    said = " (median, min–max in ms or s; no p95 below 20 runs)"
    sections: dict[str, list[list[Any]]] = {}
    partial: dict[str, list[str]] = {}  # groups not measured in full, per section (R7, D5)
    loads: dict[str, list[Any]] = {}  # the loads of each section, said in one line
    colds: dict[str, list[Any]] = {}  # single accepted cold runs, said in the same line
    for r in table:  # 3 significant digits with a unit: a measured value never reads 0 (H-22)
        if r.attempt is not None:
            title = f"Experiment {_cell(r.experiment_id)}, attempt {r.attempt} (measured nothing)"
        elif r.is_validation:
            title = "Outputs checked with `gpusession validate` (not timed)"
        else:  # the summary pools every attempt of the experiment, and says how many (D5)
            title = f"Experiment {_cell(r.experiment_id)}" + (
                f" ({r.attempts_pooled} attempts pooled)" if r.attempts_pooled > 1 else "")
        if r.is_validation:
            row: list[Any] = [r.variant_id, r.quality_words(), r.verdict_words()]
        else:  # the verdict beside the times, apart from how complete the measurement is (D5)
            row = [r.variant_words(), r.phase, r.n, format_seconds(r.median_seconds, "-"),
                   format_seconds_range(r.min_seconds, r.max_seconds, "-"),
                   r.quality_words(), r.verdict_words()]
            if r.outcome_words() != "all measured":  # said below the table: it fits 80 columns
                partial.setdefault(title, []).append(f"{r.variant_words()} {r.phase}: {r.outcome_words()}")
        if (r.phase == "load" and r.attempt is None and r.failed == 0 and r.validated == 0
                and r.median_seconds is not None):
            loads.setdefault(title, []).append(r)  # one line below the table, not one row each
            sections.setdefault(title, [])
            continue
        if (r.phase == "cold" and r.attempt is None and r.runs == 1 and r.n == 1
                and r.verdict_words() == "accepted" and r.outcome_words() == "all measured"):
            colds.setdefault(title, []).append(r)  # a single accepted cold run: said in the line
            sections.setdefault(title, [])
            continue
        sections.setdefault(title, []).append(row)
    for n, (title, rows) in enumerate(sections.items()):
        header = (["output", "quality", "verdict"] if title.startswith("Outputs")
                  else ["variant", "phase", "n", "median", "min–max", "quality", "verdict"])
        heading = _wrap(f"{title}{said if n == 0 and not title.startswith('Outputs') else ''}:")
        out += (heading + [""] if n == 0 else ["", *heading, ""]) + (_table(header, rows) if rows else [])
        if title in loads or title in colds:
            out += ([""] if rows else []) + _wrap(_loads_and_colds(loads.get(title, []), colds.get(title, [])))
        if title in partial:  # how complete the measurement is, apart from the verdict
            out += ["", "Not measured in full:"]
            for line in partial[title]:
                out += _wrap(printable(line), indent="  ", first="- ")
    out += _compared(frame, table) + _replays(session, table)
    notes = _grouped_notes(frame)
    if notes:
        out += [""] + _wrap("Notes (identical notes said once): " + " ".join(notes))
    return out


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
    from gpusession.core.records.variants import compare_variants, spread_warnings

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


#: A worker's or run's name inside a message, which does not make it another incident.
_WHO = r"(?: of worker \S+|^worker \S+: |^run \S+: |^incident: |; elapsed not measured$| during this run$)"
#: Where a row's incident ends inside its notes: the notes that follow it are others.
_INCIDENT_END = ("; elapsed not measured", "; concurrent load at start: ", "; preceded by ", "; truncated ")


def _split_incident(note: str) -> tuple[str, list[str]]:
    """``(the other notes, [incidents])`` of one row's notes (``incident: …`` parts)."""
    rest: list[str] = []
    found: list[str] = []
    head, sep, tail = note.partition("incident: ")
    rest.append(head.rstrip("; "))
    while sep:
        ends = [i for i in (tail.find(e) for e in _INCIDENT_END) if i >= 0]
        cut = min(ends) if ends else len(tail)
        found.append(tail[:cut])
        after = tail[cut:].removeprefix("; elapsed not measured")
        head, sep, tail = after.partition("incident: ")
        rest.append(head.strip("; "))
    return "; ".join(r for r in rest if r), found


def _incident_key(text: str) -> str:
    """The words of an incident without who said it: the same failure said once (R7, S7)."""
    import re

    key = text.strip()
    for _ in range(3):  # prefixes nest: "incident: worker warm: …"
        key = re.sub(_WHO, "", key).strip()
    return key


def _incidents(session: Session, frame: pl.DataFrame) -> list[str]:
    """Every incident once, grouped: the rows' incident notes and the journal's incidents (R7, S7).

    A failure is in a row's notes ("incident: …; elapsed not measured") and in the
    journal ("worker warm: …"); said once here, with the runs it concerns and how many
    times the journal recorded it. A journal line that does not read is one of them.
    """
    groups = _incident_groups(session, frame)
    if not groups:
        return []
    out = ["", "Incidents recorded in the journal and the rows (each said once):", ""]
    for message, g in list(groups.items())[-30:]:
        who = [_runs_words(g["runs"])] if g["runs"] else []
        ats = [a for a in g["times"] if a is not None]
        if ats:
            who.append(_cell(ats[-1]) if len(ats) == 1 else f"{len(ats)} times, last {_cell(ats[-1])}")
        said = f"{'; '.join(who)}: {_cell(message)}" if who else _cell(message)
        out += _wrap(said, indent="  ", first="- ")
    if len(groups) > 30:
        out.append(f"- … {len(groups) - 30} earlier in journal.jsonl")
    return out


def _incident_groups(session: Session, frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """``{words → {"runs": [(exp, variant, phase, index)], "times": [at]}}``, one per incident."""
    from gpusession.core.events import IncidentRecord

    groups: dict[str, dict[str, Any]] = {}
    if frame.height:
        with_notes = frame.filter(pl.col("notes").is_not_null() & pl.col("notes").str.contains("incident: "))
        for r in with_notes.iter_rows(named=True):
            for part in _split_incident(str(r["notes"]))[1]:
                key = _incident_key(part.rstrip("; "))
                g = groups.setdefault(key, {"runs": [], "times": []})
                g["runs"].append((r["experiment_id"], r["variant_id"], r["phase"], r["run_index"]))
    read = session.journal_read()
    for rec in (x for x in read.records if isinstance(x, IncidentRecord)):
        key = _incident_key(str(rec.message))
        same = next((k for k in groups if k and (k in key or key in k)), key)
        groups.setdefault(same, {"runs": [], "times": []})["times"].append(rec.at)
    for u in read.unreadable:  # said once: recovery's incident already names most of them
        groups.setdefault(u.note, {"runs": [], "times": []})
    return groups


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
    from gpusession.core.records.ranks import RANKS_FILE, read_rank_frame

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


def _validation(session: Session, frame: pl.DataFrame) -> list[str]:
    out: list[str] = []  # the count of distinct accepted corpora is the summary's verdict
    reports = sorted(session.validation_dir.rglob("*.toml")) if session.validation_dir.is_dir() else []
    rows = []
    word = {True: "PASS", False: "FAIL", None: "-"}
    for path in reports:
        try:
            doc = read_toml(path)
        except BadInput as exc:
            rows.append([path.relative_to(session.validation_dir).as_posix(), f"unreadable: {exc}",
                         None, None, None, None])
            continue

        def passed(section: str, doc: dict[str, Any] = doc) -> str:
            sec = doc.get(section)
            if isinstance(sec, dict) and sec.get("checked") is False:
                return "not checked"
            return word.get(sec.get("passed")) if isinstance(sec, dict) else "-"  # type: ignore[return-value]

        quality = doc.get("quality") if isinstance(doc.get("quality"), dict) else {}
        value = quality.get("value") if isinstance(quality, dict) else None
        rel = path.relative_to(session.validation_dir).with_suffix("").as_posix()
        verdict = doc.get("corpus_accepted")
        failed = str(doc.get("verdict", "")).partition(": ")[2]
        shown = "ACCEPTED" if verdict is True else (f"REJECTED ({failed})" if verdict is False else "-")
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


def _cost_report(session: Session, frame: pl.DataFrame) -> Any:
    """The session's cost report, computed as ``gpusession cost`` computes it (K1-K7).

    Returns:
        A :class:`~gpusession.core.money.cost.CostReport`; a string saying why when it
        cannot be computed; ``None`` while the package is not set.
    """
    pkg = session.package
    if not (pkg.gpu_model and pkg.days and pkg.lots):
        return None
    from gpusession.core.money.cost import NO_VALIDATED_RUN, cost_report, session_cost_inputs

    try:
        inputs = session_cost_inputs(session, frame=frame)
        return cost_report(inputs.rates, pkg.gpu_model, pkg.days, pkg.lots,
                           accepted=inputs.accepted_measured,  # not measured while nothing is validated (K3)
                           accepted_source=("distinct accepted corpora in resultats-bruts.csv"
                                            if inputs.accepted_measured is not None else NO_VALIDATED_RUN),
                           extensions=False)
    except BadInput as exc:
        return f"cost not computed: {exc}"


def _cost(session: Session, frame: pl.DataFrame, rep: Any = None) -> list[str]:
    from gpusession.core.money.cost import NO_PROJECTION_LINE

    rep = _cost_report(session, frame) if rep is None else rep
    pkg = session.package
    if rep is None:
        return [f"_Package not fully set (GPU, lots, days): `gpusession package {session.name} ...`._"]
    lines = [rep] if isinstance(rep, str) else rep.lines()
    said = [f"Package window: {_when(pkg.start)} → {_when(pkg.end)}"] + [
        "No projection: only what is accepted so far" if line == NO_PROJECTION_LINE else line.rstrip(".")
        for line in lines if not line.startswith("GPU: ")
        and not (line.startswith("Accepted deliverables: ") and "distinct" in line)]  # said in the verdict
    return _wrap(". ".join(said) + ".")  # the lines of `gpusession cost`, in one paragraph


def _energy(frame: pl.DataFrame) -> list[str]:
    """The session's GPU energy per accepted corpus and per run (nothing on CPU only)."""
    from gpusession.core.records.energy import energy_summary

    summary = energy_summary(frame)
    if summary is None:
        return []
    out: list[str] = [""]
    for line in summary.lines():
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
            out += ([""] if out else []) + _wrap(f"**{label}:** {it.note}")
        else:
            missing.append(f"`{item_id}`")
    said = (f"_Decision notes not written yet: {', '.join(missing)}_ (`gpusession checklist "
            f"{session.name} note ID \"...\"`)." if missing else "")
    return out, said


def _need_and_decision(items: list[cl.ChecklistItem], by_id: dict[str, cl.ChecklistItem],
                       session: Session) -> list[str]:
    """The need, the decision notes, the retrieval and the checklist's progress."""
    written, missing = _decision(by_id, session)
    need = _need(items, session)
    unwritten = need[0] if len(need) == 1 and need[0].startswith("_No need") else None
    out = ([] if unwritten else need) + ([""] + written if written and not unwritten else written)
    tail = " ".join(x for x in [unwritten, missing, *_retrieval(session), *_progress(items)] if x)
    return out + ([""] if out else []) + _wrap(tail)


def _progress(items: list[cl.ChecklistItem]) -> list[str]:
    """Done / total items per stage of the checklist, in one wrapped paragraph."""
    parts = []
    for stage in cl.STAGES:
        st = [i for i in items if i.stage == stage]
        parts.append(f"{stage}: {sum(i.done for i in st)}/{len(st)}")
    done = sum(i.done for i in items)
    per = f" ({', '.join(parts)} per stage)" if done else ""
    return _wrap(f"Checklist: {done} of {len(items)} items done{per}.")


# -- charts ------------------------------------------------------------------------------
#: The phases drawn apart, each in its own panel (a load and a warm run are not comparable).
PHASES = ("load", "cold", "warm")
#: The panels from left to right: the warm runs, which the variants are compared on, first.
PANELS = ("warm", "cold", "load")


def _pyplot() -> Any:
    """Pyplot on matplotlib's Agg backend; ``ImportError`` when it cannot be had."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _duration_figure(plt: Any, timed: pl.DataFrame) -> Any:
    """Warm, cold and load medians per variant with min–max bars, one panel each.

    One row of panels per experiment; every axis starts at 0, so a small difference
    does not look large.
    """
    groups = timed.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True).agg(
        pl.col("elapsed_seconds").median().alias("median"), pl.col("elapsed_seconds").min().alias("lo"),
        pl.col("elapsed_seconds").max().alias("hi"))
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
            med, lo, hi = g["median"].to_list(), g["lo"].to_list(), g["hi"].to_list()
            xs = list(range(len(names)))
            ax.bar(xs, med, color="#4a7ab5", width=0.6)
            ax.errorbar(xs, med, yerr=[[m - a for m, a in zip(med, lo, strict=True)],
                                       [b - m for m, b in zip(med, hi, strict=True)]],
                        fmt="none", ecolor="black", capsize=4, linewidth=1)
            ax.set_ylim(bottom=0, top=max(hi, default=1.0) * 1.15 or 1.0)
            ax.set_xticks(xs)
            turn = len(names) > 4 or max((len(n) for n in names), default=0) > 10
            ax.set_xticklabels(names, fontsize=8, rotation=30 if turn else 0, ha="right" if turn else "center")
            ax.set_title(f"{exp}: {phase}" if len(exps) > 1 else phase, fontsize=10)
            if not names:
                ax.text(0.5, 0.5, "no run", ha="center", va="center", transform=ax.transAxes, fontsize=9)
            if col == 0:
                ax.set_ylabel("seconds (median; bar: min–max)", fontsize=8)
    fig.suptitle("Durations per variant: median and min–max, axis from 0", fontsize=11)
    fig.tight_layout()
    return fig


def _memory_figure(plt: Any, mem: pl.DataFrame) -> Any:
    """Peak allocated and reserved per variant and phase, side by side (never added)."""
    g = mem.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True).agg(
        pl.col("peak_allocated_bytes").max(), pl.col("peak_reserved_bytes").max())
    several = g.get_column("experiment_id").n_unique() > 1
    names = [(f"{r['experiment_id']}\n" if several else "") + f"{r['variant_id']}\n{r['phase']}"
             for r in g.iter_rows(named=True)]
    divisor, unit = byte_scale(max((r["peak_reserved_bytes"] or 0) for r in g.iter_rows(named=True)))
    alloc = [(r["peak_allocated_bytes"] or 0) / divisor for r in g.iter_rows(named=True)]
    resv = [(r["peak_reserved_bytes"] or 0) / divisor for r in g.iter_rows(named=True)]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(names)), 4.0))
    xs = list(range(len(names)))
    ax.bar([x - 0.2 for x in xs], alloc, width=0.4, label="peak allocated")
    ax.bar([x + 0.2 for x in xs], resv, width=0.4, label="peak reserved")
    ax.set_xticks(xs)
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"{unit} (PyTorch allocator; side by side, never added)")
    ax.set_title("Memory peaks per variant and phase")
    ax.legend()
    fig.tight_layout()
    return fig


def _figures(frame: pl.DataFrame) -> tuple[Any, list[tuple[str, Any]], str | None]:
    """``(pyplot, [(name, figure)], note)``: the charts of ``frame``, or why there are none."""
    try:
        plt = _pyplot()
    except ImportError:
        return None, [], ("Charts left out: matplotlib is not installed "
                          "(`pip install 'matplotlib>=3.7'`, a dependency of gpusession).")
    timed = frame.filter(pl.col("elapsed_seconds").is_not_null() & pl.col("phase").is_in(PHASES))
    if timed.height == 0:
        return plt, [], "Charts left out: no measured duration yet."
    figures = [("durations", _duration_figure(plt, timed))]
    mem = frame.filter(pl.col("peak_reserved_bytes").is_not_null())
    if mem.height:
        figures.append(("memory", _memory_figure(plt, mem)))
    return plt, figures, None


def _charts(frame: pl.DataFrame, stem: Path, *, force: bool) -> tuple[list[Path], str | None]:
    """Draw the PNGs next to the report; ``(paths, note)``; never raises."""
    paths: list[Path] = []

    def target(suffix: str) -> Path:
        p = stem.with_name(f"{stem.name}-{suffix}.png")
        p = p if force else next_free_path(p)
        refuse_session_data(p, what="report")  # a session's own file is never a chart
        if p.is_symlink():  # matplotlib would write through it
            raise link_refused(p)
        return p

    try:
        plt, figures, note = _figures(frame)
        for suffix, fig in figures:
            p = target(suffix)
            png = io.BytesIO()  # drawn in memory, written 0600 like every session file
            fig.savefig(png, format="png", dpi=110)
            plt.close(fig)
            write_atomic_bytes(p, png.getvalue())
            paths.append(p)
    except Exception as exc:  # noqa: BLE001 - matplotlib documents no exception set; a chart must never cost the report, and the note names the error
        return paths, f"Charts partly left out: drawing failed ({type(exc).__name__}: {exc})."
    return paths, note


def chart_svgs(frame: pl.DataFrame) -> tuple[list[tuple[str, str]], str | None]:
    """The same charts as SVG text, for the HTML page (inline: no file, no request).

    Returns:
        ``([(name, svg)], note)``; the note says why charts were left out. Never raises.
    """
    import io
    import re

    out: list[tuple[str, str]] = []
    try:
        plt, figures, note = _figures(frame)
        for name, fig in figures:
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None})
            plt.close(fig)
            svg = buf.getvalue()
            svg = svg[svg.index("<svg"):]  # the XML prolog and DOCTYPE have no place inline
            svg = re.sub(r"<metadata>.*?</metadata>|<!--.*?-->", "", svg, flags=re.S)  # labels live in
            # comments (a variant's name): dropped, the drawn glyphs stay
            out.append((name, svg))
    except Exception as exc:  # noqa: BLE001 - as in _charts: the page is written without them
        return out, f"Charts partly left out: drawing failed ({type(exc).__name__}: {exc})."
    return out, note


# -- assembly ----------------------------------------------------------------------------
def _live_probes(session: Session, nvml: Any, now: datetime) -> list[tuple[str, str]]:
    """Device, order match and on-GPU evidence read now (nothing recorded, nothing ticked)."""
    from gpusession.core.retrieval.evidence import run_probes

    ev = run_probes(session, nvml=nvml, now=now, record_deviation=False)
    return [("Device check now (NVML) and in the last run", ev["device"]),
            ("Order match", ev["order-match"]),
            ("On the GPU", ev["on-gpu"])]


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _summary(session: Session, frame: pl.DataFrame, table: list[Any], cost: Any,
             now: datetime, probes: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The first lines: the verdict, the cost, the variant to keep, the risks (D5, D7, K3).

    At most :data:`SUMMARY_LINES` lines at 80 columns: one experiment's recommendation
    per line, the others counted.
    """
    from gpusession.core.money.rates import format_usd
    from gpusession.core.records.summary import verdict_count_words
    from gpusession.core.records.variants import compare_variants

    timed = [r for r in table if r.phase in ("cold", "warm") and r.attempt is None]
    runs = sum(r.runs for r in timed)
    validated = sum(r.validated for r in timed)
    accepted_rows = sum(r.accepted for r in timed)
    rejected = list(dict.fromkeys(str(r.variant_id) for r in timed if r.rejected))
    n_acc = sum(1 for v in dict.fromkeys(str(r.variant_id) for r in timed if r.validated)
                if v not in rejected)
    corpora = accepted_unique_corpora(frame)
    if validated == 0:  # not measured, never "0 accepted" (K3)
        verdict = f"**Verdict:** not validated: none of {_plural(runs, 'run', 'runs')} validated yet."
    else:
        verdict = (f"**Verdict:** {_plural(corpora, 'distinct corpus', 'distinct corpora')} accepted; "
                   f"{validated} of {runs} runs validated, {accepted_rows} accepted"
                   + (f" ({verdict_count_words(n_acc, len(rejected))})." if rejected else "."))
    out = _wrap(verdict, indent="  ", first="- ")
    if cost is None:
        out += _wrap("**Cost:** package not fully set (GPU, lots, days).", indent="  ", first="- ")
    elif isinstance(cost, str):
        out += _wrap(f"**Cost:** {cost}.", indent="  ", first="- ")
    else:
        t_ = cost.total
        per = cost.per_accepted
        each = (f"{format_usd(per.per_accepted_usd_minor)} per accepted deliverable"
                if per.per_accepted_usd_minor is not None else
                f"no cost per accepted deliverable yet ({per.reason.split(';')[0]})")
        out += _wrap(f"**Cost:** {format_usd(t_.total_usd_minor)} for the package ({t_.gpu_model}, "
                     f"{t_.days} days × {_plural(t_.lots, 'lot', 'lots')}); {each}.", indent="  ", first="- ")
    comparisons = compare_variants(frame, table)
    exps = list(dict.fromkeys(r.experiment_id for r in timed if r.phase == "warm"))
    risks = _risk_lines(session, frame, rejected, probes, now)
    keep: list[str] = []
    for n, exp in enumerate(exps):  # as many experiments as the 10 lines hold, the rest counted
        lines = _wrap(f"**Keep:** {_keep_words(table, comparisons, exp)}.", indent="  ", first="- ")
        room = SUMMARY_LINES - len(out) - len(risks) - len(keep) - (1 if n < len(exps) - 1 else 0)
        if len(lines) > room:
            keep.append(f"- **Keep:** … {len(exps) - n} more experiments: see the results.")
            break
        keep += lines
    return (out + keep + risks)[:SUMMARY_LINES]


def _keep_words(table: list[Any], comparisons: list[Any], exp: Any) -> str:
    """The variant to keep of ``exp`` with its ratio to the slowest other one (D5, D7)."""
    from gpusession.core.records.summary import recommended_variant

    best = recommended_variant(table, exp)
    if best is None:
        return f"no accepted variant in {_cell(exp)} (none is named)"
    mine = [c for c in comparisons if c.experiment_id == exp and c.ratio is not None]
    said = f"{_cell(best.variant_id)} of {_cell(exp)}, warm median {format_seconds(best.median_seconds)}"
    if not mine:
        return said + "; the only variant measured warm"
    c = max(mine, key=lambda c: c.ratio or 0.0)
    how = (f"{c.ratio:.1f}× faster than {_cell(c.other)}" if (c.ratio or 0) >= 1.05
           else f"about as fast as {_cell(c.other)}")
    return f"{said}; {how}, {c.noise_words()}"


def _risk_lines(session: Session, frame: pl.DataFrame, rejected: list[str],
                probes: Sequence[tuple[str, str]], now: datetime) -> list[str]:
    """The risks line: incidents, rejected variants, the copy home, the GPU, time left."""
    import re

    from gpusession.core.money.window import package_window
    from gpusession.core.retrieval.status import retrieval_state

    incidents = len(_incident_groups(session, frame))
    risks = [_plural(incidents, "incident", "incidents") if incidents else "no incident",
             f"REJECTED: {', '.join(rejected)}" if rejected else "no variant rejected",
             retrieval_state(session.folder).words]
    risks += [re.sub(r"^WARNING: (the last run \(experiment [^)]*\) )?", "", text.split(";")[0])
              for _, text in probes if text.startswith("WARNING")]
    from gpusession.core.money.host_check import deviation_words

    risks += deviation_words(session)  # D8: the GPU found is not the one ordered
    if session.package.end is not None:
        risks.append(package_window(session.package, now).time_left_words(minutes=False))
    return _wrap(f"**Risks:** {'; '.join(risks)}.", indent="  ", first="- ")


def answer_lines(report_text: str) -> list[str]:
    """The report's summary (verdict, cost, variant to keep, risks) as printed lines (D5).

    Args:
        report_text: a report's Markdown (:func:`render_report`).

    Returns:
        The summary's bullets with their continuation lines, ``**`` marks dropped: what
        ``report`` and the demo print, so the answer is on the screen, not only in a file.
    """
    out: list[str] = []
    for line in report_text.splitlines()[1:]:
        if line.startswith("Generated ") or line.startswith("## "):
            break
        if line.strip():
            out.append(line.replace("**", ""))
    return out


def render_report(session: Session, *, now: datetime | None = None,
                  charts: Sequence[Path] = (), charts_note: str | None = None,
                  nvml: Any | None = None) -> str:
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

    Raises:
        BadInput: a malformed session file (checklist.toml, results CSV).
    """
    from gpusession.core.records.summary import session_summary

    now = now or utcnow()
    items = cl.load_checklist(session)
    by_id = {i.id: i for i in items}
    frame = session.results.read()
    table = session_summary(session, frame) if frame.height else []
    cost = _cost_report(session, frame)
    probes = _live_probes(session, nvml, now)
    lines = [f"# Session report: {session.name}", ""] + _summary(session, frame, table, cost, now, probes)
    head = f"Generated {now.isoformat(timespec='minutes')} by gpusession {__version__}."
    from gpusession.core.money.order import load_order
    from gpusession.core.money.order_text import order_status_line

    try:
        head += f" Order: {order_status_line(load_order(session), now)}."
    except BadInput:
        pass
    lines += [""] + _wrap(head)
    chart_lines = [f"![{p.stem}]({p.name})" for p in charts] + ([charts_note] if charts_note else [])
    bodies = {
        "Results per variant and phase": _results(session, frame, table) + [""] + _memory(session, frame)
        + _incidents(session, frame) + ([""] + chart_lines if chart_lines else []),
        "Validation verdicts": _validation(session, frame),
        "Cost": _cost(session, frame, cost) + _energy(frame),
        "Environment and protocol": _env(session, frame, probes) + [""] + _protocols(session),
        "Need, decision and retrieval": _need_and_decision(items, by_id, session),
    }
    for n, title in enumerate(SECTIONS, 1):  # a heading, then its text (CommonMark needs no blank)
        lines += ["", f"## {n}. {title}"] + bodies[title]
    # one secret check on the whole text: whatever a note or an incident held is hidden
    return mask_text("\n".join(lines).rstrip() + "\n")[0]


def write_report(session: Session, *, out: Path | None = None, force: bool = False,
                 now: datetime | None = None, nvml: Any | None = None,
                 html: bool = False) -> ReportWritten:
    """Write the report (and its charts) atomically; never overwrite silently.

    Args:
        session: an open session.
        out: the Markdown file; default ``<session>/report.md``, or ``report-2.md``...
            when it exists.
        force: overwrite an existing file (``out`` or ``report.md``).
        now: the generation time shown (aware); default now.
        nvml: an NVML module, fake or snapshot (tests); default the real one.
        html: also write the same text as one self-contained HTML page next to it
            (``report.html`` beside ``report.md``; charts inline as SVG), mode 0600.

    Raises:
        BadInput: ``out`` (or its HTML page) exists without ``force``; its folder does not exist; ``out``
            is (or leads through a link to) a session's file other than an earlier
            report, even with ``force`` (:func:`gpusession.core.folder.session.refuse_session_data`).
    """
    if out is None:
        target = session.folder / "report.md"
        if not force:
            target = next_free_path(target)
    else:
        target = Path(out)
        refuse_session_data(target, what="report")
        if target.exists() and not force:
            raise BadInput("exists; pass --force to overwrite it, or choose another --out", path=target)
    if not target.parent.is_dir():
        raise BadInput("folder of the report does not exist", path=target.parent)
    page = target.with_suffix(".html") if html else None
    if page is not None:
        refuse_session_data(page, what="report")
        if os.path.lexists(page) and not force:
            raise BadInput("exists; pass --force to overwrite it, or choose another --out", path=page)
    frame = session.results.read()
    chart_paths, note = _charts(frame, target.with_suffix(""), force=force)
    text = render_report(session, now=now, charts=chart_paths, charts_note=note, nvml=nvml)
    write_atomic_bytes(target, text.encode("utf-8"))
    if page is not None:
        from gpusession.core.retrieval.report_html import markdown_to_html

        svgs, _ = chart_svgs(frame)
        named = {name: svg for name, svg in svgs}
        page_text = markdown_to_html(text, title=f"Session report: {session.name}", charts=named)
        write_atomic_bytes(page, mask_text(page_text)[0].encode("utf-8"))  # mode 0600
    from gpusession.core.events.actions import ReportWrittenRecord

    session.journal(ReportWrittenRecord(path=str(target), charts=[str(p) for p in chart_paths]
                                        + ([str(page)] if page is not None else [])))
    return ReportWritten(target, chart_paths, note, page)


__all__ = ["SECTIONS", "ReportWritten", "answer_lines", "render_report", "write_report"]
