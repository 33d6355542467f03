"""The MCP surface: Core's RAG tools plus the instance namespace's, over HTTP and stdio."""
