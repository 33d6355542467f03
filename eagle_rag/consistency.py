"""The consistency check behind ``eagle-rag doctor --consistency [--repair]``.

Three stores hold one document: its catalog row (metadata database), its vectors (every Milvus
collection of the namespace, plugin collections included) and its original (object store). A
crash between their writes, or a failed clean-up, can leave them out of step. The check compares
the three for the instance namespace and reports:

- ``orphan_vectors``: rows of a document the catalog does not know;
- ``failed_with_vectors``: a failed document whose attempt's vectors were not undone;
- ``orphan_object``: a stored original no document points at;
- ``missing_vectors``: a completed document with fewer vectors than its catalog count (or none);
- ``extra_vectors``: a completed document with more (rows an older chunking left behind);
- ``missing_object``: a document whose original is gone (it can be searched, not rebuilt);
- ``replaced_version``: a completed document that a completed upload of the same filename in
  the same KB replaced, still here (a crash came between that completion and its removal).

A plugin's view collection (``collection_views`` in its manifest) holds second copies of base
rows, so it is left out of the missing/extra counts; its rows still count as orphans or as a
failed attempt's leftovers.

``repair`` removes orphans, a failed document's vectors and a replaced version, and sends a
document with missing or extra vectors through the pipeline again (a new task, picked up by
whichever queue runs next); one whose original is also gone is removed, since nothing could
rebuild it. Documents still in flight (pending, processing) are left alone: their vectors are
being written.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from eagle_rag.db.records import DocumentRecord
from eagle_rag.db.tables import utcnow
from eagle_rag.errors import NotFoundError
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.storage.keys import validate_prefix

if TYPE_CHECKING:
    from eagle_rag.runtime import Runtime

DOCUMENT_ID = re.compile(r"^[0-9a-f]{32}$")
SETTLED = ("completed", "failed")


@dataclass(frozen=True, slots=True)
class Finding:
    """One inconsistency, and what ``repair`` did about it (empty: nothing)."""

    kind: str
    detail: str
    document_id: str | None = None
    collection: str | None = None
    key: str | None = None
    repaired: str = ""


@dataclass(frozen=True, slots=True)
class ConsistencyReport:
    namespace: str
    documents: int
    vectors: dict[str, int]  # rows per collection
    objects: int
    findings: tuple[Finding, ...] = field(default=())
    repair: bool = False

    @property
    def clean(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        body["clean"] = self.clean
        return body


def check(app: Runtime, *, repair: bool = False) -> ConsistencyReport:
    """Compare catalog, vectors and objects of ``app``'s namespace (and repair, if asked)."""
    documents = {d.id: d for d in app.repositories.documents.inventory()}
    collections = app.vectors.collections()
    counts = {name: app.vectors.document_counts(name) for name in collections}
    keys = app.objects.list(validate_prefix(app.namespace))
    views = set(app.plugins.collection_views())
    findings = [
        *_vector_findings(documents, counts, views),
        *_object_findings(documents, keys, app.objects),
        *_replaced_findings(app, documents),
    ]
    if repair:
        findings = [_repaired(app, f, documents) for f in findings]
    return ConsistencyReport(
        app.namespace,
        len(documents),
        {name: sum(per.values()) for name, per in counts.items()},
        len(keys),
        tuple(findings),
        repair,
    )


def _vector_findings(
    documents: dict[str, DocumentRecord], counts: dict[str, dict[str, int]], views: set[str]
) -> list[Finding]:
    findings: list[Finding] = []
    totals: dict[str, int] = {}
    for collection, per_document in sorted(counts.items()):
        for document_id, rows in sorted(per_document.items()):
            if collection not in views:  # a view's rows are copies: counted in their base
                totals[document_id] = totals.get(document_id, 0) + rows
            document = documents.get(document_id)
            if document is None:
                detail = f"{rows} rows of a document the catalog does not know"
                findings.append(Finding("orphan_vectors", detail, document_id, collection))
            elif document.status == "failed":
                detail = f"{rows} rows left by a failed attempt"
                findings.append(Finding("failed_with_vectors", detail, document_id, collection))
    for document in documents.values():
        if document.status != "completed":
            continue
        stored = totals.get(document.id, 0)
        if stored < document.chunk_count:
            detail = f"{stored} vectors stored, {document.chunk_count} recorded"
            findings.append(Finding("missing_vectors", detail, document.id))
        elif stored > document.chunk_count:
            detail = f"{stored} vectors stored, {document.chunk_count} recorded"
            findings.append(Finding("extra_vectors", detail, document.id))
    return findings


