"""Vector index: Milvus client pool, collection schemas, BM25 encoding, safe filters, the store."""

import os


def _load_pymilvus() -> None:
    # pymilvus parses MILVUS_URI when it is first imported, for a default connection Eagle-RAG
    # never uses (every client is given milvus.uri); a Lite path or a mistyped URI there made the
    # import fail, on every command, with a traceback quoting the URI and its password. It is
    # hidden while pymilvus loads; the settings still read it, and the pool checks it.
    uri = os.environ.pop("MILVUS_URI", None)
    try:
        import pymilvus  # noqa: F401
    finally:
        if uri is not None:
            os.environ["MILVUS_URI"] = uri


_load_pymilvus()
