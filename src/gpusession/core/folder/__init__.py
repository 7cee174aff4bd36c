"""The session folder: the folder itself, its journal, its run lock and crash recovery, the package value, the stored experiments and the ending of process groups.

Never imports ``money``, ``copyhome`` or ``retrieval`` (an import-linter contract).
"""
