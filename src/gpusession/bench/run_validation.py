"""Per-run validation and package figures for the runner's rows (V1-V8, K1).

Who calls it: :class:`gpusession.bench.runner.Runner`. Validation itself is
:mod:`gpusession.core.validation`; this module feeds it each run's output file and the
experiment's protocol, archives the report (V8) and returns the row's fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusession.core.experiment.form import resolve_corpus
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import Session
from gpusession.core.validation.report import OUTPUT_SHA256_NOTE


def package_total_minor(session: Session) -> int | None:
    """The package total of a row: full package price × lots, in USD cents (K1, K2).

    Assembled by the one core function, :func:`gpusession.core.money.cost.session_cost_inputs`.

    Args:
        session: The open session; its package and rates file are read.

    Returns:
        The total in integer cents; ``None`` when GPU model, days or lots are not set,
        the price is not in the rates file, or the rates file is unusable (the cell
        stays empty: not known, never invented, K7, C3).
    """
    pkg = session.package
    if not (pkg.gpu_model and pkg.days and pkg.lots):
        return None
    from gpusession.core.money.cost import session_cost_inputs

    try:
        total = session_cost_inputs(session, count_accepted=False).package_total()
    except BadInput:
        return None
    return None if total is None else total.total_usd_minor


class RunValidation:
    """Validates each run's output against the experiment's corpus and protocol (V1-V8).

    Built once per experiment run; a corpus or protocol that is missing or unusable is
    said once in :attr:`problem` and the runs are then not validated (never accepted).

    Attributes:
        session: The session whose ``validation/`` folder receives the reports (V8).
        exp: The experiment being run.
        corpus_revision: SHA-256 (64 hex digits) of the corpus file, written into each
            row; ``None`` without a corpus.
        problem: Why runs cannot be validated, in words; ``None`` when they can.
        expected: The expected IDs and labels read from the corpus, or ``None``.
        protocol: The validation protocol fixed before the first measurement (V5), or
            ``None``.
        train_ids: The training split file, checked for overlap (V7), or ``None``.
        tune_ids: The tuning split file, checked for overlap (V7), or ``None``.
    """

    def __init__(self, session: Session, exp: Experiment, corpus: Path | None = None) -> None:
        """Read the corpus and the protocol once.

        Every path is found by :func:`gpusession.core.experiment.form.resolve_corpus`,
        the rule the define form checked it by (relative to the session folder, or
        absolute), so the file validated against is the file defined.

        Args:
            session: The open session.
            exp: The experiment; its ``corpus``, its ``protocol`` and its
                ``train_corpus`` / ``tune_corpus`` parameters are used.
            corpus: The corpus file when the caller has resolved it already; ``None``:
                the experiment's own (none when it has no corpus).
        """
        self.session = session
        self.exp = exp
        #: the report of the last validated output and where it was archived (D3)
        self.last_report: Any = None
        self.last_path: Path | None = None
        self.corpus_revision: str | None = None
        self.problem: str | None = None
        self.expected: Any = None
        self.protocol: Any = None
        if corpus is None and exp.corpus:
            corpus = resolve_corpus(session.folder, exp.corpus)
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
        self.train_ids = resolve_corpus(session.folder, str(p["train_corpus"])) if p.get("train_corpus") else None
        self.tune_ids = resolve_corpus(session.folder, str(p["tune_corpus"])) if p.get("tune_corpus") else None

    def validate(self, output: Path, run: ScheduledRun) -> tuple[dict[str, Any], str | None]:
        """Validate one run's output and archive the report (V1-V8).

        The report is written under ``validation/<experiment>/<variant>/`` as
        ``<phase>-<run index>`` (V8).

        Args:
            output: The run's output file (JSONL or CSV, per the protocol).
            run: The scheduled run: variant, phase and run index name the report.

        Returns:
            The row's validation fields (``ids_match``, ``format_valid``,
            ``corpus_accepted``, counts, metric, C5) and a note for the row's ``notes``
            (why the corpus was rejected or could not be validated, and the output's
            SHA-256 as ``output sha256:<hex>`` once it was read), else ``None``.
            Empty fields and the :attr:`problem` as the note when runs are not validated:
            every row says why it holds no verdict.
        """
        if self.expected is None or self.protocol is None:
            return {}, f"not validated: {self.problem}" if self.problem else None
        from gpusession.core.validation import validate_output

        self.last_report, self.last_path = None, None
        try:
            report = validate_output(output, self.expected, self.protocol,
                                     train_ids=self._ids(self.train_ids), tune_ids=self._ids(self.tune_ids))
            self.last_report = report
            self.last_path = report.write(self.session.validation_dir / self.exp.id / run.variant_id,
                                          f"{run.phase}-{run.run_index}", root=self.session.folder)
        except BadInput as exc:
            return {"corpus_accepted": False}, f"validation failed: {exc}"
        fields = report.row_fields()
        notes = []
        if not fields.get("corpus_accepted"):
            failed = report.failed_checks
            notes.append("corpus rejected: " + (", ".join(failed) if failed else "see validation report"))
        if report.output_sha256:  # ties the verdict to this row's output (labelled: not a key)
            notes.append(f"{OUTPUT_SHA256_NOTE}{report.output_sha256}")
        return fields, "; ".join(notes) or None

    @staticmethod
    def _ids(path: Path | None) -> Path | None:
        """The split file itself: core.validation reads its IDs as strings (V7)."""
        if path is None or not path.exists():
            return None
        return path


__all__ = ["OUTPUT_SHA256_NOTE", "RunValidation", "package_total_minor"]
