"""The names of a session folder's files and of the environment variables gpusession uses.

Why it exists: the session (:mod:`gpusession.core.folder.session`), its journal
(:mod:`gpusession.core.folder.journal`) and ``gpusession status``
(:mod:`gpusession.core.retrieval.status`, which must start in a few milliseconds and so
cannot import the session module) each need these names; declared once here, at the
bottom floor (no imports), they cannot drift apart. Who calls it: those modules and the
commands that name a session's files.
"""

from __future__ import annotations

# -- files of a session folder ---------------------------------------------------------
#: The session's settings (name, creation time, package; S6).
SESSION_TOML = "session.toml"
#: The checklist from the need to the retrieval (S1), with the ``[retrieval]`` table.
CHECKLIST_TOML = "checklist.toml"
#: The order and its timeline (S2, S3).
ORDER_TOML = "order.toml"
#: The append-only journal, one JSON record per line (S7).
JOURNAL = "journal.jsonl"
#: The run lock: ``"<pid> <host>"`` of the process running experiments (S7).
RUN_LOCK = ".run.lock"
#: The raw results, one row per run (C1).
RESULTS_CSV = "resultats-bruts.csv"
#: The row and accepted-corpus counts ``gpusession status`` reads instead of the CSV.
SUMMARY_JSON = "summary.json"
#: The manifest of the deliverables (S4).
MANIFEST_CSV = "manifest.csv"
#: The report ``gpusession report`` writes by default.
REPORT_MD = "report.md"
#: The prices the user can edit (K7), in the sessions folder.
RATES_TOML = "rates.toml"

#: The files that make a session's data (a session's own outputs are never written over them).
DATA_FILES = (SESSION_TOML, CHECKLIST_TOML, ORDER_TOML, JOURNAL, RESULTS_CSV, RUN_LOCK)

# -- environment variables -------------------------------------------------------------
#: Read: the sessions folder (default ``~/gpusession``).
ENV_HOME = "GPUSESSION_HOME"
#: Set for a worker: the PID of the gpusession process that started it.
ENV_PARENT_PID = "GPUSESSION_PARENT_PID"
#: Read: where the software stacks live.
ENV_STACK_DIR = "GPUSESSION_STACK_DIR"
#: Set for the ranks of a torchrun group: the leader node.
ENV_LEADER_NODE = "GPUSESSION_LEADER_NODE"
#: Prefix of the placeholders set for a user's command (``GPUSESSION_CORPUS``,
#: ``GPUSESSION_BATCH``, ``GPUSESSION_OUTPUT``…; :data:`gpusession.core.experiment.placeholders.ENV`).
ENV_PLACEHOLDER_PREFIX = "GPUSESSION_"

__all__ = [
    "CHECKLIST_TOML", "DATA_FILES", "ENV_HOME", "ENV_LEADER_NODE", "ENV_PARENT_PID",
    "ENV_PLACEHOLDER_PREFIX", "ENV_STACK_DIR", "JOURNAL", "MANIFEST_CSV", "ORDER_TOML",
    "RATES_TOML", "REPORT_MD", "RESULTS_CSV", "RUN_LOCK", "SESSION_TOML", "SUMMARY_JSON",
]
