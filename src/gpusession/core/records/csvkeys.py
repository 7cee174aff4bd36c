"""Facts of the results that start-up paths need without the modules that hold the rest.

Why apart: :mod:`gpusession.core.records.results` loads the secret detectors (it masks
every cell it writes) and :mod:`gpusession.core.records.summary` its dataclasses;
``status --format tmux``, run every few seconds, counts rows with the standard library's
reader and needs only the run key and the cell bound, and the TUI's first frame
(``Session.needs_recovery``) only the kind of an unfinished run's incident.

Who reads them: :mod:`gpusession.core.records.results` and
:mod:`gpusession.core.records.summary` (which re-export them),
:mod:`gpusession.core.retrieval.status`, :mod:`gpusession.core.folder.session`.
Standard library only.
"""

from __future__ import annotations

#: The longest cell of the results CSV, in characters: 16 Mi (16,777,216), the longest
#: line accepted in the other files gpusession reads (``textio.MAX_LINE_BYTES``). Every
#: reader of the CSV (``show``, ``report``, ``run``, ``status``) accepts a cell up to
#: this size and refuses a longer one with the same line; the standard
#: library's own bound (128 KiB) would refuse a long ``notes`` cell that polars reads.
MAX_CELL_CHARS = 16 * 1024 * 1024

#: The cells naming the run a row records; the runner writes each run once (S7).
RUN_KEY_COLUMNS = ("experiment_id", "phase", "variant_id", "run_index")

#: ``kind`` of the incident crash recovery records, once, for an invocation that never
#: ended (:func:`gpusession.core.folder.recovery.unfinished_invocations`).
UNFINISHED_KIND = "run_did_not_finish"

__all__ = ["MAX_CELL_CHARS", "RUN_KEY_COLUMNS", "UNFINISHED_KIND"]
