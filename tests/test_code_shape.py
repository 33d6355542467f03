"""Checks anyone can run on the code's shape: no function in eagle_rag/ over 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "eagle_rag"
MAX_LINES = 60


def long_functions(root: Path) -> dict[str, int]:
    """``path:function`` of every function longer than MAX_LINES, outside migrations."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    found[f"{path.relative_to(root).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_is_longer_than_60_lines() -> None:
    assert long_functions(PACKAGE) == {}


def test_the_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\ndef short():\n    return 1\n")
    assert long_functions(tmp_path) == {"long.py:long": MAX_LINES + 1}
