"""Invisible characters refused in what names or pays, escaped in notes (H-24); refusals
never quote a secret (H-35); validate's class table measured in terminal cells.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from helpers import cli, digest, one_line
from rich.cells import cell_len

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from secret_payloads import PAYLOADS  # noqa: E402

from gpusession.core.experiment.plan import Experiment, check  # noqa: E402
from gpusession.core.files.errors import BadInput  # noqa: E402
from gpusession.core.folder.session import Session  # noqa: E402
from gpusession.core.retrieval.report import render_report  # noqa: E402

RLO, ZWSP = "\u202e", "\u200b"
PAY = ["--asset", "USDT", "--network", "TRC20", "--amount", "55.00",
       "--destination", "TXyz1234abcd", "--expires", "2099-01-01T00:00:00Z"]


@pytest.fixture
def base(capsys: pytest.CaptureFixture[str], sessions_root: Path) -> Path:
    code, _, err = cli(capsys, sessions_root, "new", "base", "--gpu", "RTX A5000",
                       "--lots", "1", "--days", "7", "--start", "2026-11-29T10:00:00Z")
    assert code == 0, err
    return sessions_root / "base"


def _token(kind: str) -> str:
    """The whole token of a payload (``ghp_…``), as a person would paste it as a name."""
    found = re.search(r"ghp_\w+|hf_\w+|AKIA\w+|[0-9a-f]{64}", PAYLOADS[kind][0])
    assert found is not None
    return found.group()


def _with(args: list[str], flag: str, value: str) -> list[str]:
    out = list(args)
    out[out.index(flag) + 1] = value
    return out


@pytest.mark.parametrize(("flag", "value", "field", "char"), [
    ("--destination", f"TXyz{ZWSP}1234abcd", "destination", "U+200B"),
    ("--destination", f"TXyz{RLO}dcba4321", "destination", "U+202E"),
    ("--asset", f"US{ZWSP}DT", "asset", "U+200B"),
    ("--network", f"TRC{RLO}02", "network", "U+202E"),
    ("--amount", f"55.0{ZWSP}0", "amount", "U+200B"),
])
def test_h24_a_payment_field_with_a_format_character_is_refused_naming_the_field(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path,
        flag: str, value: str, field: str, char: str) -> None:
    before = digest(base)
    code, out, err = cli(capsys, sessions_root, "order", "base", "payment", *_with(PAY, flag, value))
    line = one_line(err)
    assert code == 2 and f"{field}: refused" in line and char in line
    assert value not in out + err and RLO not in out + err and ZWSP not in out + err
    assert digest(base) == before


def test_h24_a_session_name_or_experiment_id_with_a_format_character_is_refused(
        capsys: pytest.CaptureFixture[str], sessions_root: Path) -> None:
    code, out, err = cli(capsys, sessions_root, "new", f"ab{RLO}cd", "--gpu", "RTX A5000",
                         "--lots", "1", "--days", "7")
    assert code == 2 and "U+202E" in one_line(err) and RLO not in out + err
    assert list(sessions_root.iterdir()) == []
    with pytest.raises(BadInput, match="U\\+200B ZERO WIDTH SPACE") as exc:
        check(Experiment(id=f"e{ZWSP}1", workload="w:W", corpus="c.jsonl", varied="batch", values=(1,)))
    assert ZWSP not in str(exc.value)


def test_h24_a_note_with_a_bidi_override_is_kept_and_shown_escaped(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path) -> None:
    note = f"pay abc{RLO}dcba"
    code, _, err = cli(capsys, sessions_root, "checklist", "base", "note", "g1.approver", note)
    assert code == 0, err
    assert note in (base / "checklist.toml").read_text(encoding="utf-8")  # kept as typed
    code, out, err = cli(capsys, sessions_root, "checklist", "base")
    assert code == 0 and "pay abc\\u202edcba" in out and RLO not in out + err
    report = render_report(Session.open(sessions_root, "base"))
    assert "pay abc\\u202edcba" in report and RLO not in report


@pytest.mark.parametrize("kind", ["github-token", "hugging-face-token", "aws-access-key", "hex-64"])
def test_h35_a_secret_session_name_is_refused_first_and_never_quoted(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, kind: str) -> None:
    secret = _token(kind)
    for args in (["new", secret, "--gpu", "RTX A5000", "--lots", "1", "--days", "7"],
                 ["new", secret + "/x!", "--gpu", "RTX A5000", "--lots", "1", "--days", "7"],
                 ["show", secret], ["status", secret]):
        code, out, err = cli(capsys, sessions_root, *args)
        assert code == 2 and "refused" in one_line(err), err
        assert secret not in out + err and secret[4:20] not in out + err
    assert list(sessions_root.iterdir()) == []


def test_h35_a_secret_experiment_id_is_refused_first_and_never_quoted() -> None:
    secret = _token("github-token")
    for exp_id in (secret, secret + "/..", secret + " x"):
        with pytest.raises(BadInput) as exc:
            check(Experiment(id=exp_id, workload="w:W", corpus="c.jsonl", varied="batch", values=(1,)))
        assert "refused" in str(exc.value) and secret not in str(exc.value)


def _files(tmp_path: Path, labels: list[str]) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("id,label\n" + "".join(f"{i:03},{lab}\n" for i, lab in enumerate(labels)),
                      encoding="utf-8")
    output = tmp_path / "out.jsonl"
    output.write_text("".join(json.dumps({"id": f"{i:03}", "label": lab}, ensure_ascii=False) + "\n"
                              for i, lab in enumerate(labels)), encoding="utf-8")
    return corpus, output


def test_h35_validate_name_holding_a_secret_is_refused_first_and_never_quoted(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path, tmp_path: Path) -> None:
    corpus, output = _files(tmp_path, ["a", "b"])
    secret = _token("hugging-face-token")
    before = digest(base)
    for name in (secret, "../" + secret):  # the second fails the format check too
        code, out, err = cli(capsys, sessions_root, "validate", "--threshold", "0.9", "--corpus", str(corpus), "--predictions",
                             str(output), "--session", "base", "--name", name)
        assert code == 2 and "--name: refused" in one_line(err), err
        assert secret not in out + err
    assert digest(base) == before


def test_validate_class_table_is_aligned_with_wide_labels(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    labels = ["体育新闻", "sport", "财经新闻财经新闻财经新闻", "b"] * 3
    corpus, output = _files(tmp_path, labels)
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions",
                         str(output), "--classes", "体育新闻,sport,财经新闻财经新闻财经新闻,b")
    assert code == 0, err
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if "precision" in ln and "recall" in ln)
    table = lines[head:head + 5]
    assert [cell_len(ln) for ln in table] == [cell_len(table[0])] * 5, table
    # the precision column ends at the same terminal cell on every line
    ends = {cell_len(ln[:ln.index("precision") + len("precision")]) if i == 0
            else cell_len(ln[:ln.index("1.0000") + len("1.0000")]) for i, ln in enumerate(table)}
    assert len(ends) == 1, table


def test_h24_an_output_label_with_a_zero_width_space_is_quoted_escaped(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, tmp_path: Path) -> None:
    corpus, output = _files(tmp_path, ["a", "b", "b"])
    output.write_text(output.read_text(encoding="utf-8").replace('"label": "b"}', f'"label": "b{ZWSP}"}}', 1),
                      encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "validate", "--corpus", str(corpus), "--predictions",
                         str(output), "--classes", "a,b")
    assert code == 3, out + err
    assert "b\\u200b" in out and ZWSP not in out + err


def test_h24_a_hand_edited_destination_with_an_override_is_shown_escaped(
        capsys: pytest.CaptureFixture[str], sessions_root: Path, base: Path) -> None:
    code, _, err = cli(capsys, sessions_root, "order", "base", "payment", *PAY)
    assert code == 0, err
    toml = base / "order.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("TXyz1234abcd", "TXyz\\u202edcba4321"),
                    encoding="utf-8")
    code, out, err = cli(capsys, sessions_root, "order", "base", "show")
    assert RLO not in out + err
    assert code == 0 and "to TXyz\\u202edcba4321" in out  # the override is seen, not obeyed
