"""Whether this node can host an experiment's rendezvous: the port must be free (H-27).

Why it exists: the runner's node hosts the c10d store of a group over several nodes
(``--rendezvous HOST:PORT``). When another program already listens there, torchrun
retries as a client of that program and fails with "The connection to the C10d store
has failed. See inner exception for details." after starting every rank. Checked before
anything starts, the cause is said in one line and nothing is left running.

Who calls it: :meth:`gpusession.bench.runner.Runner.preflight`, before the first
worker. No textual, no torch.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from gpusession.core.files.errors import BadInput


def _holder(port: int) -> str:
    """``" (python3, PID 1234)"`` for the process listening on ``port``, when the system says; else ``""``."""
    try:
        import psutil

        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return f" ({psutil.Process(conn.pid).name()}, PID {conn.pid})"
    except Exception:  # noqa: BLE001 - naming the program is a courtesy; the port in use is the message
        return ""
    return ""


def check_rendezvous_port(endpoint: str | None, *, field: str = "rendezvous") -> None:
    """Refuse a rendezvous endpoint whose port another program already listens on (H-27).

    Binds ``host:port`` for a moment (``SO_REUSEADDR``, so a port left in TIME_WAIT by
    an earlier group passes) and closes it again. A host that is not an address of this
    node (the endpoint is reached through another name, or elsewhere), or that does not
    resolve, is left to torchrun: only a port known to be taken is refused.

    Args:
        endpoint: ``"host:port"`` (``"[::1]:29400"`` for IPv6), or ``None`` (one node:
            nothing to check).
        field: the field named in the error.

    Raises:
        BadInput: one line, "port 29871 on 127.0.0.1 is in use by another program",
            naming the program when the system says which, with what to do.
    """
    if not endpoint:
        return
    host, _, port_text = endpoint.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
        infos: list[Any] = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except (ValueError, OSError):
        return  # checked at define time (plan.check); a name that does not resolve is torchrun's to say
    for family, kind, proto, _name, address in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise BadInput(
                    f"port {port} on {host} is in use by another program{_holder(port)}: the "
                    "rendezvous cannot be hosted there. End that program, or define the "
                    f"experiment again with a free port (--rendezvous {host}:PORT); nothing was run",
                    field=field,
                ) from None
            continue  # not an address of this node, or not allowed: torchrun says what it finds


__all__ = ["check_rendezvous_port"]
