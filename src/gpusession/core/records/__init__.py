"""The results as records: the 38-column results CSV, the per-rank table and the run summaries.

Pure over files: stands on ``files`` only.
"""
