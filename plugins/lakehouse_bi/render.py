"""A FileCatalog as parser sections: one heading per object, nested by its path, so each object
is its own section (and chunk) at ``project/model/column``; its text names what it is.

The first section is a level-1 project heading; the plugin's PARSE subscriber names it (the
project of the upload, the plugin option, or the knowledge base), so every file of a project
shares one root whatever order the files arrive in.
"""

from __future__ import annotations

from collections import defaultdict

from eagle_rag.plugins.payloads import ParseResult, TextSection
from plugins.lakehouse_bi.model import (
    COLUMN,
    DIMENSION,
    ENTITY,
    MEASURE,
    FileCatalog,
    SemanticObject,
)

PROJECT_PLACEHOLDER = "project"
META_KEY = "lakehouse"

_FRAMEWORKS = {
    "dbt": "dbt",
    "metricflow": "MetricFlow",
    "lookml": "LookML",
    "cube": "Cube",
    "ddl": "SQL",
}
_TYPES = {
    "source_table": "source table",
    "semantic_model": "semantic model",
    "model": "model",
    "doc": "docs block",
}
CHILD_TYPES = frozenset({COLUMN, DIMENSION, MEASURE, ENTITY})


def segment(text: str) -> str:
    """A path segment exactly as the structure tree writes it (no "/", single spaces)."""
    return " ".join(text.replace("/", "-").split())[:200] or "untitled"


def object_path(obj: SemanticObject) -> str:
    return "/".join(segment(p) for p in obj.path)


def to_parse_result(catalog: FileCatalog, *, filename: str) -> ParseResult:
    children: dict[str, list[SemanticObject]] = defaultdict(list)
    for obj in catalog.objects:
        if obj.object_type in CHILD_TYPES and obj.model:
            children[obj.model].append(obj)
    sections = [TextSection("", heading=PROJECT_PLACEHOLDER, level=1)]
    opened: set[tuple[str, ...]] = set()
    for obj in catalog.objects:
        for depth in range(1, len(obj.path)):
            prefix = obj.path[:depth]
            if prefix not in opened:
                opened.add(prefix)
                sections.append(TextSection("", heading=prefix[-1], level=depth + 1))
        opened.add(obj.path)
        text = describe(
            obj, children.get(obj.name, []) if obj.object_type not in CHILD_TYPES else []
        )
        sections.append(TextSection("", heading=obj.path[-1], level=len(obj.path) + 1))
        sections.append(TextSection(text))
    metadata = {
        META_KEY: {
            "kind": catalog.kind,
            "objects": [o.to_dict() for o in catalog.objects],
            "notes": list(catalog.notes),
            **dict(catalog.extra),
        },
        "title": PROJECT_PLACEHOLDER,
    }
    text = "\n\n".join(s.content for s in sections if s.content)
    return ParseResult(text=text, sections=tuple(sections), metadata=metadata)


def label(obj: SemanticObject) -> str:
    framework = _FRAMEWORKS.get(obj.framework, obj.framework)
    kind = _TYPES.get(obj.object_type, obj.object_type.replace("_", " "))
    return f"{framework} {kind}".strip()


def describe(obj: SemanticObject, members: list[SemanticObject]) -> str:
    """The chunk text: what the object is, its definition, then its facts one per line."""
    kind = label(obj)
    head = f"{kind[:1].upper()}{kind[1:]} {obj.name}"
    if obj.model:
        head += f" of {obj.model}"
    if obj.data_type:
        head += f" ({obj.data_type})"
    lines = [f"{head}: {obj.description}" if obj.description else head]
    if obj.expression:
        lines.append(f"Definition: {obj.expression}")
    if obj.grain:
        lines.append(f"Grain: {obj.grain}")
    if members:
        lines.append(_members(members))
    if obj.upstream:
        lines.append("Upstream: " + ", ".join(obj.upstream))
    if obj.tests:
        lines.append("Tests: " + ", ".join(obj.tests))
    if obj.owner:
        lines.append(f"Owner: {obj.owner}")
    if obj.tags:
        lines.append("Tags: " + ", ".join(obj.tags))
    lines.extend(f"{k}: {v}" for k, v in obj.details if v)
    return "\n".join(lines)


def _members(members: list[SemanticObject]) -> str:
    """The columns (or dimensions and measures) summary of a model's chunk: names and types.

    Every member is also its own chunk, with its description, in the same file, so the model's
    chunk does not repeat the descriptions (they were most of its tokens, embedded twice): it
    says what the relation is and which members it has; each member's chunk says what it is."""
    by_type: dict[str, list[str]] = defaultdict(list)
    for member in members:
        item = f"{member.name} {member.data_type}" if member.data_type else member.name
        by_type[member.object_type].append(item)
    parts = []
    for kind, items in by_type.items():
        name = {"column": "Columns", "dimension": "Dimensions", "measure": "Measures"}.get(
            kind, "Entities"
        )
        parts.append(f"{name} ({len(items)}): " + "; ".join(items))
    return "\n".join(parts)
