"""Per-run acceptance of any output by the experiment's rule: names, format, the user's program (S9).

Who calls it: :class:`gpusession.bench.runner.Runner`, through :func:`make_validation`,
which gives a classification experiment its :class:`~gpusession.bench.run_validation.RunValidation`
and an experiment with an accept rule an :class:`AcceptRunValidation` with the same face
(``problem``, ``corpus_revision``, ``validate``, ``last_report``, ``last_path``), so
the row, the first-result stop (D3) and ``run``'s exit 3 treat both alike.

The rule runs after the run's timed region, in a process group of its own (a session
leader), and is ended like a worker (the whole group, SIGKILL) when it outlives its
timeout. Checks and words are :mod:`gpusession.core.validation.accept_rule`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from gpusession.bench.run_validation import RunValidation
from gpusession.core.experiment.form import resolve_corpus
from gpusession.core.experiment.plan import Experiment, ScheduledRun
from gpusession.core.files.digest import sha256_file, sha256_plain
from gpusession.core.files.errors import BadInput
from gpusession.core.files.tomlio import write_atomic_bytes
from gpusession.core.folder.session import Session
from gpusession.core.records.kinds import ACCEPT_RULE
from gpusession.core.validation.accept_rule import (
    ACCEPTED,
    REJECTED,
    REPORT_SUFFIX,
    UNJUDGED,
    AcceptReport,
    AcceptRule,
    check_format,
    check_names,
    output_files,
    read_expected_names,
    reason_line,
    rule_of,
)


def make_validation(session: Session, exp: Experiment, corpus: Path | None) -> Any:
    """The per-run validation of ``exp``: by its accept rule when it has one, else by its corpus."""
    try:
        rule = rule_of(exp.protocol)
    except BadInput:
        rule = None
    if rule is None:
        return RunValidation(session, exp, corpus)
    return AcceptRunValidation(session, exp, rule, corpus)


#: Bytes of the rule's stdout kept from its start (its first line is the reason) and from
#: its end; whatever a rule prints between is counted, never held (H-51).
RULE_HEAD_BYTES = 4096
RULE_TAIL_BYTES = 4096
#: Seconds the stdout reader may take once the rule and all it started are ended.
RULE_PIPE_DRAIN_S = 1.0


class _BoundedReader:
    """Reads a pipe to its end in a thread, keeping the first and last bytes only (H-51).

    The thread owns the read end (no buffered reader a close could wait on): a process
    that keeps the pipe open never keeps the caller waiting (H-49).
    """

    def __init__(self, fd: int) -> None:
        """Start reading ``fd`` (closed by the thread at the end of the stream)."""
        import threading

        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0
        self._fd = fd
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    break
                self.total_bytes += len(chunk)
                room = RULE_HEAD_BYTES - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                self.tail += chunk
                del self.tail[:-RULE_TAIL_BYTES]
        except OSError:
            pass
        finally:
            os.close(self._fd)


def run_rule(argv: list[str], cwd: Path, timeout_s: float) -> tuple[str, int | None, str]:
    """Run the rule once as a workload's worker is run; ``(verdict, exit code, reason)`` (S9).

    Exit 0 accepted, 1 rejected, anything else -- or no start, or past ``timeout_s`` --
    could not be judged. The rule leads a process group of its own and carries a marker
    of its own in its environment (:data:`gpusession.bench.lifetime.PARENT_ENV`, naming the
    session ``cwd`` and this runner: a run killed meanwhile leaves nothing past the next, H-79): when it
    returns or passes its timeout, its group and every process that carries the marker
    (a ``setsid`` or ``nohup`` child, re-parented to init) are ended (H-49, H-50), and
    their names are said in the reason. Its stdout is read by a thread that keeps the
    first and last 4 KiB only (H-51); the wait is for the rule, never for its pipe.
    SIGHUP or SIGTERM to the run while the rule judges (:func:`on_interrupt`) ends the rule
    at once with the run, its group and escapees included, never at its timeout (H-69).
    """
    import secrets

    from gpusession.bench.lifetime import PARENT_ENV
    from gpusession.core.folder.processes import (
        end_group,
        identify,
        marked,
        on_interrupt,
        rule_marker,
    )

    marker = rule_marker(cwd, secrets.token_hex(6))  # a killed run's leftovers end at the next run (H-79)
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=write_fd,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, PARENT_ENV: marker})
    except OSError as exc:
        os.close(read_fd)
        return UNJUDGED, None, f"the rule could not start: {exc.strerror or exc}"
    finally:
        os.close(write_fd)
    reader = _BoundedReader(read_fd)
    leader = identify(proc.pid)
    timed_out = False
    ended_by: list[str] = []

    def run_ended(signal_name: str) -> None:  # the run ends now: so does the rule (H-69)
        ended_by.append(signal_name)
        end_group(leader, marker=marker)

    forget = on_interrupt(run_ended)
    try:
        code: int | None = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out, code = True, None
    finally:
        forget()
    left = _names(p for p in marked(marker, leader.create_time_s) if p.pid != proc.pid)
    end_group(leader, marker=marker)  # the group and every escapee, wherever it went
    proc.wait()  # reaped (killed above when it was still running)
    reader.thread.join(timeout=RULE_PIPE_DRAIN_S)  # every writer is ended: the stream ends
    ended = f"; ended what it left running: {left}" if left else ""
    if ended_by:
        return UNJUDGED, None, f"the rule was ended with the run ({ended_by[0]}){ended}"
    if timed_out:
        return UNJUDGED, None, f"the rule took over {timeout_s:g} s and was ended{ended}"
    reason = reason_line(bytes(reader.head)) + ended
    if code == 0:
        return ACCEPTED, code, reason
    if code == 1:
        return REJECTED, code, reason
    return UNJUDGED, code, (f"the rule exited with status {code}" + (f": {reason}" if reason else ""))


def _names(procs: Any) -> str:
    """``sleep (pid 123), sleep (pid 124)``: what a rule left running, at most 5 named."""
    import psutil

    said = []
    for p in procs:
        try:
            said.append(f"{p.name()} (pid {p.pid})")
        except (psutil.Error, OSError):  # gone or unreadable: not named
            continue
    more = f" and {len(said) - 5} more" if len(said) > 5 else ""
    return ", ".join(said[:5]) + more


class AcceptRunValidation:
    """Accepts each run's output by names, format and the rule (S9; V1–V3, V8).

    Attributes:
        session: the session whose ``validation/`` folder receives the reports (V8).
        exp: the experiment.
        rule: its accept rule.
        corpus_revision: SHA-256 of the corpus when it has one (the rule may read it).
        problem: why runs cannot be judged, ``None`` when they can.
        expected: the expected names, ``None`` when none are declared.
    """

    def __init__(self, session: Session, exp: Experiment, rule: AcceptRule, corpus: Path | None) -> None:
        """Read the expected names once."""
        self.session, self.exp, self.rule = session, exp, rule
        self.last_report: AcceptReport | None = None
        self.last_path: Path | None = None
        self.problem: str | None = None
        self.expected: list[str] | None = None
        if corpus is None and exp.corpus:
            corpus = resolve_corpus(session.folder, exp.corpus)
        self.corpus = corpus
        self.corpus_revision = sha256_file(corpus) if corpus is not None and corpus.is_file() else None
        if rule.expected_outputs:
            try:
                self.expected = read_expected_names(resolve_corpus(session.folder, rule.expected_outputs))
            except BadInput as exc:
                self.problem = f"expected outputs unusable: {exc}; runs are not accepted"

    def _argv(self, output: Path, run: ScheduledRun) -> list[str]:
        """The rule's argv with ``{output}`` / ``{corpus}`` filled as plain paths (H-34)."""
        from gpusession.core.experiment.placeholders import fill_argument
        from gpusession.core.folder.plainpaths import (
            make_plain_paths,
            remove_plain_paths,
            substitution_values,
        )

        plain = make_plain_paths(self.session.runs_dir / self.exp.id, self.corpus)
        self._plain = plain
        try:
            st = self.exp.setting(run.variant_id)  # the run's variant, whatever is varied (A3)
            values = substitution_values(plain, batch=int(st["batch"]), context=st["context"],
                                         output=output)
            return [fill_argument(a, values) for a in self.rule.argv]
        except BaseException:
            remove_plain_paths(plain)
            raise

    def validate(self, output: Path, run: ScheduledRun) -> tuple[dict[str, Any], str | None]:
        """Judge one run's output and archive the report (V8); the row's fields and note.

        Names first (V1–V3), then the format, then the rule -- only when both passed.
        """
        from gpusession.core.folder.plainpaths import remove_plain_paths

        self.last_report, self.last_path = None, None
        if self.problem:
            return {"quality_metric": ACCEPT_RULE.row_marker}, f"not accepted: {self.problem}"
        output = Path(output)
        if not output.exists() and not output.is_symlink():
            return {"quality_metric": ACCEPT_RULE.row_marker, "corpus_accepted": False}, \
                f"accept rule: no output at {output.name}"
        names = check_names(output, self.expected) if self.expected is not None else None
        report = AcceptReport(str(output), names)
        listed = list(self.expected) if self.expected is not None else output_files(output)
        if report.ids_match and self.rule.deliverable_format:
            report.format_checked = True
            report.format_problems = check_format(output, listed, self.rule.deliverable_format)
        if report.ids_match and report.format_valid:
            if self.rule.argv:
                try:
                    argv = self._argv(output, run)
                except (BadInput, OSError) as exc:
                    report.verdict, report.reason = UNJUDGED, f"the rule could not be given its paths: {exc}"
                else:
                    try:
                        report.verdict, report.exit_code, report.reason = run_rule(
                            argv, self.session.folder, self.rule.timeout_s)
                    finally:
                        remove_plain_paths(self._plain)
            if report.corpus_accepted:  # regular files inside the output only: never a FIFO, a device, a link out (H-52)
                base = output if output.is_dir() else output.parent
                for n in listed:
                    digest = sha256_plain(base / n if output.is_dir() else output, inside=base)
                    if digest is None:
                        report.not_counted.append(n)
                    else:
                        report.files[n] = digest
        self.last_report = report
        where = self.session.validation_dir / self.exp.id / run.variant_id
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = where / f"{run.phase}-{run.run_index}{REPORT_SUFFIX}"
        # names secret-masked (H-73), within the reader's bound (H-71); the note made after it
        # records the digest of the very files the report lists (H-72)
        write_atomic_bytes(path, report.encoded())
        os.chmod(path, 0o600)
        self.last_path = path
        return report.row_fields(), report.note()


__all__ = ["AcceptRunValidation", "make_validation", "run_rule"]
