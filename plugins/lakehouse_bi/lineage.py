"""The per-KB lineage index: what every ingested file defines and references, merged.

Each document's entry is one small JSON object stored next to its original
(``{namespace}/{kb}/{document_id}/lakehouse-lineage.json``): deleting the document or the KB
deletes it with the rest, and a re-ingested file (a new document id, the old one removed)
replaces it. Readers merge the entries of completed documents (one cancelled or failed after
its PARSE wrote the entry is no evidence), so the graph does not depend on the order files were
ingested in. Names resolve within one project of one KB (a :data:`Scope`): a ``ref()`` in
KB A's project never reaches a same-named model of KB B, or of another project.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eagle_rag.errors import NotFoundError
from eagle_rag.storage.keys import object_key, validate_prefix
from plugins.lakehouse_bi.model import MEASURE, METRIC, RELATIONS, SemanticObject

ENTRY_NAME = "lakehouse-lineage.json"
CACHE_LIMIT = 20_000
_PAGE = 500  # the document repository's largest page
MAX_DEPTH = 10
# Lineage names resolve within one project of one knowledge base: (kb_name, project).
Scope = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Entry:
    """One document's contribution to the index."""

    document_id: str
    filename: str
    project: str
    kind: str
    objects: tuple[SemanticObject, ...]


