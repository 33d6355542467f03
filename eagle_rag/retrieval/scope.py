"""What a query may see: its knowledge bases, documents and tags, resolved in one namespace.

Names and ids are checked against the catalog of the caller's namespace, so another namespace's
KB or document looks exactly like a missing one. The scope also gathers the collections its
documents were written to, which lets routing add a specialized collection's plan.

Only completed documents are evidence. A document whose ingest is running, was taken over after
a crash, or was cancelled and has not undone its writes yet has rows in the store; the scope
leaves them out in the filter every plan applies (a post-filter would cut top-k short).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagle_rag.errors import InvalidInputError, PermissionDeniedError
from eagle_rag.index.collections import VISUAL_COLLECTION
from eagle_rag.index.filters import MAX_LIST, Filter, all_of, any_of, in_, not_
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.retrieval.filters import (
    ROW_FIELD_KEYS,
    VISUAL_ROWS,
    ScopedResolver,
    build_metadata_filter,
)

if TYPE_CHECKING:
    from eagle_rag.db.repositories.bundle import Repositories

MAX_SCOPE_DOCUMENTS = 1000
NATIVE_ENGINE = "eagle"


@dataclass(frozen=True, slots=True)
class Scope:
    """A resolved scope: the filter every plan applies, and the collections in play."""

    kb_names: tuple[str, ...]
    document_ids: tuple[str, ...] | None  # None: every document of the KBs
    where: Filter
    collections: frozenset[str]
    bridged: tuple[Any, ...] = ()  # KBs bound to another engine: searched through it
    # The same filter on the visual rows' fields (``pages`` and ``type`` live elsewhere there).
    visual_where: Filter | None = None

    def where_for(self, collection: str) -> Filter:
        """The filter a plan on ``collection`` applies."""
        if collection == VISUAL_COLLECTION and self.visual_where is not None:
            return self.visual_where
        return self.where

    @property
    def native(self) -> bool:
        """Some KB in scope lives in this instance's own store."""
        return len(self.bridged) < len(self.kb_names)

    @property
    def empty(self) -> bool:
        """Nothing can match: no KB, or tags / ids that select no document."""
        return not self.kb_names or self.document_ids == ()


def resolve_scope(
    repos: Repositories,
    request: QueryRequest,
    *,
    allowed_kbs: Iterable[str] | None = None,
    filter_fields: Mapping[str, str] | None = None,
    resolver_for: Callable[[Sequence[str]], ScopedResolver] | None = None,
) -> Scope:
    """Resolve ``request``'s scope; NotFoundError for an unknown KB or document id.

    ``allowed_kbs`` (an API key's KBs) narrows the default scope and rejects others;
    ``filter_fields`` are the plugins' top-level filter fields, ``resolver_for`` binds their
    resolved ones to the scope's knowledge bases.
    """
    named = {name: repos.knowledge_bases.get(name) for name in dict.fromkeys(request.kb_names)}
    # A document outside the key's KBs is not found, as on every route that takes its id.
    within = None if allowed_kbs is None else frozenset(allowed_kbs)
    documents = [repos.documents.get(i, within=within) for i in dict.fromkeys(request.document_ids)]
    kbs = _knowledge_bases(repos, request, named, documents, within)
    selected: set[str] | None = {d.id for d in documents} if documents else None
    if request.tags:
        tagged = set(repos.documents.ids_with_tags(request.tags, kbs))
        selected = tagged if selected is None else selected & tagged
    if selected is not None and len(selected) > MAX_SCOPE_DOCUMENTS:
        raise InvalidInputError(
            f"the scope selects more than {MAX_SCOPE_DOCUMENTS} documents; narrow it",
            documents=len(selected),
        )

    names = tuple(sorted(kbs))
    bridged = tuple(kbs[n] for n in names if kbs[n].engine != NATIVE_ENGINE)
    native_names = [n for n in names if kbs[n].engine == NATIVE_ENGINE]
    unfinished: list[str] = []
    if native_names and selected != set():  # an empty selection has nothing to leave out
        unfinished = repos.documents.ids_with_unfinished_rows(native_names)
    if selected is not None:  # the id list is the filter: leave them out of it
        selected -= set(unfinished)
        unfinished = []
    collections = _collections(kbs, documents, selected, tagged=bool(request.tags))
    doc_ids = None if selected is None else tuple(sorted(selected))
    resolve = resolver_for(native_names) if resolver_for is not None else None
    in_scope = (
        in_("kb_name", native_names) if native_names else None,
        in_("document_id", doc_ids) if doc_ids else None,
        excluding(unfinished),
    )
    where = all_of(*in_scope, build_metadata_filter(request.filters, filter_fields, resolve))
    visual_where = where
    if ROW_FIELD_KEYS & set(request.filters):  # the keys a visual row keeps in other fields
        visual = build_metadata_filter(request.filters, filter_fields, resolve, rows=VISUAL_ROWS)
        visual_where = all_of(*in_scope, visual)
    return Scope(names, doc_ids, where, frozenset(collections), bridged, visual_where)


def excluding(document_ids: Sequence[str]) -> Filter | None:
    """A filter that leaves these documents out (None for none). Lists longer than one
    filter list may be (after a crash took over many started documents) are split."""
    if not document_ids:
        return None
    ids = list(document_ids)
    lists = [in_("document_id", ids[i : i + MAX_LIST]) for i in range(0, len(ids), MAX_LIST)]
    return not_(any_of(*lists))


def _knowledge_bases(
    repos: Repositories,
    request: QueryRequest,
    named: dict[str, Any],
    documents: list[Any],
    allowed_kbs: Iterable[str] | None,
) -> dict[str, Any]:
    """The ``named`` KBs (else the documents', else every KB), narrowed to ``allowed_kbs``;
    naming a KB outside them, or a document outside the named KBs, is refused."""
    kbs = dict(named)
    if kbs:
        outside = [d.id for d in documents if d.kb_name not in kbs]
        if outside:
            raise InvalidInputError(
                "document ids outside the requested knowledge bases", document_ids=outside
            )
    elif documents:
        kbs = {d.kb_name: repos.knowledge_bases.get(d.kb_name) for d in documents}
    else:
        kbs = {kb.name: kb for kb in repos.knowledge_bases.list()}
    if allowed_kbs is None:
        return kbs
    allowed = set(allowed_kbs)
    refused = sorted(set(kbs) - allowed)
    if refused and (request.kb_names or request.document_ids):
        raise PermissionDeniedError("knowledge bases outside this key's scope", kb_names=refused)
    return {name: kb for name, kb in kbs.items() if name in allowed}


def _collections(
    kbs: Mapping[str, Any], documents: list[Any], selected: set[str] | None, *, tagged: bool
) -> set[str]:
    """The collections the scope's documents were written to (all of its KBs' when tags
    select the documents, which the catalog resolves, not the document list)."""
    if selected is None:
        return {c for kb in kbs.values() for c in kb.collections_used}
    found = {c for d in documents if d.id in selected for c in d.collections_used}
    if tagged:
        found |= {c for kb in kbs.values() for c in kb.collections_used}
    return found
