from __future__ import annotations

import base64
import random
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eagle_rag.errors import InvalidInputError
from eagle_rag.index.collections import MAX_TEXT
from eagle_rag.ingest.detect import MARKDOWN
from eagle_rag.ingest.knowhere.chunker import ChunkingOptions, chunk_id, chunk_tree
from eagle_rag.ingest.knowhere.tree import build_tree
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table
from eagle_rag.ingest.parsers.text import MarkdownParser
from eagle_rag.models.embedders import HashingEncoder
from eagle_rag.plugins.payloads import PageBox, ParseResult, TextChunk, TextSection
from tests.ingest import documents as docs

COUNT = HashingEncoder(64).count_tokens


def _chunks(parsed: ParseResult, size: int = 40, overlap: int = 8, title: str = "doc"):  # type: ignore[no-untyped-def]
    tree = build_tree(parsed, title=title)
    chunks = chunk_tree(
        tree,
        document_id="d1",
        kb_name="kb",
        options=ChunkingOptions(size, overlap),
        count_tokens=COUNT,
    )
    return tree, chunks


def test_paths_levels_and_offsets_follow_the_document() -> None:
    parsed = MarkdownParser().parse(ParseContext(docs.MARKDOWN.encode(), "g.md", MARKDOWN))
    tree, chunks = _chunks(parsed, size=200)
    paths = [s.path for s in tree.sections]
    assert paths == ["Eagle Guide", "Eagle Guide/Install", "Eagle Guide/检索"]
    assert [s.level for s in tree.sections] == [0, 2, 2]
    by_type = {(c.type, c.path) for c in chunks}
    assert ("table", "Eagle Guide/检索") in by_type
    # summaries for the root (it has subsections) and 检索 (two chunks), not for Install (one)
    summaries = sorted(p for t, p in by_type if t == "section_summary")
    assert summaries == ["Eagle Guide", "Eagle Guide/检索"]
    for chunk in chunks:
        if chunk.type != "section_summary":
            assert tree.text[chunk.start_offset : chunk.end_offset] == chunk.text
    install = tree.section("Eagle Guide/Install")
    assert tree.text[install.start : install.start + len("Install")] == "Install"


def test_pdf_pages_reach_chunks_and_summaries() -> None:
    from eagle_rag.ingest.parsers.pdf import PdfParser

    parsed = PdfParser().parse(ParseContext(docs.pdf_bytes(), "r.pdf", "application/pdf"))
    _tree, chunks = _chunks(parsed, title="Annual Report")
    by_path = {c.path: c for c in chunks if c.type == "text"}
    assert by_path["Annual Report/Chapter 1 Overview"].page_nums == (1,)
    assert by_path["Annual Report/Chapter 1 Overview/1.1 Scope"].page_nums == (2,)
    summary = next(
        c for c in chunks if c.type == "section_summary" and c.path.endswith("Chapter 1 Overview")
    )
    # Page-true: its heading and opening are on page 1, the subsection title it lists on 2.
    assert summary.page_nums == (1, 2)
    assert summary.metadata["section_pages"] == [1, 2]  # the section and its subsection
    assert "Sections: 1.1 Scope" in summary.text


def test_a_summary_names_the_pages_its_words_are_on_not_the_sections_first() -> None:
    # A heading at the foot of page 2 whose text runs over pages 3 and 4, long enough for
    # several chunks: the summary quotes the heading (page 2) and the opening (page 3).
    body = " ".join(f"Sentence {i} of the findings." for i in range(40))
    sections = (
        TextSection("Cover text.", page=1, boxes=(PageBox(1, (0.1, 0.1, 0.9, 0.2)),)),
        TextSection(
            "", heading="Findings", level=1, page=2, boxes=(PageBox(2, (0.1, 0.9, 0.5, 0.95)),)
        ),
        TextSection(body, page=3, boxes=(PageBox(3, (0.1, 0.1, 0.9, 0.9)),)),
        TextSection(body, page=4, boxes=(PageBox(4, (0.1, 0.1, 0.9, 0.9)),)),
    )
    _tree, chunks = _chunks(ParseResult("", sections), title="Report", size=120)
    summary = next(c for c in chunks if c.type == "section_summary" and c.path == "Report/Findings")
    assert summary.page_nums == (2, 3)
    assert [b["page"] for b in summary.metadata["boxes"]] == [2, 3]
    assert summary.metadata["section_pages"] == [2, 3, 4]
    texts = [c for c in chunks if c.type == "text" and c.path == "Report/Findings"]
    assert texts[0].page_nums == (3,) and texts[-1].page_nums == (4,)


