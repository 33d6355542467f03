"""The kernel never imports plugins, the API, MCP or the UI (DESIGN §2)."""

from __future__ import annotations

import ast
from pathlib import Path

KERNEL = Path(__file__).resolve().parents[2] / "eagle_rag" / "plugins"
FORBIDDEN = ("plugins", "eagle_rag.api", "eagle_rag.mcp", "eagle_rag.web")


def forbidden_imports(source: str) -> list[str]:
    """Module names imported by ``source`` that the kernel must not depend on."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    return found


def test_kernel_modules_import_nothing_forbidden() -> None:
    modules = sorted(KERNEL.rglob("*.py"))
    assert len(modules) >= 8
    violations = {
        str(path.relative_to(KERNEL)): bad
        for path in modules
        if (bad := forbidden_imports(path.read_text(encoding="utf-8")))
    }
    assert violations == {}


def test_the_checker_catches_each_kind_of_violation() -> None:
    source = "\n".join(
        [
            "import plugins.biomed",
            "from plugins._template import plugin",
            "from eagle_rag.api import app",
            "import eagle_rag.mcp.server",
            "from eagle_rag.web.ui import page",
            "from eagle_rag.plugins import hooks",
            "import pluginsx",
        ]
    )
    assert forbidden_imports(source) == [
        "plugins.biomed",
        "plugins._template",
        "eagle_rag.api",
        "eagle_rag.mcp.server",
        "eagle_rag.web.ui",
    ]
