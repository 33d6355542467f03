"""Where the ``kb`` and ``ingest`` commands act: the embedded store, or a running server.

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
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from eagle_rag.db.repositories.documents import MAX_PAGE
from eagle_rag.errors import EagleError
from eagle_rag.settings import Settings

if TYPE_CHECKING:
    from eagle_rag.bootstrap import EagleApp


class RemoteError(EagleError):
    """An error answered by a running server (its code and message, as sent)."""

    code = "remote_error"

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message, status=status, remote_code=code)
        self.remote_code = code


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
    async def chunk_count(self, document_id: str) -> int: ...
    async def settle(self) -> None: ...


def server_url(settings: Settings, explicit: str | None = None) -> str | None:
    """``--server``, else ``EAGLE_SERVER_URL``, else the configured address if it answers."""
    chosen = explicit or os.environ.get("EAGLE_SERVER_URL")
    if chosen:
        return chosen.rstrip("/")
    url = f"http://{settings.server.host}:{settings.server.port}"
    try:
        httpx.get(url + "/health", timeout=0.5)
    except httpx.HTTPError:
        return None
    return url


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
        key = api_key(settings)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
            yield RemoteCatalog(client, url)
        return
    from eagle_rag.cli.common import running_app

    async with running_app(workers=workers, settings=settings) as application:
        yield LocalCatalog(application)


class RemoteCatalog:
    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self._client = client
        self.where = url

    async def _call(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = await self._client.request(method, path, **options)
        except httpx.HTTPError as exc:
            raise RemoteError("unreachable", f"{self.where} did not answer: {exc}", 0) from exc
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {"code": "http_error", "message": response.text[:300]}
            raise RemoteError(
                body.get("code", "error"), body.get("message", ""), response.status_code
            )
        return response.json()

    async def create_kb(self, name: str, description: str, creation: dict[str, Any]) -> None:
        body = {"kb_name": name, "description": description, "creation_settings": creation}
        await self._call("POST", "/knowledge_bases", json=body)

    async def kb_exists(self, name: str) -> bool:
        try:
            await self._call("GET", f"/knowledge_bases/{name}")
        except RemoteError as exc:
            if exc.remote_code == "not_found":
                return False
            raise
        return True

    async def list_kbs(self) -> list[dict[str, Any]]:
        kbs: list[dict[str, Any]] = await self._call("GET", "/knowledge_bases")
        return kbs

    async def show_kb(self, name: str) -> dict[str, Any]:
        info: dict[str, Any] = await self._call("GET", f"/knowledge_bases/{name}")
        documents = await self._call(
            "GET", "/documents", params={"kb_name": name, "limit": MAX_PAGE}
        )
        info["document_list"] = [
            {
                "document_id": d["document_id"],
                "filename": d["filename"],
                "status": d["status"],
                "chunks": d["chunk_count"],
                "error": d["error"],
            }
            for d in documents
        ]
        return info

    async def delete_kb(self, name: str) -> int:
        return int((await self._call("DELETE", f"/knowledge_bases/{name}"))["documents"])

    async def submit(self, path: Path, kb: str, tags: list[str], name: str) -> dict[str, Any]:
        data = await asyncio.to_thread(path.read_bytes)
        form = {"kb_name": kb, "tags": ",".join(tags)}
        submission: dict[str, Any] = await self._call(
            "POST", "/ingest", data=form, files={"file": (name, data)}
        )
        return submission

    async def task(self, job_id: str) -> dict[str, Any]:
        task: dict[str, Any] = await self._call("GET", f"/tasks/{job_id}")
        return task

    async def chunk_count(self, document_id: str) -> int:
        return int((await self._call("GET", f"/documents/{document_id}"))["chunk_count"])

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
        from eagle_rag.api.schemas import task_out

        return task_out(self._app.repositories.tasks.get(job_id))

    async def chunk_count(self, document_id: str) -> int:
        return int(self._app.repositories.documents.get(document_id).chunk_count)

    async def settle(self) -> None:
        from eagle_rag.ingest.queue import InProcessQueue

        if isinstance(self._app.queue, InProcessQueue):
            await self._app.queue.join()  # includes the flush the queue runs when it drains
