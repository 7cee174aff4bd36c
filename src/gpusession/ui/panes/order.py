"""Order pane: the order, the active payment order with its countdown, the timeline.

Who calls it: :class:`gpusession.ui.screens.MainScreen` (pane 5) and the command palette
("New payment order", "Record order event"). The model is :mod:`gpusession.core.money.order`
(S2, S3, S5): "I have paid" is ``payment-sent`` and never reads as paid; only provider
tracking confirms; provisioning is its own state. The countdown to the payment order's
expiry is redrawn every second from the cached state (no file read per tick).

Where the reads run: the pane's first show reads ``order.toml`` in a thread worker (key 5
answers at once, "reading order.toml …" meanwhile, A5); a save made in the pane's forms
writes and reads it again on the loop, so the form can say why a value is refused and the
pane shows what was saved at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from gpusession.core.files.secrets import shown
from gpusession.core.money.order_text import order_lines
from gpusession.ui.context import UiContext, whole_number
from gpusession.ui.modals import Field, FormModal

#: How this pane names the way to record the order (core's ``set_hint``): its key ``o``; the
#: CLI's ``gpusession order NAME set`` has no place in the TUI. Passed to core, never a rewrite
#: of core's words (A1).
PANE_SET_LINE_HINT = "(o: set order)"
PANE_SET_HINT = "o (set order)"
#: What the pane says while its first read of ``order.toml`` runs in a worker.
READING = "reading order.toml …"


def model_warnings(state: Any, now: datetime) -> list[str]:
    """Standing warnings of the order model in words: not confirmed, expired, deviation."""
    out: list[str] = []
    pay = getattr(state, "payment", None)
    if state.has("payment-sent") and not state.paid:
        out.append("Payment sent — NOT confirmed: only the provider's tracking confirms.")
    if pay is not None and pay.expired(now) and not state.paid:
        out.append("The active payment order has EXPIRED: do not pay it; ask for a new one.")
    if state.has("deviation-noted"):
        out.append("A deviation from the order was noted (GPU model or count).")
    out += list(getattr(state, "hidden", ()))  # a hand-pasted secret: hidden, said
    return out


def parse_expiry(text: str, now: datetime) -> datetime:
    """``30`` (minutes from now), ``2h``, or an ISO 8601 time with offset.

    Raises:
        BadInput: not one of those, or a time beyond the calendar (``99999999999h``).
    """
    from gpusession.core.files.errors import BadInput

    t = text.strip().lower()
    try:
        if t.endswith("h") and t[:-1].isdigit():
            return now + timedelta(hours=int(t[:-1]))
        if t.endswith("m") and t[:-1].isdigit():
            t = t[:-1]
        if t.isdigit():
            return now + timedelta(minutes=int(t))
    except OverflowError:
        raise BadInput(f"{shown(text.strip())} is beyond the calendar; expected minutes from now, "
                       "hours like 2h, or an ISO 8601 time with offset", field="expires") from None
    from gpusession.core.folder.package import parse_start

    return parse_start(text, field="expires")


class OrderPane(Vertical):
    """Pane 5: order and payment notes; keys: e event, p payment order, o order."""

    BINDINGS = [
        Binding("e", "add_event", "Add event", id="order.event"),
        Binding("p", "payment_order", "Payment order", id="order.payment"),
        Binding("o", "set_order", "Set order", id="order.set"),
        Binding("w", "restart_window", "Window at provisioning", id="order.window", show=False),
    ]

    @dataclass
    class Read(Message):
        """``order.toml`` read in the worker: the state, or the line saying why it does not read."""

        state: Any
        problem: str
        generation: int

    @dataclass
    class OrderChanged(Message):
        """order.toml changed; the header re-reads the status line."""

        warnings: list[str]

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__(**kw)
        self.ctx = ctx
        self.state: Any = None
        self.last_warnings: list[str] = []
        #: counts the reads; a worker's read older than the newest shown is dropped
        self._generation = 0

    def compose(self) -> ComposeResult:
        yield Static("e: add event   p: new payment order   o: set order", id="order-keys", classes="status")
        yield Static("", id="order-warnings")
        with VerticalScroll(id="order-box", can_focus=True):
            yield Static(READING, id="order-text")

    def on_mount(self) -> None:
        self.load_in_background()
        if self.ctx.poll_s > 0:
            self.set_interval(1.0, self._tick, name="order-countdown")

    def _tick(self) -> None:
        if self.is_on_screen:  # the countdown is redrawn only while it can be seen
            self.redraw()

    def focus_main(self) -> None:
        self.query_one("#order-box").focus()

    def load_in_background(self) -> None:
        """Read ``order.toml`` in a thread worker, then draw it (the pane's first show)."""
        self._generation += 1
        self._read(self._generation)

    @work(thread=True, group="order-load", exclusive=True, exit_on_error=False)
    def _read(self, generation: int) -> None:
        state, problem = self._load()
        self.post_message(self.Read(state, problem, generation))

    def on_order_pane_read(self, msg: Read) -> None:
        if msg.generation == self._generation:
            self._shown(msg.state, msg.problem)

    def _load(self) -> tuple[Any, str]:
        """``(state, "")``, or ``(None, the line saying why order.toml does not read)``."""
        from gpusession.core.files.errors import BadInput
        from gpusession.core.money import order as mod

        try:
            return mod.load_order(self.ctx.session), ""
        except BadInput as exc:  # order.toml hand-edited or unreadable: said in the pane
            return None, f"order.toml unreadable: {exc}"

    def reload(self) -> None:
        """Read ``order.toml`` again on the loop and draw it (after a save made in the pane)."""
        self._generation += 1  # a first read still under way is older
        self._shown(*self._load())

    def _shown(self, state: Any, problem: str) -> None:
        self.state = state
        if state is None:
            self.query_one("#order-text", Static).update(problem)
            return
        self.redraw()

    def redraw(self) -> None:

        if self.state is None:
            return
        now = self.ctx.now()
        lines = order_lines(self.state, now, tz=self.ctx.tz, set_hint=PANE_SET_LINE_HINT)
        self.query_one("#order-text", Static).update("\n".join(lines))
        warn = model_warnings(self.state, now) + [f"Last action: {w}" for w in self.last_warnings]
        origin = self._origin()
        if origin is not None and origin.offer and origin.provisioned_at is not None:
            from gpusession.core.money.window import local_str

            warn.append(f"The GPU was provisioned at {local_str(origin.provisioned_at, self.ctx.tz)} "
                        f"but the {origin.words()}: press w to restart it at gpu-provisioned.")
        box = self.query_one("#order-warnings", Static)
        box.update("\n".join(f"WARNING: {w}" for w in warn))
        box.display = bool(warn)
        self.set_class(bool(warn), "-warning")

    def _origin(self) -> Any:
        """Which event the package window counts from (S6); ``None`` if unknown."""
        from gpusession.core.money.window import session_window_origin

        if self.state is None:
            return None
        try:
            return session_window_origin(self.ctx.session, self.state)
        except (ValueError, OSError):  # a hand-edited session.toml: said by the header
            return None

    def action_restart_window(self) -> None:
        """(Re)start the package window at the order's gpu-provisioned event (S6)."""
        from gpusession.core.folder.package import Package

        origin = self._origin()
        if origin is None or origin.provisioned_at is None:
            self.notify("no gpu-provisioned event recorded yet: press e to record it first",
                        title="package window", severity="warning")
            return
        if not origin.offer:
            self.notify("the package window already counts from gpu-provisioned", title="package window")
            return
        with self.ctx.write_lock:
            old = self.ctx.session.package
            self.ctx.session.set_package(Package(gpu_model=old.gpu_model, lots=old.lots, days=old.days,
                                                 start=origin.provisioned_at))
        self.notify("package window restarted at gpu-provisioned", title="package window")
        self._changed([])

    def _changed(self, warnings: list[str]) -> None:
        self.last_warnings = list(warnings)
        self.reload()
        self.post_message(self.OrderChanged(list(warnings)))
        for w in warnings:
            self.notify(w, title="order", severity="warning")

    def action_add_event(self) -> None:
        from gpusession.core.money import order as mod


        def save(result: dict[str, str]) -> None:
            with self.ctx.write_lock:  # raises BadInput: the form stays open and says why
                warnings = mod.record_event(
                    self.ctx.session, result["state"], source=result["source"], note=result["note"],
                    at=self.ctx.now(), amount=result["amount"].strip() or None, set_hint=PANE_SET_HINT,
                )
            self._changed(list(warnings))

        self.app.push_screen(
            FormModal(
                "Record an order event (only provider tracking confirms a payment)",
                [
                    Field("state", "State", "payment-sent", choices=tuple(mod.STATES)),
                    Field("source", "Source", mod.SOURCES[0], choices=tuple(mod.SOURCES)),
                    Field("note", "Note (no passwords, keys or seed phrases)", ""),
                    Field("amount", "Amount sent (payment-sent only, exact decimal)", "", placeholder="e.g. 55.00"),
                ],
                on_save=save,
            )
        )

    def action_payment_order(self) -> None:
        from gpusession.core.money import order as mod


        def save(result: dict[str, str]) -> None:
            now = self.ctx.now()
            with self.ctx.write_lock:  # raises BadInput: the form stays open and says why
                _, warnings = mod.new_payment_order(
                    self.ctx.session, asset=result["asset"], network=result["network"],
                    amount=result["amount"], destination=result["destination"],
                    expires_at=parse_expiry(result["expires"], now), now=now, set_hint=PANE_SET_HINT,
                )
            self._changed(list(warnings))

        self.app.push_screen(
            FormModal(
                "New payment order (asset and network together, exact amount)",
                [
                    Field("asset", "Asset", "", placeholder="e.g. USDT"),
                    Field("network", "Network", "", placeholder="e.g. TRC20"),
                    Field("amount", "Exact amount (decimal point)", "", placeholder="e.g. 55.00"),
                    Field("destination", "Destination address", "", placeholder="e.g. TXyz… (copy it exactly)"),
                    Field("expires", "Expires: minutes from now, 2h, or ISO 8601 with offset", "30"),
                ],
                on_save=save,
            )
        )

    def action_set_order(self) -> None:
        from gpusession.core.money import order as mod

        pkg = self.ctx.session.package

        def save(result: dict[str, str]) -> None:
            lots = whole_number(result["lots"], "lots")
            with self.ctx.write_lock:  # raises BadInput: the form stays open and says why
                mod.set_order(
                    self.ctx.session, number=result["number"], gpu_model=result["gpu"],
                    lots=lots, days=int(result["days"]),
                    preparation=result["preparation"] or None, at=self.ctx.now(),
                )
            self._changed([])

        o = getattr(self.state, "order", None)
        self.app.push_screen(
            FormModal(
                "The order as placed",
                [
                    Field("number", "Order number", getattr(o, "number", "")),
                    Field("gpu", "GPU model", getattr(o, "gpu_model", None) or pkg.gpu_model or ""),
                    Field("lots", "Lots", str(getattr(o, "lots", None) or pkg.lots or 1)),
                    Field("days", "Days", str(getattr(o, "days", None) or pkg.days or 7), choices=("3", "7", "30")),
                    Field("preparation", "Preparation (software preset)", getattr(o, "preparation", None) or ""),
                ],
                on_save=save,
            )
        )

