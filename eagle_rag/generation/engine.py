"""The answer engine: recall → rerank → keep top_n → prompt → model → answer, sources and steps.

``stream`` yields the events of DESIGN §7 in order — ``session``, ``step`` (route, recall,
attach_parse, rerank), ``sources``, ``token``*, ``done`` — or ``error`` at any point. It never
raises: a failure becomes an ``error`` event with the error's code. ``answer`` runs the same
stream and returns the ``done`` payload (or the error). Sessions are multi-turn: the last
``history_turns`` messages go to the model, and both the question and the answer are stored with
the sources and steps.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from eagle_rag.errors import EagleError, InvalidInputError, error_body
from eagle_rag.generation.citations import check_citations, one_per_bracket
from eagle_rag.generation.follow_up import standalone_query
from eagle_rag.generation.images import answer_images, one_numbering, picture_url
from eagle_rag.generation.prompt import (
    Attachment,
    ImageCaption,
    Language,
    Reference,
    Turn,
    build_messages,
    detect_language,
)
from eagle_rag.generation.text_only import TextOnlyModels
from eagle_rag.models.chat import ChatModel, GenerationInput
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.retrieval.pack import ContextPack, Passage
from eagle_rag.retrieval.wire import is_image, split_sources

if TYPE_CHECKING:
    from eagle_rag.retrieval.service import RetrievalService
    from eagle_rag.runtime import Runtime

logger = logging.getLogger(__name__)

Event = tuple[str, dict[str, Any]]
MAX_ATTACHMENTS = 10
# The search's steps that decide where to search: the answer's route step is their time.
ROUTING_STEPS = frozenset({"scope", "query_assemble", "classify_query"})
# How many earlier questions a follow-up's chain may reach back: further than the history the
# model sees (``history_turns`` messages), so a chain keeps the question that started it.
CHAIN_QUESTIONS = 30


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """``POST /query``: a question with its retrieval options (``recall``, the same
    QueryRequest a search takes), and what the answer should use."""

    recall: QueryRequest
    top_n: int | None = None
    language: Language | None = None
    session_id: str | None = None
    attachments: tuple[Attachment, ...] = ()

    @property
    def query(self) -> str:
        return self.recall.text


@dataclass(frozen=True, slots=True)
class _Turn:
    """The session a question lands in: whether this question opened it, the history for the
    model, the earlier questions (a follow-up's chain) and the KBs the turn searches."""

    session_id: str
    opened: bool
    history: list[Turn]
    earlier: list[str]
    kb_names: tuple[str, ...]


class AnswerEngine:
    """Grounded, cited answers over the retrieval service; one per app."""

    def __init__(self, app: Runtime, retrieval: RetrievalService, model: ChatModel) -> None:
        self._app = app
        self._retriever = retrieval
        self.model = model
        self._config = app.settings.generation
        self._text_only = TextOnlyModels()  # the models that refused images, remembered

    async def answer(
        self, request: AnswerRequest, *, allowed_kbs: Iterable[str] | None = None
    ) -> dict[str, Any]:
        """The ``done`` payload, or ``{"error": {code, message}, ...}`` with what was known."""
        result: dict[str, Any] = {}
        async for name, data in self.stream(request, allowed_kbs=allowed_kbs):
            if name == "done":
                return data
            if name == "session":
                result["session_id"] = data["session_id"]
            if name == "error":
                result["error"] = data
        if request.session_id is None:  # the session this question opened is gone with it
            result.pop("session_id", None)
        return result

    async def stream(
        self, request: AnswerRequest, *, allowed_kbs: Iterable[str] | None = None
    ) -> AsyncGenerator[Event, None]:
        try:
            async with aclosing(self._events(request, allowed_kbs)) as events:
                async for event in events:
                    yield event
        except EagleError as exc:
            logger.info("answer failed: %s", exc)
            yield "error", error_body(exc)
        except Exception as exc:  # never raise to the surface: the stream ends with an error
            logger.exception("answer crashed")
            yield "error", error_body(exc)

    async def _events(
        self, request: AnswerRequest, allowed_kbs: Iterable[str] | None
    ) -> AsyncGenerator[Event, None]:
        """The answer's events; a turn that ends without one (an error, a client gone mid-stream)
        leaves no session it opened: an empty one was listed by /sessions."""
        allowed = None if allowed_kbs is None else tuple(sorted(allowed_kbs))
        recall = await asyncio.to_thread(self.validate, request, allowed_kbs=allowed)
        turn = await asyncio.to_thread(self._open_turn, request, allowed)
        answered = False
        try:
            async with aclosing(self._answer(request, recall, turn, allowed_kbs)) as events:
                async for name, data in events:
                    answered = name == "done"  # stored by then
                    yield name, data
        finally:
            if turn.opened and not answered:
                self._forget(turn.session_id)

    async def _answer(
        self,
        request: AnswerRequest,
        recall: QueryRequest,
        turn: _Turn,
        allowed_kbs: Iterable[str] | None,
    ) -> AsyncGenerator[Event, None]:
        """session → step (route, recall, attach_parse, rerank) → sources → token* → done."""
        language = request.language or detect_language(request.query)
        session_id, history = turn.session_id, turn.history
        yield "session", {"session_id": session_id}

        started = time.perf_counter()
        recall = replace(recall, text=standalone_query(request.query, turn.earlier))
        pack = await self._retriever.search(recall, allowed_kbs=allowed_kbs)
        texts, images = self._select(pack, request)
        steps = _recall_steps(pack, started, request.attachments, recall.text)
        steps.append(_rerank_step(pack, texts, images))
        for step in steps:
            yield "step", step
        sources = split_sources([*texts, *images], max_chars=self._config.source_max_chars)
        sources = one_numbering(sources, request.attachments)
        yield "sources", sources

        pictures = await asyncio.to_thread(self._pictures, images)
        job = self._generation_input(request, texts, images, pictures, language, history)
        job = replace(job, searched=recall.text)  # the offline answerer sees no history
        cited_range = len(texts) + len(request.attachments) + len(images)
        started = time.perf_counter()
        parts: list[str] = []
        notes = self._held_back(images)  # the model's own warnings join the citation check's
        tokens = self._text_only.stream(self.model, job, notes)
        async for delta in self._app.bus.tracing.stream("generate", tokens):
            parts.append(delta)
            yield "token", {"delta": delta}
        written = "".join(parts)
        generate, warnings = self._generate_step(written, cited_range, language, started, notes)
        answer = one_per_bracket(written)  # the tokens went out as the model wrote them
        steps.append(generate)
        await asyncio.to_thread(self._store, turn, request.query, answer, sources, steps)
        yield (
            "done",
            {
                "session_id": session_id,
                "answer": answer,
                "sources": sources,
                "route": pack.route_dict(),
                "steps": steps,
                "warnings": warnings,
            },
        )

    def _generation_input(
        self,
        request: AnswerRequest,
        texts: list[Passage],
        images: list[Passage],
        pictures: list[str | None],
        language: Language,
        history: list[Turn],
    ) -> GenerationInput:
        """The prompt: numbered text references, attachments, image captions (numbered after
        both) with their pictures, and history."""
        references = [
            Reference(n, p.path, p.text, p.filename, p.page_nums)
            for n, p in enumerate(texts, start=1)
        ]
        first_image = len(texts) + len(request.attachments) + 1
        captions = [
            ImageCaption(n, str(p.metadata.get("image_id", "")), _page(p), p.path, p.text, url)
            for n, (p, url) in enumerate(zip(images, pictures, strict=True), start=first_image)
        ]
        attachments = [
            Attachment(a.name, a.text[: self._config.attachment_max_chars])
            for a in request.attachments
        ]
        messages = build_messages(
            request.query,
            references,
            language=language,
            attachments=attachments,
            images=captions,
            history=history,
        )
        # The offline generator reads references, not the prompt: the attachments join them
        # under their own numbers (after the texts), or an attached answer was never used.
        attached = [
            Reference(n, a.name, a.text, a.name)
            for n, a in enumerate(attachments, start=len(texts) + 1)
        ]
        return GenerationInput(request.query, language, messages, [*references, *attached])

    def _generate_step(
        self, answer: str, references: int, language: str, started: float, notes: list[str]
    ) -> tuple[dict[str, Any], list[str]]:
        report = check_citations(answer, references)
        warnings = list(notes)
        if report.out_of_range:
            warnings.append(
                f"the answer cites sources that were not sent: {list(report.out_of_range)}"
            )
        step = _step(
            "generate",
            started,
            model=self.model.name,
            language=language,
            cited=list(report.cited),
            out_of_range=list(report.out_of_range),
            status="warning" if warnings else "ok",
        )
        if warnings:  # on the step too: a trace read alone (the UI's) says why it warned
            step["detail"] = "; ".join(warnings)
        return step, warnings

    # --- parts ---------------------------------------------------------------------------------

    def request(
        self,
        query: str,
        *,
        top_n: int | None = None,
        language: Language | None = None,
        session_id: str | None = None,
        attachments: tuple[Attachment, ...] = (),
        **retrieval: Any,
    ) -> AnswerRequest:
        """An AnswerRequest whose recall depth defaults to ``generation.top_k`` (surfaces that
        take no top_k: MCP, the CLI)."""
        if retrieval.get("top_k") is None:
            retrieval["top_k"] = self._config.top_k
        recall = QueryRequest(query, **retrieval)
        return AnswerRequest(recall, top_n, language, session_id, attachments)

    def validate(
        self, request: AnswerRequest, *, allowed_kbs: Iterable[str] | None = None
    ) -> QueryRequest:
        """Check what can be checked before a session is created; returns the recall request.
        A caller limited to ``allowed_kbs`` may continue only a session within them: its
        history goes to the model and the new turn lands in it."""
        recall = request.recall
        # A mistake in the scope (an unknown KB or document, a bad filter) is the caller's: it
        # must raise here, not leave an empty session and an error body behind.
        self._retriever.check(recall, allowed_kbs=allowed_kbs)
        if request.session_id is not None:  # another key's session is not found
            self._app.repositories.sessions.get(request.session_id, within=allowed_kbs)
        if request.top_n is not None and not 1 <= request.top_n <= 20:
            raise InvalidInputError("top_n must be between 1 and 20", field="top_n")
        if request.language not in (None, "zh", "en"):
            raise InvalidInputError("language must be zh or en", field="language")
        if len(request.attachments) > MAX_ATTACHMENTS:
            raise InvalidInputError(f"at most {MAX_ATTACHMENTS} attachments", field="attachments")
        return recall

    def _select(
        self, pack: ContextPack, request: AnswerRequest
    ) -> tuple[list[Passage], list[Passage]]:
        """Text and visual evidence kept apart, each in rank order, cut to its top_n; only the
        pictures that are relevant or illustrate the kept text (generation/images.py)."""
        top_n = request.top_n or self._config.top_n
        texts = [p for p in pack.passages if not is_image(p)][:top_n]
        images = answer_images(
            pack.passages,
            texts,
            limit=self._config.top_n_images,
            min_relevance=self._config.image_min_relevance,
        )
        return texts, images

    def _pictures(self, images: list[Passage]) -> list[str | None]:
        """Each image's picture as a data URL for the chat model (None: caption only — images
        are off, or the picture cannot be read)."""
        if not self._config.send_images or self._text_only.refused(self.model):
            return [None] * len(images)
        return [picture_url(self._app.objects, p) for p in images]

    def _held_back(self, images: list[Passage]) -> list[str]:
        """A warning when images were held back from a model that refused them before."""
        if images and self._config.send_images and self._text_only.refused(self.model):
            return [self._text_only.known_warning(self.model, len(images))]
        return []

    def _open_turn(self, request: AnswerRequest, allowed_kbs: tuple[str, ...] | None) -> _Turn:
        """The turn's session (a new one when the request names none), its history and earlier
        questions. The session is widened to the turn's KBs only when the answer is stored."""
        sessions = self._app.repositories.sessions
        # The KBs the search may read: a limited caller who named none searches its own,
        # and the session must stay out of reach of callers limited to other KBs.
        kb_names = tuple(request.recall.kb_names or allowed_kbs or ())
        if request.session_id is None:
            record = sessions.create(title=request.query[:80], kb_names=kb_names)
            return _Turn(record.id, True, [], [], kb_names)
        messages = sessions.messages(request.session_id, last=self._config.history_turns)
        history = [
            Turn("user" if m.role == "user" else "assistant", m.content)
            for m in messages
            if m.role in ("user", "assistant")
        ]
        earlier = sessions.questions(request.session_id, last=CHAIN_QUESTIONS)
        return _Turn(request.session_id, False, history, earlier, kb_names)

    def _store(
        self,
        turn: _Turn,
        question: str,
        answer: str,
        sources: dict[str, Any],
        steps: list[dict[str, Any]],
    ) -> None:
        sessions = self._app.repositories.sessions
        if not turn.opened:  # what the session holds now came from these KBs too
            sessions.widen(turn.session_id, turn.kb_names)
        sessions.add_message(turn.session_id, role="user", content=question)
        sessions.add_message(
            turn.session_id, role="assistant", content=answer, sources=sources, steps=steps
        )

    def _forget(self, session_id: str) -> None:
        """Delete a session its first turn left unanswered. Not in a thread: this runs while
        the stream is closed or cancelled, where an await would be cancelled again."""
        try:
            self._app.repositories.sessions.delete(session_id)
        except Exception:  # the cleanup must not hide the failure that ended the turn
            logger.exception("could not delete unanswered session %s", session_id)


def _recall_steps(
    pack: ContextPack, started: float, attachments: tuple[Attachment, ...], searched: str
) -> list[dict[str, Any]]:
    """route and recall, each with its own time (``query`` is what was searched, a follow-up
    joined to the question it follows), and, with files, attach_parse (the time their parsing
    took when the request was read).

    route is the scope, QUERY_ASSEMBLE and CLASSIFY_QUERY; recall the rest of the search but its
    rerank, which is a step of its own. Both used to be timed from the search's start to its
    end, so the trace showed the same time twice."""
    searching = (time.perf_counter() - started) * 1000
    route_ms = sum(s.ms for s in pack.steps if s.name in ROUTING_STEPS)
    rerank_ms = sum(s.ms for s in pack.steps if s.name == "rerank")
    route: dict[str, Any] = {
        "name": "route",
        "route": pack.route_dict(),
        "status": "ok",
        "ms": round(route_ms, 2),
    }
    recall: dict[str, Any] = {
        "name": "recall",
        "query": searched,
        "passages": len(pack.passages),
        "trace": [s.name for s in pack.steps],
        "status": "ok",
        "ms": round(max(0.0, searching - route_ms - rerank_ms), 2),
    }
    steps = [route, recall]
    if attachments:
        parse_ms = round(sum(a.parse_ms for a in attachments), 2)
        names = [a.name for a in attachments]
        steps.append({"name": "attach_parse", "files": names, "status": "ok", "ms": parse_ms})
    return steps


def _rerank_step(pack: ContextPack, texts: list[Passage], images: list[Passage]) -> dict[str, Any]:
    """What the retrieval service's rerank did, with the evidence kept for the prompt."""
    rerank = next((s for s in pack.steps if s.name == "rerank"), None)
    return {
        "name": "rerank",
        "reranker": rerank.detail if rerank else "none",
        "status": rerank.status if rerank else "skipped",
        "text_top": [p.chunk_id for p in texts],
        "visual_top": [p.chunk_id for p in images],
        "ms": rerank.ms if rerank else 0.0,
    }


def _step(name: str, started: float, **details: Any) -> dict[str, Any]:
    details.setdefault("status", "ok")
    return {"name": name, **details, "ms": round((time.perf_counter() - started) * 1000, 2)}


def _page(passage: Passage) -> int | None:
    return passage.page_nums[0] if passage.page_nums else None
