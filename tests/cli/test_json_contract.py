"""One JSON contract: every ``--json`` output carries ``schema_version`` and validates
against its JSON Schema in ``docs/json/``; one fact has one key across list, show, status.

The schemas are checked by a small walker (``type``, ``const``, ``enum``, ``required``,
``properties``, ``items``): the subset the schemas use, so no validator is installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

from gpusession.core.folder.session import Session

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "json"
TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[kind])


def check(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """The places where ``value`` breaks ``schema`` (empty: it validates)."""
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            return [f"{where}: expected {'/'.join(kinds)}, got {type(value).__name__} {value!r:.60}"]
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        problems += [f"{where}: missing {key!r}" for key in schema.get("required", ()) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += check(value[key], sub, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += check(item, schema["items"], f"{where}[{i}]")
    return problems


def _valid(name: str, out: str) -> dict[str, Any]:
    doc = json.loads(out)
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    problems = check(doc, schema)
    assert not problems, problems
    return doc


def test_the_walker_can_fail() -> None:
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
    assert check({"a": 1}, schema) == []
    assert check({"a": "1"}, schema) and check({}, schema) and check({"a": True}, schema)


def test_c6_every_schema_asks_for_schema_version() -> None:
    names = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
    assert names, SCHEMAS
    for p in SCHEMAS.glob("*.schema.json"):
        schema = json.loads(p.read_text(encoding="utf-8"))
        assert "schema_version" in schema["required"], p.name


@pytest.fixture
def measured(session: Session) -> Session:
    from gpusession.core.records.results import ResultRow

    session.results.append(ResultRow(experiment_id="e", variant_id="v", phase="warm", run_index=1,
                                      elapsed_seconds=0.5))
    return session


def test_c6_list_show_status_validate_and_say_one_fact_under_one_key(
        measured: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = _valid("list", cli(capsys, sessions_root, "list", "--json")[1])
    shown = _valid("show", cli(capsys, sessions_root, "show", measured.name, "--json")[1])
    status = _valid("status", cli(capsys, sessions_root, "status", measured.name, "--json")[1])
    one = next(s for s in listed["sessions"] if s["name"] == measured.name)
    for key in ("name", "result_rows", "accepted_corpora"):
        assert one[key] == shown[key] == status[key], key
    assert one["package"]["end"] == shown["package"]["end"] == status["package"]["end"]
    assert shown["result_rows"] == 1
    for doc in (one, shown, status):  # the older duplicates are gone
        assert not {"session", "rows", "runs", "accepted_unique_corpora", "package_end"} & set(doc), doc.keys()


def _cost_and_compare(capsys: pytest.CaptureFixture[str], root: Path, name: str,
                      other: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``cost NAME --json`` and NAME's item of ``compare NAME OTHER --json``, both validated."""
    code, out, err = cli(capsys, root, "cost", name, "--json")
    assert code == 0, err
    cost = _valid("cost", out)
    code, out, err = cli(capsys, root, "compare", name, other, "--json")
    assert code in (0, 3), err
    compared = _valid("compare", out)
    assert cost["schema_version"] == compared["schema_version"] == 2  # keys renamed: the version says so
    return cost, next(s for s in compared["sessions"] if s["name"] == name)


