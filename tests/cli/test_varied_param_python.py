"""A Python workload's factory gets every param, the varied one per variant (A3, R1, R5).

A varied ``--param`` (or precision) is given to the factory (or ``load()``), so the warm
worker builds and loads one instance per variant and selects the run's before each
warm-up and each measured run: the runs stay interleaved in one process. The probe
(``tests/probe_workload.py``) writes down what each instance received.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from fake_workloads import with_tests_on_path, write_corpus
from helpers import cli

from gpusession.core.folder.session import Session

#: Runs an experiment and reads the package window and the session limit (A6).
pytestmark = [pytest.mark.calendar, pytest.mark.torch, pytest.mark.slow]


def _events(s: Session) -> list[dict[str, object]]:
    return [json.loads(line) for line in (s.folder / "probe.log").read_text().splitlines()]


def _collapsed(values: list[object]) -> list[object]:
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


def _run(capsys: pytest.CaptureFixture[str], root: Path, s: Session, monkeypatch: pytest.MonkeyPatch,
         *args: str) -> list[dict[str, str]]:
    with_tests_on_path(monkeypatch)
    write_corpus(s.folder / "corpus.jsonl", n=4)
    code, _, err = cli(capsys, root, "experiment", s.name, "define", "--id", "sweep",
                       "--workload", "probe_workload:ParamProbe", "--corpus", "corpus.jsonl",
                       "--param", f"log={s.folder / 'probe.log'}", "--runs", "2", "--warmup", "1",
                       "--device", "cpu", "--batch", "4", "--classes", "a,b", "--threshold", "0.5", *args)
    assert code == 0, err
    code, out, err = cli(capsys, root, "run", s.name, "--experiment", "sweep", "--headless")
    assert code == 0, out[-2000:] + err[-2000:]
    with open(s.folder / "resultats-bruts.csv", encoding="utf-8", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["phase"] == "warm"]


def test_a3_the_factory_gets_the_varied_param_per_variant_interleaved(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _run(capsys, sessions_root, session, monkeypatch, "--varied", "model", "--values", "a,b")
    assert [r["variant_id"] for r in rows] == ["model-a", "model-b"] * 2
    events = _events(session)
    warm_pid = events[-1]["pid"]
    warm = [e for e in events if e["pid"] == warm_pid]
    assert sorted(str(e["model"]) for e in warm if e["event"] == "built") == ["a", "b"]
    predicts = [e["model"] for e in warm if e["event"] == "predict"]
    assert _collapsed(predicts) == ["a", "b"] * 3  # warm-up a, b; then the drawn order a, b, a, b
    assert all(f"model={r['variant_id'][-1]}" in r["notes"] for r in rows), [r["notes"] for r in rows]


def test_r1_precision_varied_loads_each_variant_at_its_precision(
        sessions_root: Path, session: Session, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _run(capsys, sessions_root, session, monkeypatch, "--varied", "precision", "--values", "fp32,bf16")
    assert [(r["variant_id"], r["precision"]) for r in rows] == [("precision-fp32", "fp32"),
                                                                 ("precision-bf16", "bf16")] * 2
    events = _events(session)
    warm_pid = events[-1]["pid"]
    predicts = [e["precision"] for e in events if e["pid"] == warm_pid and e["event"] == "predict"]
    assert _collapsed(predicts) == ["fp32", "bf16"] * 3
