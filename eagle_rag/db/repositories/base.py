"""What every repository shares: the database and the one namespace it may touch."""

from __future__ import annotations

import uuid

from eagle_rag.db.database import Database
from eagle_rag.errors import InvalidInputError


def new_id() -> str:
    return uuid.uuid4().hex


class NamespacedRepository:
    """Holds the namespace; subclasses put ``plugin_namespace == self.namespace`` in every query."""

    def __init__(self, db: Database, namespace: str) -> None:
        if not namespace:
            raise InvalidInputError("a repository needs a namespace")
        self._db = db
        self.namespace = namespace
