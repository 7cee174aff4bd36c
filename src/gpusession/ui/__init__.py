"""The Textual TUI of gpusession: one screen, six panes, keyboard first.

Who calls it: ``gpusession [NAME]`` / ``gpusession open`` and ``gpusession demo`` through
:func:`gpusession.ui.app.run_app`; tests through :func:`gpusession.ui.app.build_app`.

Importing this package never imports torch (M5: the UI process must not create a CUDA
context; live device figures come from NVML). It raises Textual's escape-sequence delay
(``ESCDELAY``) before Textual is imported, so that an arrow key whose bytes arrive split
over ssh + tmux is not read as a lone Escape (H-11); a value set by the user wins.
"""

from __future__ import annotations

import os

os.environ.setdefault("ESCDELAY", "300")
