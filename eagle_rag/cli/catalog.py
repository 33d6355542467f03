"""Where the ``kb``, ``ingest`` and ``tasks`` commands act: the embedded store, or a running server.

Milvus Lite admits one process per data dir, so while ``eagle-rag serve`` runs the commands must
go through its REST API; when no server answers they open the embedded store themselves. Both
sides implement the same small interface, so each command is written once.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, get_args

from eagle_rag.client import AsyncEagleClient, EagleClient, Task
from eagle_rag.db.records import TaskRecord, TaskStatus
from eagle_rag.db.repositories.documents import MAX_PAGE
from eagle_rag.errors import BackendUnavailableError, InvalidInputError, NotFoundError
from eagle_rag.index.milvus_pool import is_lite, lite_data_dir_held
from eagle_rag.settings import Settings

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp

PROBE_TIMEOUT_S = 0.5  # asking whether a server runs must not delay an offline command
REMOTE_TIMEOUT_S = 120.0


class Catalog(Protocol):
    where: str

    async def create_kb(self, name: str, description: str, creation: dict[str, Any]) -> None: ...
    async def kb_exists(self, name: str) -> bool: ...
    async def list_kbs(self) -> list[dict[str, Any]]: ...
    async def show_kb(self, name: str) -> dict[str, Any]: ...
    async def delete_kb(self, name: str) -> int: ...
    async def submit(self, path: Path, kb: str, tags: list[str], name: str) -> dict[str, Any]:
        """Ingest one file under ``name`` (its path relative to where the files were found)."""

    async def task(self, job_id: str) -> dict[str, Any]: ...
    async def list_tasks(
        self, kb: str | None, status: str | None, limit: int
    ) -> list[dict[str, Any]]: ...
    async def cancel_task(self, job_id: str) -> dict[str, Any]: ...
    async def chunk_count(self, document_id: str) -> int: ...
    async def settle(self) -> None: ...


def server_url(settings: Settings, explicit: str | None = None) -> str | None:
    """``--server``, else ``EAGLE_SERVER_URL``, else the configured address if an Eagle-RAG
    server answers there that may serve this configuration.

    On the embedded store only a process holding its data dir can: while none does, whatever
    answers at the address (another instance, behind keys of its own; another service on the
    port) is not this data dir's server, and the command opens the store itself."""
    chosen = explicit or os.environ.get("EAGLE_SERVER_URL")
    if chosen:
        return chosen.rstrip("/")
    lite = is_lite(settings.milvus.uri)
    if lite and not lite_data_dir_held(settings.milvus.uri):
        return None
    url = f"http://{settings.server.host}:{settings.server.port}"
    try:
        # With the key: behind keys, /health tells only a keyed caller which data dir it serves.
        key = api_key(settings)
        with EagleClient(url, api_key=key, timeout_s=PROBE_TIMEOUT_S, max_retries=0) as probe:
            health = probe.health()
    except (BackendUnavailableError, ValueError):  # nothing there, or no JSON: not Eagle-RAG
        return None
    if not isinstance(health, dict) or not isinstance(health.get("checks"), dict):
        return None  # another service's JSON
    return url if serves_this_data_dir(settings, health) else None


def serves_this_data_dir(settings: Settings, health: dict[str, Any]) -> bool:
    """Whether the server found at the configured address serves this configuration's embedded
    data dir. Another instance's server there (this one listens elsewhere, or is stopped) got
    this data dir's commands: `kb list` showed its KBs and `kb delete` deleted from it. The
    embedded stores are named by the data dir alone; a production configuration's are not."""
    if not is_lite(settings.milvus.uri):
        return True
    check = health.get("checks", {}).get("data_dir") if isinstance(health, dict) else None
    served = check.get("target") if isinstance(check, dict) else None
    return not served or Path(served).resolve() == Path(settings.data_dir).resolve()


def api_key(settings: Settings) -> str | None:
    """``EAGLE_API_KEY``, else the first configured key (a local admin using its own config)."""
    if os.environ.get("EAGLE_API_KEY"):
        return os.environ["EAGLE_API_KEY"]
    keys = settings.server.api_keys
    return keys[0].key.get_secret_value() if keys else None


@asynccontextmanager
async def open_catalog(
    settings: Settings, server: str | None, *, workers: bool = False
) -> AsyncIterator[Catalog]:
    url = server_url(settings, server)
    if url is not None:
        client = AsyncEagleClient(url, api_key=api_key(settings), timeout_s=REMOTE_TIMEOUT_S)
        async with client:
            yield RemoteCatalog(client, url)
        return
    from eagle_rag.cli.common import running_app

    async with running_app(workers=workers, settings=settings) as application:
        yield LocalCatalog(application)


