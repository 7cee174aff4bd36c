"""What one invocation of an experiment produced, as the runner hands it back (S7, H-12).

Who reads it: :class:`gpusession.bench.runner.Runner` fills it and returns it (and sends
it in its ``Finished`` event); ``gpusession run`` turns it into its words and its exit
code, the Run pane into its last line. Pure: a value, no file.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunOutcome:
    """What one invocation of an experiment produced.

    Attributes:
        rows_written: CSV rows appended (load, cold and warm, failures included).
        completed: every scheduled run ran (failed runs count as ran; R7).
        cancelled: stopped by a cancel request at a run boundary (H-12).
        interrupted: the signal (``"SIGHUP"``, ``"SIGTERM"``) that ended the run at once,
            ``None`` when none did.
        incidents: one sentence per incident.
        stopped: ``"session-limit"`` (D1) or ``"first-result"`` (D3) when the runner
            stopped the experiment at a run boundary on purpose, ``"revision-changed"``
            when a worker's load reported another model or tokenizer than the
            experiment's rows (R1: the attempt is refused), else ``None``.
        stopped_words: the sentence of that stop ("stopped at the session limit (stop by
            …)", "stopped after the first result: 300 IDs missing — fix and run again").
        started_runs: runs of this invocation that were started (loads not counted).
    """

    rows_written: int = 0
    completed: bool = False
    cancelled: bool = False
    interrupted: str | None = None
    incidents: list[str] = field(default_factory=list)
    stopped: str | None = None
    stopped_words: str | None = None
    started_runs: int = 0


__all__ = ["RunOutcome"]
