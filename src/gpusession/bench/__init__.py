"""Run launcher engine: plan (no torch), runner (no torch), worker (torch)."""
