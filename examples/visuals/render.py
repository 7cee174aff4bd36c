#!/usr/bin/env python3
"""Render eighteen small PNG visuals into the folder OUTPUT: plain Python, no image library.

Usage: python3 render.py OUTPUT [--count 18]

Each visual is a 96×64 bar chart of a different series, written with ``zlib`` and
``struct`` only (a PNG is a signature, an IHDR chunk, compressed scanlines, an IEND
chunk). The bytes depend only on the visual's number, so a rerun writes the same files.
"""

from __future__ import annotations

import argparse
import struct
import sys
import zlib
from pathlib import Path

WIDTH, HEIGHT = 96, 64


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(pixels: list[bytes], width: int, height: int) -> bytes:
    """An RGB PNG of ``height`` rows of ``width`` pixels (3 bytes each)."""
    raw = b"".join(b"\x00" + row for row in pixels)  # filter type 0 on every scanline
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b""))


def visual(number: int) -> bytes:
    """Visual ``number``: six bars whose heights follow a series seeded by the number."""
    heights = [8 + (number * 7 + i * 13) % (HEIGHT - 16) for i in range(6)]
    colour = bytes(((number * 40) % 200 + 30, (number * 90) % 200 + 30, (number * 20) % 200 + 30))
    rows = []
    for y in range(HEIGHT):
        row = bytearray(b"\xff\xff\xff" * WIDTH)
        for i, h in enumerate(heights):
            if HEIGHT - 4 - y < h:
                for x in range(6 + i * 15, 6 + i * 15 + 10):
                    row[3 * x:3 * x + 3] = colour
        if y == HEIGHT - 4:
            row[:] = b"\x20\x20\x20" * WIDTH  # the axis
        rows.append(bytes(row))
    return png_bytes(rows, WIDTH, HEIGHT)


def main(argv: list[str]) -> int:
    """Write ``visual-01.png`` … into OUTPUT (made if needed)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output")
    p.add_argument("--count", type=int, default=18)
    args = p.parse_args(argv)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, args.count + 1):
        (out / f"visual-{n:02d}.png").write_bytes(visual(n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
