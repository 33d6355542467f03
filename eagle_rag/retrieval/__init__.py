"""The query path: scope, per-collection retrieval, RRF fusion, reranking, parent expansion and
the context pack (DESIGN §6)."""
