"""An embedded-default app (SQLite, Milvus Lite, the bundled encoder) with documents ingested."""

from __future__ import annotations

import io
from collections.abc import Mapping

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.settings import load_settings


async def app_with_documents(
    data_dir: str, kb_name: str, documents: Mapping[str, str], **retrieval: object
) -> EagleApp:
    """One KB holding ``documents`` (file name -> text), ingested before it returns;
    ``retrieval`` overrides settings of that section. The caller stops the app."""
    settings = load_settings({"EAGLE_DATA_DIR": data_dir}, overrides={"retrieval": retrieval})
    app = await bootstrap(settings)
    app.repositories.knowledge_bases.create(kb_name)
    for name, text in documents.items():
        app.ingest.submit_file(kb_name=kb_name, filename=name, stream=io.BytesIO(text.encode()))
    await app.queue.join()
    return app
