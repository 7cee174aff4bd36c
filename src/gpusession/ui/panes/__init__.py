"""The six panes of the main screen, one module and one class each (style.md §3)."""
