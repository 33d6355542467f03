"""Vector index: Milvus client pool, collection schemas, BM25 encoding, safe filters, the store."""

import os


def _load_pymilvus() -> None:
    # pymilvus parses MILVUS_URI when it is first imported, for a default connection Eagle-RAG
    # never uses (every client is given milvus.uri); a Lite path or a mistyped URI there made the
    # import fail, on every command, with a traceback quoting the URI and its password. It is
    # hidden while pymilvus loads; the settings still read it, and the pool checks it. It is
    # set empty, not removed: pymilvus loads a .env file on import, which would put it back.
    uri = os.environ.get("MILVUS_URI")
    os.environ["MILVUS_URI"] = ""
    try:
        import pymilvus  # noqa: F401
    finally:
        if uri is None:
            os.environ.pop("MILVUS_URI", None)
        else:
            os.environ["MILVUS_URI"] = uri


_load_pymilvus()
