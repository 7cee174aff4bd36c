"""The bench side's readers of lines a command or a person wrote: bounded (H-39).

A worker's stdout, a rank's log line and a JSONL corpus nested past the parser are read
as not-an-event / refused naming the file and line, never a ``RecursionError``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpusession.bench.phases import read_corpus_file
from gpusession.bench.process import EOF_EVENT, WorkerProcess
from gpusession.bench.ranks import rank_incident, torchrun_root_cause
from gpusession.bench.workloads.bbc_corpus import read_jsonl
from gpusession.core.files.errors import BadInput

DEEP = '{"event": "incident", "a": ' + "[" * 5000 + "]" * 5000 + "}"


def test_h39_a_deep_rank_line_is_no_incident() -> None:
    lines = [f"rank 0: {DEEP}"]
    assert rank_incident(lines, 0) is None
    torchrun_root_cause(lines)  # never a RecursionError


@pytest.mark.parametrize("reader", [read_corpus_file, read_jsonl])
def test_h39_a_deep_corpus_line_is_refused_naming_the_file_and_line(reader: object, tmp_path: Path) -> None:
    corpus = tmp_path / "eval.jsonl"
    corpus.write_text('{"id": "1", "text": "a"}\n' + DEEP + "\n", encoding="utf-8")
    with pytest.raises(BadInput, match="nested too deep") as exc:
        reader(corpus)  # type: ignore[operator]
    assert "eval.jsonl:2" in str(exc.value)


def test_h39_a_deep_line_on_the_worker_stdout_is_not_an_event(tmp_path: Path) -> None:
    script = tmp_path / "w.py"
    script.write_text(f"import sys\nsys.stdout.write({DEEP!r} + '\\n')\n", encoding="utf-8")
    worker = WorkerProcess([sys.executable, str(script)], dict(os.environ))
    first = worker.events.get(timeout=30)
    assert first is EOF_EVENT  # the reader thread lived to the end
    assert any(line.startswith("[stdout] ") for line in worker.stderr)
    worker.finish()
