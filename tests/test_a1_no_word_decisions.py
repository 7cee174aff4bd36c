"""A1: no module decides anything from rendered words, outside the old-folder adapter and the parsers.

An AST scan of ``src/gpusession`` finds the word matches that decide: ``X.startswith(…)`` /
``X.endswith(…)``, ``"…" in X``, ``re.search(…, X)`` (and a compiled pattern's
``.search(X)``, ``.match(X)``, ``.sub(…, X)``…) and ``x.something_words() == "…"``, ``X.replace(…)`` of more than a character, where
``X`` is named like text a person reads (``text``, ``line``, ``words``, ``notes``,
``message``, ``outcome``, ``verdict``, ``title``, ``reason``, ``error``…, or a call of
``*_words()``). Each hit must be in a listed place:

- :data:`ADAPTER`: the one module that reads old session folders' words
  (:mod:`gpusession.core.records.old_words`);
- :data:`PARSERS`: input parsers of files, arguments and outside programs' output, and
  the text primitives (escaping, secrets) -- reading words is their job;
- :data:`PENDING`: word decisions found and not yet typed, each named with why it stays
  (the list only shrinks: a new hit anywhere else fails this test).

A new ``if words.startswith("REJECTED")`` in a pane, a report or a command fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gpusession

SRC = Path(gpusession.__file__).resolve().parent

#: Names of values that hold words a person reads (a variable, attribute, key or call).
_WORDY = re.compile(
    r"(?:^|_)(?:text|line|lines|words?|notes?|message|msg|said|outcome|verdict|title|remarks|reason|"
    r"error|err|stderr|stdout|label|heading|sentence|summary|last_outcome)$")
_PATTERN_CALLS = ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split")

#: The one old-folder adapter: every function may read words (A1: "named as such").
ADAPTER = "core/records/old_words.py"

#: Parsers and text primitives, by module (``"*"``: every function) or by function, with why.
PARSERS: dict[str, dict[str, str]] = {
    "bench/program_digest.py": {"program_files": "the words of the user's command: which name the program's files (input parsing)"},
    "bench/ranks.py": {"*": "torch ranks' stderr and torchrun's error file: an outside program's output"},
    "bench/stacks.py": {"*": "Python tracebacks of a worker: an outside program's output"},
    "bench/phases.py": {"is_oom": "the exception text of torch or a workload: outside code's words"},
    "bench/run_words.py": {"torch_missing": "ImportError's message from Python"},
    "cli.py": {"*": "command-line arguments"},
    "commands/argtext.py": {"*": "command-line arguments"},
    "commands/status_cmd.py": {"parse_fast": "command-line arguments", "_shown_folder": "a path argument"},
    "commands/parsers/run_cmds.py": {"_device": "a --device argument"},
    "commands/validate_cmd.py": {"_run_name": "a --name argument", "_slug": "a file name argument"},
    "commands/parser.py": {"OneLineParser.error": "argparse's own message"},
    "commands/reference.py": {"_md": "the docs' Markdown, rendered for --help"},
    "commands/fish_completion.py": {"_short": "argparse's help strings, shortened for fish"},
    "core/copyhome/manifest.py": {"check_relative": "a manifest's path cell"},
    "core/copyhome/probe.py": {"list_files": "rsync --list-only output"},
    "core/copyhome/pull.py": {"*": "rsync's and ssh's output and errors"},
    "core/copyhome/throughput.py": {"parse_stats": "rsync --stats output"},
    "core/events/reading.py": {"cut_run_start": "the bytes of a journal line cut by a crash"},
    "core/files/detectors.py": {"*": "the secret check of free text"},
    "core/files/secretgate.py": {"*": "the secret check of free text"},
    "core/files/secrets.py": {"*": "the secret check of free text"},
    "core/files/textio.py": {"*": "text primitives: line ends, JSON-safe text"},
    "core/files/frozen.py": {"_is_classvar": "a type annotation's text"},
    "core/files/nesting.py": {"_scan": "a JSON or TOML document's bytes, scanned for its nesting depth"},
    "core/folder/package.py": {"parse_start": "a --start argument"},
    "core/gpu/nvml.py": {"RunMeter.start": "NVML's error text: an outside library's words"},
    "core/money/cost.py": {"parse_plan": "a --plan argument"},
    "core/money/rates.py": {"_model_words": "a GPU model's name as a person or a rates file writes it"},
    "core/records/summary.py": {"_decimal": "a number's own digits"},
    "core/records/variants.py": {"_p_words": "a p-value's own digits"},
    "core/retrieval/report.py": {"_cell": "a number's own digits"},
    "core/retrieval/mdtext.py": {"*": "Markdown escaping of text written into the report"},
    "core/retrieval/next_session.py": {"_named_files": "a command's argument template"},
    "core/retrieval/checklist.py": {"_item": "the checklist file's template, its {session} filled"},
    "core/validation/read.py": {"*": "the output file being validated (V4)"},
    "core/validation/read_jsonl.py": {"*": "the output file being validated (V4)"},
    "core/validation/accept_rule.py": {"format_problem": "a deliverable file being checked (S9)"},
    "ui/palette.py": {"GpuSessionCommands.search": "the person's query in the command palette"},
}

#: Word decisions found and not yet typed: (module, function) → why it stays for now.
PENDING: dict[tuple[str, str], str] = {
    ("core/validation/report.py", "without_output_digest"):
        "the report groups notes less the output digest; needs the digest as its own typed remark",
    ("core/retrieval/compare.py", "Comparison.markdown"):
        "an indented line of the comparison is a list item; needs the lines as typed items",
    ("core/retrieval/report.py", "_said_once"):
        "a probe's long parenthesis said again reads '(as above)': a rendering; needs the probe's facts typed",
    ("ui/header.py", "order_words"): "prefixes core's order line; needs a typed order state",
}


def word_decisions(source: str) -> list[tuple[str, int, str]]:
    """``(function, line, what)`` for each word match that decides, in ``source`` (a module's text)."""

    def name_of(n: ast.AST) -> str:
        if isinstance(n, ast.Name):
            return n.id
        if isinstance(n, ast.Attribute):
            return n.attr
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
            return str(n.slice.value)
        if isinstance(n, ast.BoolOp):
            return next((x for x in (name_of(v) for v in n.values) if x), "")
        if isinstance(n, ast.Call):
            f = n.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called == "str" and n.args:
                return name_of(n.args[0])
            if called == "get" and n.args and isinstance(n.args[0], ast.Constant):
                return str(n.args[0].value)
            return called
        return ""

    def wordy(n: ast.AST) -> bool:
        name = name_of(n)
        return bool(name) and (_WORDY.search(name) is not None or name in ("describe", "words", "lines"))

    def hit(n: ast.AST) -> str | None:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            f, args = n.func, n.args
            if f.attr in ("startswith", "endswith") and wordy(f.value):
                return f"{name_of(f.value)}.{f.attr}(…)"
            if (f.attr == "replace" and wordy(f.value) and args  # another module's sentence rewritten
                    and not (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
                             and len(args[0].value) <= 3)):
                return f"{name_of(f.value)}.replace(…)"
            on_re = isinstance(f.value, ast.Name) and f.value.id == "re"
            if f.attr in _PATTERN_CALLS and (f.attr != "split" or on_re):  # shlex.split: arguments
                at = (1 if on_re else 0) + (1 if f.attr in ("sub", "subn") else 0)  # re.sub(p, repl, subject)
                subject = args[at] if len(args) > at else None
                if subject is not None and wordy(subject):
                    return f"{'re' if on_re else name_of(f.value)}.{f.attr}(… {name_of(subject)})"
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            left, right, op = n.left, n.comparators[0], n.ops[0]
            if (isinstance(op, (ast.In, ast.NotIn)) and isinstance(left, ast.Constant)
                    and isinstance(left.value, str) and wordy(right)):
                return f"{left.value!r} in {name_of(right)}"
            if (isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant) and isinstance(right.value, str)
                    and isinstance(left, ast.Call) and name_of(left).endswith("_words")):
                return f"{name_of(left)}() == {right.value!r}"
            if (isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant) and isinstance(right.value, str)
                    and " " in right.value.strip() and wordy(left)):  # a sentence compared: words deciding
                return f"{name_of(left)} == {right.value!r}"
        return None

    out: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{where}.{child.name}" if where else child.name
            found = hit(child)
            if found is not None:
                out.append((where or "<module>", getattr(child, "lineno", 0), found))
            visit(child, inner)

    visit(ast.parse(source), "")
    return out


