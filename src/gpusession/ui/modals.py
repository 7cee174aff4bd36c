"""Small forms shown over the main screen: a note, an event, a payment order, an experiment.

Who calls it: the panes (``push_screen(FormModal(...), callback)``). The form returns a
``dict`` of field → text on Save, ``None`` on Cancel. There is deliberately **no Escape
binding** (H-11: over ssh + tmux an arrow key's bytes can arrive split and read as Escape,
which would throw away what was typed): Cancel is a button reached with Tab, or
``ctrl+g``; Enter in the last field saves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList
from textual.widgets.option_list import Option


class Choice(OptionList):
    """A list of choices; the highlighted one is the value.

    Used instead of ``Select``, whose pop-up closes on Escape (H-11: a split arrow key
    could read as Escape). Up/down move, the value follows the highlight.
    """

    def __init__(self, choices: tuple[str, ...], value: str, **kw: Any) -> None:
        super().__init__(*[Option(c, id=c) for c in choices], **kw)
        self._initial = value if value in choices else choices[0]

    def on_mount(self) -> None:
        self.highlighted = self.get_option_index(self._initial)

    @property
    def value(self) -> str:
        opt = self.highlighted_option
        return str(opt.id) if opt is not None else self._initial


@dataclass(frozen=True)
class Field:
    """One form field: ``choices`` makes it a :class:`Choice`, otherwise an Input."""

    name: str
    label: str
    value: str = ""
    placeholder: str = ""
    choices: tuple[str, ...] = field(default_factory=tuple)


class FormModal(ModalScreen[dict[str, str] | None]):
    """A titled form; dismisses with ``{name: text}`` or ``None``."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="form.save"),
        Binding("ctrl+g", "cancel", "Cancel", id="form.cancel"),
    ]

    def __init__(self, title: str, fields: list[Field], *, help_text: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.fields = fields
        self.help_text = help_text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="form", can_focus=False):
            yield Label(self.title_text, id="form-title")
            if self.help_text:
                yield Label(self.help_text, id="form-help")
            for f in self.fields:
                yield Label(f.label, classes="form-label")
                if f.choices:
                    yield Choice(f.choices, f.value, id=f"field-{f.name}", classes="choice")
                else:
                    yield Input(f.value, placeholder=f.placeholder, id=f"field-{f.name}", compact=True)
            with Horizontal(id="form-buttons"):
                yield Button("Save (ctrl+s)", id="form-save", variant="primary")
                yield Button("Cancel (ctrl+g)", id="form-cancel")

    def on_mount(self) -> None:
        if self.fields:
            self.query_one(f"#field-{self.fields[0].name}").focus()

    def values(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in self.fields:
            w: Any = self.query_one(f"#field-{f.name}")
            out[f.name] = str(w.value)
        return out

    def action_save(self) -> None:
        self.dismiss(self.values())

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#form-save")
    def _save(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#form-cancel")
    def _cancel(self) -> None:
        self.action_cancel()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        inputs = list(self.query(Input))
        if inputs and event.input is inputs[-1]:
            self.action_save()
        else:
            self.focus_next()
