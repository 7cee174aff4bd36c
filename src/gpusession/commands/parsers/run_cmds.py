"""The parsers of ``demo``, ``run``, ``experiment``.

Each names its handler in :mod:`gpusession.commands.run_cmds`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse
import sys

from gpusession.commands.dispatch import Handler
from gpusession.commands.parsers import DEFAULT_METRIC, METRIC_NAMES, shown
from gpusession.commands.parsers.deliverables_cmd import add_accept_args


def _device(text: str) -> str:
    if text in ("cpu", "cuda") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, got {shown(text)}")


class _EndingEarly(Handler):
    """``run``'s handler: SIGTERM, SIGHUP and SIGINT end it cleanly from its first moment (H-76).

    Why: the handler's module imports polars and reads the session before any run
    starts; the signals' handling (:func:`gpusession.core.folder.processes.ending_early`)
    is installed before that import, so a signal there says one line on stderr and exits
    128 + the signal, never by the default action (-15) nor with a traceback. The TUI
    (``run`` without --headless, --resume or --detach) keeps Textual's own handling.
    """

    __slots__ = ()

    def __call__(self, args: argparse.Namespace) -> int | None:
        """Run ``cmd_run`` under :func:`~gpusession.core.folder.processes.ending_early`."""
        if not (getattr(args, "headless", False) or getattr(args, "resume", False)
                or getattr(args, "detach", False)):
            return super().__call__(args)
        from gpusession.core.folder.processes import ending_early

        result: int | None = None
        with ending_early(lambda line: print(f"gpusession: {line}", file=sys.stderr, flush=True)) as ended:
            result = super().__call__(args)
        return ended[0] if ended else result


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``demo``, ``run`` and ``experiment`` (``list``, ``define``, ``derive``) to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser; each subcommand sets
            ``func`` to its ``cmd_*`` function.
    """
    p = sub.add_parser(
        "demo",
        help="create sessions/demo, train the demo classifier, run the batch sweep (or open the TUI)",
        description=(
            "Create (or reopen) the demo session (RTX A5000, 1 lot, 7 days), train the "
            "BBC News classifier once, and define experiment batch-sweep (batch 1/4/8, "
            "5 runs, 2 warm-up, interleaved). With --headless it runs the experiment and "
            "prints the summary; without, it opens the TUI: press 2 (Run), then r to start. "
            "Running it again appends runs to the same experiment (numbers continue)."
        ),
    )
    p.add_argument("--headless", action="store_true", help="run without the TUI, printing progress: a line per finished run with the "
                   "time left, and a run in flight past 10 s says so every 10 s")
    p.add_argument("--device", type=_device, default=None,
                   help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    p.set_defaults(func=Handler("run_cmds", "cmd_demo"))

    p = sub.add_parser(
        "run", help="run a defined experiment of a session",
        description=(
            "Run an experiment defined with `gpusession experiment NAME define`: load, cold "
            "and warm phases in fresh worker processes, one CSV row appended per run as it "
            "finishes. Ctrl-C stops at the next run boundary (exit 1); a second Ctrl-C, a "
            "hang-up (SIGHUP: the terminal or ssh connection closed) or SIGTERM ends the "
            "run at once, its processes included, and says so in the journal (exit 130 / "
            "129 / 143); a signal before any run is in flight (while `run` starts up) ends it "
            "with one line on stderr and the same exit, nothing written. Under `nohup`"
            " a hang-up is ignored on purpose and the run goes on. To outlive "
            "the terminal on purpose, use --detach: the run goes on in the background, its "
            "output in logs/ of the session folder; follow it with `gpusession show NAME` "
            "or the TUI's Run pane. A run cut by a crash is recorded as an incident when "
            "the session is next opened. Exit 0 only when every scheduled run ran and no "
            "incident was recorded; 3 when a measured variant's corpus was rejected (as "
            "validate; the summary's verdict column says why); 1 when a run failed or had an "
            "incident (a row kept with it in its notes), the experiment is incomplete (also "
            "stopped at the session limit), or it was cancelled; 4 when it is not started: past "
            "the session limit, or its first run would end past it. The experiment stops at a "
            "run boundary, its rows kept, when the next run would end past the session limit "
            "(`show` says it: stop by …), and after its first result when that run failed or "
            "its result has a major defect (exit 3). Precedence: " + EXIT_PRECEDENCE + "."
        ),
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("--experiment", metavar="ID", help="experiment id (default: the only/last one)")
    p.add_argument("--headless", action="store_true", help="run without the TUI, printing progress: a line per finished run with the "
                   "time left, and a run in flight past 10 s says so every 10 s")
    p.add_argument("--device", type=_device, default=None,
                   help="cpu, cuda or cuda:N for this run; a device other than the experiment's is a "
                   "changed fixed setting: once the experiment has measurements, the runs go to a new "
                   "experiment id (ID-2…, said), never pooled with the other device's")
    p.add_argument("--quiet", action="store_true",
                   help="with --headless: print only the end line (rows appended, verdicts, how it ended)")
    p.add_argument("--json", action="store_true",
                   help="with --headless: the end line as JSON, and nothing else on stdout (docs/json/run.schema.json)")
    p.add_argument("--detach", action="store_true",
                   help="run in the background, outside this terminal's life (survives an ssh "
                   "drop); output goes to logs/run-<time>.log in the session folder")
    p.add_argument("--past-limit", action="store_true",
                   help="start runs even when they would end after the session limit (`gpusession "
                   "package NAME --limit/--reserve`); recorded in the journal and in each row it "
                   "let start. Without it, no run starts that would end past the limit (its "
                   "longest measured duration, else the run timeout), and after the limit `run` "
                   "is refused with exit 4")
    p.add_argument("--continue-on-reject", action="store_true",
                   help="run the whole batch even when the first result failed (exit non-zero, "
                   "out of memory, no output) or has a major defect (IDs missing, extra or "
                   "duplicated, an invalid format, quality below threshold − tolerance); recorded "
                   "in the journal. Without it the experiment stops after that first result, its "
                   "rows kept, exit 3")
    p.add_argument("--resume", action="store_true",
                   help="continue an experiment that ended early (a crash, a hang-up, the session "
                   "limit, a stop after the first result, a cancel) at the next run of its schedule "
                   "that has no measured row: same order and run numbers, the rows measured stand, "
                   "the row of a run cut short or failed stays and that run is measured again; new workers "
                   "load (and warm up) again. The stop after a defective first result applies "
                   "again, and the session limit too. It runs headless (or with --detach; in the TUI's "
                   "Run pane the key is u). Nothing missing: says so, exit 0")
    p.set_defaults(func=_EndingEarly("run_cmds", "cmd_run"))

    p = sub.add_parser(
        "experiment", help="define, derive or list the experiments of a session",
        description="An experiment varies one announced parameter (--varied, --values) and keeps "
        "every other setting fixed; it is stored in session.toml before it runs. Changing a "
        "fixed setting or the protocol after a measurement stores a new id (ID-2), so rows "
        "of two setups never share an id. `gpusession experiment NAME define --help` lists "
        "the settings.",
    )
    p.add_argument("name", metavar="NAME", help="the session")
    esub = p.add_subparsers(dest="experiment_action", metavar="ACTION", required=True)
    q = esub.add_parser("list", help="the experiments defined in the session")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=Handler("run_cmds", "cmd_experiment_list"))
    q = esub.add_parser(
        "define",
        help="store an experiment before it runs (a changed setting after a measurement "
        "gets a new id)",
        description=(
            "Store an experiment in session.toml before it runs. One announced parameter varies "
            "(--varied, with --values: batch, context, precision or any --param name); corpus, "
            "model, precision, context limit, seed and the other parameters are held fixed and "
            "recorded. Every parameter reaches the program, or the definition is refused naming "
            "it: a command takes {param.NAME}, or reads $GPUSESSION_PARAM_NAME with --param-via-env. The validation protocol (--classes, --metric, "
            "--threshold, --tolerance, --reference-value, --max-degradation, --train-ids, "
            "--tune-ids) is fixed before the first measurement; the threshold is required "
            "with it (nobody's default is stored): changing a "
            "setting after one stores the experiment under a new id."
        ),
    )
    q.add_argument("--id", required=True,
                   help="experiment id, e.g. batch-sweep (letters, digits, '.', '_', '-')")
    q.add_argument("--workload", required=True,
                   help="bbc-news, synthetic-mlp, command, or module:factory")
    q.add_argument("--corpus", help="corpus JSONL/CSV (id, text[, label]); a relative path is "
                   "relative to the session folder, as every path of an experiment (a file found only "
                   "in the current directory is stored absolute, and said)")
    q.add_argument("--varied", default="batch", metavar="NAME",
                   help="the one parameter the experiment varies (default batch): batch, context, "
                   "precision (each precision its own variant with its own quality check) or a "
                   "workload parameter's name (--varied model --values a,b: variants model-a, "
                   "model-b; the parameter is then not also a --param)")
    q.add_argument("--values", required=True,
                   help="comma-separated, e.g. 1,4,8; fp32,bf16 for precision; a parameter's plain "
                   "values (numbers, true/false, words of A-Z a-z 0-9 . _ -)")
    q.add_argument("--precision", default=None, choices=["fp32", "fp16", "bf16"],
                   help="held fixed (default fp32) unless --varied precision")
    # Numbers are read as text and parsed by the define form, the same rules as the TUI's
    # (gpusession.core.experiment.form): a left-out option is None, the default.
    q.add_argument("--context-limit", help="tokens kept per input (truncations are counted)")
    q.add_argument("--batch", help="fixed batch when --varied context")
    q.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    q.add_argument("--seed", help="seed of the workload (default 0): a Python workload's worker seeds random, "
                   "numpy and torch with it before the factory and load(), and the rows state it; a "
                   "command gets it as {seed} (then its rows state it) and $GPUSESSION_SEED")
    q.add_argument("--scope", default=None, choices=["processing", "full-chain"],
                   help="what the stopwatch covers: the processing only (the default), or the full "
                   "chain including writing the outputs; a command workload is always full-chain "
                   "(its process is timed as a whole)")
    q.add_argument("--warmup", help="warm-up iterations per variant (default 2)")
    q.add_argument("--runs", help="measured runs per variant (default 5)")
    q.add_argument("--order", default="interleaved", choices=["interleaved", "shuffled"],
                   help="order of the measured runs: interleaved variants, or a "
                   "pre-drawn shuffle seeded by --order-seed")
    q.add_argument("--order-seed", help="seed of the shuffled order (default 0)")
    q.add_argument("--cold-runs", help="fresh processes per variant (default 1)")
    q.add_argument("--gpus",
                   help="processes per node, one per GPU (default 1); more than 1 starts the "
                        "worker through torchrun and splits the corpus by rank")
    q.add_argument("--nodes",
                   help="nodes of the torchrun group (default 1); more than 1 needs --rendezvous, "
                   "and `gpusession agent NAME --experiment ID` on each other node")
    q.add_argument("--rendezvous", default=None, metavar="HOST:PORT",
                   help="c10d rendezvous endpoint hosted by this node, for --nodes > 1")
    q.add_argument("--timeout",
                   help="seconds before a run is killed (default 3600); a worker's load, and a group "
                   "over several nodes waiting for the others, get the same time")
    q.add_argument("--classes", help="declared classes, comma-separated (validation protocol)")
    q.add_argument("--metric", default=None, choices=METRIC_NAMES,
                   help=f"quality metric (with --classes; default {DEFAULT_METRIC}); needs --threshold")
    q.add_argument("--threshold",
                   help="acceptance threshold 0-1, required with --classes or --metric: the "
                   "acceptance floor is your decision (there is no universal value)")
    q.add_argument("--tolerance",
                   help="accepted shortfall below the threshold (with --classes; not given: stored as "
                   "not chosen, read as 0 and said so)")
    q.add_argument("--reference-value", metavar="X",
                   help="the metric of a reference configuration (with --classes), as validate's")
    q.add_argument("--max-degradation", metavar="X",
                   help="how far below --reference-value is still accepted, in every validation "
                   "of the experiment's runs")
    q.add_argument("--train-ids", metavar="FILE",
                   help="training IDs (JSONL/CSV with an id), checked for overlap with the corpus "
                   "(the train/eval overlap check); relative to the session folder. Without it the reports say the overlap "
                   "was not checked")
    q.add_argument("--tune-ids", metavar="FILE", help="tuning IDs, checked for overlap as --train-ids")
    q.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="workload parameter (repeatable), read as the type the workload declares "
                   "(synthetic-mlp's width is a whole number); an undeclared one as a whole "
                   "number, a decimal, true/false, or else text (\"1.10\" in double quotes is text). "
                   "Every parameter reaches the program: a Python workload's factory gets each one "
                   "(the varied one per variant); a command gets it where its arguments hold "
                   "{param.KEY} (one argument, a plain value) and always as $GPUSESSION_PARAM_KEY "
                   "(KEY upper-cased, . and - as _). A parameter (or --varied name) the command "
                   "does not take as {param.KEY} is refused, naming it, unless --param-via-env")
    q.add_argument("--param-via-env", action="store_true", default=None,
                   help="for --workload command: the command reads the parameters its arguments do "
                   "not take as {param.KEY} from $GPUSESSION_PARAM_KEY; accepted, and its rows' notes "
                   "say each such parameter was passed by variable, not verifiable")
    q.add_argument("--command", dest="command_line",
                   help="for --workload command: the program and arguments, split like a "
                   "shell and run without one; {batch}, {output}, {corpus}, {context}, {precision}, "
                   "{seed} are filled as whole arguments or --flag={output}, and are also in the environment "
                   "as GPUSESSION_BATCH, GPUSESSION_OUTPUT, GPUSESSION_CORPUS, GPUSESSION_CONTEXT, "
                   "GPUSESSION_PRECISION, GPUSESSION_SEED (read those inside a sh -c script). Its rows leave "
                   "python_version and torch_version empty (its interpreter is its own) unless it "
                   "reports them: it may write one JSON line {\"device\": \"cuda:0\", "
                   "\"python_version\": \"3.11.9\", \"torch_version\": \"2.5.1\"} to the file "
                   "$GPUSESSION_REPORT names (read after each run, outside the timed region; at most "
                   "4 KiB, values checked, a secret refused). It runs in the session folder: a relative "
                   "program (./predict.sh) or file argument is relative to it. Each run of a command is "
                   "a fresh process, so cold and warm differ only in what ran before: a cold run "
                   "comes first in a fresh worker with no warm-up before it (the system's file cache "
                   "may still hold the corpus); a warm run comes after --warmup unmeasured runs of "
                   "that variant (the files and the GPU driver already touched)")
    add_accept_args(q)  # S9: accepted by a rule, for any output
    q.set_defaults(func=Handler("run_cmds", "cmd_experiment_define"))
    q = esub.add_parser(
        "derive",
        help="replay an experiment with one element changed (a new experiment that records "
        "what it was derived from)",
        description=(
            "Store a new experiment equal to --from but for one element: change one element "
            "and replay the same case, so that the change explains the difference. KEY is a "
            "setting of `experiment define` (workload, command, corpus, precision, "
            "context-limit, batch, device, seed, scope, warmup, runs, order, order-seed, "
            "cold-runs, gpus, nodes, rendezvous, timeout, classes, metric, threshold, "
            "tolerance, reference-value, max-degradation, train-ids, tune-ids, param-via-env) or param.NAME for a "
            "workload parameter; the value is read as define reads it. id, varied and values are not changed "
            "by a replay: it varies what the experiment varies, and a --set of the varied parameter, or of a "
            "value equal to the one replayed, is refused. `experiment NAME list` and `show NAME` say what differs and "
            "compare the two."
        ),
    )
    q.add_argument("--id", required=True, metavar="NEW_ID", help="the new experiment's id")
    q.add_argument("--from", dest="origin", required=True, metavar="OLD_ID",
                   help="the experiment replayed")
    q.add_argument("--set", dest="set_items", action="append", default=[], metavar="KEY=VALUE",
                   help="the one element changed (exactly one: a second is refused)")
    q.add_argument("--json", action="store_true",
                   help="the experiment stored, as JSON (docs/json/experiment-derive.schema.json)")
    q.set_defaults(func=Handler("run_cmds", "cmd_experiment_derive"))


#: ``run``'s exit status, highest precedence first (``docs/guide.md``, ``docs/exit-codes.md``, ``--help``).
EXIT_PRECEDENCE = (
    "a signal ended the run (129 SIGHUP, 130 a second Ctrl-C, 143 SIGTERM) > refused before "
    "anything ran (2 bad input, also an edited corpus or a load that reports another model or "
    "tokenizer than the experiment's rows; 4 not started: past the session limit, or its first run would "
    "end past it) > 3 a measured variant's corpus was rejected (also a stop after a broken "
    "first result) > 1 a run failed, had an incident, or the experiment ended incomplete "
    "(also stopped at the session limit) or cancelled > 0"
)

