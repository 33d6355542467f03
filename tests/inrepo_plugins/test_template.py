"""plugins/_template loads under a test profile and its hooks and MCP tool work."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.payloads import DocumentSource, QueryExpansion, QueryRequest, TextChunk
from eagle_rag.settings import load_settings

PACKAGED = Path(__file__).resolve().parents[2] / "eagle_rag" / "settings.yaml"


@pytest.fixture
async def template_app(tmp_path: Path) -> EagleApp:
    config = yaml.safe_load(PACKAGED.read_text())
    config["profiles"]["template-test"] = {
        "plugins": {
            "enabled": ["eagle_rag.plugins.core_defaults", "plugins._template"],
            "default_namespace": "template",
            "options": {"template": {"synonyms": {"heart": ["cardiac"]}, "keywords": ["aspirin"]}},
        }
    }
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(config))
    settings = load_settings(
        {
            "EAGLE_RAG_SETTINGS_FILE": str(path),
            "EAGLE_RAG_PROFILE": "template-test",
            "EAGLE_DATA_DIR": str(tmp_path / "data"),
            "EAGLE_ENCODER_MODE": "deterministic",
        }
    )
    app = await bootstrap(settings)
    yield app
    await app.stop()


async def test_template_loads_after_core(template_app: EagleApp) -> None:
    payload = template_app.plugins.health_payload()
    assert [p["namespace"] for p in payload["plugins"]] == ["core", "template"]
    assert payload["mcp_tools"] == ["template_describe"]
    assert payload["hooks"]["QUERY_ASSEMBLE"][0]["plugin"] == "template"


async def test_template_expands_queries_in_its_namespace_only(template_app: EagleApp) -> None:
    query = QueryRequest("Heart attack risk")
    mine = HookContext(plugin_namespace="template")
    other = HookContext(plugin_namespace="core")
    [hints] = await template_app.bus.invoke_all(hooks.query_assemble, ctx=mine, query=query)
    assert hints.expansions == ("cardiac",)
    assert await template_app.bus.invoke_all(hooks.query_assemble, ctx=other, query=query) == []


async def test_template_tags_chunks_without_touching_text(template_app: EagleApp) -> None:
    chunks = (
        TextChunk("c1", "d", "kb", "Take Aspirin daily", "doc/a", 1, 0),
        TextChunk("c2", "d", "kb", "Unrelated", "doc/b", 1, 1),
    )
    source = DocumentSource("d", "kb", "f.txt", "text/plain", 1, "00")
    ctx = HookContext(plugin_namespace="template")
    out = await template_app.bus.invoke_transform(hooks.chunk, chunks, ctx=ctx, source=source)
    assert [c.text for c in out] == [c.text for c in chunks]
    assert out[0].metadata == {"template_keywords": ["aspirin"]}
    assert out[1].metadata == {}


async def test_template_mcp_tool_describes_its_options(template_app: EagleApp) -> None:
    [tool] = [t for t in template_app.registries.mcp_tools if t.name == "template_describe"]
    assert tool.handler() == {"synonyms": {"heart": ["cardiac"]}, "keywords": ["aspirin"]}


async def _ingest(app: EagleApp, kb: str, name: str, text: str) -> None:
    await asyncio.to_thread(
        app.ingest.submit_file, kb_name=kb, filename=name, stream=io.BytesIO(text.encode())
    )
    await app.queue.join()  # type: ignore[attr-defined]


async def test_template_synonyms_reach_the_bm25_query(template_app: EagleApp) -> None:
    # QUERY_ASSEMBLE's expansions join every plan's BM25 query: "heart" finds "cardiac".
    template_app.repositories.knowledge_bases.create("kb")
    await _ingest(
        template_app, "kb", "cardio.md", "# Cardio\n\nCardiac arrest needs a defibrillator.\n"
    )
    await _ingest(template_app, "kb", "menu.md", "# Menu\n\nThe cafeteria serves soup on Friday.\n")
    query = QueryRequest("heart", kb_names=("kb",), top_k=3, mode="sparse")
    pack = await template_app.retrieval.search(query)
    assert [p.filename for p in pack.passages] == ["cardio.md"]
    steps = {s.name: s.detail for s in pack.steps}
    assert steps["query_assemble"] == "template (+1 BM25 terms)"


async def test_a_term_named_by_both_expansion_hooks_joins_the_bm25_query_once(
    template_app: EagleApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lakehouse-bi names its glossary translations as QUERY_ASSEMBLE expansions and as
    QUERY_DENSE_EXPAND sparse terms: each went into the BM25 query twice."""
    template_app.repositories.knowledge_bases.create("kb")
    await _ingest(template_app, "kb", "cardio.md", "# Cardio\n\nCardiac arrest.\n")

    def expand(query: QueryRequest, plan: Any, ctx: HookContext) -> QueryExpansion:
        return QueryExpansion(sparse_terms=("cardiac",))

    template_app.bus.subscribe(hooks.query_dense_expand, expand, plugin="twice")
    searched: list[str] = []
    search_sparse = template_app.vectors.search_sparse

    def spy(collection: str, texts: list[str], **kwargs: Any) -> Any:
        searched.extend(texts)
        return search_sparse(collection, texts, **kwargs)

    monkeypatch.setattr(template_app.vectors, "search_sparse", spy)
    try:
        await template_app.retrieval.search(QueryRequest("heart", kb_names=("kb",), mode="sparse"))
    finally:
        template_app.bus.unsubscribe_plugin("twice")
    assert searched and all(text.split().count("cardiac") == 1 for text in searched)


def test_the_readmes_settings_variables_enable_a_plugin_and_keep_the_packaged_file() -> None:
    # README §3: variables instead of a settings file of one's own (which would replace the
    # packaged file and silently drop EAGLE_PORT and EAGLE_DATA_DIR).
    readme = (
        Path(__file__).resolve().parents[2] / "plugins" / "_template" / "README.md"
    ).read_text()
    exports = re.findall(r"^export (EAGLE_RAG_\w+)=(.+)$", readme, flags=re.MULTILINE)
    assert exports, "README §3 shows no EAGLE_RAG_* variables"
    env = {name: value.strip("'") for name, value in exports}
    settings = load_settings({**env, "EAGLE_PORT": "8105", "EAGLE_DATA_DIR": "/tmp/legal-data"})
    assert settings.plugins.enabled == ["eagle_rag.plugins.core_defaults", "plugins.legal"]
    assert settings.plugins.default_namespace == "legal"
    assert settings.plugins.options["legal"] == {"synonyms": {"tort": ["civil wrong"]}}
    assert (settings.server.port, str(settings.data_dir)) == (8105, "/tmp/legal-data")
