"""Every key of every session file, hand-edited to a value of the wrong kind.

Table-driven: a session whose ``session.toml``, ``order.toml`` and ``checklist.toml`` hold
every key gpusession writes is built once per test; each key in turn gets a value of
another kind (a list for a text, a text for a table, a number for a list, …), and a few
real commands run on it in-process. Each must exit 2 with one line naming the file and
the key, no traceback, and leave the files as they were.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from helpers import cli, digest, one_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NAME = "typed"
FILES = ("session.toml", "order.toml", "checklist.toml")
COMMANDS = (["show", NAME], ["order", NAME, "show"], ["checklist", NAME], ["cost", "--session", NAME],
            ["experiment", NAME, "list"])
#: Tables whose contents are free (what a run observed): only the table itself is walked.
FREE = {"environment", "demo"}


def _full_session(root: Path) -> Path:
    """A session with every key the program writes in its three TOML files."""
    from gpusession.core.experiment.plan import Experiment
    from gpusession.core.folder.experiments import define_experiment
    from gpusession.core.folder.package import Package
    from gpusession.core.folder.session import Session
    from gpusession.core.money import order
    from gpusession.core.retrieval import checklist

    start = datetime.fromisoformat("2026-11-29T10:00:00+00:00")
    s = Session.create(root, NAME, package=Package("RTX A5000", 1, 7, start))
    define_experiment(s, Experiment(
        id="e1", workload="command", values=(1, 2), context_limit=128, device="cpu",
        protocol={"classes": ["a", "b"], "metric": "macro_f1", "threshold": 0.9, "tolerance": 0.0,
                  "reference_value": 0.95, "max_degradation": 0.01, "output_format": "jsonl"},
        params={"command": ["true", "{batch}"]},
        corpus="corpus.jsonl"))
    s.update(lambda d: d.update(environment={"device": "cpu"}))
    order.set_order(s, number="ORD-1", gpu_model="RTX A5000", lots=1, days=7, preparation="pytorch",
                    at=start)
    for amount in ("55.00", "56.00"):
        order.new_payment_order(s, asset="USDT", network="TRC20", amount=amount, destination="TXyz1",
                                expires_at=start + timedelta(hours=1), now=start)
    order.record_event(s, "payment-sent", source="you", note="clicked", at=start)
    checklist.set_note(s, "g1.one-sentence", "a note")
    checklist.set_done(s, "g1.one-sentence", True, now=start)
    checklist.add_item(s, 2, "Ask IT")
    checklist.set_setting(s, "destination", "/tmp")
    checklist.set_setting(s, "retrieval_reserve_hours", 3)
    doc = s.read_doc("checklist.toml")  # what `gpusession pull` records
    doc["retrieval"] = {"verified": True, "at": start, "source": "server:/x", "note": "n",
                        "manifest": "manifest.csv", "reason": "r", "session_files": 3,
                        "session_bytes": 10, "deliverables_files": 1, "deliverables_bytes": 4}
    s.write_doc("checklist.toml", doc)
    return s.folder


def _paths(value: Any, where: str = "", key: str = "") -> Iterator[tuple[str, tuple[Any, ...]]]:
    """``(field as the error names it, path of keys/indexes)`` for every value at any depth."""
    def walk(v: Any, field: str, path: tuple[Any, ...]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        if path:
            yield field, path
        if path and path[-1] in FREE:
            return
        if isinstance(v, dict):
            for k, sub in v.items():
                yield from walk(sub, f"{field}.{k}" if field else k, (*path, k))
        elif isinstance(v, list):
            for i, sub in enumerate(v):
                yield from walk(sub, f"{field}[{i}]", (*path, i))
    yield from walk(value, where, ())


def _wrong(value: Any) -> Any:
    """A value of another kind: a list for a text, a text for a table, a number for a list…"""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, str):
        return [1]
    if isinstance(value, dict):
        return "a text"
    if isinstance(value, list):
        return 5
    if isinstance(value, datetime):
        return True
    return "a text"  # int, float


def _cases() -> list[tuple[str, str]]:
    """Every (file, field) of the full session, computed once at collection."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = _full_session(Path(tmp))
        out = []
        for name in FILES:
            doc = tomllib.loads((folder / name).read_text(encoding="utf-8"))
            out += [(name, field) for field, _ in _paths(doc)]
    return out


CASES = _cases()


def test_the_table_covers_every_file_and_the_keys_of_every_kind() -> None:
    fields = {(f, k) for f, k in CASES}
    for must in [("order.toml", "events"), ("order.toml", "payment_history"),
                 ("order.toml", "events[0].note"), ("order.toml", "payment.amount"),
                 ("checklist.toml", "items.own.1.stage"), ("checklist.toml", "settings.destination"),
                 ("session.toml", "package.lots"), ("session.toml", "experiments.e1.values[1]"),
                 ("session.toml", "experiments.e1.params.command[0]"),
                 ("session.toml", "experiments.e1.protocol.classes")]:
        assert must in fields, must
    assert len(CASES) > 80


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("typed-template")
    _full_session(root)
    return root


@pytest.mark.parametrize("file, field", CASES, ids=[f"{f}:{k}" for f, k in CASES])
def test_a_wrong_kind_in_any_key_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, template: Path, file: str, field: str,
) -> None:
    import shutil

    root = tmp_path / "sessions"
    shutil.copytree(template, root)
    folder = root / NAME
    path = folder / file
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    keys = dict(_paths(doc))[field]
    node = doc
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = _wrong(node[keys[-1]])
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    before = digest(folder)
    for command in COMMANDS:
        code, _, err = cli(capsys, root, *command)
        line = one_line(err)  # one line, no traceback
        assert code == 2, (command, err)
        assert f"{file}: {field}: expected" in line, (command, line)
    assert digest(folder) == before


@pytest.mark.parametrize("entry, field", [
    ('gpus_per_lot = 1\nsource = 5\n', 'gpu."RTX A5000".source'),
    ('gpus_per_lot = "one"\n', 'gpu."RTX A5000".gpus_per_lot'),
    ('gpus_per_lot = 1\npackage_price_usd = 5\n', 'gpu."RTX A5000".package_price_usd'),
])
def test_k7_a_session_rates_file_of_the_wrong_kind_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, template: Path, entry: str, field: str,
) -> None:
    import shutil

    root = tmp_path / "sessions"
    shutil.copytree(template, root)
    (root / NAME / "rates.toml").write_text(f'schema = 1\n[gpu."RTX A5000"]\n{entry}',
                                            encoding="utf-8")
    code, _, err = cli(capsys, root, "cost", "--session", NAME)
    assert code == 2 and "rates.toml:" in one_line(err) and f"{field}: expected" in err
