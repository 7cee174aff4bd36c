"""Terminal input that survives any byte (H-23): the Linux driver the TUI runs on.

Why it exists: Textual 8.2.8 decodes stdin with a strict incremental UTF-8 decoder, so
one byte that is not UTF-8 kills its input thread and the app (still open upstream:
github.com/Textualize/textual/issues/6456 and /6668). A terminal rebuilt under a
running app (tmux reattach, an ssh reconnect) can fall back to legacy X10 mouse reports,
``ESC [ M Cb Cx Cy``, whose coordinates past column 95 are single bytes ≥ 0x80. Who calls it: :class:`GpuSessionApp`
passes :class:`TerminalDriver` as its ``driver_class`` on POSIX.

It relies on a Textual internal, ``LinuxDriver.run_input_thread`` (copied below with the
decoder swapped): pyproject.toml pins Textual's version range and
``tests/ui/test_driver.py`` fails when the upstream method changes.
"""

from __future__ import annotations

import codecs
import os
import selectors
from typing import TYPE_CHECKING

from textual._loop import loop_last
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

if TYPE_CHECKING:
    from typing_extensions import Buffer

#: the start of a legacy X10 mouse report; its three payload bytes follow
X10_REPORT = b"\x1b[M"
#: payload bytes of one X10 report (button, column, row; each the value + 32)
X10_PAYLOAD_BYTES = 3


class TerminalInputDecoder(codecs.IncrementalDecoder):
    """Bytes from the terminal → text, never raising (H-23).

    UTF-8, with every byte that is not UTF-8 replaced by U+FFFD; the three payload bytes
    of a legacy X10 mouse report (``ESC [ M`` + 3 bytes) become one character each
    (Latin-1), so Textual's parser consumes the report whole (``\\x1b[M...``) and drops
    it, and never swallows the key typed after it. Reports cut across reads are joined.
    Textual never asks for the UTF-8 mouse encoding (mode 1005), so an X10 payload is
    always three raw bytes.
    """

    def __init__(self, errors: str = "replace") -> None:
        super().__init__(errors)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._matched = 0  # bytes of ``ESC [ M`` seen at the end of the input so far
        self._payload_left = 0  # X10 payload bytes still to come

    def decode(self, input: Buffer, final: bool = False) -> str:  # noqa: A002 - the codecs signature
        """Decode one read; ``final``: no more input (a partial sequence becomes U+FFFD)."""
        data = bytes(input)
        if not self._matched and not self._payload_left and X10_REPORT not in data \
                and not data.endswith((b"\x1b", b"\x1b[")):
            return self._utf8.decode(data, final)
        pieces: list[str] = []
        run = bytearray()
        for byte in data:
            if self._payload_left:
                pieces.append(chr(byte))
                self._payload_left -= 1
                continue
            run.append(byte)
            if byte == 0x1B:
                self._matched = 1
            elif self._matched == 1 and byte == 0x5B:
                self._matched = 2
            elif self._matched == 2 and byte == 0x4D:
                self._matched = 0
                pieces.append(self._utf8.decode(bytes(run)))
                run.clear()
                self._payload_left = X10_PAYLOAD_BYTES
            else:
                self._matched = 0
        pieces.append(self._utf8.decode(bytes(run), final))
        if final:
            self._matched = self._payload_left = 0
        return "".join(pieces)

    def reset(self) -> None:
        self._utf8.reset()
        self._matched = self._payload_left = 0


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, reading stdin with :class:`TerminalInputDecoder` (H-23)."""

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (Textual 8.2.8's method, lenient decoder)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)

        fileno = self.fileno
        EVENT_READ = selectors.EVENT_READ  # noqa: N806 - as upstream

        parser = XTermParser(self._debug)
        feed = parser.feed
        tick = parser.tick

        decode = TerminalInputDecoder().decode  # upstream: a strict UTF-8 decoder
        read = os.read

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]],
            final: bool = False,
        ) -> None:
            for last, (_selector_key, mask) in loop_last(selector_events):
                if mask & EVENT_READ:
                    unicode_data = decode(read(fileno, 1024 * 4), final=final and last)
                    if not unicode_data:
                        # This can occur if the stdin is piped
                        break
                    for event in feed(unicode_data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process_selector_events(selector.select(0.1))
            selector.unregister(self.fileno)
            process_selector_events(selector.select(0.1), final=True)

        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