def test_c6_cost_and_compare_say_the_facts_of_list_show_status_under_their_keys(
        measured: Session, new_session: Any, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = new_session(name="other")
    listed = _valid("list", cli(capsys, sessions_root, "list", "--json")[1])
    one = next(s for s in listed["sessions"] if s["name"] == measured.name)
    shown = _valid("show", cli(capsys, sessions_root, "show", measured.name, "--json")[1])
    status = _valid("status", cli(capsys, sessions_root, "status", measured.name, "--json")[1])
    cost, compared = _cost_and_compare(capsys, sessions_root, measured.name, other.name)
    for key in ("name", "accepted_corpora", "package"):
        assert one[key] == shown[key] == status[key] == cost[key] == compared[key], key
    assert shown["package"]["gpu_model"] == "RTX A5000" and shown["package"]["end"] is not None
    assert cost["deliverables"] == compared["deliverables"] == shown["deliverables"]
    for doc in (cost, compared):  # the older keys of the same facts are gone
        assert not {"accepted_unique", "gpu_model", "days", "lots", "unit"} & set(doc), doc.keys()
    assert compared["accepted_count"] == cost["accepted_count"]  # what the cost divides by, one key
    code, out, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                         "--accepted-results", "18", "--json")
    assert code == 0, err
    given = _valid("cost", out)  # figures given on the line: no session's facts
    assert given["package"] == {"gpu_model": "RTX A5000", "lots": 1, "days": 7, "start": None, "end": None}
    assert (given["accepted_count"], given["accepted_corpora"], given["deliverables"]) == (18, None, None)
    assert given["cost_per_accepted_usd_minor"] == 306


