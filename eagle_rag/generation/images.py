"""Images in answers: which pictures an answer shows, the pictures a vision model sees, and the
one numbering of sources.

Text sources are ``[1]..[T]``, attachments ``[T+1]..[T+A]``, images ``[T+A+1]..``: the
``index`` of every source the client receives is the number the model was shown, so a
citation of an attachment or an image resolves (and is checked) like one of a text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagle_rag.generation.prompt import Attachment
from eagle_rag.ingest.pixelrag.stored_pictures import stored_picture
from eagle_rag.models.visual_encoders import data_url
from eagle_rag.retrieval.pack import Passage
from eagle_rag.retrieval.relevance import relevance
from eagle_rag.retrieval.wire import is_image


def answer_images(
    passages: Sequence[Passage], texts: Sequence[Passage], *, limit: int, min_relevance: float
) -> list[Passage]:
    """The visuals an answer shows, in rank order: those at least ``min_relevance`` relevant,
    a picture counting as relevant as the best kept text source it illustrates.

    A search always returns its best pictures, however poor (a KB with one figure returns it
    for every query), and an answer's ``top_n`` text sources are a count, not a bar; a bread
    recipe's reader must not be shown a turbine chart. A picture illustrates a text source when
    its source chunk is that source or it sits on a page of the source's document that the
    source spans: a chart whose caption shares no word with the query is still the right
    picture when its page is the evidence. The relevance is the one ``score_threshold`` reads.
    """
    by_chunk: dict[str, float] = {}
    by_page: dict[tuple[str, int], float] = {}
    for text in texts:
        score = relevance(text.scores, text.metadata)
        by_chunk[text.chunk_id] = score
        for page in text.page_nums:
            by_page[text.document_id, page] = max(score, by_page.get((text.document_id, page), 0))

    def illustrated(image: Passage) -> float:
        pages = [by_page.get((image.document_id, page), 0.0) for page in image.page_nums]
        return max([by_chunk.get(image.metadata.get("source_chunk_id") or "", 0.0), *pages])

    kept = [
        p
        for p in passages
        if is_image(p) and max(relevance(p.scores, p.metadata), illustrated(p)) >= min_relevance
    ]
    return kept[:limit]


def picture_url(objects: Any, passage: Passage) -> str | None:
    """The visual's stored picture as a data URL; None when it cannot be loaded (skipped)."""
    picture = stored_picture(objects, passage.metadata.get("fields") or {})
    return data_url(picture[0]) if picture is not None else None


def one_numbering(
    sources: dict[str, list[dict[str, Any]]], attachments: Sequence[Attachment]
) -> dict[str, Any]:
    """The answer's sources with attachments and images numbered after the text sources."""
    after_text = len(sources["text"])
    numbered: dict[str, Any] = dict(sources)
    if attachments:
        numbered["attachments"] = [
            {"index": after_text + i, "name": a.name} for i, a in enumerate(attachments, 1)
        ]
    first_image = after_text + len(attachments) + 1
    numbered["image"] = [
        {**image, "index": first_image + i} for i, image in enumerate(sources["image"])
    ]
    return numbered
