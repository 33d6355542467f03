"""MCP tool registry: ``{namespace}_{name}`` naming and the RAG-only guard.

Eagle-RAG is a data layer, so no tool may look like it changes the world outside it. The guard
works on names because a name is what an agent sees and chooses by.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from eagle_rag.errors import McpToolNameError

# Fragments that mark a side effect beyond retrieval and ingest (ADR-008).
FORBIDDEN_FRAGMENTS: tuple[str, ...] = (
    "execute_sql",
    "run_sql",
    "sql_exec",
    "send_email",
    "send_mail",
    "send_message",
    "create_order",
    "place_order",
    "transfer_funds",
    "shell",
    "exec_command",
    "write_db",
    "drop_table",
)

_SHORT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def namespace_prefix(namespace: str) -> str:
    """Namespaces may contain hyphens (``lakehouse-bi``); tool names use underscores."""
    return namespace.replace("-", "_")


def assert_rag_only_tool_name(name: str) -> None:
    """Reject a tool name that contains a side-effect fragment."""
    lowered = name.lower()
    for fragment in FORBIDDEN_FRAGMENTS:
        if fragment in lowered:
            raise McpToolNameError(
                f"MCP tool {name!r} looks like a side effect ({fragment!r}); "
                "Eagle-RAG exposes retrieval and ingest only",
                tool=name,
            )


@dataclass(frozen=True, slots=True)
class McpToolSpec:
    """A registered MCP tool: full name, owning namespace, handler and description;
    ``read_only`` when its plugin's manifest declares it (served with read-only hints)."""

    name: str
    namespace: str
    handler: Callable[..., Any]
    description: str
    read_only: bool = False


class McpToolRegistry:
    """Holds the MCP tools plugins registered; exposes only core and the instance namespace."""

    def __init__(self) -> None:
        self._tools: dict[str, McpToolSpec] = {}

    def register(
        self,
        namespace: str,
        short_name: str,
        handler: Callable[..., Any],
        *,
        description: str,
        read_only: bool = False,
    ) -> str:
        if not _SHORT_NAME.match(short_name):
            raise McpToolNameError(
                f"MCP tool short name {short_name!r} must match {_SHORT_NAME.pattern}",
                plugin=namespace,
                tool=short_name,
            )
        full_name = f"{namespace_prefix(namespace)}_{short_name}"
        assert_rag_only_tool_name(full_name)
        if full_name in self._tools:
            raise McpToolNameError(
                f"MCP tool {full_name!r} is already registered", plugin=namespace, tool=full_name
            )
        if not description.strip():
            raise McpToolNameError(
                f"MCP tool {full_name!r} needs a description", plugin=namespace, tool=full_name
            )
        spec = McpToolSpec(full_name, namespace, handler, description, read_only)
        self._tools[full_name] = spec
        return full_name

    def exposed(self, default_namespace: str) -> list[McpToolSpec]:
        """Tools an instance serves: Core's plus its own namespace's (G3)."""
        allowed = {"core", default_namespace}
        return [tool for tool in self._tools.values() if tool.namespace in allowed]

    def remove_namespace(self, namespace: str) -> None:
        self._tools = {k: v for k, v in self._tools.items() if v.namespace != namespace}

    def __iter__(self) -> Iterator[McpToolSpec]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
