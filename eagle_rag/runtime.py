"""The runtime: the kernel objects and backends of one app, the layer every service is built on.

``bootstrap.build_app`` creates a Runtime first, then each service from it and from the services
it uses, then the frozen :class:`eagle_rag.bootstrap.EagleApp` (a Runtime plus its services). A
service typed with Runtime therefore never imports bootstrap, and mypy checks every attribute it
uses.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from eagle_rag.db.database import Database
from eagle_rag.db.repositories.bundle import Repositories
from eagle_rag.index.milvus_pool import MilvusClientPool
from eagle_rag.index.vector_store import MilvusVectorStore
from eagle_rag.models.embedders import TextEncoder
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import ComponentRegistries
from eagle_rag.plugins.encoder_registry import EncoderRegistry
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.manager import PluginManager
from eagle_rag.settings import Settings
from eagle_rag.stage_metrics import StageMetrics
from eagle_rag.storage.base import ObjectStore


@dataclass(frozen=True, slots=True)
class Runtime:
    """Settings, the plugin kernel (audit, bus, registries, manager) and the backends."""

    settings: Settings
    audit: PluginAudit
    bus: HookBus
    registries: ComponentRegistries
    plugins: PluginManager
    database: Database
    repositories: Repositories
    milvus: MilvusClientPool
    vectors: MilvusVectorStore
    objects: ObjectStore
    encoders: EncoderRegistry
    text_encoder: TextEncoder
    stage_metrics: StageMetrics  # observes the bus's stage timings and the audit's decisions
    visuals_off: str  # why no visual chunks are made ("" when they are)

    @property
    def visuals_warning(self) -> str:
        """``visuals off: <reason>`` for health reports, "" when visuals are on."""
        return f"visuals off: {self.visuals_off}" if self.visuals_off else ""

    @property
    def namespace(self) -> str:
        return self.settings.plugins.default_namespace

    @property
    def text_encoder_name(self) -> str:
        return self.text_encoder.name

    async def flush_vectors(self) -> None:
        await asyncio.to_thread(self.vectors.flush)
