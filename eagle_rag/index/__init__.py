"""Vector index: Milvus client pool, collection schemas, BM25 encoding, safe filters, the store."""
