"""The LangBot plugin: one KnowledgeEngine component that bridges to an Eagle-RAG server."""

from __future__ import annotations

from langbot_plugin.api.definition.plugin import BasePlugin


class EagleRagPlugin(BasePlugin):
    async def initialize(self) -> None:
        """Nothing to start: each call goes to the Eagle-RAG server its KB names."""
