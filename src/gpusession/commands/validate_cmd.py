"""``gpusession validate``: is this run's output an accepted corpus? (V1-V8).

Prints the readable verdict (each check pass/fail in words, counts, first offenders;
the same lines as the TUI's Validation pane) and exits 0 when the corpus is accepted,
3 when it is rejected, 2 when an input is unusable. With ``--session NAME`` the report
and its ID lists are archived in that session's ``validation/`` folder (never over an
existing report), with a copy of the output beside it, and journalled (V8).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from gpusession.commands._common import open_session, print_json
from gpusession.commands.parsers import DEFAULT_THRESHOLD
from gpusession.core.files.digest import sha256_file
from gpusession.core.files.errors import BadInput
from gpusession.core.files.secrets import check_identifier, shown
from gpusession.core.files.tomlio import write_atomic_bytes
from gpusession.core.validation import (
    Protocol,
    free_run_name,
    load_expected,
    validate_output,
)

EXIT_ACCEPTED = 0
EXIT_REJECTED = 3


def parse_classes(text: str) -> tuple[str, ...]:
    """Split ``--classes``: ``"a, b,c"`` → ``("a", "b", "c")``; spaces around names are dropped.

    Args:
        text: The comma-separated class names.

    Returns:
        The names in the order given.

    Raises:
        BadInput: An empty name.
    """
    names = [c.strip() for c in text.split(",")]
    if any(not c for c in names):
        raise BadInput(f"empty class name in {shown(text)}; expected e.g. --classes a,b,c", field="--classes")
    return tuple(names)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "output"


def _archive_output(source: Path, target: Path) -> Path:
    """Copy the validated output beside its report (V8: every output kept for audit).

    Atomic: a temporary file of unpredictable name in the same folder (mode 0600),
    fsynced, then renamed (S7); a link at ``target`` is replaced, never written
    through. The folder was checked by the report's write.

    Args:
        source: The run's output file.
        target: Its copy in the session's ``validation/`` folder.

    Returns:
        ``target``.

    Raises:
        OSError: The copy or the rename failed (the target is untouched).
    """
    write_atomic_bytes(target, source.read_bytes())
    return target


def _run_name(text: str) -> str:
    """Check ``--name``: a file stem inside ``validation/``, a slug, never a path.

    A name like ``../session`` must not reach the session's own files (S7).

    Args:
        text: The name given with ``--name``.

    Returns:
        ``text`` unchanged.

    Raises:
        BadInput: A secret or a format character (checked first, the name is then never
            quoted), empty, a separator, ``..``, a leading ``.``/``-`` or another character.
    """
    check_identifier(text, field="--name", what="the report name")  # first: never quoted
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", text) or ".." in text:
        raise BadInput(
            f"{text!r} is not a report name; use ASCII letters (A-Z, a-z), digits, '.', '_' or "
            "'-' (no '/', no '..', not starting with '.' or '-')",
            field="--name",
        )
    return text


def _session_row(session: Any, args: argparse.Namespace, name: str, report: Any) -> Any:
    """Append the verdict as one row of the session's results CSV and return it.

    An output produced outside gpusession's run launcher is still one run of the
    session: its row carries the validation fields and the corpus revision (SHA-256 of
    the corpus file), with ``elapsed_seconds`` empty (not measured, C3), so the cost
    panel, the report and the TUI count its accepted corpus like any other (K3, K4).
    Its notes end with the record every row ends with (``scope=not timed; code=unknown;
    tolerance=…``: nothing was timed, the code that made the output is not known here,
    :mod:`gpusession.core.experiment.record`).
    """
    from gpusession.bench.run_validation import OUTPUT_SHA256_NOTE, package_total_minor
    from gpusession.core.experiment.record import NOT_TIMED, record_of
    from gpusession.core.records.results import ResultRow
    from gpusession.core.records.summary import accepted_revisions

    revision = sha256_file(args.corpus)
    pkg = session.package
    row = ResultRow(
        experiment_id="validate",
        variant_id=name,
        corpus_revision=revision,
        duration_days=pkg.days,
        lots=pkg.lots,
        package_total_usd_minor=package_total_minor(session),
        notes=f"validated with `gpusession validate` (output {args.output}); timing not measured"
              + (f"; {OUTPUT_SHA256_NOTE}{report.output_sha256}" if report.output_sha256 else "")
              + "; " + record_of(scope=NOT_TIMED, code_revision=None, protocol={
                  "threshold": args.threshold,
                  "tolerance": args.tolerance, "metric": args.metric,
                  "reference_value": args.reference_value, "max_degradation": args.max_degradation}),
        **report.row_fields(),
    )
    accepted = accepted_revisions(session.results.read())
    if row.corpus_accepted:
        accepted.add(revision)
    row = row.replace(accepted_unique_corpora=len(accepted))
    session.results.append(row)
    from gpusession.core.retrieval.status import refresh_counts

    refresh_counts(session.folder)  # summary.json for `gpusession status`
    from gpusession.core.money.count import session_count

    try:  # S10: status and list say the count in the session's unit, as show does
        session_count(session, cache=True)
    except (BadInput, OSError):
        pass  # a cache only: show and cost count again
    return row


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate one output file against the expected IDs and the quality rule (V1-V8).

    Accepted only if every expected ID is present exactly once with no extra ID (V1, V2,
    V3), every record is well-formed with a declared label (V4), the quality metric meets
    the threshold (V6) and training/tuning IDs do not overlap the evaluation IDs (V7). The
    classes are the declared ones, else the corpus labels, said so. With ``--session`` the
    report, its ID lists and a copy of the output are archived in the session's
    ``validation/`` folder, a row is appended to the results CSV and the verdict is
    journalled (V8).

    Args:
        args: Parsed arguments of ``validate`` (see ``--help``).

    Returns:
        :data:`EXIT_ACCEPTED` (0) when the corpus is accepted, :data:`EXIT_REJECTED` (3)
        when it is rejected.

    Raises:
        BadInput: An unusable input (corpus, output, references, ID lists), no classes,
            a bad ``--name``, no such session.
    """
    if args.name is not None:
        _run_name(args.name)
    given = getattr(args, "session_name", None)
    if given is not None and args.session is not None and given != args.session:
        raise BadInput(f"two sessions given: {shown(given)} and --session {shown(args.session)}; give one",
                       field="session")
    args.session = args.session or given  # `validate NAME …` as most commands take the session
    if args.session and args.threshold is None:  # V5: a row that counts holds only what a person chose
        raise BadInput(f"--session {shown(args.session)} stores a row that counts toward the cost per "
                       "accepted corpus: give --threshold X, your acceptance threshold (the default "
                       f"{DEFAULT_THRESHOLD} is for a one-off check without --session)", field="--threshold")
    session = open_session(args, args.session) if args.session else None
    expected = load_expected(args.corpus, references=args.references)
    if args.classes is not None:  # `--classes ""` is an empty list, refused below
        classes = parse_classes(args.classes)
        source = "declared with --classes"
    else:
        classes = expected.labels_found()
        if not classes:
            raise BadInput(
                "no classes: the corpus has no labels; declare them with --classes a,b,c",
                path=args.corpus,
                field="--classes",
            )
        source = "taken from the corpus labels because --classes was not given"
    fmt = args.output_format or ("csv" if args.output.suffix.lower() == ".csv" else "jsonl")
    protocol = Protocol(
        classes=classes,
        metric=args.metric,
        threshold=DEFAULT_THRESHOLD if args.threshold is None else args.threshold,
        tolerance=args.tolerance,
        reference_value=args.reference_value,
        max_degradation=args.max_degradation,
        output_format=fmt,
    )
    report = validate_output(
        args.output, expected, protocol, train_ids=args.train_ids, tune_ids=args.tune_ids, classes_source=source
    )
    written = None
    if session is not None:
        name = free_run_name(session.validation_dir, args.name or f"validate-{_slug(args.output.stem)}")
        written = report.write(session.validation_dir, name, root=session.folder)
        kept = _archive_output(args.output, session.validation_dir / f"{name}.output{args.output.suffix}")
        row = _session_row(session, args, name, report)
        from gpusession.core.events.actions import ValidationRecord

        session.journal(ValidationRecord(
            report=str(written.relative_to(session.folder)),
            output=str(args.output),
            output_copy=str(kept.relative_to(session.folder)),
            corpus=str(args.corpus),
            **report.row_fields(),
        ))
    by_default = args.threshold is None
    if args.json:
        data = report.to_dict()
        data["report_path"] = str(written) if written else None
        data["threshold_source"] = "default" if by_default else "--threshold"
        print_json(data)
    else:
        lines = report.summary_lines()
        if by_default:  # the default used is said where the verdict is (nobody chose it)
            lines[0] += (f" (threshold {DEFAULT_THRESHOLD} by default: --threshold not given; "
                         "a one-off check, not a stored protocol)")
        print("\n".join(lines))
        if written is not None:
            print(f"report written: {written} (ID lists beside it)")
            print(
                f"row appended to resultats-bruts.csv (experiment validate, variant {name}); "
                f"distinct accepted corpora in session {args.session}: {row.accepted_unique_corpora}"
            )
    return EXIT_ACCEPTED if report.corpus_accepted else EXIT_REJECTED
