"""Eagle-RAG: a RAG data layer for AI agents."""

__version__ = "0.1.0"
