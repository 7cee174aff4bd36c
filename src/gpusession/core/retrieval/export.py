"""A session's warm runs in hyperfine's JSON export layout, so its scripts read them (R6, D5).

Who calls it: ``gpusession export NAME --experiment ID --format hyperfine-json|csv|markdown``
(:mod:`gpusession.commands.compare_cmd`): one file per sweep, as one hyperfine run writes. hyperfine (``src/benchmark/benchmark_result.rs``,
``src/export/json.rs``) writes ``{"results": [...]}``, one entry per command with
``command``, ``mean``, ``stddev`` (the sample standard deviation, ``null`` for one run),
``median``, ``user``, ``system``, ``min``, ``max`` (seconds), ``times`` (every run, in
seconds), ``exit_codes`` (one per run) and ``parameters`` (the varied setting, values as
strings), and since hyperfine 1.20 ``memory_usage_byte`` (the peak resident set of each
run, in bytes). Here one entry is one variant's measured warm runs (R3: never mixed with
load or cold). For a command workload, ``user`` and ``system`` are the mean CPU seconds of
those runs and ``memory_usage_byte`` their peak resident sets, as hyperfine reads them
(``os.wait4`` when the command ended, kept in each run's journal record:
:class:`gpusession.core.events.records.RunFinishedRecord`); where a run has no such
figure (a torch worker times the work inside its own process) ``user`` and ``system`` are
``null`` and ``memory_usage_byte`` is left out, as hyperfine leaves it out (C3: not
measured is never 0). The verdict goes in the extra key ``gpusession_verdict``, which
hyperfine's readers ignore.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusession.core.events.records import RunFinishedRecord
from gpusession.core.experiment.plan import unreceived_params, value_text
from gpusession.core.files.csvtext import csv_bytes
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown
from gpusession.core.folder.experiments import load_experiments
from gpusession.core.folder.session import Session
from gpusession.core.retrieval.session_facts import Verdict, session_facts

#: The keys of one hyperfine result, in hyperfine's order (``memory_usage_byte``, which
#: hyperfine leaves out when not measured, is left out then).
HYPERFINE_KEYS = ("command", "mean", "stddev", "median", "user", "system", "min", "max",
                  "times", "memory_usage_byte", "exit_codes", "parameters")


@dataclass(frozen=True)
class RunUsage:
    """What the kernel accounted to one run's command (``os.wait4``); a figure not measured is ``None``.

    Attributes:
        user_s, system_s: CPU seconds in user and kernel mode.
        max_rss_bytes: peak resident set, bytes.
    """

    user_s: float | None
    system_s: float | None
    max_rss_bytes: int | None


def _varied_cell(exp: Any, row: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The varied setting's name and the value a warm row of ``exp`` was run with (A3).

    ``batch``, ``context`` and ``precision`` from the row's cell (empty where a command
    never received it); a parameter from the row's variant, where the program received
    it (a Python workload's factory, a command's ``{param.NAME}``); else ``None``.
    """
    if exp is None:
        return None, None
    if exp.varied in ("batch", "context", "precision"):
        return exp.varied, row.get(exp.varied)
    if exp.varied in unreceived_params(exp) or row.get("variant_id") not in exp.variant_ids:
        return exp.varied, None
    return exp.varied, value_text(exp.values[exp.variant_ids.index(row["variant_id"])])


def hyperfine_entry(command: str, times_s: list[float], parameters: dict[str, str],
                    verdict: str, usage: Sequence[RunUsage | None] = ()) -> dict[str, Any]:
    """One hyperfine result from measured durations in seconds.

    Args:
        command: what the entry is called (hyperfine's ``command``).
        times_s: the measured warm durations, in run order (at least one).
        parameters: the varied setting, ``{"batch": "4"}``.
        verdict: the variant's verdict in words (``accepted``, ``REJECTED (…)``).
        usage: each run's CPU time and peak memory, in the order of ``times_s``; empty
            or shorter when not measured.

    Returns:
        The entry: statistics as hyperfine computes them (``stddev`` with n − 1, ``None``
        below two runs), exit codes 0 (a measured run returned); ``user`` and ``system``
        the mean CPU seconds when every run has them, else ``None``; ``memory_usage_byte``
        one peak per run when every run has one, else left out (C3).
    """
    runs = list(usage) if len(usage) == len(times_s) else []
    user = [u.user_s for u in runs if u is not None and u.user_s is not None]
    system = [u.system_s for u in runs if u is not None and u.system_s is not None]
    rss = [u.max_rss_bytes for u in runs if u is not None and u.max_rss_bytes is not None]
    entry: dict[str, Any] = {
        "command": command,
        "mean": statistics.fmean(times_s),
        "stddev": statistics.stdev(times_s) if len(times_s) > 1 else None,
        "median": statistics.median(times_s),
        "user": statistics.fmean(user) if len(user) == len(times_s) else None,
        "system": statistics.fmean(system) if len(system) == len(times_s) else None,
        "min": min(times_s),
        "max": max(times_s),
        "times": list(times_s),
    }
    if len(rss) == len(times_s):
        entry["memory_usage_byte"] = rss
    entry.update({"exit_codes": [0] * len(times_s), "parameters": parameters, "gpusession_verdict": verdict})
    return entry


