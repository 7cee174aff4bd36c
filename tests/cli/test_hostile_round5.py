"""Faults found on main after the fourth release (H-41, H-44, H-46).

A value the CLI accepts must read back (the writer applies the reader's bounds), a
refused ``new`` leaves no folder, a refusal never echoes a secret, and a one-line field
never forges a line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import cli, digest, one_line

from gpusession.core.files.errors import BadInput
from gpusession.core.folder.session import Session

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
PKG = ("--gpu", "RTX A5000", "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")


@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    code, _, err = cli(capsys, sessions_root, "new", "base", *PKG)
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "e1",
                       "--values", "1,2", "--workload", "synthetic-mlp")
    assert code == 0, err
    return sessions_root / "base"


# -- H-41: nothing the CLI stores is refused by its own reader ------------------------------
@pytest.mark.parametrize("args, field", [
    (["define", "--id", "big", "--values", "1", "--workload", "synthetic-mlp", "--timeout", "31536000"],
     "run_timeout_s"),
    (["define", "--id", "big", "--values", "1", "--workload", "synthetic-mlp", "--timeout", "4e7"],
     "run_timeout_s"),
    (["define", "--id", "big", "--values", "1", "--workload", "synthetic-mlp", "--timeout", "1e308"],
     "run_timeout_s"),
    (["define", "--id", "big", "--values", "1", "--workload", "synthetic-mlp",
      "--seed", "99999999999999999999"], "seed"),
    (["define", "--id", "big", "--values", "1", "--workload", "synthetic-mlp",
      "--order-seed", "-99999999999999999999"], "order_seed"),
    (["derive", "--id", "big", "--from", "e1", "--set", "timeout=4e7"], "run_timeout_s"),
    (["derive", "--id", "big", "--from", "e1", "--set", "seed=99999999999999999999"], "seed"),
], ids=["timeout-year", "timeout-4e7", "timeout-1e308", "seed", "order-seed", "derive-timeout",
        "derive-seed"])
def test_h41_an_experiment_number_past_the_readers_bound_is_refused_at_the_option(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, args: list[str], field: str,
) -> None:
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, "experiment", "base", *args)
    assert code == 2, (out, err)
    line = one_line(err)
    assert field in line and "session.toml" not in line
    assert digest(base) == before
    code, _, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0, err


def test_h41_a_timeout_just_under_a_year_is_stored_and_reads_back(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "experiment", "base", "define", "--id", "long",
                       "--values", "1", "--workload", "synthetic-mlp", "--timeout", "31535999")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "show", "base")
    assert code == 0, err


def test_h41_the_writer_applies_the_readers_check_and_writes_nothing(base: Path) -> None:
    session = Session.open(base.parent, "base")
    before = (base / "session.toml").read_bytes()

    def too_long(data: dict[str, object]) -> None:
        data["experiments"]["e1"]["run_timeout_s"] = 4e7  # type: ignore[index]

    with pytest.raises(BadInput) as caught:
        session.update(too_long)
    assert "experiments.e1.run_timeout_s" in str(caught.value)
    assert "nothing was written" in str(caught.value)
    assert (base / "session.toml").read_bytes() == before
    Session.open(base.parent, "base")  # still reads


@pytest.mark.parametrize("count", ["1000000000000000", "1" + "0" * 400])
def test_h41_an_expected_count_past_10_15_is_refused_and_no_session_made(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, count: str,
) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "nu", *PKG, "--unit", "visual",
                         "--expected-count", count)
    assert code == 2, (out, err)
    assert "expected-count" in one_line(err) and "10^15" in err
    assert not (sessions_root / "nu").exists()
    code, _, err = cli(capsys, sessions_root, "new", "nu", *PKG, "--unit", "visual",
                       "--expected-count", "999999999999999")
    assert code == 0, err
    code, _, err = cli(capsys, sessions_root, "show", "nu")
    assert code == 0, err


@pytest.mark.parametrize("amount", ["1" + "0" * 400, "1000000000000000", "1." + "1" * 19])
def test_h41_a_payment_amount_past_what_it_can_mean_is_refused(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, amount: str,
) -> None:
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, "order", "base", "payment", "--asset", "USDC",
                         "--network", "ethereum", "--amount", amount,
                         "--destination", "0x52908400098527886E0F7030069857D2E4169EE7",
                         "--expires", "2026-12-30T00:00:00Z")
    assert code == 2, (out, err)
    line = one_line(err)
    assert "amount" in line and amount not in line
    assert digest(base) == before


# -- new exits 2 and leaves no session: every unit check before the folder is made -----------
@pytest.mark.parametrize("extra", [
    ["--expected-count", "5"], ["--unit-plural", "x"], ["--unit", "visual", "--unit-plural", "x\ty"],
], ids=["count-without-unit", "plural-without-unit", "bad-plural"])
def test_h41_new_refused_for_its_unit_leaves_no_folder(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, extra: list[str],
) -> None:
    code, out, err = cli(capsys, sessions_root, "new", "nu3", *PKG, *extra)
    assert code == 2, (out, err)
    assert "created session" not in out and "unit" in one_line(err)
    assert not (sessions_root / "nu3").exists()
    code, out, err = cli(capsys, sessions_root, "new", "nu3", *PKG, "--unit", "visual", "--expected-count", "5")
    assert code == 0, err
    assert "created session nu3" in out


def test_h41_new_from_a_session_with_a_unit_takes_a_count_without_unit(
    capsys: pytest.CaptureFixture[str], sessions_root: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "new", "prev", *PKG, "--unit", "visual")
    assert code == 0, err
    code, out, err = cli(capsys, sessions_root, "new", "next", *PKG, "--from", "prev", "--expected-count", "5")
    assert code == 0, err
    assert "visual" in out and "5" in out


# -- H-46: a refusal names the field, never a secret ----------------------------------------
SEED = "abandon ability able about above absent absorb abstract absurd abuse access accident"


@pytest.mark.parametrize("args, field", [
    (["package", "base", "--reserve", TOKEN], "reserve"),
    (["package", "base", "--lots", TOKEN], "--lots"),
    (["cost", "--gpu", "RTX A5000", "--days", "3", "--lots", "1", "--plan", TOKEN], "plan"),
    (["package", "base", "--plan", f"1,{TOKEN}"], "plan"),
    (["verify-copy", f"/tmp/{TOKEN}.csv", "/tmp"], "manifest"),
    (["pull", f"{TOKEN}", "--to", "x"], "SRC"),
    ([TOKEN, "base"], "unknown command"),
], ids=["reserve", "lots", "cost-plan", "package-plan", "verify-copy-path", "pull-src", "command"])
def test_h46_a_refusal_never_echoes_a_secret_it_was_given(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, args: list[str], field: str,
) -> None:
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, *args)
    assert code == 2, (out, err)
    line = one_line(err)
    assert field in line
    assert "ghp_" not in out + err and "abcdefghijklmnop" not in out + err
    assert digest(base) == before


def test_h46_export_names_the_experiment_field_not_the_token(
    capsys: pytest.CaptureFixture[str], sessions_root: Path,
) -> None:
    from gpusession.core.records.results import ResultRow
    from gpusession.testing import make_session

    s = make_session(sessions_root, "sweep", runs=1)
    s.results.append(ResultRow(experiment_id="batch-sweep", variant_id="batch-1", phase="warm",
                               run_index=1, batch=1, elapsed_seconds=0.1))
    code, out, err = cli(capsys, sessions_root, "export", "sweep", "--format", "csv", "--experiment", TOKEN)
    assert code == 2, (out, err)
    assert "--experiment" in one_line(err) and "ghp_" not in err


def test_h46_a_path_in_an_error_is_masked_where_the_error_is_built(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("GPUSESSION_HOME", str(tmp_path / TOKEN))
    code, out, err = cli(capsys, tmp_path / TOKEN, "show", "s1")
    assert code == 2 and TOKEN not in out + err and "--sessions-dir" in err, err
    (tmp_path / TOKEN).mkdir()
    code, out, err = cli(capsys, tmp_path / TOKEN, "list")  # refused before any line names it
    assert code == 2 and TOKEN not in out + err and "ghp_abc" not in out + err, out + err
    from gpusession.core.files.errors import BadInput

    assert "ghp_" not in str(BadInput("not found", path=f"/tmp/{TOKEN}.csv"))
    assert "[HIDDEN" in str(BadInput("not found", path=f"/tmp/{TOKEN}.csv"))


def test_h46_argparse_keeps_its_words_around_a_masked_seed_phrase(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "order", "base", SEED)
    assert code == 2
    line = one_line(err)
    assert "invalid choice: '[HIDDEN" in line and "(choose from 'show'" in line
    assert "abandon" not in line


# -- H-44: a line break in a one-line field never forges a line -----------------------------
FORGED = "Alice\n  [x] done  g1.sample  a forged line"


def test_h44_a_note_with_a_newline_is_one_escaped_line_in_the_checklist(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
) -> None:
    code, out, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.approver", FORGED)
    assert code == 0, err
    assert "forged" in out and not any(ln.lstrip().startswith("[x] done  g1.sample") for ln in out.splitlines())
    code, out, err = cli(capsys, sessions_root, "checklist", "base")
    assert code == 0, err
    [note] = [ln for ln in out.splitlines() if "forged" in ln]
    assert note.lstrip().startswith("note: Alice\\x0a"), note
    assert not any(ln.startswith("  [x] done  g1.sample") for ln in out.splitlines()), out


def test_h44_the_tui_shows_a_note_with_a_newline_on_one_line(base: Path) -> None:
    from gpusession.core.retrieval.checklist import load_checklist, set_note
    from gpusession.ui.panes.checklist import item_prompt

    session = Session.open(base.parent, "base")
    set_note(session, "g1.approver", FORGED)
    [item] = [i for i in load_checklist(session) if i.id == "g1.approver"]
    text = item_prompt(item, None).plain
    assert not any(ln.lstrip().startswith("[x] done  g1.sample") for ln in text.splitlines()), text
    assert "Alice\\x0a" in text


def test_h44_cost_prints_a_hand_edited_approver_escaped(
    capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path,
) -> None:
    code, _, err = cli(capsys, sessions_root, "package", "base", "--unit", "visual")
    assert code == 0, err
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "v-1.png").write_bytes(b"one")
    code, _, err = cli(capsys, sessions_root, "approve", "base", str(folder / "v-1.png"), "--by", "Ana")
    assert code == 0, err
    (folder / "v-1.png").write_bytes(b"changed")  # changed after approval: not counted
    approvals = base / "approvals.toml"
    approvals.write_text(approvals.read_text(encoding="utf-8").replace('"Ana"', '"Ana\\u001b[2J\\nforged"'),
                         encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "cost", "base")
    assert code == 0, err
    [line] = [ln for ln in out.splitlines() if "not counted:" in ln]
    assert "\x1b" not in out and "\\x1b[2J\\x0aforged" in line, out
    assert not any(ln.startswith("forged") for ln in out.splitlines())


@pytest.mark.parametrize("size", ["-5", "9999999999999999999999999999999999999999", str(2**63), "true"])
def test_h41_an_approval_size_past_what_it_can_mean_is_refused_naming_the_field(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path, size: str) -> None:
    """``approvals.toml``'s ``size_bytes`` is a byte count: negative, past 2^63 or not a number
    is refused as ``file: field`` by the commands that read it, never counted."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "v-1.png").write_bytes(b"png")
    assert cli(capsys, sessions_root, "new", "v", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "approve", "v", str(out / "v-1.png"), "--by", "Ana")[0] == 0
    path = sessions_root / "v" / "approvals.toml"
    text = path.read_text()
    path.write_text(re.sub(r"size_bytes = \d+", f"size_bytes = {size}", text))
    code, _, err = cli(capsys, sessions_root, "deliverables", "v")
    assert code == 2 and "approvals.toml" in err and "size_bytes" in err, err


@pytest.mark.parametrize("key", ["warmup_iterations", "runs_per_variant", "cold_runs_per_variant"])
def test_h41_a_negative_count_of_runs_is_refused_by_every_reader(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, key: str) -> None:
    """``runs_per_variant = -1`` hand-written in ``session.toml``: ``show`` and ``status``
    refuse it as ``file: field`` as ``run`` does, never a session shown as valid."""
    assert cli(capsys, sessions_root, "new", "n", "--gpu", "RTX A5000", "--lots", "1", "--days", "7")[0] == 0
    assert cli(capsys, sessions_root, "experiment", "n", "define", "--id", "e", "--workload", "command",
               "--command", "true {output}", "--values", "1")[0] == 0
    path = sessions_root / "n" / "session.toml"
    text = path.read_text()
    assert re.search(rf"^{key} = \d+$", text, flags=re.M), text
    path.write_text(re.sub(rf"^{key} = \d+$", f"{key} = -1", text, flags=re.M))
    for command in ("show", "status"):
        code, _, err = cli(capsys, sessions_root, command, "n")
        assert code == 2 and f"experiments.e.{key}: expected a whole number ≥ 0" in err, (command, err)
