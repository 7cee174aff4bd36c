"""The six panes of the main screen, one module and one class each (design.md, style point 3)."""
