"""Knowledge bases bound to engines: creation with validated settings and lifecycle callbacks,
deletion (including the engine's own clean-up), and what ``GET /engines`` shows."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from eagle_rag.db.records import KnowledgeBaseRecord
from eagle_rag.engines.base import (
    CreationSettingsCheck,
    EngineDescription,
    KnowledgeEngine,
    describe,
)
from eagle_rag.engines.eagle import NAME as EAGLE
from eagle_rag.engines.schema import public_settings, validate_settings
from eagle_rag.errors import ComponentError, InvalidInputError

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime


class KnowledgeBaseService:
    """Knowledge bases and the engines they are bound to, for one namespace."""

    def __init__(self, app: Runtime) -> None:
        self._app = app

    def engine(self, name: str) -> EngineDescription:
        try:
            engine: EngineDescription = self._app.registries.knowledge_engines.get(name)
        except ComponentError:
            known = ", ".join(self._app.registries.knowledge_engines.names())
            raise InvalidInputError(
                f"unknown engine {name!r} (available: {known})", field="engine"
            ) from None
        return engine

    def bridge(self, name: str) -> KnowledgeEngine:
        """The engine ``name`` as a port (ingest, delete, retrieve); the built-in engine is not
        one: its knowledge bases live in this instance's own stores."""
        engine = self.engine(name)
        if not isinstance(engine, KnowledgeEngine):
            raise InvalidInputError(
                f"engine {name!r} has no ingest/retrieve port (its data is in this instance)",
                field="engine",
            )
        return engine

    def engines(self) -> list[dict[str, Any]]:
        return [describe(r.component) for r in self._app.registries.knowledge_engines]

    async def create(
        self,
        name: str,
        *,
        engine: str = EAGLE,
        description: str = "",
        creation_settings: Mapping[str, Any] | None = None,
        retrieval_settings: Mapping[str, Any] | None = None,
    ) -> KnowledgeBaseRecord:
        chosen = self.engine(engine)
        creation = validate_settings(
            chosen.creation_schema, creation_settings, what="creation_settings"
        )
        retrieval = validate_settings(
            chosen.retrieval_schema, retrieval_settings, what="retrieval_settings"
        )
        if isinstance(chosen, CreationSettingsCheck):
            await chosen.check_creation_settings(creation)
        await chosen.on_knowledge_base_create(name, creation)
        return await asyncio.to_thread(
            self._app.repositories.knowledge_bases.create,
            name,
            engine=engine,
            description=description,
            creation_settings=creation,
            retrieval_settings=retrieval,
        )

    async def delete(self, name: str) -> int:
        from eagle_rag.ingest.deletion import remove_knowledge_base

        kb = await asyncio.to_thread(self._app.repositories.knowledge_bases.get, name)
        await self.engine(kb.engine).on_knowledge_base_delete(name, kb.creation_settings)
        return int(await asyncio.to_thread(remove_knowledge_base, self._app, name))

    def public(self, kb: KnowledgeBaseRecord) -> dict[str, Any]:
        """The KB's settings with secrets masked."""
        try:
            engine = self.engine(kb.engine)
        except InvalidInputError:
            return {"creation_settings": {}, "retrieval_settings": {}}
        return {
            "creation_settings": public_settings(engine.creation_schema, kb.creation_settings),
            "retrieval_settings": public_settings(engine.retrieval_schema, kb.retrieval_settings),
        }
