"""The REST and SSE surface (FastAPI), with MCP mounted at ``/mcp`` (DESIGN §10)."""
