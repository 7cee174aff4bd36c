"""What a run writes to ``session.toml``: its start and the environment seen, in one write (S7, A5).

Source: A5, R10, S7. Why: each write of a month-long session's ``session.toml`` (500
experiments) costs its size; a run invocation wrote it twice (the drawn order and the
invocation's load at the start, then the environment its first worker observed). The
start is kept here and written with that environment; an invocation whose workers observe
none writes it at the end (:meth:`SessionWrites.flush`). The journal's
``experiment_started`` record holds the start meanwhile (S7). Used by the recorder
(:class:`gpusession.bench.recorder.Recorder`) and the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpusession.core.folder.session import Session

#: One change of ``session.toml``'s document, applied on a fresh read under the folder's lock.
Change = Callable[[dict[str, Any]], None]


class SessionWrites:
    """The changes of ``session.toml`` one run invocation makes, written together (A5)."""

    def __init__(self, session: Session, experiment_id: str, now: Callable[[], datetime]) -> None:
        """Nothing is written until :meth:`environment` or :meth:`flush`."""
        self.session = session
        self.experiment_id = experiment_id
        self.now = now
        self._pending: list[Change] = []
        self._env_stored: dict[str, Any] | None = None  # the environment last written, observed_at aside

    def change(self, change: Change) -> None:
        """Keep ``change`` for the next write: the environment's, else :meth:`flush`'s."""
        self._pending.append(change)

    def flush(self) -> None:
        """Write the changes kept, if any, in one update (S7).

        Raises:
            Failure: the folder's lock not taken in time (nothing written).
        """
        if self._pending:
            self._write(None)

    def environment(self, env: dict[str, Any]) -> None:
        """Keep ``env`` (what a worker observed, R10) at the top and in the experiment's table, with the changes kept.

        Written only when ``env`` differs from what this invocation last wrote or a change
        is kept: each write is the size of the session's experiments.

        Raises:
            Failure: the folder's lock not taken in time (nothing written).
        """
        if env == self._env_stored and not self._pending:
            return
        self._write(None if env == self._env_stored else env)

    def _write(self, env: dict[str, Any] | None) -> None:
        """One ``session.toml`` update: the kept changes, then ``env`` (``None``: unchanged)."""
        pending = list(self._pending)
        kept = None if env is None else env | {"observed_at": self.now()}  # when first observed by this run

        def change(doc: dict[str, Any]) -> None:  # on a fresh read: keep others' edits (S7)
            for one in pending:
                one(doc)
            if kept is not None:
                doc["environment"] = kept
                doc.setdefault("experiments", {}).setdefault(self.experiment_id, {})["environment"] = kept

        self.session.update(change)
        del self._pending[:len(pending)]
        if env is not None:
            self._env_stored = env
