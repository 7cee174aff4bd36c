"""The seams of core say their types: no session or record handed over as ``Any``.

An ``Any`` for a session hides which module it comes from (an import the layer contracts
of ``lint-imports`` cannot see) and lets any misspelt attribute through; a lower floor
that must not import the session takes a ``Protocol`` instead (``records.summary``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import gpusession

CORE = Path(gpusession.__file__).parent / "core"

#: Parameter names that carry a session or a journal record.
SEAM_NAMES = {"session", "sess", "record", "records", "rec"}


def _is_any(annotation: ast.expr | None) -> bool:
    """Whether the annotation is ``Any`` itself, or ``Any`` in a union (``Any | None``).

    ``dict[str, Any]`` (a JSON object as read) is a type and passes.
    """
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_any(annotation.left) or _is_any(annotation.right)
    if isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", None) in ("Optional", "Union"):
        inner = annotation.slice
        return any(_is_any(e) for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner]))
    return (isinstance(annotation, ast.Name) and annotation.id == "Any"
            or isinstance(annotation, ast.Attribute) and annotation.attr == "Any")


def _any_seams(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg in SEAM_NAMES and _is_any(arg.annotation):
                    found.append(f"{where}:{arg.lineno} {node.name}({arg.arg})")
    return found


def test_no_session_or_record_parameter_in_core_is_annotated_any() -> None:
    found = [hit for path in sorted(CORE.rglob("*.py"))
             for hit in _any_seams(path.read_text(encoding="utf-8"), str(path.relative_to(CORE)))]
    assert found == []


def test_the_seam_check_sees_an_any_session() -> None:
    assert _any_seams("def f(session: Any, *, record: 'Any | None' = None, n: Any = 1): ...", "x.py") == [
        "x.py:1 f(session)", "x.py:1 f(record)"]
    assert _any_seams("def f(session: Session, rec: typing.Any): ...", "x.py") == ["x.py:1 f(rec)"]
    assert _any_seams("def f(session: Optional[Any], rec: dict[str, Any]): ...", "x.py") == ["x.py:1 f(session)"]
