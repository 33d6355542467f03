"""Accept documents for ingest: validate, store the original, dedup, create the task, queue it.

Everything that can be refused is refused here, before a task exists: unknown KB, too large,
empty, unsupported or mislabeled type, zip bomb, unsafe URL. A dedup hit (same bytes already in
the KB) returns the existing document instead of a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import tempfile
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from eagle_rag.db.records import validate_kb_name
from eagle_rag.db.repositories.base import new_id
from eagle_rag.errors import InvalidInputError, PayloadTooLargeError
from eagle_rag.ingest.detect import BINARY_TYPES, detect
from eagle_rag.ingest.fetch import UrlFetcher
from eagle_rag.ingest.safety import ArchiveLimits, check_archive
from eagle_rag.storage.keys import MAX_PART_LENGTH, object_key

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

READ_CHUNK = 1024 * 1024
SPOOL_IN_MEMORY = 8 * 1024 * 1024


class TaskQueue(Protocol):
    """Runs ingest tasks by id: in this process, or on Celery workers."""

    def submit(self, task_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Submission:
    """The wire answer of ``POST /ingest``."""

    job_id: str
    document_id: str
    status: str
    dedup_hit: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "document_id": self.document_id,
            "status": self.status,
            "dedup_hit": self.dedup_hit,
        }


class IngestService:
    def __init__(self, app: Runtime, queue: TaskQueue) -> None:
        self._app = app
        self._queue = queue

    def submit_file(
        self,
        *,
        kb_name: str,
        filename: str,
        stream: BinaryIO,
        content_type: str | None = None,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        source_url: str | None = None,
    ) -> Submission:
        validate_kb_name(kb_name)  # the KB itself is checked in the transaction that records it
        display_name = display_filename(filename)
        with _spooled(stream, self._app.settings.ingest.max_file_bytes) as (spool, size, sha256):
            head = spool.read()
            detected = detect(head, display_name, content_type)
            if detected.mime_type in BINARY_TYPES and detected.mime_type != "application/pdf":
                check_archive(head, ArchiveLimits.from_settings(self._app.settings.ingest))
            # The original goes first, under a fresh id, then one transaction records the
            # document with its task: a crash in between leaves an unreferenced object, never a
            # document without its file. A dedup hit (same bytes, already in the KB) or a
            # refusal removes the object again.
            document_id = new_id()
            key = object_key(self._app.namespace, kb_name, document_id, storage_name(display_name))
            self._app.objects.put(key, io.BytesIO(head), content_type=detected.mime_type)
            try:
                accepted = self._app.repositories.ingest_runs.accept(
                    document_id=document_id,
                    kb_name=kb_name,
                    filename=display_name,
                    mime_type=detected.mime_type,
                    sha256=sha256,
                    size=size,
                    object_key=key,
                    source_url=source_url,
                    extra=dict(metadata or {}),
                    tags=tags,
                )
            except BaseException:
                self._discard(key)
                raise
            if accepted.task is None:
                self._discard(key)
                return self._dedup_hit(accepted.document)
        task = accepted.task
        self._queue.submit(task.id)
        return Submission(task.id, accepted.document.id, task.status, dedup_hit=False)

    def submit_url(
        self,
        *,
        kb_name: str,
        url: str,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        fetcher: UrlFetcher | None = None,
    ) -> Submission:
        self._require_kb(kb_name)  # before fetching: a typo must not cost a download
        fetched = (fetcher or UrlFetcher(self._app.settings.ingest)).fetch(url)
        return self.submit_file(
            kb_name=kb_name,
            filename=fetched.filename,
            stream=io.BytesIO(fetched.data),
            content_type=fetched.content_type,
            tags=tags,
            metadata=metadata,
            source_url=fetched.url,
        )

    def retry(self, task_id: str) -> Submission:
        """Queue a failed task again (same document, attempts keep counting)."""
        task = self._app.repositories.tasks.get(task_id)
        if task.status != "failed":
            raise InvalidInputError(
                f"only failed tasks can be retried (this one is {task.status})", job_id=task_id
            )
        self._app.repositories.tasks.finish(task_id, status="queued")
        self._queue.submit(task_id)
        return Submission(task_id, task.document_id, "queued", dedup_hit=False)

    def rebuild(self, kb_name: str) -> list[Submission]:
        """Run every stored document of a KB through the pipeline again, as new tasks.

        Its vectors go first, so chunks a changed chunking or model would no longer produce
        cannot linger; until its task completes a document is not retrievable.
        """
        self._require_kb(kb_name)
        repos = self._app.repositories
        submissions = []
        for document_id in repos.documents.ids_in_kb(kb_name):
            document = repos.documents.get(document_id)
            if not document.object_key:
                continue
            self._app.vectors.delete_documents([document_id])
            repos.documents.set_fields(document_id, status="pending", error=None)
            task = repos.tasks.create(document_id=document_id)
            self._queue.submit(task.id)
            submissions.append(Submission(task.id, document_id, task.status, dedup_hit=False))
        return submissions

    def _discard(self, key: str) -> None:
        with contextlib.suppress(Exception):  # best effort; an orphan object is only garbage
            self._app.objects.delete(key)

    def _require_kb(self, kb_name: str) -> None:
        validate_kb_name(kb_name)
        self._app.repositories.knowledge_bases.get(kb_name)

    def _dedup_hit(self, document: Any) -> Submission:
        tasks = self._app.repositories.tasks.for_document(document.id)
        latest = tasks[-1] if tasks else None
        if latest is not None and latest.status == "failed":
            return self.retry(latest.id)  # the same bytes again: try the failed one once more
        job_id = latest.id if latest else ""
        return Submission(job_id, document.id, latest.status if latest else document.status, True)


def display_filename(filename: str) -> str:
    """The name shown to users: the last path component, printable, at most 255 characters."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip()
    return name[:255] or "document"


def storage_name(display_name: str) -> str:
    """The object key part for a file: a safe name that keeps the extension."""
    suffix = PurePosixPath(display_name).suffix.lower()
    stem = PurePosixPath(display_name).stem.strip(". ") or "document"
    if stem in (".", "..") or "%" in stem:
        stem = "document"
    return (stem[: MAX_PART_LENGTH - len(suffix) - 1] + suffix) or "document"


@contextmanager
def _spooled(stream: BinaryIO, limit: int) -> Iterator[tuple[BinaryIO, int, str]]:
    """Copy a stream into a spooled temp file under a size cap, hashing as it goes."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        digest, size = hashlib.sha256(), 0
        while chunk := stream.read(READ_CHUNK):
            size += len(chunk)
            if size > limit:
                raise PayloadTooLargeError(
                    f"the file is larger than the {limit}-byte limit", limit=limit
                )
            digest.update(chunk)
            spool.write(chunk)
        if size == 0:
            raise InvalidInputError("the file is empty")
        spool.seek(0)
        yield spool, size, digest.hexdigest()  # type: ignore[misc]
