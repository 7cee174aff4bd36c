"""A session's warm runs in hyperfine's JSON export layout, so its scripts read them (R6, D5).

Who calls it: ``gpusession export NAME --format hyperfine-json``
(:mod:`gpusession.commands.compare_cmd`). hyperfine (``src/benchmark/benchmark_result.rs``,
``src/export/json.rs``) writes ``{"results": [...]}``, one entry per command with
``command``, ``mean``, ``stddev`` (the sample standard deviation, ``null`` for one run),
``median``, ``user``, ``system``, ``min``, ``max`` (seconds), ``times`` (every run, in
seconds), ``exit_codes`` (one per run) and ``parameters`` (the varied setting, values as
strings). Here one entry is one variant's measured warm runs (R3: never mixed with load
or cold); ``user`` and ``system`` are ``null``: gpusession times the work, not the
process's CPU time (C3: not measured is never 0). The verdict goes in the extra key
``gpusession_verdict``, which hyperfine's readers ignore.
"""

from __future__ import annotations

import statistics
from typing import Any

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import Session

#: The keys of one hyperfine result, in hyperfine's order (``memory_usage_byte``, which
#: hyperfine leaves out when not measured, is left out).
HYPERFINE_KEYS = ("command", "mean", "stddev", "median", "user", "system", "min", "max",
                  "times", "exit_codes", "parameters")


def hyperfine_entry(command: str, times_s: list[float], parameters: dict[str, str],
                    verdict: str) -> dict[str, Any]:
    """One hyperfine result from measured durations in seconds.

    Args:
        command: what the entry is called (hyperfine's ``command``).
        times_s: the measured warm durations, in run order (at least one).
        parameters: the varied setting, ``{"batch": "4"}``.
        verdict: the variant's verdict in words (``accepted``, ``REJECTED (…)``).

    Returns:
        The entry: statistics as hyperfine computes them (``stddev`` with n − 1, ``None``
        below two runs), exit codes 0 (a measured run returned).
    """
    return {
        "command": command,
        "mean": statistics.fmean(times_s),
        "stddev": statistics.stdev(times_s) if len(times_s) > 1 else None,
        "median": statistics.median(times_s),
        "user": None,
        "system": None,
        "min": min(times_s),
        "max": max(times_s),
        "times": list(times_s),
        "exit_codes": [0] * len(times_s),
        "parameters": parameters,
        "gpusession_verdict": verdict,
    }


def hyperfine_results(session: Session) -> tuple[dict[str, Any], list[str]]:
    """Every variant's measured warm runs as hyperfine's ``{"results": [...]}`` (R3, R6, D5).

    One entry per experiment and variant, in the order the results CSV first holds them;
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

    from gpusession.core.folder.experiments import load_experiments
    from gpusession.core.records.summary import session_summary

    frame = session.results.read()
    verdicts = {(r.experiment_id, r.variant_id): r.verdict_words()
                for r in session_summary(session, frame) if r.phase == "warm" and r.attempt is None}
    varied = {e.id: e.varied for e in load_experiments(session)}
    warm = frame.filter(pl.col("phase") == "warm") if frame.height else frame
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for row in warm.iter_rows(named=True):
        groups.setdefault((row["experiment_id"], row["variant_id"]), []).append(row)
    results, left_out = [], []
    for (exp_id, variant_id), rows in groups.items():
        times = [float(r["elapsed_seconds"]) for r in rows if r["elapsed_seconds"] is not None]
        if not times:
            left_out.append(f"{exp_id} {variant_id}: no measured warm run, left out of the export")
            continue
        name = varied.get(exp_id)
        cell = rows[0].get(name) if name in ("batch", "context") else None
        parameters = {name: str(cell)} if name and cell is not None else {"variant": str(variant_id)}
        entry = hyperfine_entry(f"{exp_id} {variant_id}", times, parameters,
                                verdicts.get((exp_id, variant_id), "not validated"))
        entry["gpusession_failed_runs"] = len(rows) - len(times)
        results.append(entry)
    if not results:
        raise BadInput("no measured warm run to export; run an experiment first",
                       path=session.results.path)
    return {"results": results}, left_out


__all__ = ["HYPERFINE_KEYS", "hyperfine_entry", "hyperfine_results"]
