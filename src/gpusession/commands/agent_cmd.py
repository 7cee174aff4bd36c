"""``gpusession agent NAME --experiment ID``: another node's side of a run over several nodes.

Thin: the loop is :class:`gpusession.bench.agent.Agent`. The session is opened without
recovery (the run lock is the runner's, on another node) and nothing in it is written.
Exit 0 when the run ended with its end record and this node's torchrun exited 0 in
every group joined; 1 when one did not (the runner's record says why), or when the run
did not finish (its runner was killed or died: recovery recorded it, or its run lock is
gone with no end recorded); 2 bad input; 128 + the signal's number when Ctrl-C, SIGTERM
or SIGHUP ended it (its torchrun group first).
"""

from __future__ import annotations

import argparse
import signal
from typing import Any


def cmd_agent(args: argparse.Namespace) -> int:
    """Join the experiment's groups until its run has ended; see the module doc for exit codes.

    Raises:
        BadInput: no such session or experiment, or an experiment on one node.
    """
    from gpusession.bench.agent import Agent
    from gpusession.commands._common import root_of
    from gpusession.core.folder.experiments import get_experiment
    from gpusession.core.folder.processes import ending_signals, signal_handlers
    from gpusession.core.folder.session import Session

    session = Session.open(root_of(args), args.name, recover=False)
    agent = Agent(session.folder, get_experiment(session, args.experiment))

    def on_signal(signum: int, frame: Any) -> None:
        agent.interrupt(signal.Signals(signum).name)

    with signal_handlers({sig: on_signal for sig in (signal.SIGINT, *ending_signals())}):
        outcome = agent.run()
    if outcome.interrupted is not None:
        return 128 + int(signal.Signals[outcome.interrupted])
    if outcome.run_end != "ended":
        return 1  # its runner stopped mid-run: the run did not finish (said in the agent's last line)
    return 0 if all(code == 0 for _, code in outcome.groups) else 1
