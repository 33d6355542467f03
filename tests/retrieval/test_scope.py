"""Only completed documents are evidence: a document mid-ingest, or cancelled before its worker
has undone its writes, is left out of every search by the scope's filter (the real embedded app:
SQLite, Milvus Lite, the in-process queue, the FastAPI app through ASGI)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from eagle_rag.api.app import create_app
from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.cancel import CANCELLED
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import QueryRequest, UpsertBatch
from eagle_rag.retrieval.scope import excluding, resolve_scope
from eagle_rag.settings import load_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUERY = "Zolbexitant hepatic fibrosis"
MODES = ("sparse", "dense", "hybrid")
# Long enough for many embedding batches of 4 chunks: the pause falls mid-embed.
MID = "# Zolbexitant trial\n\n" + "\n\n".join(
    f"## Cohort {n}\n\nZolbexitant reduced hepatic fibrosis in cohort {n} after {n + 2} weeks; "
    f"liver stiffness fell by {n} kPa and no patient stopped treatment."
    for n in range(1, 25)
)
CONTROL = "# Control\n\nHepatic fibrosis is scored on biopsy; Zolbexitant is one candidate.\n"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    data = Path(tmp_path_factory.mktemp("scope-app"))
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"},
        # Every batch checks for a cancel, so the attempt stops as soon as it is let go.
        overrides={
            "ingest": {
                "embed_batch": 4,
                "chunk_size": 64,
                "chunk_overlap": 8,
                "progress_interval_s": 0,
            }
        },
    )
    application = await bootstrap(settings)
    yield application
    await application.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(app: EagleApp) -> AsyncIterator[httpx.AsyncClient]:
    api = create_app(app.settings, eagle=app)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http


@pytest.fixture
def kb(app: EagleApp) -> str:
    name = f"kb-{uuid.uuid4().hex[:8]}"
    app.repositories.knowledge_bases.create(name)
    return name


class PauseAfter:
    """An UPSERT_VECTORS subscriber behind Core's: once ``batches`` batches are in the store, the
    attempt waits until ``go`` is set, as it would behind a slow embedder."""

    def __init__(self, batches: int) -> None:
        self.batches = batches
        self.seen = 0
        self.paused = asyncio.Event()
        self.go = asyncio.Event()

    async def __call__(self, batch: UpsertBatch) -> UpsertBatch:
        self.seen += 1
        if self.seen == self.batches:
            self.paused.set()
            await self.go.wait()
        return batch


@contextmanager
def paused_ingest(app: EagleApp, batches: int = 2) -> Iterator[PauseAfter]:
    gate = PauseAfter(batches)
    app.bus.subscribe(hooks.upsert_vectors, gate, plugin="pause-after", priority=-2000)
    try:
        yield gate
    finally:
        gate.go.set()
        app.bus.unsubscribe_plugin("pause-after")


async def _upload(client: httpx.AsyncClient, kb: str, name: str, text: str) -> dict[str, Any]:
    answer = await client.post(
        "/ingest",
        data={"kb_name": kb},
        files={"file": (name, text.encode(), "text/markdown")},
    )
    assert answer.status_code == 202, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def _task(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get(f"/tasks/{job_id}")).json()
    return body


async def _settled(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        task = await _task(client, job_id)
        if task["status"] in ("completed", "failed"):
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {job_id} did not settle")


async def _found(client: httpx.AsyncClient, kb: str, mode: str) -> set[str]:
    """The documents a search of the KB cites (deep enough to return every row it may)."""
    answer = await client.post(
        "/search", json={"query": QUERY, "kb_name": kb, "mode": mode, "top_k": 50}
    )
    assert answer.status_code == 200, answer.text
    return {source["document_id"] for source in answer.json()["sources"]["text"]}


def _rows(app: EagleApp, document_id: str) -> int:
    return int(app.vectors.count(TEXT_COLLECTION, f.eq("document_id", document_id)))


async def _completed(client: httpx.AsyncClient, kb: str, name: str, text: str) -> str:
    job = await _upload(client, kb, name, text)
    assert (await _settled(client, job["job_id"]))["status"] == "completed"
    return str(job["document_id"])


async def test_a_document_mid_ingest_is_not_found_until_its_task_completes(
    app: EagleApp, client: httpx.AsyncClient, kb: str
) -> None:
    control = await _completed(client, kb, "control.md", CONTROL)
    with paused_ingest(app) as gate:
        job = await _upload(client, kb, "mid.md", MID)
        await asyncio.wait_for(gate.paused.wait(), 60)
        task = await _task(client, job["job_id"])
        assert (task["status"], task["phase"]) == ("processing", "embed")
        assert 0 < task["progress"]["current"] < task["progress"]["total"]
        assert _rows(app, job["document_id"]) > 0  # its first batches are in the store
        for mode in MODES:
            assert await _found(client, kb, mode) == {control}, mode
        gate.go.set()
        assert (await _settled(client, job["job_id"]))["status"] == "completed"
    for mode in MODES:
        assert job["document_id"] in await _found(client, kb, mode), mode


async def test_a_cancelled_document_is_gone_at_once_not_at_its_workers_cleanup(
    app: EagleApp, client: httpx.AsyncClient, kb: str
) -> None:
    control = await _completed(client, kb, "control.md", CONTROL)
    with paused_ingest(app) as gate:
        job = await _upload(client, kb, "big.md", MID)
        await asyncio.wait_for(gate.paused.wait(), 60)
        cancelled = await client.post(f"/tasks/{job['job_id']}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        assert (cancelled.json()["status"], cancelled.json()["error"]) == ("failed", CANCELLED)
        # The worker has not looked yet: what it wrote is still in the store.
        assert _rows(app, job["document_id"]) > 0
        for mode in MODES:
            assert await _found(client, kb, mode) == {control}, mode
        gate.go.set()
        await app.queue.join()  # type: ignore[attr-defined]
    task = app.repositories.tasks.get(job["job_id"])
    assert task.lease_owner is None and any("writes were undone" in x for x in task.log)
    assert _rows(app, job["document_id"]) == 0
    for mode in MODES:
        assert await _found(client, kb, mode) == {control}, mode


async def test_a_queued_batch_does_not_grow_the_filter_only_started_documents_do(
    app: EagleApp, kb: str
) -> None:
    """More accepted documents than one filter list holds wait in the queue, never started, so
    without rows: they add nothing to the filter. A started one is left out by its id."""
    runs = app.repositories.ingest_runs
    request = QueryRequest(QUERY, kb_names=(kb,))
    alone = resolve_scope(app.repositories, request).where
    assert alone == f.all_of(f.in_("kb_name", [kb]))
    waiting = [_accepted(app, kb, n) for n in range(f.MAX_LIST + 1)]
    assert resolve_scope(app.repositories, request).where == alone

    started = runs.start(waiting[0].task.id, owner="a-worker", lease_s=60, max_attempts=3)
    assert started.outcome == "claimed"
    document_id = waiting[0].document.id
    where = resolve_scope(app.repositories, request).where.expression
    assert where.startswith(f"{alone.expression} and (not ")
    assert f'document_id in ["{document_id}"]' in where and where.count("document_id") == 1

    # A query naming documents keeps its id list and drops the started one from it.
    named = QueryRequest(QUERY, document_ids=(document_id, waiting[1].document.id))
    scope = resolve_scope(app.repositories, named)
    assert scope.document_ids == (waiting[1].document.id,)
    assert "not" not in scope.where.expression


def _accepted(app: EagleApp, kb: str, n: int) -> Any:
    return app.repositories.ingest_runs.accept(
        document_id=uuid.uuid4().hex,
        kb_name=kb,
        filename=f"queued-{n}.txt",
        mime_type="text/plain",
        sha256=uuid.uuid4().hex * 2,
        size=10,
        object_key=f"{app.namespace}/{kb}/queued-{n}.txt",
    )


async def test_more_ids_than_one_filter_list_holds_are_split_and_milvus_takes_them(
    app: EagleApp, client: httpx.AsyncClient, kb: str
) -> None:
    """After a crash took over many started documents: the exclusion still builds and runs."""
    kept = await _completed(client, kb, "control.md", CONTROL)
    ids = [uuid.uuid4().hex for _ in range(f.MAX_LIST + 1)]
    assert excluding([]) is None
    left_out = excluding([*ids, kept])
    assert left_out is not None and left_out.expression.count("document_id in [") == 2
    in_kb = f.eq("kb_name", kb)
    assert _count(app, in_kb) > 0
    assert _count(app, f.all_of(in_kb, excluding(ids))) == _count(app, in_kb)
    assert _count(app, f.all_of(in_kb, left_out)) == 0


def _count(app: EagleApp, where: f.Filter) -> int:
    return int(app.vectors.count(TEXT_COLLECTION, where))
