"""The ingest pipeline: one task, end to end, in the fixed order of DESIGN §5.

route -> parse (+PARSE) -> structure tree -> chunk (+CHUNK) -> classify -> embed -> upsert ->
catalog; the visual extract runs beside the text's classify, embed and upsert, and its visuals are
classified, embedded and upserted after them. A failure at any step deletes every vector this
document has (the attempt's writes; ids are deterministic, so earlier attempts' rows are the same
rows), marks the document and task failed with a readable reason, and leaves the KB catalog
unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

from eagle_rag.db.records import DocumentRecord, KnowledgeBaseRecord
from eagle_rag.db.repositories.ingest_runs import Attempt, AttemptSupersededError
from eagle_rag.db.tables import utcnow
from eagle_rag.engines.base import DOC_PARSING, EngineDocument, KnowledgeEngine
from eagle_rag.errors import InvalidInputError, NotFoundError, PluginError, describe
from eagle_rag.ingest.cancel import (
    CancelWatch,
    IngestCancelledError,
    attempt_status,
    stopped_by_cancel,
)
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.ingest.detect import SOURCE_TYPES
from eagle_rag.ingest.knowhere.chunker import ChunkingOptions
from eagle_rag.ingest.knowhere.tree import StructureTree
from eagle_rag.ingest.leases import process_owner, transient
from eagle_rag.ingest.pixelrag.visuals import visuals_prefix
from eagle_rag.ingest.progress import PAGE_CALLBACK, ProgressReporter
from eagle_rag.ingest.summaries import write_summaries
from eagle_rag.ingest.years import document_year
from eagle_rag.plugins import hooks
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.hooks import HookSpec
from eagle_rag.plugins.ingest_orchestrator import IngestOrchestrator, IngestOutcome, PlannedWrite
from eagle_rag.plugins.payloads import DocumentSource, ParseResult, TextChunk, VisualChunk
from eagle_rag.tracing import annotate, traced

if TYPE_CHECKING:
    from eagle_rag.engines.service import KnowledgeBaseService
    from eagle_rag.models.chat import ChatModel
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Ingested:
    """What a successful run produced, for the catalog."""

    chunks: int
    collections: tuple[str, ...]
    structure: dict[str, Any]
    pages: int | None
    kb_collections: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PipelineResult:
    """How one run of a task ended (``status``: completed, failed, queued again, skipped)."""

    document_id: str
    status: str
    chunks: int = 0
    error: str | None = None
    stopped: bool = False  # a cancel, a retry or a take-over stopped it (status: failed)

    @property
    def outcome(self) -> str:
        """The ``outcome`` of the ``ingest`` phase metric: ok, error, skipped or stopped (a
        failed attempt that will be retried is an error too)."""
        if self.stopped:
            return "stopped"
        return {"completed": "ok", "skipped": "skipped"}.get(self.status, "error")


class IngestPipeline:
    """Runs queued ingest tasks against the application's stores and hook bus."""

    def __init__(self, app: Runtime, knowledge: KnowledgeBaseService, chat: ChatModel) -> None:
        self._app = app
        self._knowledge = knowledge
        self.chat = chat  # public, like AnswerEngine.model: tests point both at one model
        self._bus = app.bus
        self._orchestrator = IngestOrchestrator(app.bus, app.encoders)
        self.tracing = app.bus.tracing

    @traced("ingest", ingest=True, outcome=attrgetter("outcome"))
    async def run(self, task_id: str, owner: str | None = None) -> PipelineResult:
        """Claim the task under a lease for ``owner`` and run it to a terminal state (or back to
        ``queued`` for another attempt after a transient failure)."""
        repos, config = self._app.repositories, self._app.settings.ingest
        owner = owner or process_owner()
        try:
            # Every catalog transaction off the event loop: a write waiting for SQLite's lock
            # there would hold up every request the server is answering meanwhile.
            attempt = await asyncio.to_thread(
                repos.ingest_runs.start,
                task_id,
                owner=owner,
                lease_s=config.lease_s,
                max_attempts=config.max_attempts,
            )
        except NotFoundError:  # deleted with its document while it waited in the queue
            logger.info("ingest task %s no longer exists", task_id)
            return PipelineResult("", "failed", error="task deleted")
        if attempt.outcome == "exhausted":  # out of attempts: failed by start() just now
            await self._undo_dead_attempts(attempt.document_id)
            return PipelineResult(attempt.document_id, "failed", error=attempt.reason)
        if attempt.outcome != "claimed":  # finished, or held elsewhere
            return PipelineResult(attempt.document_id, "skipped", error=attempt.reason)
        document = attempt.document
        if document is None or attempt.kb is None:
            missing = "document" if document is None else "knowledge base"
            await asyncio.to_thread(
                repos.ingest_runs.fail, task_id, None, f"the {missing} was deleted"
            )
            return PipelineResult(attempt.document_id, "failed", error=f"{missing} deleted")
        progress = ProgressReporter(
            lambda phase, current, total: repos.tasks.progress(
                task_id, phase=phase, current=current, total=total
            ),
            config.progress_interval_s,
            check=CancelWatch(
                lambda: attempt_status(repos.tasks.get(task_id), owner, attempt.attempts),
                config.progress_interval_s,
            ),
        )
        try:
            ingested = await self._ingest(
                task_id, document, attempt.kb, progress, first_attempt=attempt.attempts == 1
            )
            await asyncio.to_thread(progress.check)  # a cancel during the last batch's write
            held = (owner, attempt.attempts)
            return await asyncio.to_thread(self._succeed, task_id, document, ingested, held)
        except Exception as exc:  # the success step included: its writes are undone too
            if stopped_by_cancel(exc):
                return await self._stopped(task_id, document, exc, (owner, attempt.attempts))
            return await self._fail(task_id, document, exc, attempt)

    async def _ingest(
        self,
        task_id: str,
        document: DocumentRecord,
        kb: KnowledgeBaseRecord,
        progress: ProgressReporter,
        *,
        first_attempt: bool,
    ) -> _Ingested:
        ctx = HookContext(
            plugin_namespace=self._app.namespace,
            kb_names=(document.kb_name,),
            document_id=document.id,
            extra={PAGE_CALLBACK: progress.pages("parse")},  # a long scan's pages, as progress
        )
        annotate(task=task_id, document=document.id, kb=document.kb_name)
        data = await asyncio.to_thread(_read_all, self._app.objects, document.object_key)
        source = document_source(document)
        pipeline = await self._route(source, ctx)
        engine = self._knowledge.engine(kb.engine)
        if isinstance(engine, KnowledgeEngine):  # bound to another engine: it does the work
            return await self._ingest_with_engine(source, data, kb, engine, pipeline, ctx, progress)
        progress("parse", 0, 1)
        parsed = await self._parse(source, data, pipeline, ctx)
        parsed = await self._bus.invoke_transform(hooks.parse, parsed, ctx=ctx, source=source)
        progress("chunk", 0, 1)
        tree, chunks = await self._chunk(source, parsed, kb, pipeline, ctx)
        chunks = await self._model_summaries(task_id, chunks, tree.text, progress)
        enriched = await self._bus.invoke_transform(
            hooks.chunk, chunks, ctx=ctx, source=source, check=_check_chunk_hook
        )
        enriched = with_document_fields(enriched, document, source.mime_type, parsed.metadata)
        outcome = await self._write(source, data, parsed, enriched, ctx, progress, first_attempt)
        if not outcome.count:  # an empty DOCX, a blank slide, `{}`: as a blank text file fails
            raise InvalidInputError(
                "nothing to index: the document has no text and no picture that could be read",
                filename=document.filename,
            )
        pages = parsed.metadata.get("pages")
        structure = {**tree.to_dict(), "pipeline": pipeline, "mime_type": source.mime_type}
        if "ocr_pages" in parsed.metadata:  # the per-page route: pages read from their pixels
            structure["ocr_pages"] = list(parsed.metadata["ocr_pages"])
        return _Ingested(
            outcome.count,
            outcome.collections,
            structure,
            int(pages) if pages else None,
            kb.collections_used,
        )

    # --- steps: each dispatches its hook; Core's subscribers do the work unless a plugin does --

    async def _route(self, source: DocumentSource, ctx: HookContext) -> str:
        """INGEST_ROUTE_SELECTORS names the pipeline whose subscribers parse and chunk."""
        route = hooks.ingest_route_selectors
        pipeline = await self._bus.invoke_first(route, ctx=ctx, source=source)
        what = f"chose an ingest pipeline for {source.filename!r}"
        return _answered(pipeline or None, route, what, document_id=source.document_id)

    async def _parse(
        self, source: DocumentSource, data: bytes, pipeline: str, ctx: HookContext
    ) -> ParseResult:
        hook = hooks.parse_document
        parsed = await self._bus.invoke_first(
            hook, ctx=ctx, source=source, data=data, pipeline=pipeline
        )
        what = f"parses {source.mime_type} for the {pipeline!r} pipeline"
        return _answered(parsed, hook, what, pipeline=pipeline, document_id=source.document_id)

    async def _chunk(
        self,
        source: DocumentSource,
        parsed: ParseResult,
        kb: KnowledgeBaseRecord,
        pipeline: str,
        ctx: HookContext,
    ) -> tuple[StructureTree, tuple[TextChunk, ...]]:
        """BUILD_STRUCTURE, then CHUNK_DOCUMENT with the KB's chunking options."""
        bus, build, cut = self._bus, hooks.build_structure, hooks.chunk_document
        found = await bus.invoke_first(
            build, ctx=ctx, parsed=parsed, source=source, pipeline=pipeline
        )
        tree = _answered(found, build, f"built a structure for the {pipeline!r} pipeline")
        options = _chunking(kb.creation_settings, self._app.settings.ingest)
        chunks = await bus.invoke_first(
            cut, ctx=ctx, tree=tree, source=source, options=options, pipeline=pipeline
        )
        what = f"chunked the document for the {pipeline!r} pipeline"
        return tree, tuple(_answered(chunks, cut, what, pipeline=pipeline))

    async def _write(
        self,
        source: DocumentSource,
        data: bytes,
        parsed: ParseResult,
        chunks: tuple[TextChunk, ...],
        ctx: HookContext,
        progress: ProgressReporter,
        first_attempt: bool,
    ) -> IngestOutcome:
        """Visual extraction beside the text's classify, embed and upsert; then the visuals'.

        Extraction is one core's work (PDFium, the table finder, one ONNX thread) and the text
        embedder spreads over every core: one after the other, a core idled through the whole
        extraction (a report's charts cost half again its text-only ingest)."""
        progress("visuals", 0, 1)
        stop = threading.Event()
        pages = progress.pages("visuals")

        def on_page(done: int, total: int) -> None:
            # The extraction reports its pages as "visuals" progress (a long scan's second
            # pass) and so notices a cancel between pages, or that the text side failed.
            if stop.is_set():
                raise IngestCancelledError("the document's text could not be written")
            pages(done, total)

        paged = replace(ctx, extra={**ctx.extra, PAGE_CALLBACK: on_page})
        extraction = asyncio.ensure_future(
            self._bus.invoke_first(
                hooks.ingest_visual_extract,
                ctx=paged,
                source=source,
                parsed=parsed,
                data=data,
                chunks=chunks,
            )
        )
        # Let the extraction reach its thread (and reserve its core) before the first batch.
        await asyncio.sleep(0)
        try:
            planned = await self._orchestrator.plan(chunks, (), ctx)
            if not first_attempt:
                # Replace, not merge: rows an earlier attempt left (a crashed worker) go first.
                await asyncio.to_thread(self._app.vectors.delete_documents, [source.document_id])
            text = await self._execute(planned, ctx, progress)
            visuals = await extraction
        except BaseException:
            stop.set()
            # Its pictures are stored before the caller's rollback deletes what this attempt wrote.
            await asyncio.wait({extraction})
            if not extraction.cancelled():
                extraction.exception()  # seen: the text side's error is the one to report
            raise
        planned = await self._orchestrator.plan((), visuals or (), ctx)
        return _both(text, await self._execute(planned, ctx, progress, before=text.count))

    async def _execute(
        self,
        planned: list[PlannedWrite],
        ctx: HookContext,
        progress: ProgressReporter,
        *,
        before: int = 0,
    ) -> IngestOutcome:
        """Embed and upsert ``planned``, reported as "embed" progress after ``before`` rows."""
        return await self._orchestrator.execute(
            planned,
            ctx,
            batch_size=self._app.settings.ingest.embed_batch,
            on_progress=lambda done, total: progress("embed", before + done, before + total),
            load_image=self._stored_image,
        )

    def _stored_image(self, visual: VisualChunk) -> bytes:
        """A visual's picture, for an encoder that embeds images (read from the object store)."""
        key = str(visual.metadata.get("object_key") or "")
        return _read_all(self._app.objects, key)

    async def _ingest_with_engine(
        self,
        source: DocumentSource,
        data: bytes,
        kb: KnowledgeBaseRecord,
        engine: KnowledgeEngine,
        pipeline: str,
        ctx: HookContext,
        progress: ProgressReporter,
    ) -> _Ingested:
        """A KB bound to another engine: hand it the file (and our parse if it cannot parse)."""
        parsed = None
        if DOC_PARSING not in engine.capabilities:
            progress("parse", 0, 1)
            parsed = await self._parse(source, data, pipeline, ctx)
        progress(f"engine:{engine.name}", 0, 1)
        result = await engine.ingest(
            EngineDocument(
                source.document_id,
                source.kb_name,
                source.filename,
                source.mime_type,
                data,
                dict(kb.creation_settings),
                parsed,
            )
        )
        if result.remote_id:
            extra = {**source.metadata, "remote_document_id": result.remote_id}
            documents = self._app.repositories.documents
            await asyncio.to_thread(documents.set_fields, source.document_id, extra=extra)
        structure = {"pipeline": f"engine:{engine.name}", "mime_type": source.mime_type}
        return _Ingested(result.chunks, (), structure, None, kb.collections_used)

    async def _model_summaries(
        self, task_id: str, chunks: tuple[TextChunk, ...], text: str, progress: ProgressReporter
    ) -> tuple[TextChunk, ...]:
        """Let the chat model rewrite section summaries (``ingest.section_summaries``)."""
        config = self._app.settings.ingest
        model = self.chat
        wanted = config.section_summaries == "model" or (
            config.section_summaries == "auto" and model.name != "extractive"
        )
        if not wanted or not any(c.type == "section_summary" for c in chunks):
            return chunks
        progress("summarize", 0, 1)
        rewritten, written, failed = await write_summaries(
            chunks, text, model, limit=config.max_model_summaries
        )
        note = f"section summaries by {model.name}: {written} written"
        if failed:
            note += f", {failed} kept extractive after a model failure"
        await asyncio.to_thread(self._app.repositories.tasks.append_log, task_id, note)
        return rewritten

    def _succeed(
        self,
        task_id: str,
        document: DocumentRecord,
        done: _Ingested,
        held: tuple[str, int],
    ) -> PipelineResult:
        """Complete the task if this attempt (``held``: owner, attempt number) still holds it."""
        repos = self._app.repositories
        chunks, collections = done.chunks, done.collections
        note = f"completed: {chunks} vectors in {', '.join(collections) or 'no collection'}"
        try:
            older_versions = repos.ingest_runs.complete(
                task_id,
                document,
                chunks=chunks,
                collections=collections,
                kb_collections=done.kb_collections,
                structure=done.structure,
                pages=done.pages,
                pipeline=done.structure["pipeline"],
                mime_type=done.structure["mime_type"],
                note=note,
                owner=held[0],
                attempt=held[1],
            )
        except AttemptSupersededError as exc:
            # Cancelled within the last check's interval (a throttled check never read it), or
            # retried: the run's failure path undoes its writes and leaves the row as it is.
            raise IngestCancelledError(f"the ingest was stopped: {exc.message}") from exc
        except NotFoundError:
            # Deleted while it ran: what this run wrote (vectors, pictures) must not outlive the
            # document; the deletion removed what it found, not what was written after it.
            self._app.vectors.delete_documents([document.id])
            ns = self._app.namespace
            self._app.objects.delete_prefix(visuals_prefix(ns, document.kb_name, document.id))
            with contextlib.suppress(NotFoundError):  # its task went with it
                repos.tasks.finish(task_id, status="failed", error="the document was deleted")
            return PipelineResult(document.id, "failed", error="document deleted")
        # A changed file uploaded under the same name replaces the older document's chunks.
        # This one is committed now: a failure here must not undo it. A crash here leaves both
        # completed: the next start (durability.remove_replaced) or doctor --repair removes
        # the older ones.
        for older_id in older_versions:
            try:
                remove_document(self._app, older_id)
            except NotFoundError:  # removed meanwhile (durability.remove_replaced, a delete)
                continue
            except Exception:
                logger.exception("could not remove %s, replaced by %s", older_id, document.id)
        self._app.stage_metrics.ingested(chunks, document.size)
        return PipelineResult(document.id, "completed", chunks)

    async def _fail(
        self, task_id: str, document: DocumentRecord, exc: Exception, attempt: Attempt
    ) -> PipelineResult:
        """Undo the attempt's vectors; then fail the task, or queue it again after a transient
        failure while attempts are left. If even that cannot be written (the database is
        down), the lease runs out and recovery re-queues the task."""
        reason = _reason(exc)
        logger.warning("ingest of %s failed: %s", document.id, reason)
        runs = self._app.repositories.ingest_runs
        reason += await self._undo(document)
        again = transient(exc) and attempt.attempts < attempt.max_attempts
        try:
            if again:
                delay = self._app.settings.ingest.retry_backoff_s * 2 ** (attempt.attempts - 1)
                runs.requeue(
                    task_id,
                    note=f"attempt {attempt.attempts} failed: {reason}; retrying in {delay:g} s",
                    lease_owner=None,
                    lease_until=utcnow() + timedelta(seconds=delay),
                    error=reason,
                )
                return PipelineResult(document.id, "queued", error=reason)
            if attempt.attempts > 1:
                reason = f"failed after {attempt.attempts} attempts: {reason}"
            runs.fail(task_id, document.id, reason)
        except NotFoundError:  # deleted meanwhile: nothing to mark
            pass
        except Exception:
            logger.exception("could not record the failure of task %s", task_id)
        return PipelineResult(document.id, "failed", error=reason)

    async def _undo_dead_attempts(self, document_id: str) -> None:
        """A task out of attempts whose attempts died with their process (each crash took
        its worker): no worker of theirs will delete what they wrote, and a failed document's
        rows would stay evidence until ``doctor --consistency --repair``. No attempt holds the
        task any more (start() just failed it), so its rows are deleted here."""
        document = await asyncio.to_thread(self._app.repositories.documents.find, document_id)
        if document is None:
            return
        failed_cleanup = await self._undo(document)
        if failed_cleanup:
            logger.warning("the rows of failed document %s stay:%s", document_id, failed_cleanup)

    async def _undo(self, document: DocumentRecord) -> str:
        """Delete every vector and stored visual of the document; '' or what failed."""
        try:
            await asyncio.to_thread(self._app.vectors.delete_documents, [document.id])
            prefix = visuals_prefix(self._app.namespace, document.kb_name, document.id)
            await asyncio.to_thread(self._app.objects.delete_prefix, prefix)
        except Exception as cleanup:  # report the original failure; note the cleanup one
            return f" (cleanup also failed: {_reason(cleanup)})"
        return ""

    async def _stopped(
        self, task_id: str, document: DocumentRecord, exc: Exception, held: tuple[str, int]
    ) -> PipelineResult:
        """A cancel, a retry or a take-over stopped this attempt (``held``: owner, attempt).

        The row is no longer this attempt's to write: a cancel already wrote its reason (the
        API answered with it), or another attempt owns the task. So only the log is written,
        and the writes are undone only while no newer attempt holds the document: deleting by
        document id would take that attempt's vectors too (ids are deterministic: both write
        the same rows). A newer attempt replaces the document's rows itself (a later attempt
        deletes them before it writes), so leaving them to it loses nothing.
        """
        reason = _reason(exc)
        logger.warning("ingest of %s stopped: %s", document.id, reason)
        owner, number = held
        task = await asyncio.to_thread(self._app.repositories.tasks.find, task_id)
        newer = task is not None and (task.attempts != number or task.status != "failed")
        if newer:
            note = f"attempt {number} stopped: {reason}; a newer attempt holds the document"
        else:  # cancelled (or deleted): nothing else will remove what this attempt wrote
            note = f"attempt {number} stopped: {reason}{await self._undo(document)}"
            note += "; its writes were undone"
        try:
            await asyncio.to_thread(
                self._app.repositories.tasks.end_stopped,
                task_id,
                owner=owner,
                attempt=number,
                note=note,
            )
        except NotFoundError:  # deleted meanwhile
            pass
        except Exception:  # the lease then runs out by itself, and a retry waits until it has
            logger.exception("could not note that task %s stopped", task_id)
        return PipelineResult(document.id, "failed", error=reason, stopped=True)


