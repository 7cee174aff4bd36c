"""One Markdown report of a session for the person who approves the work (G§8).

Sections, always present (a section with nothing to show says so): need and criteria
(the notes of the stage-1 checklist items), environment seen (R10: observed, not taken
from the order), each experiment's protocol (V5, R1-R5), the summary per variant and
phase (R6: median and min-max, failures kept, R7), memory peaks (M2: allocated and
reserved side by side, never added), validation verdicts (V1), cost (K1-K5), the
retrieval manifest (S4), the decision note, and the checklist's progress.

PNG charts (durations per variant and phase, memory peaks) are drawn with matplotlib
only when it is importable (``pip install -e '.[report]'``); otherwise the report
says they were left out and why. An existing report is never overwritten silently:
``report.md`` becomes ``report-2.md``..., an explicit ``--out`` that exists is refused
without ``force``.

Who calls it: ``gpusession report NAME``. No torch, no textual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpusession import __version__
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
from gpusession.core.folder.session import Session, refuse_session_data
from gpusession.core.records.summary import accepted_unique_corpora, validated_count
from gpusession.core.retrieval import checklist as cl
from gpusession.core.retrieval.evidence import fmt_bytes, latest_manifest, protocol_evidence
from gpusession.core.retrieval.manifest import next_free_path, read_manifest

#: Section titles, in order; tests check that every one is present.
SECTIONS = (
    "Need and criteria",
    "Environment seen",
    "Protocol per experiment",
    "Results per variant and phase",
    "Memory peaks",
    "Validation verdicts",
    "Cost",
    "Retrieval",
    "Decision",
    "Charts",
    "Checklist progress",
)


@dataclass(frozen=True)
class ReportWritten:
    """Where the report went, its chart files, and why charts were left out (if so)."""

    path: Path
    charts: list[Path] = field(default_factory=list)
    charts_note: str | None = None


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
        key = re.sub(r" of worker \S+", "", str(r["notes"]))
        if key == LOAD_REMARK:  # says what the phase column already says
            continue
        groups.setdefault(key, []).append((r["experiment_id"], r["variant_id"], r["phase"], r["run_index"]))
    out: list[str] = []
    for note, keys in list(groups.items())[:limit]:
        out += _wrap(f"{_runs_words(keys)}: {_cell(note)}", indent="  ", first="- ")
    if len(groups) > limit:
        out.append(f"- … {len(groups) - limit} more different notes in resultats-bruts.csv")
    return out


# -- sections --------------------------------------------------------------------------
def _need(items: list[cl.ChecklistItem], session: Session) -> list[str]:
    stage1 = [i for i in items if i.stage == 1]
    listed: list[str] = []
    for i in (i for i in stage1 if i.note or i.done):
        state = f"done {i.at.isoformat()}" if i.done and i.at else ("done" if i.done else "open")
        listed.append(f"- **{i.text}** ({state})")
        listed.append(f"  - {i.note}" if i.note else "  - _no note written_")
    blocks = [["Stage 1 of the checklist (the need): the notes are the need and "
               "the approval criteria as written before the work."], listed]
    silent = [i.id for i in stage1 if not i.note and not i.done]
    if silent:
        blocks.append(["Open, without a note: " + ", ".join(f"`{x}`" for x in silent) + "."])
    if not any(i.note for i in stage1):
        blocks.append([f"_No need or criteria written yet: `gpusession checklist {session.name} "
                       "note g1.one-sentence \"...\"`._"])
    out: list[str] = []
    for block in (b for b in blocks if b):  # one blank line between blocks, never two
        out += ([""] if out else []) + block
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
        unset = [str(k) for k, v in table.items() if v == "unset" and k != "observed_at"]
        mapped = {"gpu_uuid", "gpu_physical_index"} if "gpu_mapping" in table else set()
        pairs = [f"{k}: {_flat(v)}" for k, v in table.items()
                 if k not in in_table and k not in mapped and v != "unset" and k != "observed_at"]
        if unset:
            pairs.append(f"unset: {', '.join(unset)}")
        if table.get("observed_at"):
            pairs.append(f"observed {_flat(table['observed_at'])}")
        out += [""] + _wrap(f"Also stored ({label}): " + "; ".join(pairs) + ".")
    if probes and not tables:  # after the stored paragraph the list follows directly (CommonMark)
        out.append("")
    for label, text in probes:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
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


def _protocols(session: Session) -> list[str]:
    exps = session.data.get("experiments")
    if not isinstance(exps, dict) or not exps:
        return ["_No experiment defined._"]
    out: list[str] = []
    for exp_id, exp in exps.items():
        if not isinstance(exp, dict):
            continue
        pairs = []
        for k, v in exp.items():
            if k in ("protocol", "environment"):
                continue  # the protocol below; the environment in its own section
            if k == "drawn_order" and isinstance(v, list):
                pairs.append(f"drawn_order: {_cycles(v)}")
            else:
                pairs.append(f"{k}: {_flat(v)}")
        out += [f"### {exp_id}", ""] + _wrap("; ".join(pairs) + ".")
        proto = exp.get("protocol")
        if isinstance(proto, dict) and proto:
            out += [""] + _wrap("Validation protocol (fixed before measuring): "
                                + "; ".join(f"{k}: {_flat(v)}" for k, v in proto.items()) + ".")
        else:
            out += ["", "Validation protocol: _not stored_."]
        out.append("")
    out += ["Protocol fixed before the first measured run:", ""]
    for line in protocol_evidence(session).splitlines():
        out += _wrap(line, indent="  ", first="- ")
    return out


def _results(session: Session, frame: pl.DataFrame) -> list[str]:
    if frame.height == 0:
        return ["_No run recorded yet._"]
    from gpusession.core.records.summary import session_summary

    table = session_summary(session, frame)
    out = _wrap("Median, min–max (ms or s); no p95 from so few runs; failed runs kept, "
                "never 0 s.") + [""]
    sections: dict[str, list[list[Any]]] = {}
    partial: dict[str, list[str]] = {}  # groups not measured in full, per section (R7, D5)
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
        sections.setdefault(title, []).append(row)
    for n, (title, rows) in enumerate(sections.items()):
        header = (["output", "quality", "verdict"] if title.startswith("Outputs")
                  else ["variant", "phase", "n", "median", "min–max", "quality", "verdict"])
        out += ([f"{title}:", ""] if n == 0 else ["", f"{title}:", ""]) + _table(header, rows)
        if title in partial:  # how complete the measurement is, apart from the verdict
            out += ["", "Not measured in full:"]
            for line in partial[title]:
                out += _wrap(printable(line), indent="  ", first="- ")
    notes = _grouped_notes(frame)
    if notes:
        out += ["", "Notes (identical notes said once):"] + notes
    return out


def _journal_incidents(session: Session) -> list[str]:
    """Incidents the journal holds (recoveries after a crash, worker failures), newest last.

    They are not all in a CSV row's notes (e.g. a cut CSV row moved aside on reopen), and
    the person who approves the work must see them (S7, R7). A journal line that does
    not read is one of them ("unreadable journal line N: why").
    """
    from gpusession.core.events import IncidentRecord

    read = session.journal_read()
    found = [r for r in read.records if isinstance(r, IncidentRecord)]
    if not found and not read.unreadable:
        return []
    groups: dict[str, list[Any]] = {}  # identical messages said once
    for r in found:
        groups.setdefault(str(r.message), []).append(r.at)
    for u in read.unreadable:  # said once: recovery's incident already names most of them
        groups.setdefault(u.note, [None])
    out = ["", "Incidents recorded in the journal:", ""]
    for message, ats in list(groups.items())[-30:]:
        when = _cell(ats[-1]) if len(ats) == 1 else f"{len(ats)} times, last {_cell(ats[-1])}"
        said = f"{when}: {_cell(message)}" if ats[-1] is not None else _cell(message)  # an unreadable line has no time
        out += _wrap(said, indent="  ", first="- ")
    if len(groups) > 30:
        out.append(f"- … {len(groups) - 30} earlier in journal.jsonl")
    return out


def _memory(session: Session, frame: pl.DataFrame) -> list[str]:
    if frame.height == 0 or frame.get_column("peak_reserved_bytes").drop_nulls().len() == 0:
        return ["_No GPU memory measured (no run yet, or CPU runs: the cells are empty, not 0)._"]
    mem = (
        frame.filter(pl.col("peak_allocated_bytes").is_not_null() | pl.col("peak_reserved_bytes").is_not_null())
        .group_by(["experiment_id", "variant_id", "phase"], maintain_order=True)
        .agg(pl.col("peak_allocated_bytes").max(), pl.col("peak_reserved_bytes").max())
    )
    out = _wrap("Highest peak per variant and phase, PyTorch allocator. Allocated is part of "
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
    accepted = accepted_unique_corpora(frame)
    out = [f"Distinct accepted corpora: **{accepted}** (repetitions of one corpus count once). "
           "A corpus is accepted only when IDs, format, quality and overlap all pass.", ""]
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


def _cost(session: Session, frame: pl.DataFrame) -> list[str]:
    pkg = session.package
    if not (pkg.gpu_model and pkg.days and pkg.lots):
        return [f"_Package not fully set (GPU, lots, days): `gpusession package {session.name} ...`._"]
    from gpusession.core.money.cost import NO_VALIDATED_RUN, cost_report, session_cost_inputs

    try:
        inputs = session_cost_inputs(session, frame=frame)
        rep = cost_report(inputs.rates, pkg.gpu_model, pkg.days, pkg.lots,
                          accepted=inputs.accepted_measured,  # not measured while nothing is validated (K3)
                          accepted_source=("distinct accepted corpora in resultats-bruts.csv"
                                           if inputs.accepted_measured is not None else NO_VALIDATED_RUN),
                          extensions=False)
        lines = rep.lines()
    except BadInput as exc:
        lines = [f"cost not computed: {exc}"]
    out = [f"Package window: {_when(pkg.start)} → {_when(pkg.end)}.", ""]
    return out + [f"- {line}" for line in lines]


def _retrieval(session: Session) -> list[str]:
    man = latest_manifest(session)
    if man is None:
        return [f"_No manifest of approved deliverables yet: `gpusession manifest {session.name} "
                "--deliverables DIR`._"]
    try:  # the manifest's own checked reader (S4): its error names the file and line
        entries = read_manifest(man)
        total = sum(e.size_bytes for e in entries)
        head = f"{man.name}: {len(entries)} deliverable(s), {fmt_bytes(total)}, with SHA-256."
    except BadInput as exc:  # a hand-edited manifest must not stop the report
        head = f"{man.name}: unreadable ({exc})"
    return [head, "",
            f"After the copy home, on your own computer: `gpusession verify-copy {man.name} COPY_DIR`, "
            "then open the files it names *from the copy* (a sample left on the remote "
            "machine is not your archive)."]


def _decision(items: dict[str, cl.ChecklistItem], session: Session) -> list[str]:
    out: list[str] = []
    for item_id, label in (("g8.decision", "What the trial decided"),
                           ("g8.handover", "What still needs validating / for a colleague"),
                           ("g8.keep-accepted", "Resume note")):
        it = items.get(item_id)
        note = it.note if it else ""
        out.append(f"**{label}:** {note}" if note else f"**{label}:** _not written yet_ "
                   f"(`gpusession checklist {session.name} note {item_id} \"...\"`)")
        out.append("")
    return out[:-1]


def _progress(items: list[cl.ChecklistItem]) -> list[str]:
    rows = []
    for stage, title in cl.STAGES.items():
        st = [i for i in items if i.stage == stage]
        open_ = [i.id for i in st if not i.done]
        rows.append([stage, title, f"{len(st) - len(open_)}/{len(st)}",
                     ", ".join(open_[:4]) + (" …" if len(open_) > 4 else "") if open_ else "none"])
    return _table(["stage", "title", "done", "open items"], rows)


# -- charts ------------------------------------------------------------------------------
def _charts(frame: pl.DataFrame, stem: Path, *, force: bool) -> tuple[list[Path], str | None]:
    """Draw the PNGs next to the report; ``(paths, note)``; never raises."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], ("Charts left out: matplotlib is not installed "
                    "(`pip install -e '.[report]'` in the gpusession clone to draw them).")
    timed = frame.filter(pl.col("elapsed_seconds").is_not_null())
    if timed.height == 0:
        return [], "Charts left out: no measured duration yet."
    paths: list[Path] = []

    def target(suffix: str) -> Path:
        p = stem.with_name(f"{stem.name}-{suffix}.png")
        p = p if force else next_free_path(p)
        refuse_session_data(p, what="report")  # a session's own file is never a chart
        if p.is_symlink():  # matplotlib would write through it
            raise link_refused(p)
        return p

    try:
        groups = timed.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True).agg(
            pl.col("elapsed_seconds"))
        labels = [f"{r['experiment_id']}\n{r['variant_id']}/{r['phase']}" for r in groups.iter_rows(named=True)]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels)), 4.0))
        for x, r in enumerate(groups.iter_rows(named=True)):
            ys = r["elapsed_seconds"]
            ax.scatter([x] * len(ys), ys, s=14)
            ax.hlines(sorted(ys)[len(ys) // 2] if len(ys) % 2 else
                      (sorted(ys)[len(ys) // 2 - 1] + sorted(ys)[len(ys) // 2]) / 2,
                      x - 0.3, x + 0.3, colors="black")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("elapsed seconds (every measured run; bar = median)")
        ax.set_title("Durations per variant and phase")
        fig.tight_layout()
        p = target("durations")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
        mem = frame.filter(pl.col("peak_reserved_bytes").is_not_null())
        if mem.height:
            g = mem.group_by(["experiment_id", "variant_id", "phase"], maintain_order=True).agg(
                pl.col("peak_allocated_bytes").max(), pl.col("peak_reserved_bytes").max())
            names = [f"{r['experiment_id']}\n{r['variant_id']}/{r['phase']}" for r in g.iter_rows(named=True)]
            divisor, unit = byte_scale(max((r["peak_reserved_bytes"] or 0) for r in g.iter_rows(named=True)))
            alloc = [(r["peak_allocated_bytes"] or 0) / divisor for r in g.iter_rows(named=True)]
            resv = [(r["peak_reserved_bytes"] or 0) / divisor for r in g.iter_rows(named=True)]
            fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(names)), 4.0))
            xs = list(range(len(names)))
            ax.bar([x - 0.2 for x in xs], alloc, width=0.4, label="peak allocated")
            ax.bar([x + 0.2 for x in xs], resv, width=0.4, label="peak reserved")
            ax.set_xticks(xs)
            ax.set_xticklabels(names, fontsize=7)
            ax.set_ylabel(f"{unit} (PyTorch allocator; side by side, never added)")
            ax.set_title("Memory peaks per variant and phase")
            ax.legend()
            fig.tight_layout()
            p = target("memory")
            fig.savefig(p, dpi=110)
            plt.close(fig)
            paths.append(p)
    except Exception as exc:  # noqa: BLE001 - matplotlib (optional, any version) documents no exception set; a chart must never cost the report, and the note names the error
        return paths, f"Charts partly left out: drawing failed ({type(exc).__name__}: {exc})."
    return paths, None