def warm_run_usage(session: Session) -> dict[tuple[str, str, int], RunUsage | None]:
    """Each measured warm run's CPU time and peak memory, from its journal record (R6).

    Key: ``(experiment_id, variant_id, run_index)``. A key the journal ends twice (a run
    index measured again) maps to ``None``: which row it belongs to is not known, so it is
    not said.
    """
    out: dict[tuple[str, str, int], RunUsage | None] = {}
    for rec in session.journal_records():
        if not isinstance(rec, RunFinishedRecord) or rec.phase != "warm" or not rec.ok:
            continue
        if rec.experiment_id is None or rec.variant_id is None or rec.run_index is None:
            continue
        key = (str(rec.experiment_id), str(rec.variant_id), int(rec.run_index))
        usage = RunUsage(rec.cpu_user_s, rec.cpu_system_s, rec.max_rss_bytes)
        out[key] = None if key in out else usage
    return out


def exported_experiment(session: Session, experiment_id: str | None) -> tuple[str, str | None]:
    """The experiment one export covers, and a sentence when it was not named (R6).

    One export is one sweep, as one hyperfine run is: its scripts compare the entries of
    one file. Without ``experiment_id`` the last experiment run (the experiment of the
    last timed row, as ``run``'s summary takes it) is exported, said when the session
    holds several.

    Returns:
        ``(experiment id, sentence or None)``.

    Raises:
        BadInput: ``experiment_id`` has no row in the results CSV (the ones that do are
            listed); no timed row at all.
    """
    import polars as pl

    frame = session.results.read()
    timed = frame.filter(pl.col("phase").is_not_null()) if frame.height else frame
    ids = timed.get_column("experiment_id").drop_nulls().unique(maintain_order=True).to_list() if timed.height else []
    if not ids:
        raise BadInput("no measured warm run to export; run an experiment first", path=session.results.path)
    if experiment_id is not None:
        if experiment_id not in ids:
            raise BadInput(f"no measured run of experiment {shown(experiment_id)} (measured: {', '.join(map(str, ids))})",
                           field="--experiment")
        return experiment_id, None
    last = str(timed.get_column("experiment_id").drop_nulls()[-1])
    if len(ids) == 1:
        return last, None
    others = ", ".join(str(i) for i in ids if i != last)
    return last, (f"exported experiment {last}, the last one run (one file per sweep, as hyperfine "
                  f"writes); --experiment ID for another: {others}")