def _replaced_findings(app: Runtime, documents: dict[str, DocumentRecord]) -> list[Finding]:
    """Older versions of a re-uploaded file still completed beside the newer one (a crash
    between the newer one's completion and their removal)."""
    findings = []
    for document_id in app.repositories.ingest_runs.replaced_versions():
        document = documents.get(document_id)
        if document is not None:
            detail = f"{document.filename!r} was uploaded again and that version completed"
            findings.append(Finding("replaced_version", detail, document_id))
    return findings


def _object_findings(
    documents: dict[str, DocumentRecord], keys: list[str], objects: Any
) -> list[Finding]:
    findings = []
    referenced = {d.object_key for d in documents.values() if d.object_key}
    for key in keys:
        parts = key.split("/")
        owner = parts[2] if len(parts) >= 4 and DOCUMENT_ID.match(parts[2]) else None
        if owner is None:
            # Every object Core and the plugins write sits under a document id: this one was
            # put here by hand or by another program, and would be exported and migrated.
            findings.append(Finding("stray_object", "not under any document id", key=key))
            continue
        if key in referenced:
            continue
        if owner not in documents:
            findings.append(Finding("orphan_object", "no document points at it", owner, key=key))
    present = set(keys)
    for document in documents.values():
        stored_key = document.object_key
        if stored_key and stored_key not in present and not objects.exists(stored_key):
            detail = "the stored original is gone"
            findings.append(Finding("missing_object", detail, document.id, key=stored_key))
    return findings


def _repaired(app: Runtime, finding: Finding, documents: dict[str, DocumentRecord]) -> Finding:
    kind, document_id = finding.kind, finding.document_id or ""
    if kind in ("orphan_vectors", "failed_with_vectors"):
        app.vectors.delete_documents([document_id])
        return _done(finding, "vectors deleted")
    if kind == "orphan_object" and finding.key:
        app.objects.delete(finding.key)
        return _done(finding, "object deleted")
    if kind in ("missing_vectors", "extra_vectors"):
        return _done(finding, _rebuild(app, documents[document_id]))
    if kind == "replaced_version":
        # Checked again: a repair before it (the newer version's missing vectors) may have sent
        # the newer one through the pipeline again, and the older one must stay until it is.
        if not app.repositories.ingest_runs.replaced_versions(document_id):
            return finding
        try:
            remove_document(app, document_id)
        except NotFoundError:
            return _done(finding, "document deleted meanwhile")
        return _done(finding, "document removed (the newer version stays)")
    return finding  # missing_object: nothing can bring the original back; stray_object: not ours


def _rebuild(app: Runtime, document: DocumentRecord) -> str:
    if not document.object_key or not app.objects.exists(document.object_key):
        remove_document(app, document.id)
        return "document removed (its original is gone too)"
    repos = app.repositories
    app.vectors.delete_documents([document.id])
    try:
        repos.documents.set_fields(document.id, status="pending", error=None)
        # An already-expired lease: the next queue to look (in-process or a Celery worker's
        # recovery) takes the task over and runs it.
        task = repos.tasks.create(document_id=document.id, lease_until=utcnow() - _SECOND)
    except NotFoundError:
        return "document deleted meanwhile"
    return f"re-ingest queued as task {task.id}"


_SECOND = timedelta(seconds=1)


def _done(finding: Finding, what: str) -> Finding:
    return Finding(
        finding.kind, finding.detail, finding.document_id, finding.collection, finding.key, what
    )
