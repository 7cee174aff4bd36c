"""Terminal input survives any byte (H-23): the decoder, the parser after it, Textual's own
input thread reading through it, and the one Textual name the driver swaps (this file fails
when Textual stops looking its decoder up by that name)."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver

from gpusession.ui import driver as driver_module
from gpusession.ui.driver import (
    DECODER_LOOKUP,
    TerminalDriver,
    TerminalInputDecoder,
    lenient_incremental_decoder,
)

#: the legacy X10 mouse report of H-23: button 3 (+32), column 150 (+32), row 10 (+32)
X10_AT_COLUMN_150 = b"\x1b[M" + bytes([35, 182, 42])


def _decode_in_chunks(data: bytes, cuts: list[int]) -> str:
    dec = TerminalInputDecoder()
    out, start = [], 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        out.append(dec.decode(data[start:cut]))
        start = cut
    out.append(dec.decode(data[start:], final=True))
    return "".join(out)


def _keys(text: str) -> list[str]:
    parser = XTermParser(False)
    got = list(parser.feed(text)) + list(parser.feed(""))
    return [e.key for e in got if isinstance(e, events.Key)]


def test_h23_textual_still_looks_its_input_decoder_up_by_the_swapped_name() -> None:
    """The input thread reads the module global at call time: swapping it is enough."""
    assert DECODER_LOOKUP in LinuxDriver.run_input_thread.__code__.co_names, (
        "Textual's LinuxDriver.run_input_thread no longer looks up "
        f"{DECODER_LOOKUP!r}: find how it builds its stdin decoder now (gpusession/ui/driver.py)")
    assert hasattr(linux_driver, DECODER_LOOKUP)
    assert list(inspect.signature(LinuxDriver.run_input_thread).parameters) == ["self"]


def test_h23_the_driver_reproduces_no_textual_method() -> None:
    tree = ast.parse(Path(driver_module.__file__).read_text(encoding="utf-8"))
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert "run_input_thread" not in defined and "_run_input_thread" not in defined
    assert TerminalDriver.run_input_thread is LinuxDriver.run_input_thread


def test_h23_the_lenient_lookup_gives_the_terminal_decoder_for_utf8_only() -> None:
    assert lenient_incremental_decoder("utf-8") is TerminalInputDecoder
    assert lenient_incremental_decoder("UTF8") is TerminalInputDecoder
    assert lenient_incremental_decoder("latin-1")().decode(b"\xff") == "\xff"
    with pytest.raises(LookupError):
        lenient_incremental_decoder("no-such-codec")


@pytest.mark.skipif(os.name != "posix", reason="the Linux driver is POSIX only")
def test_h23_the_app_runs_on_the_lenient_driver(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    assert app.driver_class is TerminalDriver


def _driver_on(fd: int) -> TerminalDriver:
    """A TerminalDriver reading ``fd``, built as the app builds it (in a running loop)."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}

    async def build() -> TerminalDriver:
        return TerminalDriver(SimpleNamespace(), debug=False)  # type: ignore[arg-type]

    try:
        drv = asyncio.run(build())
    finally:
        for sig, handler in saved.items():  # the driver sets Ctrl+Z handlers: put pytest's back
            signal.signal(sig, handler)
    drv.fileno = fd
    return drv


@pytest.mark.skipif(os.name != "posix", reason="the Linux driver is POSIX only")
def test_h23_textuals_input_thread_reads_an_x10_report_and_a_lone_0xff_then_keys() -> None:
    """Textual's own input thread (not a copy) survives the bytes and still gives the keys."""
    read_fd, write_fd = os.pipe()
    drv = _driver_on(read_fd)
    seen: list[object] = []
    drv.process_message = seen.append  # type: ignore[method-assign]
    thread = threading.Thread(target=drv.run_input_thread, daemon=True)
    thread.start()
    try:
        os.write(write_fd, X10_AT_COLUMN_150 + b"2")
        time.sleep(0.3)
        os.write(write_fd, b"\xff")  # a lone byte that is not UTF-8
        time.sleep(0.3)
        os.write(write_fd, b"q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "q" not in [getattr(e, "key", None) for e in seen]:
            time.sleep(0.05)
        assert thread.is_alive(), "the input thread died on the bytes"
    finally:
        drv.exit_event.set()
        thread.join(5)
        os.close(write_fd)
        os.close(read_fd)
    keys = [e.key for e in seen if isinstance(e, events.Key)]
    assert keys[0] == "2" and keys[-1] == "q", keys  # the report is no key and swallows none


def test_h23_x10_report_past_column_95_decodes_and_is_dropped_whole() -> None:
    text = TerminalInputDecoder().decode(X10_AT_COLUMN_150 + b"q", final=True)
    assert text == "\x1b[M#\xb6*q"
    assert _keys(text) == ["q"]  # the report is no key; the key after it is not swallowed


def test_h23_x10_report_cut_across_reads_still_dropped_whole() -> None:
    for cut in range(1, len(X10_AT_COLUMN_150)):
        text = _decode_in_chunks(X10_AT_COLUMN_150 + b"2", [cut])
        assert _keys(text) == ["2"], cut


def test_h23_bytes_not_utf8_become_replacement_characters() -> None:
    assert TerminalInputDecoder().decode(b"a\xffb\xc3", final=True) == "a\ufffdb\ufffd"


def test_h23_utf8_and_escape_keys_pass_unchanged() -> None:
    dec = TerminalInputDecoder()
    assert dec.decode("é".encode()[:1]) == ""
    assert dec.decode("é".encode()[1:] + b"\x1b[A") == "é\x1b[A"
    assert dec.decode(b"\x1b") == "\x1b"  # a lone Escape is not held back


@given(st.binary(max_size=64), st.lists(st.integers(min_value=0, max_value=64), max_size=4))
def test_h23_any_bytes_in_any_reads_decode_without_error_and_alike(data: bytes, cuts: list[int]) -> None:
    whole = TerminalInputDecoder().decode(data, final=True)
    assert _decode_in_chunks(data, cuts) == whole


def test_h23_app_internals_the_crash_path_overrides_are_still_there() -> None:
    """``GpuSessionApp`` overrides ``App._handle_exception`` and ``App._fatal_error``."""
    from textual.app import App

    assert list(inspect.signature(App._handle_exception).parameters) == ["self", "error"]
    assert list(inspect.signature(App._fatal_error).parameters) == ["self"]
    src = inspect.getsource(App._handle_exception)
    assert "self._fatal_error()" in src and "self.panic(error)" in src and "self._return_code = 1" in src
