"""The header line every screen keeps on top (S6): session, GPU seen, window, order.

Who calls it: :class:`gpusession.ui.screens.MainScreen` composes it, calls
:meth:`SessionHeader.read_order` once the first frame is painted,
:meth:`SessionHeader.show_gpus` when the memory pane reports a sample and
:meth:`SessionHeader.refresh_line` when the order or package changes (and every 30 s).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from textual import work
from textual.widgets import Static

from gpusession.core.files.errors import GpusessionError
from gpusession.core.money.window import package_window
from gpusession.ui.context import UiContext


def gpu_words(snapshot: Any | None) -> str:
    """``GPU: 1× NVIDIA H200`` / ``CPU only (no NVIDIA driver found …)`` / ``GPU: not read yet``."""
    if snapshot is None:
        return "GPU: not read yet"
    if not getattr(snapshot, "available", False):
        return "CPU only"
    names = _gpu_counts(snapshot)
    if not names:
        return "CPU only (NVML sees no GPU)"
    return "GPU: " + ", ".join(f"{n}× {name}" for name, n in names.items())


def _gpu_counts(snapshot: Any) -> dict[str, int]:
    """How many GPUs of each name the snapshot lists, in its order (``{}``: none)."""
    names: dict[str, int] = {}
    for g in getattr(snapshot, "gpus", ()):
        names[g.name] = names.get(g.name, 0) + 1
    return names


def gpu_short(snapshot: Any | None) -> str:
    """``1× RTX A5000`` / ``CPU only`` / ``GPU not read yet`` (the header at 80 columns).

    From the snapshot's fields, as :func:`gpu_words` (never a cut of its words, A1).
    """
    if snapshot is None:
        return "GPU not read yet"
    names = _gpu_counts(snapshot) if getattr(snapshot, "available", False) else {}
    if not names:
        return "CPU only"
    return ", ".join(f"{n}× {name.replace('NVIDIA ', '')}" for name, n in names.items())


def package_words(ctx: UiContext, *, short: bool = False) -> str:
    """``7-day package ends 12-06 12:00 UTC, 5d 03h 12m left`` (S6).

    With ``short``: ``7d pkg ends 12-06 12:00, 5d 03h left`` (the header at 80 columns;
    minutes are dropped only while whole days are left).
    """
    try:
        pkg = ctx.session.package
    except (GpusessionError, ValueError, OSError) as exc:  # a hand-edited session.toml
        return "package unreadable" if short else f"package unreadable ({exc})"
    if pkg.days is None or pkg.start is None or pkg.end is None:
        return "package window not set"
    end = pkg.end.astimezone(ctx.tz) if ctx.tz is not None else pkg.end.astimezone()
    left = pkg.time_left(ctx.now())
    window = package_window(pkg, ctx.now())  # the words of `status` and `show`
    if not short:
        return f"{pkg.days}-day package ends {end:%m-%d %H:%M %Z}, {window.time_left_words()}"
    text = window.time_left_words(minutes=False)  # 4d 21h 05m left → 4d 21h left
    verb = "ended" if left is not None and left.total_seconds() < 0 else "ends"
    return f"{pkg.days}d pkg {verb} {end:%m-%d %H:%M}, {text}"


def order_words(ctx: UiContext) -> str:
    """The order state from core.order, e.g. ``payment sent — not confirmed`` (S2)."""
    from gpusession.core.money.order import load_order
    from gpusession.core.money.order_text import order_status_line
    from gpusession.core.money.window import session_window_origin

    try:
        state = load_order(ctx.session)
        line = f"{order_status_line(state, ctx.now())} · {session_window_origin(ctx.session, state).words()}"
        return line if line.startswith("order ") else f"order: {line}"
    except (GpusessionError, ValueError, OSError):  # a hand-edited or unreadable order.toml
        # The Order pane shows the one-line error; the header has room for the fact only.
        return "order: order.toml could not be read (the Order pane says why)"


#: How long before the session limit the header says it (D1).
LIMIT_NOTICE = timedelta(hours=24)


def package_warning_now(ctx: UiContext) -> Any | None:
    """The end-of-package warning at ``ctx.now()``: past the session limit ("pull by …",
    D1), 24 h / 2 h before the end while the copy home is not verified, and "package
    ended"; else, from :data:`LIMIT_NOTICE` before the session limit, "stop by …";
    ``None`` otherwise."""
    from gpusession.core.copyhome.limit import session_limit, when_words
    from gpusession.core.money.window import PackageWarning, package_warning, package_window
    from gpusession.core.retrieval.status import retrieval_state

    try:
        window = package_window(ctx.session.package, ctx.now())
        limit = session_limit(ctx.session, ctx.now())
    except (GpusessionError, ValueError, OSError):
        return None
    warning = package_warning(window, retrieval_state(ctx.session.folder).verified)
    if limit.passed() and (warning is None or warning.level == "24h"):  # D1: at the limit
        return PackageWarning("limit", limit.warning_words(), limit.warning_words(short=True))
    if warning is None and limit.at is not None and limit.at - ctx.now() <= LIMIT_NOTICE:
        pull = f"; pull by {when_words(limit.pull_by, ctx.now())}" if limit.pull_by else ""
        return PackageWarning("limit-soon", limit.words, f"{limit.stop_by}{pull}")
    return warning


def header_text(ctx: UiContext, snapshot: Any | None, width: int, order: str | None = None,
                warning: Any | None = None) -> str:
    """The header for a terminal ``width`` columns wide (S6).

    The first line keeps session, GPU and window on one line: the long form when it
    fits, else a shorter form (``7d pkg ends 12-06 14:45, 6d 23h left``). The order
    line comes second and may wrap onto a third line; no word of it is dropped
    (``order``: that line already read; ``None`` reads it now).
    """
    name = ctx.session.name
    long = " │ ".join([f"session {name}", gpu_words(snapshot), package_words(ctx)])
    if len(long) <= width:
        first = long
    else:
        first = " │ ".join([name, gpu_short(snapshot), package_words(ctx, short=True)])
        if len(first) > width:  # a very long name: the window matters more than the GPU
            first = " │ ".join([name, package_words(ctx, short=True)])
    second = order if order is not None else order_words(ctx)
    if warning is not None:  # the key x (footer) opens the Cost pane's extensions
        second = f"WARNING {warning.short} (x: extensions) │ {second}"
    return first + "\n" + second


class SessionHeader(Static):
    """``name │ GPU │ package window`` on one line, then the order state (may wrap)."""

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__("", **kw)
        self.ctx = ctx
        self.snapshot: Any | None = None
        self._width = 0
        self._order = "order: reading…"
        #: The end-of-package warning shown; the app shows the key x while set.
        self.warning: Any | None = None

    def on_mount(self) -> None:
        # The order line needs core.order and order.toml, the package-end warning
        # core.status and core.window: both are read after the first frame
        # (MainScreen.after_first_frame calls read_order; their imports would hold the GIL).
        self._redraw()

    @work(thread=True, group="header-order", exit_on_error=False)
    def read_order(self) -> None:
        """Read the order line and the package-end warning in a thread, then redraw.

        Started after the first frame (start-up), so neither delays it.
        """
        line = order_words(self.ctx)
        warning = package_warning_now(self.ctx)
        self.app.call_from_thread(self._order_read, line, warning)

    def _order_read(self, line: str, warning: Any | None = None) -> None:
        self._order = line
        self._set_warning(warning)
        self._redraw()

    def on_resize(self) -> None:
        if self._content_width() != self._width:
            self._redraw()

    def _content_width(self) -> int:
        width = self.content_size.width or (self.app.size.width - 2)
        return max(20, width)

    def show_gpus(self, snapshot: Any) -> None:
        """Take the latest NVML snapshot (from the memory poller); redraw if the GPUs changed."""
        changed = gpu_words(snapshot) != gpu_words(self.snapshot)
        self.snapshot = snapshot
        if changed:
            self._redraw()

    def refresh_line(self) -> None:
        """Re-read the order and the package and redraw (the order or package changed)."""
        self._order = order_words(self.ctx)
        self._check_warning()
        self._redraw()

    def _check_warning(self) -> None:
        self._set_warning(package_warning_now(self.ctx))

    def _set_warning(self, warning: Any | None) -> None:
        if warning != self.warning:
            self.warning = warning
            self.app.refresh_bindings()

    def _redraw(self) -> None:
        self._width = self._content_width()
        self.update(header_text(self.ctx, self.snapshot, self._width, self._order, self.warning))
