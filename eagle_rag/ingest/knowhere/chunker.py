"""Cut a structure tree into chunks sized in the embedder's tokens.

Rules: a chunk never crosses a section; sentences (and list or code lines) are never cut unless
one alone exceeds the budget (``cuts``); tables stay whole when they fit, otherwise they are split
by rows with the header repeated, and a row too wide by columns (``tables``); consecutive text
chunks overlap by whole sentences up to ``overlap`` tokens. A section with subsections or more
than one chunk also gets a ``section_summary`` chunk, the entry point of parent-document
retrieval.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.knowhere.boxes import chunk_boxes, section_boxes
from eagle_rag.ingest.knowhere.cuts import MAX_CHUNK_BYTES, Unit, fits_stored, hard_split
from eagle_rag.ingest.knowhere.cuts import TokenCounter as TokenCounter
from eagle_rag.ingest.knowhere.pages import page_at, pages_of
from eagle_rag.ingest.knowhere.tables import table_chunks
from eagle_rag.ingest.knowhere.tree import Block, Section, StructureTree
from eagle_rag.plugins.payloads import TextChunk
from eagle_rag.sentence_ends import SPACED_STOPS, SPACELESS_STOPS

# A sentence ends at . ! ? (followed by space) or at CJK 。！？, a danda ।, Arabic ؟... (no space
# needed); a Chinese semicolon ends a unit too.
_SENTENCE_END = re.compile(rf"(?<=[{SPACED_STOPS}])\s+|(?<=[{SPACELESS_STOPS}；])")
_ENDS_SENTENCE = re.compile(rf"[{SPACED_STOPS}{SPACELESS_STOPS}；:：]['\")\]]*\s*$")
SUMMARY_CHARS = 400
# No subword tokenizer in use averages more characters per token than this; longer text is
# never tried as a single chunk.
MAX_CHARS_PER_TOKEN = 8


@dataclass(frozen=True, slots=True)
class ChunkingOptions:
    chunk_size: int
    chunk_overlap: int

    def __post_init__(self) -> None:
        if self.chunk_size < 16:
            raise InvalidInputError("chunk_size must be at least 16 tokens")
        if not 0 <= self.chunk_overlap < self.chunk_size // 2:
            raise InvalidInputError("chunk_overlap must be >= 0 and < half of chunk_size")


def chunk_id(document_id: str, path: str, ordinal: str) -> str:
    """Deterministic: the same document, path and position always give the same id (upserts)."""
    digest = hashlib.blake2b(path.encode("utf-8"), digest_size=6).hexdigest()
    return f"{document_id}-{digest}-{ordinal}"


def chunk_tree(
    tree: StructureTree,
    *,
    document_id: str,
    kb_name: str,
    options: ChunkingOptions,
    count_tokens: TokenCounter,
) -> tuple[TextChunk, ...]:
    chunks: list[TextChunk] = []
    for section in tree.sections:
        own: list[TextChunk] = []
        ordinal = 0
        for group in _groups(section.blocks):
            for text, start, end, kind, pages in _group_chunks(tree, group, options, count_tokens):
                metadata: dict[str, object] = {"section_title": section.title}
                boxes = chunk_boxes(group, start, end)
                if boxes:
                    metadata["boxes"] = boxes
                    pages = _box_pages(group, start, end, boxes, pages)
                own.append(
                    TextChunk(
                        chunk_id=chunk_id(document_id, section.path, f"{ordinal:04d}"),
                        document_id=document_id,
                        kb_name=kb_name,
                        text=text,
                        path=section.path,
                        level=section.level,
                        chunk_index=0,
                        type=kind,
                        page_nums=pages,
                        start_offset=start,
                        end_offset=end,
                        metadata=metadata,
                    )
                )
                ordinal += 1
        # A summary is the way into a section that spans several chunks or has subsections;
        # for a section that is one chunk it would only repeat it (and cost an embedding).
        if section.children or len(own) > 1:
            chunks.append(_summary(tree, section, document_id, kb_name))
        chunks.extend(own)
    # chunk_index is the document-wide reading order.
    return tuple(replace(chunk, chunk_index=i) for i, chunk in enumerate(chunks))


def _box_pages(
    group: list[Block], start: int, end: int, boxes: list[dict[str, object]], pages: tuple[int, ...]
) -> tuple[int, ...]:
    """The pages the chunk's lines are on. A block's ``page`` is where it starts, so the second
    chunk of a paragraph that runs onto the next page would name the first page too; boxes
    say exactly where each line is. Blocks without boxes keep their page."""
    found = {int(str(b["page"])) for b in boxes}
    unboxed = {
        b.page
        for b in group
        if not b.boxes and b.page is not None and b.start < end and b.end > start
    }
    return tuple(sorted(found | unboxed)) if found else pages


def _groups(blocks: list[Block]) -> Iterator[list[Block]]:
    """Runs of prose blocks pack together; each table stands alone."""
    run: list[Block] = []
    for block in blocks:
        if block.kind == "table":
            if run:
                yield run
                run = []
            yield [block]
        else:
            run.append(block)
    if run:
        yield run


def _group_chunks(
    tree: StructureTree, group: list[Block], options: ChunkingOptions, count: TokenCounter
) -> Iterator[tuple[str, int, int, str, tuple[int, ...]]]:
    if group[0].kind == "table":
        block = group[0]
        pages: tuple[int, ...] = (block.page,) if block.page is not None else ()
        for text, start, end in table_chunks(block, options.chunk_size, count):
            yield text, start, end, "table", pages
        return
    kinds = {b.kind for b in group}
    kind = kinds.pop() if len(kinds) == 1 else "text"
    # A group over a page break is packed unit by unit, so its chunks stop at the break.
    whole = _whole_group(tree, group, options, count) if len(pages_of(group)) <= 1 else None
    if whole is not None:
        yield *whole, kind, tuple(sorted({b.page for b in group if b.page is not None}))
        return
    units = [unit for block in group for unit in _units(block, options, count)]
    for start, end, covered in _pack(units, options, tree.text):
        pages = tuple(sorted({u.page for u in covered if u.page is not None}))
        yield tree.text[start:end], start, end, kind, pages


def _whole_group(
    tree: StructureTree, group: list[Block], options: ChunkingOptions, count: TokenCounter
) -> tuple[str, int, int] | None:
    """The group as one chunk when its text fits the budget as a whole, else None.

    Most sections of short documents are one chunk; counting the whole text once is cheaper
    than counting every sentence (one tokenizer call instead of one per sentence). Text far
    longer than the budget in characters is not tried: no tokenizer packs it into one chunk.
    """
    first, last = group[0], group[-1]
    start = first.start + len(first.text) - len(first.text.lstrip())
    end = last.start + len(last.text.rstrip())
    if end - start > options.chunk_size * MAX_CHARS_PER_TOKEN:
        return None
    text = tree.text[start:end]
    if not text.strip() or not fits_stored(text) or count(text) > options.chunk_size:
        return None
    return text, start, end


def _summary(tree: StructureTree, section: Section, document_id: str, kb_name: str) -> TextChunk:
    """Extractive: the section's title, its opening sentences and its subsections' titles.

    Its pages and boxes are where that text is printed (its heading, the opening blocks and
    the subsections' headings it lists), not the whole section's span: a user opening the
    citation lands on the summary's words. The span stays in ``metadata.section_pages``."""
    prose = [b for b in section.blocks if b.kind in ("text", "list")]
    opening = _clip(" ".join(" ".join(b.text for b in prose).split()), SUMMARY_CHARS)
    children = [tree.section(p).title for p in section.children]
    parts = [section.title]
    if opening:
        parts.append(opening)
    if children:
        parts.append("Sections: " + "; ".join(children))
    span = sorted({p for s in tree.sections if _within(s.path, section.path) for p in s.pages})
    metadata: dict[str, object] = {
        "section_title": section.title,
        "children": children,
        "section_pages": span,
    }
    shown = _opening_blocks(prose, len(opening))
    listed = [section, *(tree.section(p) for p in section.children)]  # the titles it quotes
    boxes = section_boxes(shown, [b for s in listed for b in s.heading_boxes])
    if boxes:
        metadata["boxes"] = boxes
    pages = {b["page"] for b in boxes} | {b.page for b in shown if b.page is not None}
    pages |= {s.heading_page for s in listed if s.heading_page is not None}
    return TextChunk(
        chunk_id=chunk_id(document_id, section.path, "summary"),
        document_id=document_id,
        kb_name=kb_name,
        text="\n".join(parts),
        path=section.path,
        level=section.level,
        chunk_index=0,
        type="section_summary",
        page_nums=tuple(sorted(pages) or span[:1]),
        start_offset=section.start,
        end_offset=tree.subtree_end(section),
        metadata=metadata,
    )


def _opening_blocks(prose: list[Block], chars: int) -> list[Block]:
    """The blocks whose text the summary's opening (``chars`` long) quotes."""
    shown: list[Block] = []
    used = 0
    for block in prose:
        if used >= chars:
            break
        shown.append(block)
        used += len(" ".join(block.text.split())) + 1
    return shown


def _within(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor + "/")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("。"))
    return cut[: end + 1] if end > limit // 2 else cut.rstrip() + "…"


