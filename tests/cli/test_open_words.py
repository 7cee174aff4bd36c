"""``gpusession NAME`` reads its words without argparse, as the full parser reads them (A5).

:func:`gpusession.cli.open_words` takes only ``[--sessions-dir DIR] open [NAME]``; every
other form is left to the full parser, which answers it (help, an error in one line).
"""

from __future__ import annotations

import pytest

from gpusession.cli import build_parser, open_words

#: The forms read without argparse (``open`` as ``cli`` inserts it before a bare NAME).
READ = [
    ["open"],
    ["open", "demo"],
    ["open", "my.session-01"],
    ["--sessions-dir", "/tmp/s", "open", "demo"],
    ["--sessions-dir=/tmp/s", "open", "demo"],
    ["--sessions-dir", "/tmp/s", "open"],
    ["--sessions-dir=/tmp/with space", "open", "a name with=equals"],
]

#: The forms left to the full parser.
LEFT = [
    [],
    ["show", "demo"],
    ["open", "--help"],
    ["open", "-h"],
    ["open", "demo", "extra"],
    ["open", "--sessions-dir", "/tmp/s", "demo"],
    ["open", ""],
    ["--sessions-dir", "-x", "open"],
    ["--sessions-dir=", "open", "demo"],
    ["--sessions", "/tmp/s", "open", "demo"],  # an abbreviation argparse would take
    ["--sessions-dir", "/a", "--sessions-dir", "/b", "open"],
    ["open", "-"],
]


@pytest.mark.parametrize("words", READ)
def test_a5_open_words_read_as_the_full_parser_reads_them(words: list[str]) -> None:
    fast = open_words(words)
    full = build_parser("open").parse_args(words)
    assert fast is not None
    assert (fast.name, fast.sessions_dir, fast.command) == (full.name, full.sessions_dir, full.command)


@pytest.mark.parametrize("words", LEFT)
def test_a5_any_other_form_is_left_to_the_full_parser(words: list[str]) -> None:
    assert open_words(words) is None
