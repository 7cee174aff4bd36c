#!/bin/sh
# The README quick start's own program, for tests/test_docs_commands_run.py: reads the
# corpus ($1, JSONL with "id" and "text"), writes one {"id", "label"} line per record to
# $2 (label "a" when the text holds "alpha", else "b"); $3 is the batch size, unused here.
exec python3 -c '
import json, sys
with open(sys.argv[1], encoding="utf-8") as src, open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in src:
        if line.strip():
            r = json.loads(line)
            out.write(json.dumps({"id": r["id"], "label": "a" if "alpha" in r["text"] else "b"}) + "\n")
' "$1" "$2"