def test_single_top_heading_becomes_the_title() -> None:
    parsed = ParseResult("", (TextSection("", heading="Guide", level=1), TextSection("Body.")))
    tree, _ = _chunks(parsed, title="file-stem")
    assert [s.path for s in tree.sections] == ["Guide"]


def test_a_front_matter_title_stays_the_root_above_the_only_top_heading() -> None:
    """The heading replaced the front matter's title, which was then nowhere in the index."""
    text = "---\ntitle: Field Guide\n---\n\n# Install\n\nRun it.\n\n## Linux\n\nUse apt.\n"
    parsed = MarkdownParser().parse(ParseContext(text.encode(), "g.md", MARKDOWN))
    tree, chunks = _chunks(parsed, size=200, title="Field Guide")
    assert [s.path for s in tree.sections] == [
        "Field Guide",
        "Field Guide/Install",
        "Field Guide/Install/Linux",
    ]
    assert any("Field Guide" in c.text or "Field Guide" in c.path for c in chunks)


def test_duplicate_sibling_headings_get_distinct_paths_and_ids() -> None:
    parsed = ParseResult(
        "",
        (
            TextSection("", heading="Intro", level=1),
            TextSection("One."),
            TextSection("", heading="Intro", level=1),
            TextSection("Two."),
        ),
    )
    tree, chunks = _chunks(parsed)
    assert [s.path for s in tree.sections] == ["doc", "doc/Intro", "doc/Intro (2)"]
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def test_headings_with_slashes_stay_one_segment() -> None:
    parsed = ParseResult("", (TextSection("", heading="Q1/Q2 results", level=1), TextSection("x")))
    tree, _ = _chunks(parsed, title="a/b")
    assert [s.path for s in tree.sections] == ["Q1-Q2 results"]


def test_large_tables_split_by_rows_with_the_header_repeated() -> None:
    rows = [["region", "amount"]] + [[f"region {i}", str(i * 10)] for i in range(60)]
    parsed = ParseResult("", (TextSection(markdown_table(rows), kind="table"),))
    tree, chunks = _chunks(parsed, size=40)
    tables = [c for c in chunks if c.type == "table"]
    assert len(tables) > 1
    for chunk in tables:
        lines = chunk.text.splitlines()
        assert lines[:2] == ["| region | amount |", "|---|---|"]
        assert COUNT(chunk.text) <= 40
        assert tree.text[chunk.start_offset : chunk.end_offset] == "\n".join(lines[2:])
    body = [line for c in tables for line in c.text.splitlines()[2:]]
    assert body == markdown_table(rows).splitlines()[2:]  # every row once, in order


def test_small_tables_stay_whole() -> None:
    table = markdown_table([["a", "b"], ["1", "2"]])
    _, chunks = _chunks(ParseResult("", (TextSection(table, kind="table"),)))
    assert [c.text for c in chunks if c.type == "table"] == [table]


def test_chunk_ids_are_deterministic() -> None:
    parsed = MarkdownParser().parse(ParseContext(docs.MARKDOWN.encode(), "g.md", MARKDOWN))
    _, first = _chunks(parsed)
    _, second = _chunks(parsed)
    assert [c.chunk_id for c in first] == [c.chunk_id for c in second]
    assert chunk_id("d1", "a/b", "0001") != chunk_id("d1", "a/c", "0001")
    assert chunk_id("d1", "a/b", "0001") != chunk_id("d2", "a/b", "0001")


@pytest.mark.parametrize(("size", "overlap"), [(8, 0), (64, 32), (64, -1)])
def test_bad_chunking_options(size: int, overlap: int) -> None:
    with pytest.raises(InvalidInputError):
        ChunkingOptions(size, overlap)


SENTENCE = st.one_of(
    st.from_regex(r"[A-Z][a-z]{1,8}( [a-z]{1,8}){0,12}\.", fullmatch=True),
    st.from_regex(r"[一-龥]{2,30}。", fullmatch=True),
)
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=8).map(" ".join)
SECTION = st.tuples(
    st.from_regex(r"[A-Za-z]{1,10}", fullmatch=True),
    st.integers(1, 3),
    st.lists(PARAGRAPH, min_size=0, max_size=4),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(SECTION, min_size=1, max_size=6), st.integers(16, 80), st.integers(0, 7))