def _outer(function: str) -> str:
    """``Class.method`` stays; a nested function is listed under its outermost named function or method."""
    parts = function.split(".")
    return ".".join(parts[:2]) if parts and parts[0][:1].isupper() else parts[0]


def _allowed(module: str, function: str) -> bool:
    if module == ADAPTER:
        return True
    allowed = PARSERS.get(module, {})
    return "*" in allowed or _outer(function) in allowed or (module, _outer(function)) in PENDING


def _unlisted() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        for function, line, what in word_decisions(path.read_text("utf-8")):
            if not _allowed(module, function):
                found.append(f"{module}:{line} {function}: {what}")
    return found


def test_a1_no_module_decides_from_rendered_words_outside_the_adapter_and_the_parsers() -> None:
    assert _unlisted() == []


def test_a1_every_listed_place_still_matches_words() -> None:
    """An entry whose word match is gone is struck off (the lists only shrink)."""
    hits: set[tuple[str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        hits |= {(module, _outer(f)) for f, _, _ in word_decisions(path.read_text("utf-8"))}
    stale = [k for k in PENDING if k not in hits]
    stale += [(m, f) for m, fs in PARSERS.items() for f in fs if f != "*" and (m, f) not in hits]
    stale += [(m, "*") for m, fs in PARSERS.items() if "*" in fs and not any(h[0] == m for h in hits)]
    assert stale == []
    assert any(h[0] == ADAPTER for h in hits)  # the adapter is where old words are read


def test_a1_the_scan_finds_a_planted_word_decision() -> None:
    """Each kind of match is found in a planted module, and a typed decision is not."""
    planted = '''
def colour(line, row):
    if line.verdict_words().startswith("REJECTED"):
        return "red"
    if "other GPU processes: none" in row["notes"]:
        return "quiet"
    if re.search(r"energy (\\d+) J", notes):
        return "energy"
    if ENERGY.search(text):
        return "energy"
    if line.outcome_words() != "all measured":
        return "cut"
    return "plain"


def typed(line, row):
    return "red" if line.any_rejected else ("quiet" if row.load_quiet else "plain")
'''
    found = word_decisions(planted)
    assert [(f, what.split("(")[0].split(" ")[0]) for f, _, what in found] == [
        ("colour", "verdict_words.startswith"), ("colour", "'other"), ("colour", "re.search"),
        ("colour", "ENERGY.search"), ("colour", "outcome_words")]
    assert not any(f == "typed" for f, _, _ in found)


def test_a1_a_planted_decision_in_a_pane_fails_the_scan(tmp_path: Path) -> None:
    """The module-level check itself fails on a new hit outside the lists (shown on a copy)."""
    module = "ui/panes/run_words.py"
    text = (SRC / module).read_text("utf-8") + '\n\ndef red(words):\n    return words.startswith("REJECTED")\n'
    hits = [(f, what) for f, _, what in word_decisions(text) if not _allowed(module, f)]
    assert hits == [("red", "words.startswith(…)")]
