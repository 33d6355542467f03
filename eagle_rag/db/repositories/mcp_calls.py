"""The MCP call log of one namespace (what agents asked, how it went)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select

from eagle_rag.db.records import McpCallRecord, as_utc
from eagle_rag.db.repositories.base import NamespacedRepository, new_id
from eagle_rag.db.tables import McpCallRow


def _record(row: McpCallRow) -> McpCallRecord:
    return McpCallRecord(
        id=row.id,
        namespace=row.plugin_namespace,
        tool=row.tool,
        arguments=dict(row.arguments),
        status=row.status,
        duration_ms=row.duration_ms,
        error=row.error,
        created_at=as_utc(row.created_at),
    )


class McpCallRepository(NamespacedRepository):
    def record(
        self,
        *,
        tool: str,
        arguments: Mapping[str, Any],
        status: str,
        duration_ms: float,
        error: str | None = None,
    ) -> McpCallRecord:
        with self._db.session() as session:
            row = McpCallRow(
                id=new_id(),
                plugin_namespace=self.namespace,
                tool=tool,
                arguments=dict(arguments),
                status=status,
                duration_ms=duration_ms,
                error=error,
            )
            session.add(row)
            session.flush()
            return _record(row)

    def recent(self, *, limit: int = 50) -> list[McpCallRecord]:
        with self._db.session() as session:
            query = (
                select(McpCallRow)
                .where(McpCallRow.plugin_namespace == self.namespace)
                .order_by(McpCallRow.created_at.desc(), McpCallRow.id)
                .limit(limit)
            )
            return [_record(r) for r in session.scalars(query)]