class RemoteCatalog:
    """The catalog of a running server, through :mod:`eagle_rag.client` (its errors, retries
    on 429/503 and wire format), shaped as the commands print it."""

    def __init__(self, client: AsyncEagleClient, url: str) -> None:
        self._client = client
        self.where = url

    async def create_kb(self, name: str, description: str, creation: dict[str, Any]) -> None:
        await self._client.create_knowledge_base(
            name, description=description, creation_settings=creation
        )

    async def kb_exists(self, name: str) -> bool:
        try:
            await self._client.get_knowledge_base(name)
        except NotFoundError:
            return False
        return True

    async def list_kbs(self) -> list[dict[str, Any]]:
        return [dict(kb.raw) for kb in await self._client.list_knowledge_bases()]

    async def show_kb(self, name: str) -> dict[str, Any]:
        info = dict((await self._client.get_knowledge_base(name)).raw)
        documents = await self._client.list_documents(name, limit=MAX_PAGE)
        info["document_list"] = [
            {
                "document_id": d.document_id,
                "filename": d.filename,
                "status": d.status,
                "chunks": d.chunk_count,
                "error": d.error,
            }
            for d in documents
        ]
        return info

    async def delete_kb(self, name: str) -> int:
        return int((await self._client.delete_knowledge_base(name))["documents"])

    async def submit(self, path: Path, kb: str, tags: list[str], name: str) -> dict[str, Any]:
        data = await asyncio.to_thread(path.read_bytes)
        submission = await self._client.ingest(kb, data, filename=name, tags=tags)
        return {
            "job_id": submission.job_id,
            "document_id": submission.document_id,
            "status": submission.status,
            "dedup_hit": submission.dedup_hit,
        }

    async def task(self, job_id: str) -> dict[str, Any]:
        return _task_dict(await self._client.get_task(job_id))

    async def list_tasks(
        self, kb: str | None, status: str | None, limit: int
    ) -> list[dict[str, Any]]:
        filters = {"kb_name": kb, "status": status, "limit": limit}
        tasks = await self._client.list_tasks(**{k: v for k, v in filters.items() if v})
        return [_task_dict(t) for t in tasks]

    async def cancel_task(self, job_id: str) -> dict[str, Any]:
        return _task_dict(await self._client.cancel_task(job_id))

    async def chunk_count(self, document_id: str) -> int:
        return (await self._client.get_document(document_id)).chunk_count

    async def settle(self) -> None:
        """The server flushes on its own when its queue drains."""


class LocalCatalog:
    def __init__(self, application: EagleApp) -> None:
        self._app = application
        self.where = f"embedded store {application.settings.data_dir}"

    async def create_kb(self, name: str, description: str, creation: dict[str, Any]) -> None:
        await self._app.knowledge.create(name, description=description, creation_settings=creation)

    async def kb_exists(self, name: str) -> bool:
        return self._app.repositories.knowledge_bases.find(name) is not None

    async def list_kbs(self) -> list[dict[str, Any]]:
        from eagle_rag.api.schemas import kb_out

        repos = self._app.repositories
        return [
            kb_out(kb, repos.documents.count(kb_name=kb.name), self._app.knowledge.public(kb))
            for kb in repos.knowledge_bases.list()
        ]

    async def show_kb(self, name: str) -> dict[str, Any]:
        from eagle_rag.api.schemas import kb_out

        repos = self._app.repositories
        kb = repos.knowledge_bases.get(name)
        info = kb_out(kb, repos.documents.count(kb_name=name), self._app.knowledge.public(kb))
        info["document_list"] = [
            {
                "document_id": d.id,
                "filename": d.filename,
                "status": d.status,
                "chunks": d.chunk_count,
                "error": d.error,
            }
            for d in repos.documents.list(kb_name=name, limit=MAX_PAGE)
        ]
        return info

    async def delete_kb(self, name: str) -> int:
        return int(await self._app.knowledge.delete(name))

    async def submit(self, path: Path, kb: str, tags: list[str], name: str) -> dict[str, Any]:
        def submit() -> dict[str, Any]:
            with path.open("rb") as stream:
                submission = self._app.ingest.submit_file(
                    kb_name=kb, filename=name, stream=stream, tags=tags
                )
            result: dict[str, Any] = submission.to_dict()
            return result

        return await asyncio.to_thread(submit)

    async def task(self, job_id: str) -> dict[str, Any]:
        return self._with_filenames([self._app.repositories.tasks.get(job_id)])[0]

    async def list_tasks(
        self, kb: str | None, status: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The newest tasks, as ``GET /tasks`` lists them (an unknown KB or status refused)."""

        if status is not None and status not in get_args(TaskStatus):
            known = ", ".join(get_args(TaskStatus))
            raise InvalidInputError(f"unknown status {status!r}; one of {known}", status=status)
        repos = self._app.repositories
        if kb is not None:
            repos.knowledge_bases.get(kb)  # NotFoundError: an empty list would read "no tasks"
        return self._with_filenames(repos.tasks.list(status=status, kb_name=kb, limit=limit))

    async def cancel_task(self, job_id: str) -> dict[str, Any]:
        """Marks the row: a worker running the task (a server's, a Celery worker's) reads it
        at its next check and stops, undoing what it wrote."""
        from eagle_rag.ingest.cancel import cancel_task

        tasks = self._app.repositories.tasks
        return self._with_filenames([await asyncio.to_thread(cancel_task, tasks, job_id)])[0]

    def _with_filenames(self, tasks: list[TaskRecord]) -> list[dict[str, Any]]:
        from eagle_rag.api.schemas import task_out

        names = self._app.repositories.documents.filenames(t.document_id for t in tasks)
        return [task_out(t, filename=names.get(t.document_id, "")) for t in tasks]

    async def chunk_count(self, document_id: str) -> int:
        return int(self._app.repositories.documents.get(document_id).chunk_count)

    async def settle(self) -> None:
        from eagle_rag.ingest.queue import InProcessQueue

        if isinstance(self._app.queue, InProcessQueue):
            await self._app.queue.join()  # includes the flush the queue runs when it drains


def _task_dict(task: Task) -> dict[str, Any]:
    """A client Task in the REST shape (``task_out``), as the local catalog gives it."""
    return {
        "job_id": task.job_id,
        "document_id": task.document_id,
        "kb_name": task.kb_name,
        "filename": task.filename,
        "status": task.status,
        "phase": task.phase,
        "progress": {"current": task.current, "total": task.total},
        "error": task.error,
        "attempts": task.attempts,
        "log": list(task.log),
        "created_at": task.created_at,
        "updated_at": task.updated_at,
    }
