#!/usr/bin/env python3
"""The accept rule of the visuals example: every PNG is at least 64×48 pixels and not blank.

Usage: python3 check.py OUTPUT

Exit 0 (accepted) or 1 (rejected); the first line printed is the reason gpusession keeps.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

MIN_WIDTH, MIN_HEIGHT = 64, 48


def problem(path: Path) -> str | None:
    """Why ``path`` is not a readable visual, ``None`` when it is."""
    data = path.read_bytes()
    width, height = struct.unpack(">II", data[16:24])
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return f"{path.name} is {width}×{height} px, below {MIN_WIDTH}×{MIN_HEIGHT}"
    at, idat = 8, b""
    while at < len(data):
        (size,) = struct.unpack(">I", data[at:at + 4])
        kind = data[at + 4:at + 8]
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + size]
        at += 12 + size
    pixels = zlib.decompress(idat)
    if len(set(pixels)) <= 2:
        return f"{path.name} is blank"
    return None


def main(argv: list[str]) -> int:
    """Judge the folder ``argv[0]``."""
    files = sorted(Path(argv[0]).glob("*.png"))
    for f in files:
        why = problem(f)
        if why:
            print(f"rejected: {why}")
            return 1
    print(f"{len(files)} visuals readable, at least {MIN_WIDTH}×{MIN_HEIGHT} px")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
