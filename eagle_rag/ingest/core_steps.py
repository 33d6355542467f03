"""Core's ingest steps: what its PARSE_DOCUMENT, BUILD_STRUCTURE and CHUNK_DOCUMENT subscribers do.

They are plain functions over explicit inputs, so the Core plugin subscribes them like any domain
plugin would, and ``PluginContext.parse`` parses with the very same code.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Any, TypeVar

from eagle_rag.ingest.knowhere.chunker import ChunkingOptions, TokenCounter, chunk_tree
from eagle_rag.ingest.knowhere.tree import StructureTree, build_tree
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.registry import parser_for
from eagle_rag.ingest.safety import ArchiveLimits, check_archive
from eagle_rag.plugins.payloads import DocumentSource, ParseResult, TextChunk
from eagle_rag.settings import IngestSettings

T = TypeVar("T")
PageCallback = Callable[[int, int], None]

# Plain text this small parses in well under a millisecond, less than a thread hop costs.
INLINE_TEXT_CHARS = 16 * 1024
INLINE_TYPES = ("text/plain", "text/markdown")
OFFICE_PREFIX = "application/vnd.openxmlformats"


def parse_bytes(
    data: bytes,
    filename: str,
    mime_type: str,
    parsers: Iterable[Any],
    config: IngestSettings,
    *,
    ocr: bool = True,
    on_page: PageCallback | None = None,
) -> ParseResult:
    """Parse with the last registered Parser that declares ``mime_type`` (a plugin's wins).

    ``ocr``: pages may be read from their pixels; ``on_page(done, total)`` hears of each page.
    """
    if mime_type.startswith(OFFICE_PREFIX):
        check_archive(data, ArchiveLimits.from_settings(config))
    # The filename and content let a parser claim text files it recognises (a dbt schema.yml).
    parser = parser_for(mime_type, parsers, filename=filename, data=data)
    context = ParseContext(data, filename, mime_type, config.max_pages, on_page=on_page, ocr=ocr)
    result: ParseResult = parser.parse(context)
    return result


async def parse_document(
    source: DocumentSource,
    data: bytes,
    parsers: Iterable[Any],
    config: IngestSettings,
    *,
    ocr: bool = True,
    on_page: PageCallback | None = None,
) -> ParseResult:
    """:func:`parse_bytes` off the event loop, except for small plain text (see below)."""
    mime = source.mime_type
    parse = functools.partial(parse_bytes, ocr=ocr, on_page=on_page)
    args = (data, source.filename, mime, list(parsers), config)
    return await cpu_bound(len(data), mime, parse, *args)


def build_structure(parsed: ParseResult, source: DocumentSource) -> StructureTree:
    """The Knowhere section tree, titled by the parser's title or else the file's stem."""
    title = str(parsed.metadata.get("title") or PurePosixPath(source.filename).stem)
    return build_tree(parsed, title=title)


async def chunk_document(
    tree: StructureTree,
    source: DocumentSource,
    options: ChunkingOptions,
    count_tokens: TokenCounter,
) -> tuple[TextChunk, ...]:
    """Knowhere chunks, in a worker thread: the encoder counts tokens (and may load its model)."""
    return await asyncio.to_thread(
        chunk_tree,
        tree,
        document_id=source.document_id,
        kb_name=source.kb_name,
        options=options,
        count_tokens=count_tokens,
    )


async def cpu_bound(size: int, mime: str, func: Callable[..., T], *args: Any) -> T:
    """Run ``func`` in a worker thread, unless the input is small plain text: then the hop to
    the thread (and back through the event loop) costs more than the parsing itself."""
    if size <= INLINE_TEXT_CHARS and mime in INLINE_TYPES:
        return func(*args)
    return await asyncio.to_thread(func, *args)
