"""CHUNK enrichment: each chunk of a lakehouse file gets its object's typed metadata.

A chunk's path is ``project/<object path>``; the object with that path gives the fields. At
query time :func:`with_lineage` lays the lineage graph of the hit's project over it: the
references other files of that project make (a schema.yml model learns the upstream of its
.sql, a source learns the models built on it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from eagle_rag.plugins.payloads import RetrievedHit, TextChunk
from plugins.lakehouse_bi.lineage import Entry, LineageGraph
from plugins.lakehouse_bi.model import RELATIONS, SemanticObject
from plugins.lakehouse_bi.nodes import Node, relation_node
from plugins.lakehouse_bi.render import object_path

SOURCE_TYPES = {
    "dbt_yaml": "dbt",
    "dbt_sql": "dbt",
    "dbt_manifest": "dbt",
    "dbt_docs": "dbt",
    "dbt_project": "dbt",
    "metricflow": "metricflow",
    "lookml": "lookml",
    "cube": "cube",
    "ddl": "sql_ddl",
}
MAX_LISTED = 50


def enrich_chunks(
    chunks: tuple[TextChunk, ...], entry: Entry, graph: LineageGraph
) -> tuple[TextChunk, ...]:
    by_path = {object_path(o): o for o in entry.objects}
    source_type = SOURCE_TYPES.get(entry.kind, entry.kind)
    out = []
    for chunk in chunks:
        relative = chunk.path.split("/", 1)[1] if "/" in chunk.path else ""
        obj = by_path.get(relative) or by_path.get(_without_suffix(relative))
        fields: dict[str, Any] = {
            "project": entry.project,
            "source_type": source_type,
            "framework": entry.kind,
        }
        if obj is None:
            fields["object_type"] = (
                "summary" if chunk.type == "section_summary" or not relative else "group"
            )
        elif chunk.type == "section_summary":
            fields.update(
                {"object_type": "summary", "name": obj.name, "model": obj.model or obj.name}
            )
        else:
            fields.update(object_fields(obj, graph))
        out.append(replace(chunk, metadata={**chunk.metadata, **fields}))
    return tuple(out)


def lineage_of(node: Node, own: Iterable[str], graph: LineageGraph) -> tuple[list[str], list[str]]:
    """Direct upstream and downstream of the object's relation node (a column's are its
    model's): its own refs plus what other files say about the same node, from the graph."""
    upstream = sorted(set(own) | set(graph.direct(node, "upstream")))
    downstream = graph.direct(node, "downstream")
    return upstream[:MAX_LISTED], downstream[:MAX_LISTED]


def with_lineage(hit: RetrievedHit, graph: LineageGraph) -> RetrievedHit:
    """A search hit whose ``upstream`` / ``downstream`` are the index's (not as of its ingest)."""
    fields = dict(hit.metadata["fields"])
    upstream, downstream = lineage_of(hit_node(fields), fields.get("upstream") or (), graph)
    for key, value in (("upstream", upstream), ("downstream", downstream)):
        if value:
            fields[key] = value
        else:
            fields.pop(key, None)
    return replace(hit, metadata={**hit.metadata, "fields": fields})


def hit_node(fields: Mapping[str, Any]) -> Node:
    """The lineage node a typed chunk's fields stand for (a column's: its model's)."""
    return relation_node(
        str(fields.get("object_type", "")),
        str(fields.get("source_type", "")),
        str(fields.get("name", "")),
        str(fields.get("model") or ""),
    )


def object_fields(obj: SemanticObject, graph: LineageGraph) -> dict[str, Any]:
    node = relation_node(obj.object_type, obj.framework, obj.name, obj.model)
    upstream, downstream = lineage_of(node, obj.upstream, graph)
    fields: dict[str, Any] = {
        "object_type": obj.object_type,
        "name": obj.name,
        "name_lower": obj.name.lower(),
        "model": obj.model or (obj.name if obj.object_type in RELATIONS else ""),
        "grain": obj.grain,
        "data_type": obj.data_type,
        "tests": list(obj.tests),
        "upstream": upstream,
        "downstream": downstream,
        "owner": obj.owner,
        "tags": list(obj.tags),
    }
    return {k: v for k, v in fields.items() if v not in ("", [])} | {"object_type": obj.object_type}


def _without_suffix(path: str) -> str:
    """The tree renames a repeated sibling heading "x (2)"; its object is still "x"."""
    head, _, last = path.rpartition("/")
    if last.endswith(")") and " (" in last:
        last = last.rsplit(" (", 1)[0]
    return f"{head}/{last}" if head else last
