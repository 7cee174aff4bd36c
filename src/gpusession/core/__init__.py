"""Headless core of gpusession, in rooms by subject on import floors (files < records < events < validation, gpu, experiment < folder < money < retrieval).

Nothing under ``gpusession.core`` may import ``textual`` or ``torch`` (design.md §Layers);
``tests/test_layers.py`` checks this in a fresh subprocess.
"""
