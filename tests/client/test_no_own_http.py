"""Issue 21's bar: the CLI and the adapters speak HTTP only through ``eagle_rag.client``, so no
copy of the request building, error mapping or retry loop lives beside it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT_USERS = (
    ROOT / "eagle_rag" / "cli",
    ROOT / "eagle_rag" / "integrations",
    ROOT / "integrations" / "langbot",
)
HTTP_LIBRARIES = ("httpx", "requests", "aiohttp", "urllib.request", "urllib3", "http.client")


def http_imports(source: str) -> list[str]:
    """The HTTP libraries ``source`` imports, at any depth of the file."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found += [n for n in names if any(n == h or n.startswith(h + ".") for h in HTTP_LIBRARIES)]
    return found


def test_cli_and_adapters_use_the_client_for_http() -> None:
    offenders = {
        str(path.relative_to(ROOT)): http_imports(path.read_text(encoding="utf-8"))
        for folder in CLIENT_USERS
        for path in sorted(folder.rglob("*.py"))
        if "client" not in path.relative_to(folder).parts  # the LangBot build's copied client
    }
    assert {path: names for path, names in offenders.items() if names} == {}
    assert len(offenders) >= 10  # the folders were found


def test_the_check_finds_an_http_import() -> None:
    assert http_imports("import httpx\n") == ["httpx"]
    assert http_imports("def f():\n    from urllib import request\n") == ["urllib.request"]
    assert http_imports("from eagle_rag.client import EagleClient\n") == []
