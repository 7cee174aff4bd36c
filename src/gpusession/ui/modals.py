"""Small forms shown over the main screen: a note, an event, a payment order, an experiment.

Who calls it: the panes (``push_screen(FormModal(..., on_save=...), callback)``). The
form returns a ``dict`` of field → text on Save, ``None`` on Cancel.

Saving is checked *inside* the form: ``on_save(values)`` does the write (through the
same core function the CLI uses) and raises on bad input; the form then stays open with
everything typed, shows the error in words above its buttons and puts the cursor on the
field the error names. Core functions change nothing on bad input, so a refused save
leaves the session as it was.

There is deliberately **no Escape binding** (H-11: over ssh + tmux an arrow key's bytes
can arrive split and read as Escape, which would throw away what was typed): Cancel is
``ctrl+g`` or a button reached with Tab; Enter in the last field saves. The fields
scroll; the title, the error line, the buttons and the footer with the form's keys stay
on screen at 80×24.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from gpusession.core.files.errors import GpusessionError


class Choice(OptionList):
    """A list of choices; the highlighted one is the value.

    Used instead of ``Select``, whose pop-up closes on Escape (H-11: a split arrow key
    could read as Escape). Up/down move, the value follows the highlight.

    Args:
        choices: the values.
        value: the value highlighted first (the first choice when unknown).
        labels: what is shown for each value (default: the value itself).
    """

    def __init__(self, choices: tuple[str, ...], value: str, *, labels: tuple[str, ...] = (), **kw: Any) -> None:
        self._shown = labels if len(labels) == len(choices) else choices
        self._initial = value if value in choices else choices[0]
        super().__init__(
            *[Option(self._prompt(text, c == self._initial), id=c) for c, text in zip(choices, self._shown, strict=True)],
            **kw,
        )

    @staticmethod
    def _prompt(text: str, chosen: bool) -> str:
        """``(*) payment-sent`` / ``( ) ordered``: the choice is readable without colour (H-11)."""
        return f"{'(*)' if chosen else '( )'} {text}"

    def on_mount(self) -> None:
        self.highlighted = self.get_option_index(self._initial)

    def _watch_highlighted(self, old: int | None, new: int | None) -> None:
        for index in {old, new}:
            if index is not None and 0 <= index < self.option_count:
                self.replace_option_prompt_at_index(index, self._prompt(self._shown[index], index == new))

    @property
    def value(self) -> str:
        opt = self.highlighted_option
        return str(opt.id) if opt is not None else self._initial


@dataclass(frozen=True)
class Field:
    """One form field: ``choices`` makes it a :class:`Choice`, otherwise an Input.

    ``placeholder`` is shown dimmed in an empty Input; write it as ``e.g. USDT`` so that
    in a plain terminal it never reads as a value already filled in. ``labels`` are the
    words shown for ``choices`` (same length), e.g. ``1 Define the output`` for ``1``.
    """

    name: str
    label: str
    value: str = ""
    placeholder: str = ""
    choices: tuple[str, ...] = field(default_factory=tuple)
    labels: tuple[str, ...] = field(default_factory=tuple)


#: ``on_save(values)``: write them, or raise :class:`~gpusession.core.files.errors.GpusessionError`
#: (bad input: its message is shown in the form) or :class:`OSError` (the disk refused).
#: Anything else is a bug and surfaces as one.
SaveCheck = Callable[[dict[str, str]], Any]


def error_field(exc: BaseException, names: list[str]) -> str | None:
    """The form field an error names (``BadInput.field``, e.g. ``asset`` or ``payment.amount``)."""
    name = getattr(exc, "field", None)
    if not name:
        return None
    name = str(name).lstrip("-").replace("-", "_")
    for candidate in (name, name.rsplit(".", 1)[-1]):
        if candidate in names:
            return candidate
    return None


class FormModal(ModalScreen[dict[str, str] | None]):
    """A titled form; dismisses with ``{name: text}`` or ``None``.

    Args:
        title: one line at the top.
        fields: the fields, in order.
        help_text: an optional line under the title.
        on_save: called with the values on Save; when it raises, the form stays open
            and shows ``str(exception)`` (one line, what was expected).
        save_in_thread: call ``on_save`` in a thread worker ("saving …" meanwhile), for a
            save that reads or writes a large file (a decision among thousands): the
            event loop never waits on it. ``on_save`` then touches no widget itself (it
            hands what the UI shows over with ``app.call_from_thread``).
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="form.save"),
        Binding("ctrl+g", "cancel", "Cancel", id="form.cancel"),
    ]

    def __init__(
        self, title: str, fields: list[Field], *, help_text: str = "", on_save: SaveCheck | None = None,
        save_in_thread: bool = False,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.fields = fields
        self.help_text = help_text
        self.on_save = on_save
        self.save_in_thread = save_in_thread
        #: a save runs in a thread: a second ctrl+s waits for it, never saves twice
        self.saving = False
        self.error = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Label(self.title_text, id="form-title")
            with VerticalScroll(id="form-body", can_focus=False):
                if self.help_text:
                    yield Label(self.help_text, id="form-help")
                for f in self.fields:
                    yield Label(f.label, classes="form-label")
                    if f.choices:
                        yield Choice(f.choices, f.value, labels=f.labels, id=f"field-{f.name}",
                                     classes="choice", compact=True)
                    else:
                        yield Input(f.value, placeholder=f.placeholder, id=f"field-{f.name}", compact=True)
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Static("tab: next field", id="form-hint")
                yield Button("Save ctrl+s", id="form-save", variant="primary", compact=True)
                yield Button("Cancel ctrl+g", id="form-cancel", compact=True)
        yield Footer()

    #: rows around the fields: footer, border ×2, title, gap and buttons
    CHROME_ROWS = 6

    def on_mount(self) -> None:
        self.query_one("#form-error", Static).display = False
        self._fit()
        if self.fields:
            self.query_one(f"#field-{self.fields[0].name}").focus(scroll_visible=False)

    def on_resize(self) -> None:
        self._fit()

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        """Focus a field and scroll so that it *and its label* are in view (no animation)."""
        super().set_focus(widget, scroll_visible=False, from_app_focus=from_app_focus)
        if widget is not None and scroll_visible:
            self.call_after_refresh(self._show_with_label, widget)

    def _show_with_label(self, widget: Widget) -> None:
        body = self.query_one("#form-body", VerticalScroll)
        if widget.parent is not body:
            return
        siblings = list(body.children)
        i = siblings.index(widget)
        top = siblings[i - 1] if i > 0 and isinstance(siblings[i - 1], Label) else widget
        if i <= 2:  # the first field: show the help line and the top too
            body.scroll_home(animate=False)
        body.scroll_to_widget(top, animate=False)
        body.scroll_to_widget(widget, animate=False)

    def _fit(self) -> None:
        """Let the fields scroll within what the terminal leaves (24 rows: 18 or fewer)."""
        error = self.query_one("#form-error", Static)
        error_rows = 0
        if error.display:  # its lines: known after a layout, else estimated
            error_rows = error.region.height or 1 + len(self.error) // max(20, self.size.width - 6)
        rows = self.size.height - self.CHROME_ROWS - error_rows
        self.query_one("#form-body").styles.max_height = max(3, rows)

    def values(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in self.fields:
            w: Any = self.query_one(f"#field-{f.name}")
            out[f.name] = str(w.value)
        return out

    def show_error(self, text: str, field_name: str | None = None) -> None:
        """Show why the save was refused; keep every value; focus the named field."""
        self.error = text
        box = self.query_one("#form-error", Static)
        box.update(f"Not saved: {text}" if text else "")
        box.display = bool(text)
        self._fit()
        self.call_after_refresh(self._fit)
        if field_name is not None:
            self.query_one(f"#field-{field_name}").focus()

    def action_save(self) -> None:
        values = self.values()
        if self.saving:
            return
        if self.on_save is not None and self.save_in_thread:
            self.saving = True
            self.show_error("")
            self.query_one("#form-hint", Static).update("saving …")
            self._save_thread(values)
            return
        if self.on_save is not None:
            try:
                self.on_save(values)
            except (GpusessionError, OSError) as exc:  # one line, what was expected
                self.show_error(str(exc) or type(exc).__name__, error_field(exc, [f.name for f in self.fields]))
                return
        self.dismiss(values)

    @work(thread=True, exclusive=True, group="form-save", exit_on_error=False)
    def _save_thread(self, values: dict[str, str]) -> None:
        assert self.on_save is not None
        try:
            self.on_save(values)
        except (GpusessionError, OSError) as exc:  # one line, what was expected
            self.app.call_from_thread(self._refused, str(exc) or type(exc).__name__,
                                      error_field(exc, [f.name for f in self.fields]))
            return
        self.app.call_from_thread(self._saved, values)

    def _refused(self, text: str, field_name: str | None) -> None:
        self.saving = False
        self.query_one("#form-hint", Static).update("tab: next field")
        self.show_error(text, field_name)

    def _saved(self, values: dict[str, str]) -> None:
        self.dismiss(values)

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


class ConfirmModal(ModalScreen[bool]):
    """One question on one line, answered ``y`` or ``n`` (Escape is no); dismisses with it."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n", "answer(False)", "No", id="confirm.no"),
        Binding("escape", "answer(False)", "No", id="confirm.cancel"),
    ]

    def __init__(self, question: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.question = question

    def compose(self) -> ComposeResult:
        yield Label(self.question, id="confirm-question")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
