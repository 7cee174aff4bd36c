"""The name of one timed run in the journal and the results: ``<experiment>:<phase>:<variant>:<index>`` (R3, S7).

Pure: no file is read. The journal (:mod:`gpusession.core.folder.journal`) writes and
parses it; the schedule (:mod:`gpusession.core.experiment.plan`) names its runs with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import shown

#: The phases a run key may name (R3): the load, the cold first run, the warm runs.
PHASES = ("load", "cold", "warm")


@dataclass(frozen=True)
class RunKey:
    """The name of one timed run: ``<experiment>:<phase>:<variant>:<index>`` (R3, S7).

    Attributes:
        experiment_id: the experiment's id (may itself contain ``:``; the key is split
            from the right).
        phase: ``"load"``, ``"cold"`` or ``"warm"``.
        variant_id: e.g. ``"batch-4"``, or ``"all"`` for a warm worker's load.
        run_index: 1-based index within (variant, phase).
    """

    experiment_id: str
    phase: str
    variant_id: str
    run_index: int

    def format(self) -> str:
        """The key as written in the journal, e.g. ``"e:warm:batch-4:2"``."""
        return f"{self.experiment_id}:{self.local}"

    @property
    def local(self) -> str:
        """The key inside one experiment (worker protocol, messages): ``"warm:batch-4:2"``."""
        return f"{self.phase}:{self.variant_id}:{self.run_index}"

    def __str__(self) -> str:
        """The key as written in the journal (:meth:`format`)."""
        return self.format()

    @classmethod
    def parse(cls, text: str) -> RunKey:
        """Read a key written by :meth:`format`.

        Raises:
            BadInput: not four ``:``-separated parts, an unknown phase, an empty part
                or an index that is not a non-negative integer.
        """
        parts = str(text).rsplit(":", 3)
        if len(parts) != 4 or not all(parts):
            raise BadInput(f"expected a run key <experiment>:<phase>:<variant>:<index>, got {shown(text)}")
        exp, phase, variant, index = parts
        if phase not in PHASES:
            raise BadInput(f"expected a run phase ({', '.join(PHASES)}) in run key {shown(text)}, got {shown(phase)}")
        if not index.isascii() or not index.isdigit():
            raise BadInput(f"expected a whole run index in run key {shown(text)}, got {shown(index)}")
        return cls(exp, phase, variant, int(index))
