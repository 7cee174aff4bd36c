"""H-27: a rendezvous port another program listens on is said in one line, before anything starts."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import cli, one_line

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.rendezvous import check_rendezvous_port

#: Reads the clock (package window, limit, status, cost): run again a year ahead and a
#: month back by .ci/run (A6).
pytestmark = pytest.mark.calendar


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 another program (this test) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_h27_a_port_in_use_is_refused_naming_the_port_and_the_host(taken_port: int) -> None:
    with pytest.raises(BadInput) as exc:
        check_rendezvous_port(f"127.0.0.1:{taken_port}", field="experiments.e.rendezvous")
    text = str(exc.value)
    assert f"port {taken_port} on 127.0.0.1 is in use by another program" in text, text
    assert "experiments.e.rendezvous" in text and "See inner exception" not in text


def test_h27_a_free_port_an_address_of_another_node_and_one_node_pass() -> None:
    check_rendezvous_port(f"127.0.0.1:{_free_port()}")
    check_rendezvous_port("192.0.2.1:29400")  # TEST-NET-1: not this node's; torchrun's to reach
    check_rendezvous_port(None)


def test_h27_run_with_the_rendezvous_port_taken_says_so_in_one_line_and_starts_nothing(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, taken_port: int,
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "rdv", "--gpu", "RTX A5000", "--lots", "1",
                       "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", "rdv", "define", "--id", "two",
                       "--workload", "synthetic-mlp", "--values", "1", "--device", "cpu",
                       "--nodes", "2", "--rendezvous", f"127.0.0.1:{taken_port}")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "run", "rdv", "--experiment", "two", "--headless")
    line = one_line(err)
    assert code == 2, out + err
    assert f"port {taken_port} on 127.0.0.1 is in use by another program" in line, line
    folder = sessions_root / "rdv"
    journal = (folder / "journal.jsonl").read_text(encoding="utf-8") if (folder / "journal.jsonl").exists() else ""
    assert "worker_started" not in journal and not (folder / "runs" / "two").exists()