def _answered(value: T | None, hook: HookSpec[Any], what: str, **fields: Any) -> T:
    """A FIRST hook's answer, or a PluginError saying no plugin gave one."""
    if value is None:
        raise PluginError(f"no plugin {what}", hook=hook.name, **fields)
    return value


def _chunking(creation_settings: Any, defaults: Any) -> ChunkingOptions:
    """A KB's creation_settings override the instance's chunking defaults."""
    return ChunkingOptions(
        chunk_size=int(creation_settings.get("chunk_size", defaults.chunk_size)),
        chunk_overlap=int(creation_settings.get("chunk_overlap", defaults.chunk_overlap)),
    )


def document_source(document: DocumentRecord) -> DocumentSource:
    """The document as hooks see it (its type was detected from the content on submission)."""
    return DocumentSource(
        document.id,
        document.kb_name,
        document.filename,
        document.mime_type,
        document.size,
        document.sha256,
        document.object_key,
        dict(document.extra),
    )


def _read_all(objects: Any, key: str | None) -> bytes:
    if not key:
        raise NotFoundError("the document has no stored original")
    return b"".join(objects.open(key))


# Keys a chunk's own metadata owns; a document's custom metadata never overrides them.
_DOCUMENT_FIELDS = ("source_type", "filename", "year", "source_url")


