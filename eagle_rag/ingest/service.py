"""Accept documents for ingest: validate, store the original, dedup, create the task, queue it.

Everything that can be refused is refused here, before a task exists: unknown KB, too large,
empty, unsupported or mislabeled type, zip bomb, unsafe URL. A dedup hit (same bytes already in
the KB) returns the existing document instead of a new one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from eagle_rag.db.records import TaskRecord, validate_kb_name
from eagle_rag.db.repositories.base import new_id
from eagle_rag.db.tables import utcnow
from eagle_rag.errors import ConflictError, InvalidInputError, PayloadTooLargeError
from eagle_rag.ingest.detect import IMAGE_TYPES, Detected, check_image, detect
from eagle_rag.ingest.fetch import UrlFetcher
from eagle_rag.ingest.leases import stranded
from eagle_rag.ingest.safety import ArchiveLimits, check_archive
from eagle_rag.ingest.upload_metadata import checked_upload_metadata
from eagle_rag.storage.keys import MAX_PART_LENGTH, object_key

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

READ_CHUNK = 1024 * 1024
logger = logging.getLogger(__name__)

HEAD_BYTES = 1024 * 1024  # what type detection sees of a large file
ZIP_MAGIC = b"PK\x03\x04"


class TaskQueue(Protocol):
    """Runs ingest tasks by id: in this process, or on Celery workers.

    ``owner`` and ``lease_s`` are the lease a new task gets (leases.py): the in-process queue
    holds its tasks itself; a broker's (None) hold them without expiry.
    """

    @property
    def owner(self) -> str | None: ...

    @property
    def lease_s(self) -> float | None: ...

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
        metadata = checked_upload_metadata(metadata)
        display_name = display_filename(filename)
        # The original streams into the store first, under a fresh id, hashed and capped on the
        # way (memory holds one chunk and the head); then one transaction records the document
        # with its task: a crash in between leaves an unreferenced object, never a document
        # without its file. A refusal or a dedup hit removes the object again.
        document_id = new_id()
        key = object_key(self._app.namespace, kb_name, document_id, storage_name(display_name))
        upload = _CappedReader(stream, self._app.settings.ingest.max_file_bytes)
        stored = self._app.objects.put(
            key, upload, content_type=content_type or "application/octet-stream"
        )
        try:
            if stored.size == 0:
                raise InvalidInputError("the file is empty")
            detected = self._detect(key, upload.head, stored.size, display_name, content_type)
            accepted = self._app.repositories.ingest_runs.accept(
                document_id=document_id,
                kb_name=kb_name,
                filename=display_name,
                mime_type=detected.mime_type,
                sha256=stored.sha256,
                size=stored.size,
                object_key=key,
                source_url=source_url,
                extra=dict(metadata or {}),
                tags=tags,
                lease_owner=self._queue.owner,
                lease_until=self._lease_until(),
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
        metadata = checked_upload_metadata(metadata)
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
        """Queue a failed or stranded task again, with a fresh budget of attempts.

        Stranded: queued or processing, but nobody will run it (its lease expired or its
        worker's process is gone). A completed task, or one a live worker holds, is a conflict.
        """
        task = self._app.repositories.tasks.get(task_id)
        if task.status == "completed":
            raise ConflictError("the task completed; there is nothing to retry", job_id=task_id)
        cleaning = _cleanup_left_s(task)
        if cleaning:
            raise ConflictError(
                "the task was cancelled while it ran and that attempt is still undoing what it "
                f"wrote; retry in {cleaning} s",
                job_id=task_id,
                status=task.status,
                retry_after=cleaning,
            )
        if task.status != "failed" and not stranded(task):
            raise ConflictError(
                f"the task is {task.status} and held by a running worker; it needs no retry",
                job_id=task_id,
                status=task.status,
                lease_owner=task.lease_owner,
                lease_expires_at=task.lease_expires_at.isoformat()
                if task.lease_expires_at
                else None,
            )
        requeued = self._app.repositories.ingest_runs.requeue(
            task_id,
            note=f"retried by hand (was {task.status})",
            lease_owner=self._queue.owner,
            lease_until=self._lease_until(),
            expect=(task.lease_owner, task.lease_expires_at),
            grant_attempts=self._app.settings.ingest.max_attempts,
        )
        if not requeued:
            raise ConflictError("the task changed meanwhile; look at it again", job_id=task_id)
        self._queue.submit(task_id)
        return Submission(task_id, task.document_id, "queued", dedup_hit=False)

    def _lease_until(self) -> datetime | None:
        lease_s = self._queue.lease_s
        return None if lease_s is None else utcnow() + timedelta(seconds=lease_s)

    def rebuild(self, kb_name: str) -> list[Submission]:
        """Run every stored document of a KB through the pipeline again, as new tasks.

        Its vectors go first, so chunks a changed chunking or model would no longer produce
        cannot linger; until its task completes a document is not retrievable. A document
        whose original is not stored (never kept, or lost) is left as it is: it cannot be
        parsed again, and deleting its vectors first destroyed a searchable document.
        """
        self._require_kb(kb_name)
        repos = self._app.repositories
        submissions = []
        for document_id in repos.documents.ids_in_kb(kb_name):
            document = repos.documents.get(document_id)
            if not document.object_key or not self._app.objects.exists(document.object_key):
                logger.warning(
                    "rebuild of %s leaves document %s (%s) as it is: its original is not stored",
                    kb_name,
                    document_id,
                    document.filename,
                )
                continue
            self._app.vectors.delete_documents([document_id])
            repos.documents.set_fields(document_id, status="pending", error=None)
            task = repos.tasks.create(
                document_id=document_id,
                lease_owner=self._queue.owner,
                lease_until=self._lease_until(),
            )
            self._queue.submit(task.id)
            submissions.append(Submission(task.id, document_id, task.status, dedup_hit=False))
        return submissions

    def _detect(
        self, key: str, head: bytes, size: int, name: str, declared: str | None
    ) -> Detected:
        """Detect the type from the head; a zip container (DOCX, PPTX, XLSX) is read back whole,
        since its directory sits at its end, and checked for bombs; an image larger than the
        head is checked whole too (a PNG's chunks run to its end, a TIFF's directory may sit
        there), from a spooled copy."""
        if not head.startswith(ZIP_MAGIC):
            whole = size <= len(head)
            detected = detect(text_sample(head, whole=whole), name, declared, whole=whole)
            if not whole and detected.mime_type in IMAGE_TYPES:
                with tempfile.SpooledTemporaryFile(max_size=HEAD_BYTES) as copy:
                    for chunk in self._app.objects.open(key):
                        copy.write(chunk)
                    copy.seek(0)
                    check_image(copy, detected.mime_type)
            return detected
        data = b"".join(self._app.objects.open(key))
        detected = detect(data, name, declared)
        check_archive(data, ArchiveLimits.from_settings(self._app.settings.ingest))
        return detected

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


# A display name keeps at most this many trailing path components.
MAX_NAME_PARTS = 8


def display_filename(filename: str) -> str:
    """The name shown to users: a clean relative path, printable, at most 255 characters.

    Folders are kept (``models/staging/schema.yml``) because a folder ingest has many files of the
    same name, and a same-named file replaces its document; ``..``, ``.``, roots and control
    characters are dropped, so the name never points outside anything.
    """
    parts = []
    for part in (filename or "").replace("\\", "/").split("/"):
        part = "".join(ch for ch in part if unicodedata.category(ch)[0] != "C").strip()
        if part and part not in (".", "..") and not part.endswith(":"):
            parts.append(part)
    name = "/".join(parts[-MAX_NAME_PARTS:])
    return name[-255:].lstrip("/") or "document"


def storage_name(display_name: str) -> str:
    """The object key part for a file: a safe name that keeps the extension, at most
    ``MAX_PART_LENGTH`` UTF-8 bytes (file systems count bytes: 90 Chinese characters were a
    270-byte name, "File name too long", and the upload a 503)."""
    suffix = PurePosixPath(display_name).suffix.lower()
    stem = PurePosixPath(display_name).stem.strip(". ") or "document"
    if stem in (".", "..") or "%" in stem:
        stem = "document"
    if len(suffix.encode()) >= MAX_PART_LENGTH // 2:  # an "extension" that is most of the name
        suffix = ""
    room = MAX_PART_LENGTH - len(suffix.encode()) - 1
    stem = stem.encode()[:room].decode(errors="ignore").rstrip(". ") or "document"
    return stem + suffix


class _CappedReader:
    """A binary stream read under a size cap, keeping its first ``HEAD_BYTES`` for detection."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._head = bytearray()
        self.size = 0

    @property
    def head(self) -> bytes:
        return bytes(self._head)

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(READ_CHUNK if size is None or size < 0 else size)
        self.size += len(data)
        if self.size > self._limit:
            raise PayloadTooLargeError(
                f"the file is larger than the {self._limit}-byte limit", limit=self._limit
            )
        if len(self._head) < HEAD_BYTES:
            self._head += data[: HEAD_BYTES - len(self._head)]
        return data


def text_sample(head: bytes, *, whole: bool) -> bytes:
    """The head, cut so a multi-byte character split at its end does not make text look
    binary (UTF-8, UTF-16 with BOM, GB18030)."""
    if whole:
        return head
    encodings = ("utf-16",) if head.startswith((b"\xff\xfe", b"\xfe\xff")) else ("utf-8", "gb18030")
    for encoding in encodings:
        for cut in range(4):
            part = head[: len(head) - cut]
            try:
                part.decode(encoding)
            except UnicodeDecodeError:
                continue
            return part
    return head


def _cleanup_left_s(task: TaskRecord) -> int:
    """Seconds (rounded up) a cancelled attempt's lease still covers its cleanup; 0: none.

    A cancel leaves a running attempt its lease until it has deleted what it wrote
    (``TaskRepository.cancel``); a new attempt started meanwhile would lose its vectors to that
    cleanup. A lease that ran out means the worker died: nothing will clean up, so retry away.
    """
    if task.status != "failed" or task.lease_expires_at is None:
        return 0
    left = (task.lease_expires_at - utcnow()).total_seconds()
    return math.ceil(left) if left > 0 else 0