# --- blocks -> units -> chunks ------------------------------------------------------------------


def _units(block: Block, options: ChunkingOptions, count: TokenCounter) -> Iterator[Unit]:
    """Sentences (text) or lines (lists, code), each with its offsets, split further if huge."""
    splitter = _SENTENCE_END if block.kind == "text" else re.compile(r"\n")
    position = 0
    for piece in _split_keep_offsets(block.text, splitter):
        local = block.text.index(piece, position)
        position = local + len(piece)
        start = block.start + local
        tokens = count(piece)
        page = page_at(block, local)
        if tokens <= options.chunk_size and fits_stored(piece):
            yield Unit(piece, start, start + len(piece), tokens, page)
        else:
            yield from hard_split(piece, start, options.chunk_size, count, page)


def _split_keep_offsets(text: str, splitter: re.Pattern[str]) -> list[str]:
    return [p for p in (s.strip() for s in splitter.split(text)) if p]


def _spanfits_stored(text: str, start: int, end: int) -> bool:
    return (end - start) * 4 <= MAX_CHUNK_BYTES or fits_stored(text[start:end])


def _pack(
    units: list[Unit], options: ChunkingOptions, text: str
) -> Iterator[tuple[int, int, list[Unit]]]:
    """Greedy packing up to the budget, the stored size or a page break, then step back over
    whole units for the overlap (never back over a page break, nor onto the rest of a sentence
    the break cut)."""
    i = 0
    while i < len(units):
        total, j = 0, i
        while j < len(units) and (
            j == i
            or (
                total + units[j].tokens <= options.chunk_size
                and _same_page(units, i, j)
                and _spanfits_stored(text, units[i].start, units[j].end)
            )
        ):
            total += units[j].tokens
            j += 1
        yield units[i].start, units[j - 1].end, units[i:j]
        if j >= len(units):
            return
        back, carried = j, 0
        while (
            back - 1 > i
            and carried + units[back - 1].tokens <= options.chunk_overlap
            and units[back - 1].page == units[j].page
            and not _ends_a_cut_sentence(units, back - 1)
        ):
            back -= 1
            carried += units[back].tokens
        i = back


def _ends_a_cut_sentence(units: list[Unit], index: int) -> bool:
    """Unit ``index`` is the rest of a sentence the page break cut: the chunk before it ends
    with it, and an overlap that began with it would open on half a sentence."""
    if index == 0:
        return False
    previous = units[index - 1]
    return previous.page != units[index].page and not _ENDS_SENTENCE.search(previous.text)


def _same_page(units: list[Unit], first: int, index: int) -> bool:
    """Unit ``index`` may join the chunk that starts at ``first``: it is on the same page, or
    it ends a sentence the page break cut (the rest of "... before the" / "pump starts.")."""
    unit, previous = units[index], units[index - 1]
    if unit.page == units[first].page:
        return True
    return previous.page == units[first].page and not _ENDS_SENTENCE.search(previous.text)
