"""Terminal input survives any byte (H-23): the decoder, the parser after it, and the
Textual internal the driver copies (this file fails when Textual changes it)."""

from __future__ import annotations

import hashlib
import inspect
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from gpusession.ui.driver import TerminalDriver, TerminalInputDecoder

#: the legacy X10 mouse report of H-23: button 3 (+32), column 150 (+32), row 10 (+32)
X10_AT_COLUMN_150 = b"\x1b[M" + bytes([35, 182, 42])
#: sha256 of Textual 8.2.8's ``LinuxDriver.run_input_thread`` source, which driver.py copies
UPSTREAM_RUN_INPUT_THREAD_SHA256 = "d796af6d69db337d6fa6bd463984f7d17188d991dbb22f60efb92a8a9619507c"


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


def test_h23_upstream_run_input_thread_is_the_one_copied() -> None:
    src = inspect.getsource(LinuxDriver.run_input_thread)
    assert hashlib.sha256(src.encode()).hexdigest() == UPSTREAM_RUN_INPUT_THREAD_SHA256, (
        "Textual's LinuxDriver.run_input_thread changed: compare it with "
        "gpusession/ui/driver.py's copy, update the copy, this hash and pyproject's textual pin")
    assert list(inspect.signature(LinuxDriver.run_input_thread).parameters) == ["self"]
    assert "getincrementaldecoder" in src  # still a strict decoder upstream: the copy is needed


@pytest.mark.skipif(os.name != "posix", reason="the Linux driver is POSIX only")
def test_h23_the_app_runs_on_the_lenient_driver(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    assert app.driver_class is TerminalDriver
    assert TerminalDriver.run_input_thread is not LinuxDriver.run_input_thread


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
