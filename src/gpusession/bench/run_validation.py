"""Per-run validation and package figures for the runner's rows (V1-V8, K1).

Who calls it: :class:`gpusession.bench.runner.Runner`. Validation itself is
:mod:`gpusession.core.validation`; this module feeds it each run's output file and the
experiment's protocol, archives the report (V8) and returns the row's fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusession.bench.plan import Experiment, ScheduledRun
from gpusession.core.digest import sha256_file
from gpusession.core.errors import BadInput
from gpusession.core.session import Session


def package_total_minor(session: Session) -> int | None:
    """Package total in USD cents from the rates (K1), ``None`` when unknown (K7)."""
    pkg = session.package
    if not (pkg.gpu_model and pkg.days and pkg.lots):
        return None
    from gpusession.core.cost import session_cost_inputs

    try:
        total = session_cost_inputs(session, count_accepted=False).package_total()
    except BadInput:
        return None
    return None if total is None else total.total_usd_minor


class RunValidation:
    """Validates each run's output against the experiment's corpus and protocol (V1-V8)."""

    def __init__(self, session: Session, exp: Experiment, corpus: Path | None) -> None:
        self.session = session
        self.exp = exp
        self.corpus_revision: str | None = None
        self.problem: str | None = None
        self.expected: Any = None
        self.protocol: Any = None
        if corpus is None:
            return
        if not corpus.exists():
            self.problem = f"corpus {corpus} not found; runs cannot be validated"
            return
        self.corpus_revision = sha256_file(corpus)
        if not exp.protocol:
            self.problem = "no validation protocol declared; corpora are not accepted"
            return
        from gpusession.core.validation import Protocol, load_expected

        try:
            self.protocol = Protocol.from_toml(exp.protocol)
            self.expected = load_expected(corpus)
        except BadInput as exc:
            self.problem = f"validation protocol or corpus unusable: {exc}"
        p = exp.params
        self.train_ids = session.folder / p["train_corpus"] if p.get("train_corpus") else None
        self.tune_ids = session.folder / p["tune_corpus"] if p.get("tune_corpus") else None

    def validate(self, output: Path, run: ScheduledRun) -> tuple[dict[str, Any], str | None]:
        if self.expected is None or self.protocol is None:
            return {}, None
        from gpusession.core.validation import validate_output

        try:
            report = validate_output(output, self.expected, self.protocol,
                                     train_ids=self._ids(self.train_ids), tune_ids=self._ids(self.tune_ids))
            report.write(self.session.validation_dir / self.exp.id / run.variant_id,
                         f"{run.phase}-{run.run_index}")
        except BadInput as exc:
            return {"corpus_accepted": False}, f"validation failed: {exc}"
        fields = report.row_fields()
        note = None
        if not fields.get("corpus_accepted"):
            failed = report.failed_checks
            note = "corpus rejected: " + (", ".join(failed) if failed else "see validation report")
        return fields, note

    @staticmethod
    def _ids(path: Path | None) -> Path | None:
        """The split file itself: core.validation reads its IDs as strings (V7)."""
        if path is None or not path.exists():
            return None
        return path


__all__ = ["RunValidation", "package_total_minor"]
