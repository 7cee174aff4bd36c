"""No import cycle inside ``gpusession`` (design.md "Target after the restructuring").

grimp (the graph builder of import-linter) sees every import: module level, inside
functions and under ``TYPE_CHECKING``. A cycle is a strongly connected set of modules;
the test names each set and its edges so the fix (move a function or a type down) is
plain.
"""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install import-linter)")


def _cycles(package: str) -> list[list[str]]:
    """The strongly connected sets of two or more modules of ``package`` (Tarjan)."""
    graph = grimp.build_graph(package, include_external_packages=False)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(root: str) -> None:
        # Iterative Tarjan: (node, iterator over its successors).
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, succ = work[-1]
            for nxt in succ:
                if nxt not in edges:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def _describe(package: str, cycles: list[list[str]]) -> str:
    graph = grimp.build_graph(package, include_external_packages=False)
    lines = []
    for comp in cycles:
        lines.append(" <-> ".join(comp))
        for a in comp:
            for b in sorted(set(graph.find_modules_directly_imported_by(a)) & set(comp)):
                lines.append(f"    {a} imports {b}")
    return "\n".join(lines)


def test_core_has_no_import_cycle() -> None:
    cycles = [c for c in _cycles("gpusession") if all(m.startswith("gpusession.core") for m in c)]
    assert not cycles, "import cycles in gpusession.core:\n" + _describe("gpusession", cycles)


def test_gpusession_has_no_import_cycle() -> None:
    cycles = _cycles("gpusession")
    assert not cycles, "import cycles in gpusession:\n" + _describe("gpusession", cycles)


def test_cycle_finder_sees_a_cycle(tmp_path, monkeypatch) -> None:
    """The finder itself: a two-module cycle, one side inside a function, is found."""
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclepkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclepkg import a\n    return a\n")
    (pkg / "c.py").write_text("from cyclepkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles("cyclepkg") == [["cyclepkg.a", "cyclepkg.b"]]