def test_chunker_invariants(
    sections: list[tuple[str, int, list[str]]], size: int, overlap: int
) -> None:
    items = []
    for heading, level, paragraphs in sections:
        items.append(TextSection("", heading=heading, level=level))
        items.extend(TextSection(p) for p in paragraphs)
    tree, chunks = _chunks(ParseResult("", tuple(items)), size=size, overlap=overlap)
    text_chunks: list[TextChunk] = [c for c in chunks if c.type != "section_summary"]
    for chunk in text_chunks:
        section = tree.section(chunk.path)
        # offsets are exact, and a chunk never leaves its own section's blocks
        assert tree.text[chunk.start_offset : chunk.end_offset] == chunk.text
        assert any(b.start <= chunk.start_offset < b.end for b in section.blocks)
        assert any(b.start < chunk.end_offset <= b.end for b in section.blocks)
        assert COUNT(chunk.text) <= size or " " not in chunk.text.strip()
    # every non-space character of every block lies inside a chunk of its own section
    for section in tree.sections:
        spans = [(c.start_offset, c.end_offset) for c in text_chunks if c.path == section.path]
        for block in section.blocks:
            for position in range(block.start, block.end):
                if not tree.text[position].isspace():
                    assert any(s <= position < e for s, e in spans), tree.text[position]
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def _counting(calls: list[str]):  # type: ignore[no-untyped-def]
    def count(text: str) -> int:
        calls.append(text)
        return COUNT(text)

    return count


def test_a_section_that_fits_is_one_chunk_counted_once() -> None:
    body = "Koalas sleep a lot. They eat eucalyptus leaves. Joeys ride in pouches."
    parsed = ParseResult("", (TextSection(f"  {body}  ", page=3),))
    calls: list[str] = []
    tree = build_tree(parsed, title="koalas")
    options = ChunkingOptions(40, 8)
    [chunk] = chunk_tree(
        tree, document_id="d1", kb_name="kb", options=options, count_tokens=_counting(calls)
    )
    assert chunk.text == body and tree.text[chunk.start_offset : chunk.end_offset] == body
    assert chunk.page_nums == (3,)
    assert calls == [body]  # one tokenizer call, not one per sentence


def test_a_section_over_budget_is_packed_by_sentences() -> None:
    sentences = [f"Sentence number {i} talks about wombats and burrows." for i in range(12)]
    parsed = ParseResult("", (TextSection(" ".join(sentences)),))
    calls: list[str] = []
    tree = build_tree(parsed, title="wombats")
    chunks = chunk_tree(
        tree,
        document_id="d1",
        kb_name="kb",
        options=ChunkingOptions(40, 8),
        count_tokens=_counting(calls),
    )
    own = [c for c in chunks if c.type != "section_summary"]
    assert len(own) > 1 and all(COUNT(c.text) <= 40 for c in own)
    assert set(sentences) <= set(calls)  # fell back to counting sentence by sentence


@pytest.mark.parametrize(
    "section",
    [
        TextSection(("word" + " " * 2000) * 60),  # one "sentence", spaced out by a layout
        TextSection("\n".join(" " * 3000 + f"x{i}" for i in range(60)), kind="code"),
        TextSection("\n\n".join(("中" + " " * 9000) * 3 for _ in range(4))),
    ],
)
def test_no_chunk_outgrows_the_stored_text_field(section: TextSection) -> None:
    """Whitespace costs no tokens, so a chunk within its token budget may still be longer than
    Milvus's text field (MAX_TEXT bytes): such a document failed to ingest."""
    tree, chunks = _chunks(ParseResult("", (section,)), size=400, overlap=8)
    own = [c for c in chunks if c.type != "section_summary"]
    for chunk in chunks:
        assert len(chunk.text.encode("utf-8")) <= MAX_TEXT
    for chunk in own:
        assert tree.text[chunk.start_offset : chunk.end_offset] == chunk.text
    covered = {p for c in own for p in range(c.start_offset, c.end_offset)}
    words = [i for i, ch in enumerate(tree.text) if not ch.isspace()]
    body = tree.sections[-1].blocks
    assert all(i in covered for i in words if any(b.start <= i < b.end for b in body))


