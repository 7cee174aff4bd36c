"""One parser for the define form (R1, V5): the CLI's ``experiment define`` and the TUI's
Define form both go through :func:`gpusession.core.experiment.form.experiment_from_form`,
so the same input stores the same ``[experiments.<id>]`` table and is refused with the
same words.

The TUI form is driven with Pilot (as ``test_run_pane.py`` does), the CLI in this process
(as ``tests/cli`` does); ``session.toml`` is then read back and compared.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from fake_workloads import write_corpus
from helpers import cli
from textual.widgets import Input, Static
from ui.pilot import MakeApp, settle

from gpusession.core.experiment import form
from gpusession.core.files.tomlread import read_toml
from gpusession.testing import make_session
from gpusession.ui.modals import Choice, FormModal

#: One input, as the TUI's fields (name → text) and as the CLI's options.
RICH = {
    "id": "sweep", "workload": "mypkg.wl:make", "corpus": "corpus.jsonl", "varied": "batch",
    "values": "1, 4,8", "runs_per_variant": "3", "warmup_iterations": "1", "order": "shuffled",
    "scope": "full-chain", "gpus": "1", "precision": "fp16", "device": "cpu", "context_limit": "128",
    "seed": "7", "params": "width=64 lr=0.001 'version=\"1.10\"' flag=true", "classes": "a, b",
    "metric": "accuracy", "threshold": "0.8", "tolerance": "0.01", "reference_value": "0.85",
    "max_degradation": "0.02", "train_ids": "train.jsonl", "tune_ids": "tune.jsonl",
}
RICH_CLI = [
    "--id", "sweep", "--workload", "mypkg.wl:make", "--corpus", "corpus.jsonl", "--varied", "batch",
    "--values", "1, 4,8", "--runs", "3", "--warmup", "1", "--order", "shuffled", "--scope", "full-chain",
    "--gpus", "1", "--precision", "fp16", "--device", "cpu", "--context-limit", "128", "--seed", "7",
    "--param", "width=64", "--param", "lr=0.001", "--param", 'version="1.10"', "--param", "flag=true",
    "--classes", "a, b", "--metric", "accuracy", "--threshold", "0.8", "--tolerance", "0.01",
    "--reference-value", "0.85", "--max-degradation", "0.02", "--train-ids", "train.jsonl",
    "--tune-ids", "tune.jsonl",
]
#: A command workload, the scope left to the workload (the TUI's "default" choice).
COMMAND = {"id": "cmd", "workload": "command", "command": "python3 'my score.py' --batch {batch}",
           "values": "2,4", "scope": "default", "params": "", "corpus": ""}
COMMAND_CLI = ["--id", "cmd", "--workload", "command", "--command", "python3 'my score.py' --batch {batch}",
               "--values", "2,4"]


async def _fill_and_save(app: Any, pilot: Any, fields: dict[str, str]) -> Any:
    """Open the Define form (2, d), type ``fields`` into it, save (ctrl+s); the screen after."""
    await settle(pilot, app)
    await pilot.press("2", "d")
    await pilot.pause()
    modal = app.screen
    assert isinstance(modal, FormModal)
    for name, text in fields.items():
        widget = modal.query_one(f"#field-{name}")
        if isinstance(widget, Choice):
            widget.highlighted = widget.get_option_index(text)
        else:
            modal.query_one(f"#field-{name}", Input).value = text
    await pilot.press("ctrl+s")
    await pilot.pause()
    return app.screen


def _stored(folder: Path, exp_id: str) -> dict[str, Any]:
    """``[experiments.<exp_id>]`` as ``session.toml`` holds it."""
    return dict(read_toml(folder / "session.toml")["experiments"][exp_id])


@pytest.mark.parametrize(("tui", "options", "exp_id"), [(RICH, RICH_CLI, "sweep"), (COMMAND, COMMAND_CLI, "cmd")],
                         ids=["every-field", "command-default-scope"])
async def test_r1_tui_form_and_cli_define_store_the_same_experiment(
    sessions_root: Path, make_app: MakeApp, capsys: pytest.CaptureFixture[str],
    tui: dict[str, str], options: list[str], exp_id: str,
) -> None:
    by_tui = make_session(sessions_root, "by-tui", experiment=False)
    by_cli = make_session(sessions_root, "by-cli", experiment=False)
    for s in (by_tui, by_cli):
        for name in ("corpus.jsonl", "train.jsonl", "tune.jsonl"):
            write_corpus(s.folder / name)
    app = make_app(session=by_tui)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _fill_and_save(app, pilot, tui)
        assert not isinstance(screen, FormModal), str(screen.query_one("#form-error", Static).render())
    code, _out, err = cli(capsys, sessions_root, "experiment", "by-cli", "define", *options)
    assert code == 0, err
    stored = _stored(by_tui.folder, exp_id)
    assert stored == _stored(by_cli.folder, exp_id)
    if exp_id == "sweep":  # the typed values, not text
        assert stored["values"] == [1, 4, 8] and stored["context_limit"] == 128
        assert stored["params"] == {"width": 64, "lr": 0.001, "version": "1.10", "flag": True,
                                    "train_corpus": "train.jsonl", "tune_corpus": "tune.jsonl"}
        assert stored["protocol"]["threshold"] == 0.8 and stored["protocol"]["classes"] == ["a", "b"]
        assert (stored["protocol"]["reference_value"], stored["protocol"]["max_degradation"]) == (0.85, 0.02)
    else:
        assert stored["scope"] == "full-chain"
        assert stored["params"] == {"command": ["python3", "my score.py", "--batch", "{batch}"]}


@pytest.mark.slow
@pytest.mark.parametrize(("field", "text", "option"), [
    ("values", "1.5,4", "--values"),
    ("runs_per_variant", "five", "--runs"),
    ("params", "width=6.4", "--param"),
    ("threshold", "nan", "--threshold"),
], ids=["values-decimal", "runs-word", "param-declared-type", "threshold-nan"])
async def test_r1_tui_form_and_cli_refuse_the_same_input_with_the_same_words(
    sessions_root: Path, make_app: MakeApp, capsys: pytest.CaptureFixture[str],
    field: str, text: str, option: str,
) -> None:
    s = make_session(sessions_root, "both", experiment=False)
    before = s.session_toml.read_bytes()
    tui = {"id": "e", "workload": "synthetic-mlp", "values": "1", "classes": "a,b", field: text}
    app = make_app(session=s)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _fill_and_save(app, pilot, tui)
        assert isinstance(screen, FormModal)
        said = str(screen.query_one("#form-error", Static).render()).removeprefix("Not saved: ")
        assert app.focused is screen.query_one(f"#field-{field}")  # the field the error names
    code, _out, err = cli(capsys, sessions_root, "experiment", "both", "define", "--id", "e",
                          "--workload", "synthetic-mlp", "--values", "1", "--classes", "a,b",
                          *([option, text] if option != "--values" else []),
                          *(["--values", text] if option == "--values" else []))
    assert code == 2
    assert err.strip() == f"gpusession: error: {said}", (err, said)
    assert s.session_toml.read_bytes() == before  # nothing stored by either


def test_r1_cli_define_and_tui_define_form_call_the_one_parser(
    sessions_root: Path, make_app: MakeApp, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    callers: list[str] = []
    real = form.experiment_from_form

    def recording(*args: Any, **kw: Any) -> Any:
        callers.append(Path(inspect.stack()[1].filename).as_posix())
        return real(*args, **kw)

    monkeypatch.setattr(form, "experiment_from_form", recording)
    s = make_session(sessions_root, "spy", experiment=False)
    code, _out, err = cli(capsys, sessions_root, "experiment", "spy", "define", "--id", "a",
                          "--workload", "synthetic-mlp", "--values", "1")
    assert code == 0, err
    assert [c.endswith("gpusession/commands/run_cmds.py") for c in callers] == [True]

    async def tui() -> None:
        app = make_app(session=s)
        async with app.run_test(size=(100, 40)) as pilot:
            await _fill_and_save(app, pilot, {"id": "b", "workload": "synthetic-mlp", "values": "2"})

    asyncio.run(tui())
    assert callers[1:] and callers[1].endswith("gpusession/ui/panes/run_forms.py"), callers
    assert set(read_toml(s.folder / "session.toml")["experiments"]) == {"a", "b"}
