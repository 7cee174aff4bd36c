"""Terminal input that survives any byte (H-23): the Linux driver the TUI runs on.

Why it exists: Textual 8.2 decodes stdin with a strict incremental UTF-8 decoder, so
one byte that is not UTF-8 kills its input thread and the app (still open upstream:
github.com/Textualize/textual/issues/6456 and /6668). A terminal rebuilt under a
running app (tmux reattach, an ssh reconnect) can fall back to legacy X10 mouse reports,
``ESC [ M Cb Cx Cy``, whose coordinates past column 95 are single bytes ≥ 0x80. Who calls it: :class:`GpuSessionApp`
passes :class:`TerminalDriver` as its ``driver_class`` on POSIX.

How: Textual's ``LinuxDriver.run_input_thread`` asks ``textual.drivers.linux_driver``'s
module global :data:`DECODER_LOOKUP` (``getincrementaldecoder``) for its UTF-8 decoder
each time the input thread starts; :class:`TerminalDriver` swaps only that name
(:func:`install_lenient_decoder`), so no Textual method is reproduced here.
``tests/ui/test_driver.py`` fails when Textual stops looking the decoder up by that name.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING, Any

from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver

if TYPE_CHECKING:
    from typing_extensions import Buffer

#: The name ``LinuxDriver.run_input_thread`` looks its stdin decoder up by, at call time.
DECODER_LOOKUP = "getincrementaldecoder"

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


def lenient_incremental_decoder(encoding: str) -> Any:
    """:func:`codecs.getincrementaldecoder`, with :class:`TerminalInputDecoder` for UTF-8 (H-23).

    Args:
        encoding: a codec name (Textual asks for ``"utf-8"``).

    Returns:
        The incremental decoder class; any other codec is Python's own.

    Raises:
        LookupError: an unknown codec, as :func:`codecs.getincrementaldecoder` does.
    """
    if codecs.lookup(encoding).name == "utf-8":
        return TerminalInputDecoder
    return codecs.getincrementaldecoder(encoding)


def install_lenient_decoder() -> None:
    """Make Textual's Linux driver read stdin with :class:`TerminalInputDecoder` (idempotent).

    The name is swapped in ``textual.drivers.linux_driver`` for the process: every
    Linux driver reads leniently from its next input thread on (the app runs one).
    """
    setattr(linux_driver, DECODER_LOOKUP, lenient_incremental_decoder)


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, reading stdin with :class:`TerminalInputDecoder` (H-23)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        install_lenient_decoder()  # before the input thread starts (start_application_mode)
        super().__init__(*args, **kwargs)