def test_a_table_too_wide_for_a_chunk_is_split_by_columns() -> None:
    """A CSV of 4000 columns made a chunk of 77 KB (header and row): Milvus refused it after
    the whole document had been embedded. Each piece is now some columns, with their names."""
    from eagle_rag.ingest.detect import CSV
    from eagle_rag.ingest.parsers.sheets import CsvParser

    columns = 4000
    lines = [",".join(f"column_{i}" for i in range(columns))]
    lines += [",".join(f"value {r}-{i}" for i in range(columns)) for r in range(2)]
    parsed = CsvParser().parse(ParseContext("\n".join(lines).encode(), "wide.csv", CSV))
    tree, chunks = _chunks(parsed, size=400, overlap=8)
    tables = [c for c in chunks if c.type == "table"]
    seen: dict[str, list[str]] = {}
    for chunk in tables:
        assert len(chunk.text.encode("utf-8")) <= MAX_TEXT
        assert COUNT(chunk.text) <= 400
        names, rule, *rows = chunk.text.splitlines()
        heads = names.strip("| ").split(" | ")
        assert rule == "|" + "---|" * len(heads)
        for row in rows:  # every value sits under its own column's name
            values = row.strip("| ").split(" | ")
            assert [v.split("-")[1] for v in values] == [h.split("_")[1] for h in heads]
            seen.setdefault(values[0].split("-")[0], []).extend(values)
        row_span = tree.text[chunk.start_offset : chunk.end_offset]
        assert all(v in row_span for row in rows for v in row.strip("| ").split(" | "))
    # every cell of both rows once, in order
    assert seen == {f"value {r}": [f"value {r}-{i}" for i in range(columns)] for r in range(2)}


def _run_without_spaces(kind: str) -> str:
    rng = random.Random(7)
    blob = base64.b64encode(rng.randbytes(225_000)).decode()  # 300,000 characters
    if kind == "cjk":
        return "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(300_000))
    if kind == "combining":  # no cut may part a letter from its accent
        return "e\u0301" * 150_000
    return f"see {blob} here" if kind == "one long word" else blob


@pytest.mark.parametrize("kind", ["base64", "cjk", "combining", "one long word"])
def test_a_long_run_without_spaces_is_cut_in_a_few_counts_per_chunk(kind: str) -> None:
    """A run without spaces was cut character by character, counting tokens after each one:
    20,000 characters took 9.6 s, 3 MB 25 minutes. The tokenizer now answers a few calls per
    chunk; one per 50 characters is far more than enough (cutting by characters needs one per
    character), and the chunks still keep to the budget, the stored size and the text."""
    text = _run_without_spaces(kind)
    calls = [0]

    def count(piece: str) -> int:
        calls[0] += 1
        assert calls[0] <= len(text) // 50, "one tokenizer call per few characters"
        return COUNT(piece)

    tree = build_tree(ParseResult("", (TextSection(text),)), title="blob")
    chunks = chunk_tree(
        tree, document_id="d1", kb_name="kb", options=ChunkingOptions(400, 40), count_tokens=count
    )
    own = [c for c in chunks if c.type != "section_summary"]
    [block] = tree.sections[-1].blocks
    assert block.text == text and len(own) > 1
    position = block.start
    for chunk in own:  # in order, exact, within limits, only spaces between
        assert tree.text[chunk.start_offset : chunk.end_offset] == chunk.text
        assert COUNT(chunk.text) <= 400 and len(chunk.text.encode("utf-8")) <= MAX_TEXT
        assert not tree.text[position : chunk.start_offset].strip()
        assert position < chunk.end_offset
        assert not unicodedata.combining(chunk.text[0])
        position = chunk.end_offset
    assert position == block.end


def test_a_cell_too_big_for_a_chunk_is_cut_under_its_column_name() -> None:
    """A cell of 40,000 CJK characters (120 KB) is over the budget and the stored size even in
    a column of its own: its pieces each keep to both, under the column's name."""
    cell = "中文" * 20_000
    table = markdown_table([["name", "notes"], ["a", cell], ["b", "short"]])
    _tree, chunks = _chunks(ParseResult("", (TextSection(table, kind="table"),)), size=400)
    tables = [c for c in chunks if c.type == "table"]
    pieces = [c.text for c in tables if c.text.startswith("| notes |")]
    for chunk in tables:
        assert len(chunk.text.encode("utf-8")) <= MAX_TEXT and COUNT(chunk.text) <= 400
    assert all(p.startswith("| notes |\n|---|\n| ") and p.endswith(" |") for p in pieces)
    assert "".join(p.splitlines()[2][2:-2] for p in pieces) == cell
    assert tables[-1].text == "| name | notes |\n|---|---|\n| b | short |"


