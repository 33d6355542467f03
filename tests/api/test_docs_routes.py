"""docs/api.md's route table lists every route the app serves, so it stays true as routes come.

Each backticked item of the table's first column is ``METHOD[/METHOD...] /path[?query]`` (or a
bare path for a route that takes any method, like ``/mcp``); path parameters compare by place,
not by name (``{id}`` documents ``{document_id}``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from starlette.routing import Mount

from eagle_rag.api.app import create_app
from eagle_rag.settings import load_settings

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ANY = "*"
_PARAM = re.compile(r"\{[^}]*\}")
_ITEM = re.compile(r"`(?:(?P<methods>[A-Z]+(?:/[A-Z]+)*) )?(?P<path>/[^`\s\[]*)[^`]*`")


def served(routes: Iterable[Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(method, path) of every route, through included routers and mounts; a static-files
    mount is ``GET {mount}/{path}``, a route without methods ``*``."""
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's included router
        if included is not None:
            yield from served(included.routes, prefix)
        elif isinstance(route, Mount) and not route.routes:
            yield "GET", f"{prefix}{route.path}/{{path}}"
        elif isinstance(route, Mount):
            yield from served(route.routes, prefix + route.path)
        else:
            for method in sorted(set(route.methods or {ANY}) - {"HEAD"}):
                yield method, prefix + route.path


def documented(markdown: str) -> set[tuple[str, str]]:
    """(method, path) of every item in the first column of the Routes table."""
    section = markdown.split("## Routes", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    found: set[tuple[str, str]] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split(" | ", 1)[0]
        for item in _ITEM.finditer(first_cell):
            methods = (item["methods"] or ANY).split("/")
            found |= {(m, _PARAM.sub("{}", item["path"])) for m in methods}
    return found


def test_every_route_is_in_the_api_doc(tmp_path: Path) -> None:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(tmp_path), "EAGLE_ENCODER_MODE": "deterministic"}
    )
    routes = {(m, _PARAM.sub("{}", p)) for m, p in served(create_app(settings).routes)}
    assert ("GET", "/images/{}") in routes and ("POST", "/documents/{}/pages/search") in routes
    missing = sorted(routes - documented(API_DOC.read_text(encoding="utf-8")))
    assert missing == [], f"add these routes to docs/api.md's table: {missing}"


def test_the_parser_reads_the_table_forms() -> None:
    table = (
        "## Routes\n\n| route | what |\n|---|---|\n"
        "| `GET/DELETE /knowledge_bases/{kb}`, `GET /documents[?kb_name&limit]` | x |\n"
        "| `/mcp` | y `GET /not-a-route` |\n\n## Next\n| `GET /after` | z |\n"
    )
    assert documented(table) == {
        ("GET", "/knowledge_bases/{}"),
        ("DELETE", "/knowledge_bases/{}"),
        ("GET", "/documents"),
        ("*", "/mcp"),
    }