def with_document_fields(
    chunks: tuple[TextChunk, ...],
    document: DocumentRecord,
    mime: str,
    parsed_metadata: Mapping[str, Any],
) -> tuple[TextChunk, ...]:
    """Copy the document-level fields queries filter on into every chunk's metadata.

    Milvus filters rows, not catalog entries, so the document's format, name, year and custom
    metadata travel with each chunk: ``source_type``, ``filename``, ``year`` (from the upload's
    metadata, else the parser's), ``source_url`` and every scalar custom key.
    """
    fields: dict[str, Any] = {
        k: v
        for k, v in document.extra.items()
        if k not in _DOCUMENT_FIELDS and isinstance(v, str | int | float | bool)
    }
    fields["source_type"] = SOURCE_TYPES.get(mime, mime)
    fields["filename"] = document.filename
    year = document_year(document.extra.get("year", parsed_metadata.get("year")))
    if year is not None:
        fields["year"] = year
    if document.source_url:
        fields["source_url"] = document.source_url
    return tuple(replace(c, metadata={**fields, **c.metadata}) for c in chunks)


def _both(first: IngestOutcome, second: IngestOutcome) -> IngestOutcome:
    """What two writes of one document wrote, per collection."""
    collections = {*first.written, *second.written}
    return IngestOutcome(
        {c: first.written.get(c, ()) + second.written.get(c, ()) for c in collections}
    )


def _check_chunk_hook(before: tuple[TextChunk, ...], after: tuple[TextChunk, ...]) -> None:
    """CHUNK may enrich metadata, never re-cut: ids, paths, text and order must survive.

    Run by the bus on each subscriber's result, so the error names the plugin that re-cut."""
    same = len(before) == len(after) and all(
        (a.chunk_id, a.path, a.text) == (b.chunk_id, b.path, b.text)
        for a, b in zip(before, after, strict=True)
    )
    if not same:
        raise PluginError(
            "it changed chunk ids, paths, text or order; a CHUNK subscriber may only enrich "
            "metadata",
            hook="CHUNK",
        )


def _reason(exc: Exception) -> str:
    return describe(exc)
