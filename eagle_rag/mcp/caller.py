"""Who calls an MCP tool: the same admission for Core's tools and every plugin's."""

from __future__ import annotations

from fastmcp.server.dependencies import get_http_headers

from eagle_rag.api.security import NAMESPACE_HEADER, Caller, Gatekeeper


def mcp_caller(gate: Gatekeeper) -> Caller:
    """Over HTTP the key's caller (namespace and rate checked); over stdio the local user, who
    started the process and may read everything."""
    headers = get_http_headers(include_all=True)  # empty over stdio
    if not headers:
        return Caller("stdio")
    return gate.admit(headers.get("authorization"), headers.get(NAMESPACE_HEADER), None)
