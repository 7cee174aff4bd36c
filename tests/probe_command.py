"""A probe command: it writes down what it received, so a test checks each value reached the program (A3).

Usage: ``python3 probe_command.py LOG CORPUS OUTPUT [ARG ...]``. Appends one JSON line to
LOG per call: ``{"args": [ARG, ...], "output": OUTPUT, "env": {every GPUSESSION_PARAM_*,
GPUSESSION_PRECISION, GPUSESSION_BATCH, GPUSESSION_SEED}}``, then writes each corpus record's id and label
to OUTPUT, so the run's output is accepted. Standard library only: a command workload
runs it in a process of its own.
"""

from __future__ import annotations

import json
import os
import sys

KEPT = ("GPUSESSION_PRECISION", "GPUSESSION_BATCH", "GPUSESSION_SEED")


def main(argv: list[str]) -> int:
    log, corpus, output, *args = argv
    env = {k: v for k, v in os.environ.items() if k.startswith("GPUSESSION_PARAM_") or k in KEPT}
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"args": args, "output": output, "env": env}) + "\n")
    with open(corpus, encoding="utf-8") as src, open(output, "w", encoding="utf-8") as out:
        for line in src:
            if line.strip():
                rec = json.loads(line)
                out.write(json.dumps({"id": rec["id"], "label": rec["label"]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
