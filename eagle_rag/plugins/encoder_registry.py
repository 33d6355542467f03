"""Encoders by name, and the check that an encoder fits the collection it writes to.

A dimension mismatch is caught when an ingest is planned, before any vector is written, so a
misconfigured plugin fails a document cleanly instead of leaving half of it indexed.
"""

from __future__ import annotations

from typing import Any, Protocol

from eagle_rag.errors import PluginError
from eagle_rag.plugins.registries import ComponentRegistry


class Encoder(Protocol):
    """What the kernel needs to know of any encoder (text or visual)."""

    name: str
    dim: int


class EncoderRegistry:
    """A view over the encoder component registry that knows collection dimensions."""

    def __init__(self, components: ComponentRegistry[Any]) -> None:
        self._components = components
        self._collection_dims: dict[str, int] = {}
        self._query_encoders: dict[str, str] = {}
        self._passage_encoders: dict[str, str] = {}

    def get(self, name: str) -> Any:
        return self._components.get(name)

    def set_collection_dim(
        self,
        collection: str,
        dim: int,
        *,
        query_encoder: str | None = None,
        passage_encoder: str | None = None,
    ) -> None:
        """Declare a collection's dimension and, optionally, the encoders its queries use and
        its rows were embedded with (as EMBED_TEXT passages: None for picture rows)."""
        self._collection_dims[collection] = dim
        if query_encoder:
            self._query_encoders[collection] = query_encoder
        if passage_encoder:
            self._passage_encoders[collection] = passage_encoder

    def query_encoder_for(self, collection: str) -> str | None:
        """The encoder that embeds queries for ``collection`` (None: BM25 only)."""
        return self._query_encoders.get(collection)

    def passage_encoder_for(self, collection: str) -> str | None:
        """The encoder that embedded ``collection``'s rows as text passages, if declared."""
        return self._passage_encoders.get(collection)

    def collection_dim(self, collection: str) -> int:
        try:
            return self._collection_dims[collection]
        except KeyError:
            raise PluginError(
                f"collection {collection!r} is not known to the encoder registry",
                collection=collection,
            ) from None

    def validate_plan(self, collection: str, encoder_name: str) -> None:
        """Raise unless ``encoder_name`` exists and writes vectors of the collection's dimension."""
        encoder = self.get(encoder_name)
        expected = self.collection_dim(collection)
        if int(encoder.dim) != expected:
            raise PluginError(
                f"encoder {encoder_name!r} makes {encoder.dim}-d vectors but collection "
                f"{collection!r} stores {expected}-d vectors",
                collection=collection,
                encoder=encoder_name,
            )
