"""What the biomed plugin learns from a corpus is shared by every process of an instance: two
apps on one corpus file stand in for a Celery worker (which ingests) and the API (which
answers queries)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from eagle_rag.bootstrap import bootstrap
from plugins.biomed.abbreviations import RELOAD_INTERVAL_S
from tests.inrepo_plugins.test_biomed_app import biomed_settings, plugin_of

ARTICLE = """# Foo binding protein

## Results
The foo binding protein (FBP) was raised in patients taking aspirin.
"""


async def test_what_a_worker_learns_serves_the_api_process(tmp_path: Path) -> None:
    shared = str(tmp_path / "corpus.json")
    worker = await bootstrap(biomed_settings(tmp_path / "worker", abbreviations_path=shared))
    api = await bootstrap(biomed_settings(tmp_path / "api", abbreviations_path=shared))
    try:
        answers = plugin_of(api).runtime
        assert answers.query_entities("Is FBP raised?", ("med",)) == []  # unknown, and now cached
        worker.repositories.knowledge_bases.create("med")
        worker.ingest.submit_file(
            kb_name="med", filename="fbp.md", stream=io.BytesIO(ARTICLE.encode())
        )
        await worker.queue.join()  # type: ignore[attr-defined]
        plugin_of(worker).runtime.finder.book.save()  # as save_if_due does, every 10 s
        await asyncio.sleep(RELOAD_INTERVAL_S + 0.2)
        assert answers.query_entities("Is FBP raised?", ("med",)) == ["abbr:FBP"]
        assert answers.finder.book.idf("mesh:D001241") < answers.finder.book.idf("mesh:D1")
    finally:
        await api.stop()
        await worker.stop()
    # The API learned nothing, so its unload saved nothing over the worker's counts.
    data = json.loads(await asyncio.to_thread(Path(shared).read_text))
    assert data["kb_counts"]["med"]["FBP"] == {"foo binding protein": 1}