# -- assembly ----------------------------------------------------------------------------
def _live_probes(session: Session, nvml: Any, now: datetime) -> list[tuple[str, str]]:
    """Device, order match and on-GPU evidence read now (nothing recorded, nothing ticked)."""
    from gpusession.core.retrieval.evidence import run_probes

    ev = run_probes(session, nvml=nvml, now=now, record_deviation=False)
    return [("Device check now (NVML) and in the last run", ev["device"]),
            ("Order match", ev["order-match"]),
            ("On the GPU", ev["on-gpu"])]


def render_report(session: Session, *, now: datetime | None = None,
                  charts: Sequence[Path] = (), charts_note: str | None = None,
                  nvml: Any | None = None) -> str:
    """The report's Markdown text (see the module docstring for the sections).

    Args:
        session: an open session.
        now: the generation time shown (aware); default now.
        charts: PNG files to link (next to the report).
        charts_note: why charts were left out, if they were.
        nvml: an NVML module, fake or snapshot for the device evidence; default the real one.

    Raises:
        BadInput: a malformed session file (checklist.toml, results CSV).
    """
    now = now or utcnow()
    items = cl.load_checklist(session)
    by_id = {i.id: i for i in items}
    frame = session.results.read()
    pkg = session.package
    lines = [f"# Session report: {session.name}", "",
             f"Generated {now.isoformat()} by gpusession {__version__} for the person who approves "
             "the work. Test name (fixed): " + f"`{session.name}`.", "",
             f"Package: {pkg.gpu_model or 'GPU not set'}, {pkg.lots or '?'} lot(s), "
             f"{pkg.days or '?'} days, {_when(pkg.start)} → {_when(pkg.end)}."]
    from gpusession.core.money.order import load_order
    from gpusession.core.money.order_text import order_status_line

    try:
        lines.append(f"Order: {order_status_line(load_order(session), now)}.")
    except BadInput:
        pass
    bodies = {
        "Need and criteria": _need(items, session),
        "Environment seen": _env(session, frame, _live_probes(session, nvml, now)),
        "Protocol per experiment": _protocols(session),
        "Results per variant and phase": _results(session, frame) + _journal_incidents(session),
        "Memory peaks": _memory(session, frame),
        "Validation verdicts": _validation(session, frame),
        "Cost": _cost(session, frame),
        "Retrieval": _retrieval(session),
        "Decision": _decision(by_id, session),
        "Charts": ([f"![{p.stem}]({p.name})" for p in charts] + ([charts_note] if charts_note else []))
        or ["_No chart._"],
        "Checklist progress": _progress(items),
    }
    for n, title in enumerate(SECTIONS, 1):
        lines += ["", f"## {n}. {title}", ""] + bodies[title]
    # one secret check on the whole text: whatever a note or an incident held is hidden
    return mask_text("\n".join(lines).rstrip() + "\n")[0]


def write_report(session: Session, *, out: Path | None = None, force: bool = False,
                 now: datetime | None = None, nvml: Any | None = None) -> ReportWritten:
    """Write the report (and its charts) atomically; never overwrite silently.

    Args:
        session: an open session.
        out: the Markdown file; default ``<session>/report.md``, or ``report-2.md``...
            when it exists.
        force: overwrite an existing file (``out`` or ``report.md``).
        now: the generation time shown (aware); default now.
        nvml: an NVML module, fake or snapshot (tests); default the real one.

    Raises:
        BadInput: ``out`` exists without ``force``; its folder does not exist; ``out``
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
    frame = session.results.read()
    chart_paths, note = _charts(frame, target.with_suffix(""), force=force)
    text = render_report(session, now=now, charts=chart_paths, charts_note=note, nvml=nvml)
    write_atomic_bytes(target, text.encode("utf-8"))
    from gpusession.core.events.actions import ReportWrittenRecord

    session.journal(ReportWrittenRecord(path=str(target), charts=[str(p) for p in chart_paths]))
    return ReportWritten(target, chart_paths, note)


__all__ = ["SECTIONS", "ReportWritten", "render_report", "write_report"]