def hyperfine_results(session: Session, experiment_id: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Every variant's measured warm runs as hyperfine's ``{"results": [...]}`` (R3, R6, D5).

    One entry per variant of ``experiment_id`` (every experiment when ``None``), in the
    order the results CSV first holds them;
    ``parameters`` holds the experiment's varied setting and its value (the row's
    ``batch`` or ``context`` cell, else the variant id); a failed warm run (no elapsed
    time, R7) is left out of ``times`` and counted in ``gpusession_failed_runs``.

    Returns:
        The document and what was left out, in words (a variant with no measured warm
        run), one sentence each.

    Raises:
        BadInput: an unreadable results CSV or experiment definition; no measured warm run.
    """
    import polars as pl


    frame = session.results.read()
    if experiment_id is not None and frame.height:
        frame = frame.filter(pl.col("experiment_id") == experiment_id)
    facts = session_facts(session, frame=frame)  # each variant's verdict, as every front end says it (A1, D5)
    experiments = {e.id: e for e in load_experiments(session)}
    warm = frame.filter(pl.col("phase") == "warm") if frame.height else frame
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for row in warm.iter_rows(named=True):
        groups.setdefault((row["experiment_id"], row["variant_id"]), []).append(row)
    results, left_out = [], []
    usage = warm_run_usage(session)
    for (exp_id, variant_id), rows in groups.items():
        timed = [r for r in rows if r["elapsed_seconds"] is not None]
        times = [float(r["elapsed_seconds"]) for r in timed]
        indexes = [r["run_index"] for r in timed]
        run_usage = [None if indexes.count(r["run_index"]) > 1 or r["run_index"] is None
                     else usage.get((str(exp_id), str(variant_id), int(r["run_index"]))) for r in timed]
        if not times:
            left_out.append(f"{exp_id} {variant_id}: no measured warm run, left out of the export")
            continue
        name, cell = _varied_cell(experiments.get(exp_id), rows[0])
        parameters = {name: str(cell)} if name and cell is not None else {"variant": str(variant_id)}
        verdict = facts.verdict_of(exp_id, variant_id)
        entry = hyperfine_entry(f"{exp_id} {variant_id}", times, parameters,
                                verdict.words() if verdict is not None else Verdict.NOT_VALIDATED.value, run_usage)
        # typed beside the words: True every validated run accepted, False one rejected, None not validated
        entry["gpusession_accepted"] = (None if verdict is None or verdict.verdict is Verdict.NOT_VALIDATED
                                        else verdict.verdict is Verdict.ACCEPTED)
        entry["gpusession_failed_runs"] = len(rows) - len(times)
        results.append(entry)
    if not results:
        raise BadInput("no measured warm run to export; run an experiment first",
                       path=session.results.path)
    return {"results": results}, left_out


#: hyperfine's CSV columns before the ``parameter_<name>`` ones (``src/export/csv.rs``).
CSV_KEYS = ("command", "mean", "stddev", "median", "user", "system", "min", "max")


def hyperfine_csv(doc: dict[str, Any]) -> str:
    """The export as hyperfine's ``--export-csv``: one line per entry, seconds, empty = not measured.

    Columns: :data:`CSV_KEYS`, then ``parameter_<name>`` for each parameter name found,
    in first-seen order, then ``gpusession_verdict`` (D5: a rejected variant says so in every
    export; hyperfine's readers take columns by name); RFC 4180 quoting (polars).
    """
    import polars as pl

    names = list(dict.fromkeys(k for e in doc["results"] for k in e.get("parameters", {})))
    rows = [{**{k: e.get(k) for k in CSV_KEYS},
             **{f"parameter_{n}": e.get("parameters", {}).get(n) for n in names},
             "gpusession_verdict": e.get("gpusession_verdict")} for e in doc["results"]]
    schema = {**{k: (pl.String if k == "command" else pl.Float64) for k in CSV_KEYS},
              **{f"parameter_{n}": pl.String for n in names}, "gpusession_verdict": pl.String}
    return csv_bytes(pl.DataFrame(rows, schema=schema)).decode("utf-8")


def hyperfine_markdown(doc: dict[str, Any]) -> str:
    """The export as hyperfine's ``--export-markdown`` table (``src/export/markdown.rs``).

    ``| Command | Mean [ms] | Min [ms] | Max [ms] | Relative | Verdict |``: milliseconds
    when the first entry's mean is under a second, else seconds; the mean with ``± stddev``
    when there are two runs or more; relative to the fastest mean (``1.00``), with its
    spread; the verdict of each variant (D5), and a line under the table when the ``1.00``
    reference was not accepted, so a rejected variant is never the reference unsaid.
    """
    results = doc["results"]
    ms = bool(results) and results[0]["mean"] < 1.0
    unit, k = ("ms", 1000.0) if ms else ("s", 1.0)
    fastest = min(e["mean"] for e in results)
    fast = next(e for e in results if e["mean"] == fastest)
    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative | Verdict |",
             "|:---|---:|---:|---:|---:|:---|"]
    for e in results:
        mean = f"{e['mean'] * k:.1f}" + (f" ± {e['stddev'] * k:.1f}" if e.get("stddev") is not None else "")
        ratio = e["mean"] / fastest if fastest > 0 else 1.0
        rel = f"{ratio:.2f}"
        if e is not fast and e.get("stddev") is not None and fast.get("stddev") is not None and fastest > 0:
            spread = ratio * ((e["stddev"] / e["mean"]) ** 2 + (fast["stddev"] / fastest) ** 2) ** 0.5
            rel += f" ± {spread:.2f}"
        command = str(e["command"]).replace("|", "\\|").replace("`", "'")
        verdict = _cell(e.get("gpusession_verdict"))
        lines.append(f"| `{command}` | {mean} | {e['min'] * k:.1f} | {e['max'] * k:.1f} | {rel} | {verdict} |")
    if fast.get("gpusession_accepted") is not True:
        lines += ["", f"The 1.00 reference, `{_cell(fast['command'])}`, is the fastest, not a variant to keep: "
                      f"{_cell(fast.get('gpusession_verdict')) or 'no verdict'}."]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    """``value`` for one Markdown table cell: no ``|`` or backtick that would end it."""
    return "" if value is None else str(value).replace("|", "\\|").replace("`", "'")


__all__ = ["CSV_KEYS", "HYPERFINE_KEYS", "RunUsage", "exported_experiment", "hyperfine_csv", "hyperfine_entry",
           "hyperfine_markdown", "hyperfine_results", "warm_run_usage"]
