"""The kernel never imports plugins, the API, MCP, the UI or the CLI (DESIGN §2), not even
through another module of eagle_rag: the check follows every import, transitively."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "eagle_rag" / "plugins"
FORBIDDEN = ("plugins", "eagle_rag.api", "eagle_rag.mcp", "eagle_rag.web", "eagle_rag.cli")


def imported_modules(source: str) -> list[str]:
    """Every absolute module name ``source`` imports (at any depth of the file), with the
    ``module.name`` form of ``from module import name`` (a name may be a submodule)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def is_forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


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
        found += [n for n in names if is_forbidden(n)]
    return found


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The source file of an ``eagle_rag`` module (None for a name that is not one)."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def transitive_violations(start: list[Path], root: Path = ROOT) -> dict[str, list[str]]:
    """For each forbidden module reached from ``start``: the chain of imports that reaches it."""
    trail = {module_name(p, root): [module_name(p, root)] for p in start}
    queue = list(trail)
    found: dict[str, list[str]] = {}
    while queue:
        current = queue.pop()
        path = module_file(current, root)
        if path is None:
            continue
        for name in imported_modules(path.read_text(encoding="utf-8")):
            if is_forbidden(name):
                found.setdefault(name, [*trail[current], name])
            elif name.startswith("eagle_rag") and name not in trail and module_file(name, root):
                trail[name] = [*trail[current], name]
                queue.append(name)
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


def test_nothing_the_kernel_imports_reaches_a_forbidden_module() -> None:
    assert transitive_violations(sorted(KERNEL.rglob("*.py"))) == {}


def test_the_checker_catches_each_kind_of_violation() -> None:
    source = "\n".join(
        [
            "import plugins.biomed",
            "from plugins._template import plugin",
            "from eagle_rag.api import app",
            "import eagle_rag.mcp.server",
            "from eagle_rag.web.ui import page",
            "from eagle_rag.cli.common import fail",
            "from eagle_rag.plugins import hooks",
            "import pluginsx",
            "def later():",
            "    from eagle_rag.cli import doctor",
        ]
    )
    assert forbidden_imports(source) == [
        "plugins.biomed",
        "plugins._template",
        "eagle_rag.api",
        "eagle_rag.mcp.server",
        "eagle_rag.web.ui",
        "eagle_rag.cli.common",
        "eagle_rag.cli",
    ]


def test_the_transitive_check_follows_other_modules(tmp_path: Path) -> None:
    package = tmp_path / "eagle_rag"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text("from eagle_rag import helper\n")
    (package / "helper.py").write_text("def f():\n    from eagle_rag.cli.common import fail\n")
    found = transitive_violations([package / "kernel.py"], root=tmp_path)
    assert found["eagle_rag.cli.common"] == [
        "eagle_rag.kernel",
        "eagle_rag.helper",
        "eagle_rag.cli.common",
    ]
