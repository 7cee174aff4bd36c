"""Headless core of gpusession: session folders, results, validation, cost, order.

Nothing under ``gpusession.core`` may import ``textual`` or ``torch`` (style.md §1);
``tests/test_layers.py`` checks this in a fresh subprocess.
"""
