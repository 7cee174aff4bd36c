"""The pull's narrow reader of ``manifest_written`` lines agrees with the typed journal reader (S4, A5)."""

from __future__ import annotations

import json
import subprocess
import sys

from gpusession.core.events import ManifestWrittenRecord
from gpusession.core.events.manifest_lines import manifest_lines
from gpusession.core.events.reading import decode_line

_GOOD = {"event": "manifest_written", "v": 1, "at": "2026-11-29T12:30:00+00:00", "path": "/srv/s/manifest.csv",
         "deliverables": "/srv/out", "files": 3, "total_bytes": 10, "skipped": 0}

#: Lines that record a manifest or look like one: good, misfit fields, not JSON, another event.
_LINES = [
    json.dumps(_GOOD),
    json.dumps({**_GOOD, "copy_in_deliverables": "/srv/out/manifest.csv", "extra": [1, 2]}),
    json.dumps({"event": "manifest_written"}),  # every field absent: read, all None
    json.dumps({**_GOOD, "path": 12}),  # a field of another type: unreadable in both
    json.dumps({**_GOOD, "files": True}),
    json.dumps({**_GOOD, "files": 2**63}),
    json.dumps({**_GOOD, "v": "1"}),
    json.dumps({**_GOOD, "at": None, "deliverables": None}),
    json.dumps({**_GOOD, "event": "manifest_written_later"}),
    json.dumps({**_GOOD, "event": "run_started"}).replace("run_started", "manifest_written", 0),
    json.dumps(_GOOD).replace('"manifest_written"', '"\\u006danifest_written"'),
    '{"event": "manifest_written", "path": ' + "[" * 100 + "]" * 100 + "}",  # nested too deep
    '{"event": "manifest_written", "path": "/x"',  # cut by a crash
    json.dumps([_GOOD]),
]


def _typed(line: str, number: int) -> tuple[object, ...] | None:
    rec = decode_line(line, number)
    if not isinstance(rec, ManifestWrittenRecord):
        return None
    return (number, rec.at, rec.path, rec.deliverables, rec.copy_in_deliverables)


def test_s4_the_narrow_reader_keeps_the_records_the_typed_reader_types_as_manifests() -> None:
    filler = json.dumps({"event": "run_started", "at": "2026-11-29T12:00:00+00:00", "run": 1})
    lines: list[str] = []
    for line in _LINES:
        lines += [filler, line]
    raw = ("\n".join(lines) + "\n").encode()
    want = [t for n, line in enumerate(lines, start=1) if (t := _typed(line, n)) is not None]
    got = [(r.line, r.at, r.path, r.deliverables, r.copy_in_deliverables) for r in manifest_lines(raw)]
    assert got == want
    assert len(want) == 6  # the cases above that read: the test can tell the two apart


def test_a5_a_pull_loads_no_event_class_nor_the_registry() -> None:
    """Start-up of a pull: the record classes are not needed to find a manifest in the journal."""
    code = ("import sys, gpusession.core.copyhome.pull, gpusession.commands.pull_cmd; "
            "print(sorted(m for m in sys.modules if m.startswith('gpusession.core.events.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["gpusession.core.events.manifest_lines", "gpusession.core.events.scan"]
