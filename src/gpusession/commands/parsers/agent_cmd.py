"""The parsers of ``agent``.

Each names its handler in :mod:`gpusession.commands.agent_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``agent`` to the CLI.

    Args:
        sub: The ``add_subparsers()`` action of the top-level parser.
    """
    p = sub.add_parser(
        "agent",
        help="on another node: join every torchrun group of an experiment run over several nodes",
        description=(
            "Run on each node other than the one where `gpusession run` runs, for an experiment "
            "defined with --nodes N --rendezvous HOST:PORT. The nodes must see the session folder "
            "and the corpus at the same paths (a shared file system). The agent waits for each "
            "worker group the runner starts (its spec file in runs/EXPERIMENT/), starts this node's "
            "torchrun agent for it (--nnodes N, the experiment's GPUs per node, the c10d "
            "rendezvous), and ends when the run is over: ended, or stopped without finishing (its "
            "runner killed: the session reopened on the runner's node, or its run lock gone). "
            "Start it before or after the run; "
            "this node's ranks never write to the session: the runner's node records every run."
        ),
        epilog="Exit codes: 0 the run ended and this node's torchrun exited 0 in every group, 1 it "
        "did not in one (the runner's record says why) or the run did not finish, 2 bad input, "
        "129/130/143 ended by SIGHUP/Ctrl-C/SIGTERM.",
    )
    p.add_argument("name", metavar="NAME", help="the session (the same folder as on the runner's node)")
    p.add_argument("--experiment", required=True, metavar="ID", help="the experiment, defined with --nodes N")
    p.set_defaults(func=Handler("agent_cmd", "cmd_agent"))

