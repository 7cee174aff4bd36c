"""Checklist pane: the items from the need to the retrieval, grouped by stage (S1).

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 1). The items and their
state come from :mod:`gpusession.core.retrieval.checklist`; every change (space toggles done, ``n``
edits the note, ``a`` adds an item) is written at once through that module (atomic
TOML, S7), so a crash loses nothing. The automatic evidence is collected in a thread
worker and shown beside each item; it never ticks an item for the person. An item whose
fact gpusession recorded itself (S11: a verified pull, an order event, …) reads done with
that fact as evidence; space on it asks why it is not done and keeps that note.

Where the reads run: the first screenful is read on the event loop without the product's
facts (no CSV, no journal); the whole list with its facts (the count reads the results
CSV, the plan the journal: they grow with the session, A5) is read in thread workers,
after the first frame, after each run and after each key's change
(:meth:`ChecklistPane.load_in_background`, :meth:`ChecklistPane.collect_evidence`), so no
key waits on them. A key's change (space, ``n``, ``a``) is saved at once on the loop
(``checklist.toml`` alone, with what the last read in a worker said of the facts:
``save_done``, ``save_note``, ``add_item``) and redraws only the item it changed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from gpusession.core.files.errors import GpusessionError
from gpusession.core.files.textio import one_line
from gpusession.ui.context import UiContext


def item_prompt(item: Any, evidence: str | None) -> Text:
    """``[x] done  text`` + note and evidence lines, in words (H-11)."""
    words = item.state_words() if hasattr(item, "state_words") else ("done" if item.done else "open")
    mark = ("[x] " if item.done else "[ ] ") + words  # the words of `gpusession checklist` (S11)
    t = Text()
    t.append(f"{mark}  ", style="bold" if item.done else "")
    t.append(str(item.text))
    at = getattr(item, "at", None)
    if item.done and at is not None:
        when = at.strftime("%Y-%m-%d %H:%M %Z") if hasattr(at, "strftime") else str(at)
        t.append(f"  ({when})", style="dim")
    if getattr(item, "note", None):
        t.append(f"\n└ note: {one_line(str(item.note))}", style="italic")  # one line: none forged
    if evidence:
        t.append(f"\n└ evidence: {shown_evidence(evidence)}", style="dim")
    return t


#: The most lines and characters of one item's evidence the pane shows: one line per
#: experiment (``p1.fixed-before`` of a 500-experiment session: 45 KB) would be wrapped
#: and painted on the first frame and push every other item off the screen (A5).
EVIDENCE_SHOWN_LINES = 6
EVIDENCE_SHOWN_CHARS = 800


def shown_evidence(evidence: str) -> str:
    """``evidence``, or its first :data:`EVIDENCE_SHOWN_LINES` lines (at most :data:`EVIDENCE_SHOWN_CHARS`) and how much is left.

    The whole text stays in ``checklist.toml`` and ``gpusession checklist NAME`` prints it.
    """
    lines = evidence.split("\n")
    head = "\n".join(lines[:EVIDENCE_SHOWN_LINES])
    if len(lines) <= EVIDENCE_SHOWN_LINES and len(head) <= EVIDENCE_SHOWN_CHARS:
        return evidence
    if len(head) > EVIDENCE_SHOWN_CHARS:
        head = head[:EVIDENCE_SHOWN_CHARS].rsplit(" ", 1)[0]
    left = len(lines) - head.count("\n") - 1
    more = f"{left} more line{'s' if left != 1 else ''}" if left > 0 else "the rest of the line"
    return f"{head} … ({more}: `gpusession checklist` prints the whole evidence)"


#: The most characters of the carried note the status line shows (two lines at 80 columns);
#: the whole note is the last item's (a 4 KiB note would push the items off the screen).
NOTE_SHOWN_CHARS = 150


@dataclass(frozen=True)
class ChecklistRead:
    """One read of the checklist: its items (with the product's facts or not), the note
    carried by ``new --from`` and, when ``checklist.toml`` does not read, the line saying why."""

    items: list[Any]
    carried: Any | None = None
    problem: str | None = None
    #: whether the product's facts were read (else the count of done items is not said yet)
    with_facts: bool = True


def read_checklist(ctx: UiContext, *, with_facts: bool) -> ChecklistRead:
    """Read the checklist of ``ctx.session`` (S1, S11); safe in a thread worker (reads only).

    ``with_facts``: the product's facts (the results CSV's count, the journal's plan) and
    the evidence stored in ``checklist.toml`` too; ``False`` only for the first screenful. A hand-edited or unreadable ``checklist.toml``
    gives ``problem`` (``Checklist unreadable: …``), never an exception.
    """
    from gpusession.core.retrieval import checklist as mod

    try:
        # the first screenful: neither the facts nor the stored evidence (both grow with the session)
        items = list(mod.load_checklist(ctx.session, with_facts=with_facts, with_evidence=with_facts))
    except (GpusessionError, ValueError, OSError) as exc:  # a hand-edited or unreadable checklist.toml
        return ChecklistRead([], problem=f"Checklist unreadable: {exc}", with_facts=with_facts)
    carried = None
    if "started_from" in ctx.session.data:  # S11: new --from's note, said on the first screen
        from gpusession.core.retrieval.next_session import carried_note

        carried = carried_note(ctx.session, items)
    return ChecklistRead(items, carried, with_facts=with_facts)


def _first_words(text: str) -> str:
    """``text``, or its first words up to :data:`NOTE_SHOWN_CHARS` and where the rest is."""
    if len(text) <= NOTE_SHOWN_CHARS:
        return text
    head = text[:NOTE_SHOWN_CHARS].rsplit(" ", 1)[0]
    return f"{head} … (the whole note: the last item, g8.decision)"


class ChecklistPane(Vertical):
    """Pane 1: the session checklist; keys: space toggle, n note, a add item."""

    BINDINGS = [
        Binding("space", "toggle_done", "Done/open", id="checklist.toggle"),
        Binding("n", "note", "Note", id="checklist.note"),
        Binding("a", "add", "Add item", id="checklist.add"),
    ]

    @dataclass
    class ItemToggled(Message):
        """An item's done state was saved."""

        item_id: str
        done: bool

    @dataclass
    class NoteSaved(Message):
        """An item's note was saved."""

        item_id: str
        note: str

    @dataclass
    class EvidenceCollected(Message):
        """Automatic evidence per item id, and the list read after it (from the thread worker)."""

        evidence: dict[str, str]
        read: ChecklistRead | None = None
        generation: int = 0

    @dataclass
    class Loaded(Message):
        """The whole list with the product's facts, read in a thread worker."""

        read: ChecklistRead
        generation: int

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.items: list[Any] = []
        self.evidence: dict[str, str] = {}
        #: counts the reads started; a worker's read older than the newest one shown is
        #: not shown over it (a key's change is never undone by a slower read)
        self._generation = 0
        self._shown_generation = 0
        self._carried: Any | None = None
        self._counted = False  # the items shown were read with the product's facts

    def compose(self) -> ComposeResult:
        yield Static("", id="checklist-status", classes="status")
        yield OptionList(id="checklist-list")

    def on_mount(self) -> None:
        # Start-up time: the first frame shows the first screenful of items (every option
        # is at least one line); MainScreen.after_first_frame then reloads the whole list
        # and collects the evidence (NVML, polars), so neither holds up the first frame.
        self.reload(max_options=max(1, self.app.size.height))

    def focus_main(self) -> None:
        self.query_one(OptionList).focus()

    # -- data ------------------------------------------------------------------
    def reload(self, max_options: int | None = None) -> None:
        """Re-read the checklist from disk and redraw, keeping the highlighted item.

        On the event loop: the first screenful (``max_options``, no facts) and a key's
        change (space, n, a); a run's end and the first frame's full list read in a worker
        (:meth:`load_in_background`).

        Args:
            max_options: list only the first this many options (stage titles included),
                read without the product's facts; ``None``: all of them, with the facts.
                The count of done items always covers every item.
        """
        generation = self._next_generation()
        self._show(read_checklist(self.ctx, with_facts=max_options is None), generation, max_options)

    def _next_generation(self) -> int:
        self._generation += 1
        return self._generation

    def load_in_background(self) -> None:
        """Read the whole list with the product's facts in a thread worker, then show it."""
        self._load(self._next_generation())

    @work(thread=True, group="checklist-load", exclusive=True, exit_on_error=False)
    def _load(self, generation: int) -> None:
        self.post_message(self.Loaded(read_checklist(self.ctx, with_facts=True), generation))

    def on_checklist_pane_loaded(self, msg: Loaded) -> None:
        self._show(msg.read, msg.generation)

    def _show(self, read: ChecklistRead | None, generation: int, max_options: int | None = None) -> None:
        """Draw ``read`` (``None``: the items shown, again, with the evidence now held)."""
        status = self.query_one("#checklist-status", Static)
        olist = self.query_one(OptionList)
        if read is not None:
            if generation < self._shown_generation:  # a newer read is shown: draw that one again
                read = None
            else:
                self._shown_generation = generation
        if read is not None and read.problem is not None:
            status.update(read.problem)
            return
        if read is not None:
            self.items, self._carried, self._counted = read.items, read.carried, read.with_facts
        keep = olist.highlighted_option.id if olist.highlighted_option else None
        options: list[Option] = []
        stage = object()
        for item in self.items:
            if item.stage != stage:
                stage = item.stage
                title = Text(f"Stage {item.stage} — {item.stage_title}", style="bold underline")
                options.append(Option(title, disabled=True))
            options.append(Option(item_prompt(item, self._evidence_of(item)), id=item.id))
            if max_options is not None and len(options) >= max_options:
                break
        if [o.id for o in olist.options] == [o.id for o in options] and olist.option_count == len(options):
            for i, new in enumerate(options):  # the same items: only the prompts that changed are redrawn
                if new.id is not None and olist.get_option_at_index(i).prompt != new.prompt:
                    olist.replace_option_prompt_at_index(i, new.prompt)
        else:
            olist.set_options(options)
        self._say_count()
        if keep is not None:
            try:
                olist.highlighted = olist.get_option_index(keep)
            except OptionDoesNotExist:  # the item is gone
                pass
        if olist.highlighted is None or olist.get_option_at_index(olist.highlighted).disabled:
            for i, opt in enumerate(olist.options):
                if not opt.disabled:
                    olist.highlighted = i
                    break

    def _evidence_of(self, item: Any) -> str | None:
        """The evidence shown beside ``item``: the product's fact when it ticks it (S11), else the collected one."""
        if getattr(item, "ticked_by", None) == "gpusession":
            return str(item.evidence) if item.evidence is not None else None
        return self.evidence.get(item.id) or getattr(item, "evidence", None)

    def _say_count(self) -> None:
        """The status line: the count of done items over every item, the keys, the carried note."""
        done = sum(1 for i in self.items if i.done)
        # before the facts are read (the first frame) a count would change a moment later: not said yet
        count = f"{done} of {len(self.items)} done" if self._counted else "counting …"
        line = f"{count} — space: done/open, n: note, a: add item; saved at once"
        carried = self._carried
        self.query_one("#checklist-status", Static).update(
            Text(f"{_first_words(carried.words())}\n{line}") if carried is not None else line)

    def _changed(self, item: Any) -> None:
        """Show a key's change saved on the loop: ``item`` (as written) in place of the item of
        its id, or added; only its option and the count are redrawn. The facts and the whole
        list are then read again in a worker (:meth:`load_in_background`), never on the loop."""
        self._shown_generation = self._next_generation()  # an older worker's read is not shown over it
        ids = [i.id for i in self.items]
        if item.id in ids:
            self.items = [item if i.id == item.id else i for i in self.items]
        else:  # an own item: last of its stage (the order load_checklist gives)
            self.items = sorted([*self.items, item], key=lambda i: i.stage)
        self._show(None, self._shown_generation)
        self.load_in_background()

    def current(self) -> Any | None:
        opt = self.query_one(OptionList).highlighted_option
        if opt is None or opt.id is None:
            return None
        return next((i for i in self.items if i.id == opt.id), None)

    def collect_evidence(self) -> None:
        """Collect the automatic evidence (NVML, the results, the journal) in a thread
        worker, then read the list with its facts there too and show both."""
        self._collect(self._next_generation())

    @work(thread=True, group="checklist-evidence", exclusive=True, exit_on_error=False)
    def _collect(self, generation: int) -> None:
        from gpusession.core.retrieval import checklist as mod

        try:
            with self.ctx.write_lock:  # it writes checklist.toml (and order.toml, S5)
                ev = mod.collect_evidence(self.ctx.session, nvml=self.ctx.nvml, now=self.ctx.now())
        except Exception as exc:  # noqa: BLE001 - any failure of a reader (NVML, polars, files) is shown beside the items, never crashes the TUI
            ev = {"_error": f"evidence not collected: {exc}"}
        read = read_checklist(self.ctx, with_facts=True)  # after the evidence: what it wrote is read
        self.post_message(self.EvidenceCollected(dict(ev), read, generation))

    def on_checklist_pane_evidence_collected(self, msg: EvidenceCollected) -> None:
        self.evidence = msg.evidence
        self._show(msg.read, msg.generation)

    # -- actions -------------------------------------------------------------------
    # Each change is saved at once (S7) on the loop, from what the pane holds: the write
    # reads checklist.toml only, never the product's facts (A5); :meth:`_changed` shows it.
    def action_toggle_done(self) -> None:
        from gpusession.core.retrieval import checklist as mod

        item = self.current()
        if item is None:
            return
        if item.done and getattr(item, "ticked_by", None) == mod.PRODUCT:
            self._undone_with_note(item)  # S11: the person's word over the fact, with why
            return
        with self.ctx.write_lock:
            written = mod.save_done(self.ctx.session, item.id, not item.done, recorded_as=None)
        self.post_message(self.ItemToggled(item.id, not item.done))
        self._changed(written)

    def _undone_with_note(self, item: Any) -> None:
        """Ask why an item gpusession's record ticks is not done, then mark it so (S11)."""
        from gpusession.ui.modals import Field, FormModal

        def save(result: dict[str, str]) -> None:
            from gpusession.core.retrieval import checklist as mod

            with self.ctx.write_lock:  # raises BadInput (no note): the form stays open and says why
                written = mod.save_done(self.ctx.session, item.id, False, note=result["note"],
                                        recorded_as=str(item.evidence))
            self.post_message(self.ItemToggled(item.id, False))
            self._changed(replace(written, not_done_although_recorded=True))  # the fact is still recorded

        self.app.push_screen(FormModal(f"Not done although recorded ({item.evidence}): why?",
                                       [Field("note", "Note", item.note or "")], on_save=save))

    def action_note(self) -> None:
        from gpusession.ui.modals import Field, FormModal

        item = self.current()
        if item is None:
            return

        def save(result: dict[str, str]) -> None:
            from gpusession.core.retrieval import checklist as mod

            with self.ctx.write_lock:  # raises BadInput: the form stays open and says why
                written = mod.save_note(self.ctx.session, item.id, result["note"])
            self.post_message(self.NoteSaved(item.id, result["note"]))
            self._changed(replace(item, note=written.note))  # a fact still ticks it as before

        self.app.push_screen(FormModal(f"Note for: {item.text}", [Field("note", "Note", item.note or "")], on_save=save))

    def action_add(self) -> None:
        from gpusession.ui.modals import Field, FormModal

        stages: dict[str, str] = {}
        for i in self.items:
            stages.setdefault(str(i.stage), f"{i.stage} {getattr(i, 'stage_title', '')}".strip())
        if not stages:
            stages = {"1": "1"}
        current = self.current()
        first = str(current.stage) if current is not None else next(iter(stages))

        def save(result: dict[str, str]) -> None:
            from gpusession.core.files.errors import BadInput
            from gpusession.core.retrieval import checklist as mod

            if not result["text"].strip():
                raise BadInput("expected the item's text; it is empty", field="text")
            stage: Any = result["stage"]
            if stage.isdigit():
                stage = int(stage)
            with self.ctx.write_lock:  # raises BadInput: the form stays open and says why
                added = mod.add_item(self.ctx.session, stage, result["text"].strip())
            self._changed(added)

        self.app.push_screen(
            FormModal(
                "Add your own checklist item",
                [
                    Field("stage", "Stage", first, choices=tuple(stages), labels=tuple(stages.values())),
                    Field("text", "Item", "", placeholder="e.g. ask the provider for the invoice"),
                ],
                on_save=save,
            )
        )
