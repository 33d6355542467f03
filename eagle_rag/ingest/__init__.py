"""Ingest: type detection, parsers, Knowhere structure and chunking, the pipeline and its queue."""
