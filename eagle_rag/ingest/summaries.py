"""Model-written section summaries, when a chat model is configured.

Knowhere writes an extractive ``section_summary`` for every section with subsections or several
chunks (title, opening sentences, subsection titles). With a chat model, the summary's body is
rewritten by the model from the section's own text; the title line stays first, so the summary
still matches the heading. A failed or empty model answer keeps the extractive summary and is
reported: a summary is an aid to retrieval, never a reason to fail a document.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace

from eagle_rag.generation.prompt import detect_language
from eagle_rag.models.chat import ChatModel, GenerationInput
from eagle_rag.plugins.payloads import TextChunk

logger = logging.getLogger(__name__)

SECTION_CHARS = 6000  # of the section's text sent to the model
CONCURRENCY = 4
_PROMPTS = {
    "en": (
        "Summarize the following document section in two or three sentences for a search "
        "index: name its main topics and facts. Answer with the summary only.\n\n"
    ),
    "zh": "请用两三句话概括下面这一节的内容，写明主要主题和事实，用于检索索引。只回答摘要。\n\n",
}


async def write_summaries(
    chunks: Sequence[TextChunk], text: str, model: ChatModel, *, limit: int
) -> tuple[tuple[TextChunk, ...], int, int]:
    """Chunks with up to ``limit`` summaries rewritten; returns (chunks, written, failed)."""
    targets = [i for i, c in enumerate(chunks) if c.type == "section_summary"][:limit]
    gate = asyncio.Semaphore(CONCURRENCY)
    result = list(chunks)

    async def rewrite(index: int) -> bool:
        chunk = chunks[index]
        section = text[chunk.start_offset or 0 : chunk.end_offset or len(text)][:SECTION_CHARS]
        language = detect_language(section)
        prompt = _PROMPTS[language] + section
        job = GenerationInput(prompt, language, [{"role": "user", "content": prompt}])
        async with gate:
            try:
                summary = "".join([piece async for piece in model.stream(job)]).strip()
            except Exception as exc:  # keep the extractive summary
                logger.warning("section summary for %s failed: %s", chunk.path, exc)
                return False
        if not summary:
            return False
        title = str(chunk.metadata.get("section_title") or chunk.text.split("\n", 1)[0])
        result[index] = replace(
            chunk,
            text=f"{title}\n{summary}",
            metadata={**chunk.metadata, "summary_by": model.name},
        )
        return True

    outcomes = await asyncio.gather(*(rewrite(i) for i in targets))
    written = sum(outcomes)
    return tuple(result), written, len(outcomes) - written