@dataclass(slots=True)
class LineageGraph:
    """Relations (models, sources, views...) by name, with their edges both ways."""

    objects: dict[str, list[tuple[SemanticObject, Entry]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    upstream: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    downstream: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    children: dict[str, list[tuple[SemanticObject, Entry]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    # MetricFlow measure -> its semantic models, and the metrics built on each measure name:
    # a metric is linked to the semantic model of its measures, whichever file comes first.
    measure_models: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    metrics_on: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, entry: Entry) -> None:
        for obj in entry.objects:
            if obj.object_type in RELATIONS or not obj.model:
                self.objects[obj.name].append((obj, entry))
            else:
                self.children[obj.model].append((obj, entry))
            if _metricflow(obj, MEASURE):
                self._measure(obj.name, obj.model)
            for parent in obj.upstream:
                if parent != obj.name:
                    self._link(obj.name, parent)
                if _metricflow(obj, METRIC):
                    self._metric_on(obj.name, parent)

    def _link(self, child: str, parent: str) -> None:
        self.upstream[child].add(parent)
        self.downstream[parent].add(child)

    def _measure(self, measure: str, model: str) -> None:
        self.measure_models[measure].add(model)
        for metric in self.metrics_on.get(measure, ()):
            if metric != model:
                self._link(metric, model)

    def _metric_on(self, metric: str, measure: str) -> None:
        self.metrics_on[measure].add(metric)
        for model in self.measure_models.get(measure, ()):
            if model != metric:
                self._link(metric, model)

    def walk(self, name: str, direction: str, depth: int = MAX_DEPTH) -> list[str]:
        """Names reachable upstream or downstream, nearest first; cycles are walked once."""
        edges = self.upstream if direction == "upstream" else self.downstream
        seen: dict[str, None] = {}
        frontier = [name]
        for _ in range(depth):
            following = []
            for node in frontier:
                for neighbour in sorted(edges.get(node, ())):
                    if neighbour != name and neighbour not in seen:
                        seen[neighbour] = None
                        following.append(neighbour)
            if not following:
                break
            frontier = following
        return list(seen)

    def cycle_through(self, name: str) -> list[str]:
        """A reference cycle that passes through ``name`` (empty if none): a -> b -> a."""
        path: list[str] = []
        visiting: set[str] = set()

        def visit(node: str) -> bool:
            for parent in sorted(self.upstream.get(node, ())):
                if parent == name:
                    path.append(parent)
                    return True
                if parent in visiting or len(path) > MAX_DEPTH * 10:
                    continue
                visiting.add(parent)
                path.append(parent)
                if visit(parent):
                    return True
                path.pop()
            return False

        return [name, *path] if visit(name) else []

    def lineage(self, name: str) -> dict[str, Any]:
        return {
            "upstream": sorted(self.upstream.get(name, ())),
            "downstream": sorted(self.downstream.get(name, ())),
            "all_upstream": self.walk(name, "upstream"),
            "all_downstream": self.walk(name, "downstream"),
            "cycle": self.cycle_through(name),
        }


@dataclass(slots=True)
class ScopedLineage:
    """One :class:`LineageGraph` per project of each knowledge base read."""

    graphs: dict[Scope, LineageGraph] = field(default_factory=dict)

    def add(self, kb_name: str, entry: Entry) -> None:
        self.graphs.setdefault((kb_name, entry.project), LineageGraph()).add(entry)

    def of(self, kb_name: str, project: str) -> LineageGraph:
        """The graph of one project of one KB (an empty one for a scope with no entries)."""
        return self.graphs.get((kb_name, project)) or LineageGraph()

    def names(self) -> set[str]:
        """Every relation name of every scope."""
        return {name for graph in self.graphs.values() for name in graph.objects}


class LineageIndex:
    """Reads and writes the entries of one namespace's KBs in the object store; ``documents``
    (the host's document repository) tells which documents completed."""

    def __init__(self, objects: Any, namespace: str, documents: Any = None) -> None:
        self._objects = objects
        self._namespace = namespace
        self._documents = documents
        self._cache: dict[str, Entry] = {}

    def key(self, kb_name: str, document_id: str) -> str:
        return object_key(self._namespace, kb_name, document_id, ENTRY_NAME)

    def write(self, kb_name: str, entry: Entry) -> None:
        body = {
            "document_id": entry.document_id,
            "filename": entry.filename,
            "project": entry.project,
            "kind": entry.kind,
            "objects": [o.to_dict() for o in entry.objects],
        }
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        key = self.key(kb_name, entry.document_id)
        self._objects.put(key, io.BytesIO(data), content_type="application/json")
        self._cache[key] = entry

    def graph(self, kb_names: Iterable[str]) -> ScopedLineage:
        """The lineage of these KBs' completed documents, one graph per (KB, project)."""
        lineage = ScopedLineage()
        for kb_name in dict.fromkeys(kb_names):
            for entry in self.entries(kb_name):
                lineage.add(kb_name, entry)
        return lineage

    @staticmethod
    def graph_of(entries: Iterable[Entry]) -> LineageGraph:
        graph = LineageGraph()
        for entry in entries:
            graph.add(entry)
        return graph

    def document_entry(self, kb_name: str, document_id: str) -> Entry | None:
        """One document's entry (None for a document that is not a lakehouse file)."""
        key = self.key(kb_name, document_id)
        return self._cache.get(key) or self._read(key)

    def entries(self, kb_name: str) -> list[Entry]:
        """The entries of the KB's completed documents."""
        prefix = validate_prefix(self._namespace, kb_name)
        keys = [k for k in self._objects.list(prefix) if k.endswith("/" + ENTRY_NAME)]
        completed = self._completed(kb_name) if keys else None
        found = []
        for key in keys:
            entry = self._cache.get(key) or self._read(key)
            if entry is not None and (completed is None or entry.document_id in completed):
                found.append(entry)
        return found

    def _completed(self, kb_name: str) -> set[str] | None:
        """The KB's completed documents (None without a document repository: all count).

        Read at every call, not cached: a KB rebuild sets completed documents pending again."""
        if self._documents is None:
            return None
        ids: set[str] = set()
        offset = 0
        while True:
            page = self._documents.list(
                kb_name=kb_name, status="completed", limit=_PAGE, offset=offset
            )
            ids.update(d.id for d in page)
            offset += _PAGE
            if len(page) < _PAGE:
                return ids

    def _read(self, key: str) -> Entry | None:
        try:
            raw = b"".join(self._objects.open(key))
        except NotFoundError:  # removed with its document since the listing
            return None
        entry = entry_from_json(json.loads(raw))
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = entry
        return entry


def _metricflow(obj: SemanticObject, object_type: str) -> bool:
    return obj.object_type == object_type and obj.framework == "metricflow"


def entry_from_json(value: Mapping[str, Any]) -> Entry:
    return Entry(
        document_id=str(value["document_id"]),
        filename=str(value.get("filename", "")),
        project=str(value.get("project", "")),
        kind=str(value.get("kind", "")),
        objects=tuple(SemanticObject.from_dict(o) for o in value.get("objects", ())),
    )
