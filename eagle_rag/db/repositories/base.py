"""What every repository shares: the database and the one namespace it may touch."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any, TypeVar

from sqlalchemy import Select

from eagle_rag.db.database import Database
from eagle_rag.errors import InvalidInputError

Query = TypeVar("Query", bound=Select[Any])


def new_id() -> str:
    return uuid.uuid4().hex


def within_kbs(query: Query, column: Any, kb_names: Collection[str] | None) -> Query:
    """``query`` narrowed to rows of these KBs (an API key's); None leaves it as it is."""
    if kb_names is None:
        return query
    return query.where(column.in_(sorted(kb_names)))


class NamespacedRepository:
    """Holds the namespace; subclasses put ``plugin_namespace == self.namespace`` in every query."""

    def __init__(self, db: Database, namespace: str) -> None:
        if not namespace:
            raise InvalidInputError("a repository needs a namespace")
        self._db = db
        self.namespace = namespace