def test_c6_the_count_in_its_unit_has_one_shape_in_list_show_cost_compare(
        session: Session, new_session: Any, sessions_root: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    other = new_session(name="other")
    folder = tmp_path / "approved"
    folder.mkdir()
    paths = []
    for i in (1, 2, 3):
        (folder / f"visual-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * 8)
        paths.append(str(folder / f"visual-{i}.png"))
    for s in (session, other):
        assert cli(capsys, sessions_root, "package", s.name, "--unit", "visual")[0] == 0
    code, _, err = cli(capsys, sessions_root, "approve", session.name, *paths, "--by", "Ana")
    assert code == 0, err
    shown = _valid("show", cli(capsys, sessions_root, "show", session.name, "--json")[1])
    cost, compared = _cost_and_compare(capsys, sessions_root, session.name, other.name)
    listed = _valid("list", cli(capsys, sessions_root, "list", "--json")[1])
    one = next(s for s in listed["sessions"] if s["name"] == session.name)
    assert cost["deliverables"] == compared["deliverables"] == shown["deliverables"]
    for doc in (one, shown, cost, compared):
        d = doc["deliverables"]
        assert (d["count"], d["unit"], d["source"]) == (3, "visual", "approved"), doc["deliverables"]
    assert cost["accepted_count"] == compared["accepted_count"] == 3
    assert cost["accepted_corpora"] == compared["accepted_corpora"] == shown["accepted_corpora"] == 0
    assert cost["per_unit_line"] == compared["per_unit_line"] == "55.00 USD ÷ 3 approved visuals = 18.33 USD per visual"


def test_experiment_list_validates(session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e", "--workload",
                       "synthetic-mlp", "--values", "1,2", "--runs", "1")
    assert code == 0, err
    doc = _valid("experiment-list", cli(capsys, sessions_root, "experiment", session.name, "list", "--json")[1])
    assert [e["id"] for e in doc["experiments"]] == ["e"]


def test_validate_validates(sessions_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, preds = tmp_path / "c.csv", tmp_path / "p.jsonl"
    corpus.write_text("id,label\n1,a\n2,b\n", encoding="utf-8")
    preds.write_text('{"id": "1", "label": "a"}\n{"id": "2", "label": "b"}\n', encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions", str(preds),
                         "--classes", "a,b", "--threshold", "0.5", "--json")
    assert code == 0, err
    assert _valid("validate", out)["corpus_accepted"] is True


def test_checklist_validates(session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _valid("checklist", cli(capsys, sessions_root, "checklist", session.name, "--json")[1])
    assert doc["name"] == session.name and doc["total"] == len(doc["items"])


def test_cost_validates(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "cost", "--gpu", "RTX A5000", "--lots", "1", "--days", "7",
                         "--json")
    assert code == 0, err
    _valid("cost", out)


def test_compare_validates(session: Session, new_session: Any, sessions_root: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    other = new_session(name="other")
    code, out, err = cli(capsys, sessions_root, "compare", session.name, other.name, "--json")
    assert code in (0, 3), err
    doc = _valid("compare", out)
    assert {s["name"] for s in doc["sessions"]} == {session.name, other.name}


def test_new_and_report_validate(sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "made", "--json")
    assert code == 0, err
    assert _valid("new", out)["name"] == "made"
    code, out, err = cli(capsys, sessions_root, "report", "made", "--json")
    assert code == 0, err
    doc = _valid("report", out)
    assert Path(doc["path"]).name == "report.md" and any(line.startswith("- Verdict:") for line in doc["summary"])


def test_new_with_a_unit_keeps_it_under_json_and_package_validates(
        sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "made", "--unit", "visual", "--json")
    assert code == 0, err
    assert _valid("new", out)["unit"] == {"singular": "visual", "plural": "visuals",
                                          "expected_count": None, "changed": True}
    code, out, err = cli(capsys, sessions_root, "show", "made", "--json")
    assert code == 0 and "visual" in out, err  # the unit was fixed, not only said
    code, out, err = cli(capsys, sessions_root, "package", "made", "--gpu", "RTX A5000", "--lots", "1",
                         "--days", "7", "--limit", "2020-01-01T00:00Z", "--json")
    assert code == 0, err
    doc = _valid("package", out)
    assert doc["package"]["lots"] == 1 and doc["unit"] is None and doc["plan"] is None
    assert doc["session_limit"].startswith("2020-01-01") and "already past" in doc["limit_already_past"]
    assert out.lstrip().startswith("{")  # nothing but the document on stdout


def test_derive_validates(session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "experiment", session.name, "define", "--id", "e",
                       "--workload", "command", "--command", "true {corpus} {output}",
                       "--varied", "batch", "--values", "1,2")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "experiment", session.name, "derive", "--id", "e2",
                         "--from", "e", "--set", "runs=7", "--json")
    assert code == 0, err
    doc = _valid("experiment-derive", out)
    assert (doc["experiment_id"], doc["derived_from"], doc["changed_key"], doc["value"]) == ("e2", "e", "runs", "7")
    assert doc["run"].endswith("--experiment e2 --headless")


def test_manifest_and_a_local_pull_validate(session: Session, sessions_root: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    if shutil.which("rsync") is None:
        pytest.skip("rsync is not installed on this machine (.ci/run installs it)")
    out_dir = tmp_path / "approved"
    out_dir.mkdir()
    (out_dir / "visual-01.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 32)
    code, out, err = cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(out_dir), "--json")
    assert code == 0, err
    doc = _valid("manifest", out)
    assert doc["files"] == 1 and doc["total_bytes"] == 40 and Path(doc["manifest"]).is_file()
    home = tmp_path / "home"
    code, out, err = cli(capsys, sessions_root, "pull", str(session.folder), "--to", str(home), "--json")
    assert code == 0, out + err
    doc = _valid("pull", out)
    assert doc["verified"] is True and doc["probe"] is False and doc["matching"] == 1 and doc["exit_code"] == 0
    assert doc["representative"] and doc["representative"][0].endswith("visual-01.png")
    (out_dir / "visual-01.png").write_bytes(b"changed")
    code, out, err = cli(capsys, sessions_root, "pull", str(session.folder), "--to", str(tmp_path / "h2"), "--json")
    doc = _valid("pull", out)
    assert code == 3 and doc["verified"] is False and [c["path"] for c in doc["changed"]] == ["visual-01.png"] and doc["reason"]
    code, out, err = cli(capsys, sessions_root, "pull", str(session.folder), "--to", str(tmp_path / "h3"),
                         "--probe", "--json")
    doc = _valid("pull", out)
    assert doc["probe"] is True and doc["exit_code"] == code


def _json_commands() -> list[str]:
    """Every command of the parser that takes ``--json``, as its schema file names it."""
    import argparse

    from gpusession.cli import build_parser

    found: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*path, name))
            elif "--json" in action.option_strings:
                found.append("-".join(path))

    walk(build_parser(), ())
    return found


def test_c6_every_json_output_has_its_schema_and_every_schema_its_command() -> None:
    commands = set(_json_commands())
    schemas = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert commands == schemas, (sorted(commands - schemas), sorted(schemas - commands))
    assert len(commands) >= 19


def test_order_show_and_deliverables_validate(busy_session: Session, sessions_root: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "order", busy_session.name, "show", "--json")
    assert code == 0, err
    doc = _valid("order-show", out)
    assert doc["name"] == busy_session.name and doc["order"]["number"] == "ORD-1042"
    code, out, err = cli(capsys, sessions_root, "deliverables", busy_session.name, "--json")
    assert code == 0, err
    assert _valid("deliverables", out)["name"] == busy_session.name


def test_check_host_and_verify_copy_validate(session: Session, sessions_root: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, sessions_root, "check-host", session.name, "--no-probe", "--json")
    doc = _valid("check-host", out)
    assert doc["name"] == session.name and code in (0, 1, 3), err
    assert doc["checked"] is (code != 1)
    folder = tmp_path / "approved"
    folder.mkdir()
    (folder / "a.txt").write_text("a", encoding="utf-8")
    manifest = tmp_path / "m.csv"
    assert cli(capsys, sessions_root, "manifest", session.name, "--deliverables", str(folder),
               "--out", str(manifest))[0] == 0
    code, out, err = cli(capsys, sessions_root, "verify-copy", str(manifest), str(folder), "--json")
    assert code == 0, err
    assert _valid("verify-copy", out)["matches"] is True
    (folder / "a.txt").write_text("b", encoding="utf-8")
    code, out, _ = cli(capsys, sessions_root, "verify-copy", str(manifest), str(folder), "--json")
    assert code == 3 and _valid("verify-copy", out)["changed"][0]["path"] == "a.txt"


def test_c6_show_and_cost_with_a_kept_plan_validate(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, sessions_root, "package", session.name, "--plan", "0.25,1,1,0.5,0.5",
                       "--plan-names", "a,b,c,d,e")
    assert code == 0, err
    shown = _valid("show", cli(capsys, sessions_root, "show", session.name, "--json")[1])
    assert shown["plan"]["names"] == ["a", "b", "c", "d", "e"] and shown["plan"]["covered_by_package"] is True
    cost = _valid("cost", cli(capsys, sessions_root, "cost", session.name, "--json")[1])
    assert cost["plan"]["durations_days"] == shown["plan"]["durations_days"]


def test_c6_the_session_limit_and_the_count_have_one_key_in_show_status_package_cost_deliverables(
        session: Session, sessions_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = {}
    for name, args in (("show", ("show", session.name)), ("status", ("status", session.name)),
                       ("package", ("package", session.name)), ("cost", ("cost", session.name)),
                       ("deliverables", ("deliverables", session.name))):
        code, out, err = cli(capsys, sessions_root, *args, "--json")
        assert code == 0, (name, err)
        docs[name] = _valid(name, out)
    for name in ("show", "status", "package"):
        assert (docs[name]["session_limit"], docs[name]["stop_by"]) == (
            docs["status"]["session_limit"], docs["status"]["stop_by"]), name
    assert docs["cost"]["name"] == docs["deliverables"]["name"] == session.name
    assert docs["deliverables"]["schema_version"] == 2 and "deliverables_folder" in docs["deliverables"]
    for name in ("show", "cost", "deliverables"):  # the count in its unit, the same object
        assert docs[name]["deliverables"] == docs["show"]["deliverables"], name


def test_c6_rates_validates_with_every_source(session: Session, sessions_root: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (session.folder / "rates.toml").write_text('schema = 1\n[gpu."B200"]\ngpus_per_lot = 2\n'
                                               '[gpu."B200".package_price_usd]\n7 = "2400.00"\n')
    code, out, err = cli(capsys, sessions_root, "rates", "set", "H100 SXM", "--days", "7", "--price", "1234.56")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "rates", "--session", session.name, "--json")
    assert code == 0, err
    doc = _valid("rates", out)
    assert doc["name"] == session.name
    sources = {p["source"] for g in doc["gpus"] for p in g["prices"]}
    assert sources == {"session", "user", "bundled"}
