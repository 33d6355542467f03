"""Per-KB counts for the knowledge-base list, in one grouped query (no document is loaded)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import func, select

from eagle_rag.db.database import Database
from eagle_rag.db.tables import DocumentRow


@dataclass(slots=True)
class KbCounts:
    """Documents, chunks and documents by status of one knowledge base."""

    documents: int = 0
    chunks: int = 0
    statuses: dict[str, int] = field(default_factory=dict)


def kb_counts(database: Database, namespace: str, kb_names: Iterable[str]) -> dict[str, KbCounts]:
    """Counts for each named KB (KBs without documents get zeros)."""
    names = list(kb_names)
    counts = {name: KbCounts() for name in names}
    if not names:
        return counts
    query = (
        select(
            DocumentRow.kb_name,
            DocumentRow.status,
            func.count(),
            func.coalesce(func.sum(DocumentRow.chunk_count), 0),
        )
        .where(DocumentRow.plugin_namespace == namespace, DocumentRow.kb_name.in_(names))
        .group_by(DocumentRow.kb_name, DocumentRow.status)
    )
    with database.session() as session:
        for kb_name, status, documents, chunks in session.execute(query):
            entry = counts[kb_name]
            entry.documents += int(documents)
            entry.chunks += int(chunks)
            entry.statuses[str(status)] = int(documents)
    return counts
