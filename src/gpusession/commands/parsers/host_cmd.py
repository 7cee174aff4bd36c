"""The parsers of ``check-host``.

Each names its handler in :mod:`gpusession.commands.host_cmd`,
imported when the command runs, never for ``--help``.
"""

from __future__ import annotations

import argparse

from gpusession.commands.dispatch import Handler


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``check-host`` to the CLI."""
    p = sub.add_parser(
        "check-host",
        help="is this the GPU you paid for? the GPU found, checked against the order",
        description="Read the GPUs of this machine through NVML (model, count, memory, PCIe "
        "generation and width, power limit, ECC and MIG mode, other processes on the GPUs), "
        "run a fixed probe of about 10 seconds in a worker process (a float16 matmul "
        "throughput in TFLOP/s and pinned host-to-device and device-to-host copies in GB/s) "
        "and keep it all beside the order in the session folder (host-check.toml, one entry "
        "per host and boot). A GPU model, count or memory that differs from the order is an "
        "order deviation, said in words against the order number, ready to quote to the "
        "provider, and noted in the order's timeline; a figure that cannot be compared (the "
        "GPUs per lot of a model missing from the rates file) is said so, never a deviation. The probe's figures are for your own "
        "records and comparisons between rentals: no expected figure is implied. It takes the "
        "session's run lock, so it never probes beside a measurement. `run` does the same "
        "check by itself on the first open on a server; a copy at home is never checked. "
        "Exit 0 when the GPU matches the order, 3 on an order deviation, 1 when no GPU is "
        "visible (nothing checked, nothing recorded) or a run holds the lock, 2 when "
        "host-check.toml does not read (nothing checked, the file left as it is).",
    )
    p.add_argument("name", metavar="NAME", help="session name")
    p.add_argument("--no-probe", action="store_true",
                   help="only the NVML readings (the probe kept from an earlier check stays)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=Handler("host_cmd", "cmd_check_host"))

