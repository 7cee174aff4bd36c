"""The in-flight line of headless ``run`` on a fake clock: due each interval, in place on a
terminal (erased before the next line), a line of its own in a log, gone once the run ends."""

from __future__ import annotations

import pytest

from gpusession.commands.inflight import InFlight, elapsed_words
from gpusession.core.events import Loaded, RowAppended, RunStarted, WorkerStarted


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def _flight(terminal: bool) -> tuple[InFlight, Clock, list[str]]:
    out: list[str] = []
    clock = Clock()
    return InFlight(out.append, terminal=terminal, interval_s=10, clock=clock, columns=lambda: 80), clock, out


def _run(done: int = 2) -> RunStarted:
    return RunStarted(run_key="e:warm:batch-8:3", variant_id="batch-8", phase="warm", run_index=3,
                      done=done, total=18)


def test_nothing_is_said_before_the_interval_nor_when_nothing_is_in_flight() -> None:
    flight, clock, out = _flight(terminal=False)
    clock.now_s += 30
    assert flight.tick() is None  # nothing started
    flight.on_event(_run())
    clock.now_s += 9.9
    assert flight.tick() is None and out == []


def test_a_log_gets_one_plain_line_each_interval_however_late_the_tick() -> None:
    flight, clock, out = _flight(terminal=False)
    flight.on_event(_run())
    clock.now_s += 10
    assert flight.tick() == "[  3/18] warm batch-8 run 3 in flight: 10 s"
    assert flight.tick() is None  # not due again yet
    clock.now_s += 25  # a late tick: one line, the next due at 40 s
    assert flight.tick() == "[  3/18] warm batch-8 run 3 in flight: 35 s"
    clock.now_s += 4
    assert flight.tick() is None
    clock.now_s += 1
    assert flight.tick() is not None
    assert out == ["[  3/18] warm batch-8 run 3 in flight: 10 s\n",
                   "[  3/18] warm batch-8 run 3 in flight: 35 s\n",
                   "[  3/18] warm batch-8 run 3 in flight: 40 s\n"]


def test_a_terminal_gets_the_line_in_place_erased_before_the_next_line() -> None:
    flight, clock, out = _flight(terminal=True)
    flight.on_event(_run())
    clock.now_s += 70
    flight.tick()
    assert out == ["\r\x1b[K[  3/18] warm batch-8 run 3 in flight: 1 min 10 s"]
    flight.say("[  3/18] warm  batch-8    run 3   70.1 s, corpus accepted")
    assert out[1:] == ["\r\x1b[K", "[  3/18] warm  batch-8    run 3   70.1 s, corpus accepted\n"]
    flight.say("next")  # nothing in place any more: nothing to erase
    assert out[3:] == ["next\n"]


def test_the_line_ends_with_the_run_and_a_load_is_in_flight_too() -> None:
    flight, clock, out = _flight(terminal=True)
    flight.on_event(WorkerStarted(worker="w1", pid=42))
    clock.now_s += 10
    assert flight.tick() == "worker w1 loading in flight: 10 s"
    flight.on_event(Loaded(worker="w1", elapsed_s=10.0))
    assert out[-1] == "\r\x1b[K"  # the stale line is erased at once
    clock.now_s += 10  # then its warm-up, until its first run starts
    assert flight.tick() == "worker w1 warm-up in flight: 10 s"
    flight.on_event(_run())
    clock.now_s += 5
    assert flight.tick() is None  # the run counts from its own start
    flight.on_event(RowAppended(row=None, done=3, total=18))
    clock.now_s += 50
    assert flight.tick() is None
    flight.on_event(_run())
    flight.on_event(RowAppended(row=None, done=3, total=18))
    clock.now_s += 50
    assert flight.tick() is None


def test_elapsed_words() -> None:
    assert [elapsed_words(s) for s in (0.4, 59.9, 60, 3599, 3600, 7385)] == [
        "0 s", "59 s", "1 min 00 s", "59 min 59 s", "1 h 00 min", "2 h 03 min"]


def test_h66_in_a_36_column_pane_the_in_place_line_never_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusession.core.files.textio import fit_columns

    monkeypatch.setenv("COLUMNS", "36")  # the terminal's width as shutil.get_terminal_size reads it
    out: list[str] = []
    clock = Clock()
    flight = InFlight(out.append, terminal=True, interval_s=10, clock=clock)
    flight.on_event(_run())
    for _ in range(7):  # a minute of lines rewritten in place
        clock.now_s += 10
        assert flight.tick() is not None
    for written in out:
        line = written.removeprefix("\r\x1b[K")
        assert "\n" not in line and len(line) <= 35, line  # one row, the last column free
    assert out[-1] == "\r\x1b[K[  3/18] warm batch-8 …: 1 min 10 s"  # the time kept whole
    assert fit_columns("short", 36) == "short" and fit_columns("界" * 40, 10) == "界" * 4 + "…"
