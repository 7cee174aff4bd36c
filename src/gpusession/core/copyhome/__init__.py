"""The copy home and its proof: pull, probe, manifest, throughput, links, the session limit.

Why a room of its own: bringing the work home (G§2, G§8) and the time kept for it
(D1, D2) form one concern that the report, the checklist and ``status`` only read. Stands
on ``folder`` and below; never imports ``money`` or ``retrieval`` (an import-linter contract).
"""