def test_no_chunk_opens_on_the_rest_of_a_sentence_the_page_break_cut() -> None:
    """The chunk before a page break takes the cut sentence's rest; the next chunk's overlap
    began with that rest too ("sentence A197. Alpha sentence A198 ..."), half a sentence."""
    first = " ".join(f"Alpha sentence A{n} is here." for n in range(1, 9)) + " Alpha"
    second = "sentence A9 ends here. " + " ".join(f"Beta sentence B{n} is here." for n in range(8))
    parsed = ParseResult(
        "",
        (
            TextSection("", heading="Chapter", level=1, page=1),
            TextSection(first, page=1),
            TextSection(second.strip(), page=2),
        ),
    )
    _, chunks = _chunks(parsed, size=30, overlap=12)
    texts = [c.text for c in chunks if c.type != "section_summary"]
    assert any(t.rstrip().endswith("sentence A9 ends here.") for t in texts)
    assert not any(t.lstrip().startswith("sentence A9") for t in texts)
    assert any(t.lstrip().startswith("Beta sentence B0") for t in texts)


def test_short_rows_under_a_wide_header_are_not_padded_to_its_width() -> None:
    """A 50 KB CSV (a header of 20,000 columns over 5,000 one-value rows) was padded into
    300 MB of empty cells, and each row then into chunks of every column's name. The text and
    the chunks now grow with the file, not with rows x columns."""
    from eagle_rag.ingest.detect import CSV
    from eagle_rag.ingest.parsers.sheets import CsvParser

    data = ("h," * 10_000 + "\n" + "".join(f"row {i}\n" for i in range(2000))).encode()
    parsed = CsvParser().parse(ParseContext(data, "bomb.csv", CSV))
    assert len(parsed.text) < 3 * len(data)
    _, chunks = _chunks(parsed, size=400)
    assert sum(len(c.text) for c in chunks) < 20 * len(data)
    rows = [line for c in chunks for line in c.text.splitlines() if line.startswith("| row ")]
    assert rows == [f"| row {i} |" for i in range(2000)]  # every value once, in order


def test_a_short_row_is_rendered_with_its_own_cells() -> None:
    assert markdown_table([["a", "b", "c"], ["1"], ["1", "2", "3"]]).splitlines() == [
        "| a | b | c |",
        "|---|---|---|",
        "| 1 |",
        "| 1 | 2 | 3 |",
    ]


def test_a_sparse_row_under_a_wide_header_is_chunked_by_its_filled_cells() -> None:
    """Each column group of a wide row was a chunk, empty cells under names included: a row
    with two values among 5,000 columns made dozens of chunks of nothing."""
    from eagle_rag.ingest.detect import CSV
    from eagle_rag.ingest.parsers.sheets import CsvParser

    columns = 5000
    lines = [",".join(f"column_{i}" for i in range(columns))]
    lines += ["first" + "," * (columns - 1) + "last"]
    parsed = CsvParser().parse(ParseContext("\n".join(lines).encode(), "sparse.csv", CSV))
    _, chunks = _chunks(parsed, size=400)
    rows = [c for c in chunks if c.type == "table" and ("first" in c.text or "last" in c.text)]
    assert [c.text for c in rows] == ["| column_0 | column_4999 |\n|---|---|\n| first | last |"]


@pytest.mark.parametrize("stop", ["।", "॥", "؟", "۔"])
def test_a_section_over_budget_is_packed_by_sentences_at_a_danda_or_arabic_stop(stop: str) -> None:
    """Hindi, Arabic and Urdu stops were not sentence ends: long Hindi text was cut mid-sentence,
    with no overlap."""
    sentences = [f"किसान ने खेत में गेहूं बोया संख्या {i}{stop}" for i in range(30)]
    _, chunks = _chunks(ParseResult("", (TextSection(" ".join(sentences)),)), size=40, overlap=8)
    own = [c for c in chunks if c.type != "section_summary"]
    assert len(own) > 1
    assert all(c.text.rstrip().endswith(stop) for c in own)
    assert all(c.text.lstrip().startswith("किसान") for c in own)
