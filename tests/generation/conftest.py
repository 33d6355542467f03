"""The retrieval tests' app and corpus, shared (one embedded app per module)."""

from tests.retrieval.conftest import app, corpus

__all__ = ["app", "corpus"]
