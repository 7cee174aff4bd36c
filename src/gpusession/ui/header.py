"""The header line every screen keeps on top (S6): session, GPU seen, window, order.

Who calls it: :class:`gpusession.ui.screens.MainScreen` composes it and calls
:meth:`SessionHeader.show_gpus` when the memory pane reports a sample and
:meth:`SessionHeader.refresh_line` when the order or package changes (and every 30 s).
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from gpusession.ui.context import UiContext, fmt_left, need


def gpu_words(snapshot: Any | None) -> str:
    """``GPU: 1× NVIDIA H200`` / ``CPU only (no NVIDIA driver found …)`` / ``GPU: not read yet``."""
    if snapshot is None:
        return "GPU: not read yet"
    if not getattr(snapshot, "available", False):
        return "CPU only"
    gpus = list(getattr(snapshot, "gpus", ()))
    if not gpus:
        return "CPU only (NVML sees no GPU)"
    names: dict[str, int] = {}
    for g in gpus:
        names[g.name] = names.get(g.name, 0) + 1
    return "GPU: " + ", ".join(f"{n}× {name}" for name, n in names.items())


def package_words(ctx: UiContext) -> str:
    """``7-day package, ends 12-06 12:00 UTC, 5d 03h 12m left`` (S6)."""
    try:
        pkg = ctx.session.package
    except Exception as exc:  # a hand-edited session.toml
        return f"package unreadable ({exc})"
    if pkg.days is None or pkg.start is None or pkg.end is None:
        return "package window not set"
    end = pkg.end.astimezone(ctx.tz) if ctx.tz is not None else pkg.end.astimezone()
    return f"{pkg.days}-day package ends {end:%m-%d %H:%M %Z}, {fmt_left(pkg.time_left(ctx.now()))}"


def order_words(ctx: UiContext) -> str:
    """The order state from core.order, e.g. ``payment sent — not confirmed`` (S2)."""
    mod, reason = need("core.order", "load_order", "order_status_line")
    if mod is None:
        return "order: not available yet"
    try:
        state = mod.load_order(ctx.session)
        return f"order: {mod.order_status_line(state, ctx.now())}"
    except Exception as exc:
        return f"order: unreadable ({type(exc).__name__})"


class SessionHeader(Static):
    """``name │ GPU │ package window`` (wraps at 80 columns), then the order state."""

    def __init__(self, ctx: UiContext, **kw: Any) -> None:
        super().__init__("", **kw)
        self.ctx = ctx
        self.snapshot: Any | None = None

    def on_mount(self) -> None:
        self.refresh_line()

    def show_gpus(self, snapshot: Any) -> None:
        """Take the latest NVML snapshot (from the memory poller); redraw if the GPUs changed."""
        changed = gpu_words(snapshot) != gpu_words(self.snapshot)
        self.snapshot = snapshot
        if changed:
            self.refresh_line()

    def refresh_line(self) -> None:
        parts = [f"session {self.ctx.session.name}", gpu_words(self.snapshot), package_words(self.ctx)]
        self.update(" │ ".join(parts) + "\n" + order_words(self.ctx))
