"""Traces and stage timings: one :class:`Tracing` per app, OpenTelemetry spans when enabled.

Every stage of an ingest or a query runs inside ``Tracing.span``: the hook bus opens one per hook
subscriber call (the plugin, KB and document as attributes), a few services decorate their
methods with :func:`traced`, the API middleware opens one per request. Whether or not spans are
exported, each finished stage is handed to the observers as a :class:`Timing` (the Prometheus
metrics are one), so phase durations and model-call latency need no second set of timers.
A stage that raised ended in ``error``; one that returned says how it ended when that is not
``ok`` (a whole ingest returns its failure, or that it was skipped or stopped, without raising).

Off by default: with ``telemetry.tracing.enabled: false`` no tracer exists and a span costs a
clock read. The provider is the app's own (never the process-global one), so two apps in one
process keep their spans apart.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace

from eagle_rag.errors import SettingsError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from eagle_rag.settings import TracingSettings

T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S", bound="HasTracing")
AttributeValue = str | int | float | bool

# The stage each hook's subscriber calls run as. The CLASSIFY_* hooks run once per chunk: the
# ingest orchestrator times their whole loop as one "classify" stage instead.
HOOK_STAGES: Mapping[str, str | None] = {
    "INGEST_ROUTE_SELECTORS": "route",
    "PARSE_DOCUMENT": "parse",
    "PARSE": "parse",
    "BUILD_STRUCTURE": "chunk",
    "CHUNK_DOCUMENT": "chunk",
    "CHUNK": "chunk",
    "INGEST_VISUAL_EXTRACT": "visual",
    "CLASSIFY_CHUNK": None,
    "CLASSIFY_VISUAL": None,
    "EMBED_TEXT": "embed",
    "EMBED_VISUAL": "embed",
    "UPSERT_VECTORS": "upsert",
    "CELERY_TASKS": "startup",
    "QUERY_ASSEMBLE": "assemble",
    "CLASSIFY_QUERY": "route",
    "QUERY_DENSE_EXPAND": "query_expansion",
    "RERANK": "plugin_rerank",
    "RETRIEVE_SUPPLEMENT": "supplement",
    "RRF_POST_MERGE": "fusion",
    "RERANK_MERGED": "plugin_rerank",
    "RETRIEVE_VISUAL_FILTER": "visual_filter",
}

# Stages whose time is a model call (a hook or method of that stage calls the model).
MODEL_STAGES = {"embed": "embedder", "rerank": "reranker", "generate": "chat"}


@dataclass(frozen=True, slots=True)
class Timing:
    """One finished stage: what it was, how long it took, how it ended, and for what."""

    stage: str
    seconds: float
    outcome: str  # "ok", "error" (it raised, or returned a failure), or the stage's own word
    ingest: bool  # part of a document's ingest (a phase), not of a query
    plugin: str = ""
    hook: str = ""  # the hook whose subscriber this was, for hook-bus stages

    @property
    def failed(self) -> bool:
        return self.outcome == "error"

    @property
    def model(self) -> str | None:
        """The model kind this stage called (embedder, reranker, chat), if any."""
        return MODEL_STAGES.get(self.stage)


@dataclass(slots=True)
class Stage:
    """A stage in progress: its span, and how it ended if it returns (``ok`` unless told)."""

    span: trace.Span = trace.INVALID_SPAN
    outcome: str = "ok"


class TimingObserver(Protocol):
    def observe(self, timing: Timing) -> None: ...


class Tracing:
    """The app's tracer (None when tracing is off) and the observers of stage timings."""

    def __init__(
        self,
        provider: TracerProvider | None = None,
        memory: InMemorySpanExporter | None = None,
    ) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("eagle_rag") if provider is not None else None
        self.memory = memory  # the exporter when ``exporter: memory`` (tests, debugging)
        self._observers: list[TimingObserver] = []

    @classmethod
    def off(cls) -> Tracing:
        return cls()

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    def add_observer(self, observer: TimingObserver) -> None:
        self._observers.append(observer)

    def remove_observer(self, observer: TimingObserver) -> None:
        """Stop handing timings to ``observer`` (the overhead benchmark's bare baseline)."""
        self._observers.remove(observer)

    @contextmanager
    def span(
        self,
        name: str,
        *,
        ingest: bool = False,
        plugin: str = "",
        hook: str = "",
        parent: otel_context.Context | None = None,
        **attributes: AttributeValue | None,
    ) -> Iterator[trace.Span]:
        """Time the block as stage ``name`` (observers get a Timing); a span when tracing."""
        with self.stage(
            name, ingest=ingest, plugin=plugin, hook=hook, parent=parent, **attributes
        ) as stage:
            yield stage.span

    @contextmanager
    def stage(
        self,
        name: str,
        *,
        ingest: bool = False,
        plugin: str = "",
        hook: str = "",
        parent: otel_context.Context | None = None,
        **attributes: AttributeValue | None,
    ) -> Iterator[Stage]:
        """As :meth:`span`, yielding the stage: the block may set how it ended (``outcome``)."""
        started = time.perf_counter()
        stage = Stage()
        outcome = "error"  # unless the block returns
        try:
            if self._tracer is None:
                yield stage
            else:
                attrs = _attributes(plugin=plugin or None, hook=hook or None, **attributes)
                with self._tracer.start_as_current_span(
                    name, context=parent, attributes=attrs
                ) as stage.span:
                    yield stage
                    _describe_outcome(stage)
            outcome = stage.outcome
        finally:
            if self._observers:
                seconds = time.perf_counter() - started
                timing = Timing(name, seconds, outcome, ingest, plugin, hook)
                for observer in self._observers:
                    observer.observe(timing)

    async def stream(
        self, name: str, chunks: AsyncIterator[T], **attributes: AttributeValue | None
    ) -> AsyncIterator[T]:
        """Pass a stream through, timed as one stage from its first request to its end.

        The span is not made current: a generator that attaches a context across its yields
        would detach it in whichever context the consumer resumes it from."""
        started = time.perf_counter()
        span: trace.Span = trace.INVALID_SPAN
        if self._tracer is not None:
            span = self._tracer.start_span(name, attributes=_attributes(**attributes))
        failed = True
        try:
            async for chunk in chunks:
                yield chunk
            failed = False
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(trace.StatusCode.ERROR, str(exc))
            raise
        finally:
            span.end()
            outcome = "error" if failed else "ok"
            timing = Timing(name, time.perf_counter() - started, outcome, False)
            for observer in self._observers:
                observer.observe(timing)

    def wrap(self, name: str, function: Callable[..., T], *, model: str) -> Callable[..., T]:
        """``function`` as a stage of its own (a model call handed to a worker thread)."""

        def run(*args: Any, **kwargs: Any) -> T:
            with self.span(name, model=model):
                return function(*args, **kwargs)

        return run

    def shutdown(self) -> None:
        """Flush and stop the exporter (the app is stopping)."""
        if self._provider is not None:
            self._provider.shutdown()


class HasTracing(Protocol):
    tracing: Tracing


def traced(
    name: str, *, ingest: bool = False, outcome: Callable[[Any], str] | None = None
) -> Callable[
    [Callable[Concatenate[S, P], Coroutine[Any, Any, T]]],
    Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
]:
    """Run an async method of an object with a ``tracing`` attribute as stage ``name``
    (the method keeps its signature, so callers and protocols still type-check). ``outcome``
    names how a call that returned ended, from what it returned (else ``ok``)."""

    def decorate(
        method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
    ) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
        async def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
            with self.tracing.stage(name, ingest=ingest) as stage:
                result = await method(self, *args, **kwargs)
                if outcome is not None:
                    stage.outcome = outcome(result)
                return result

        functools.update_wrapper(run, method)  # its name and docstring, not its type
        return run

    return decorate


def annotate(**attributes: AttributeValue | None) -> None:
    """Add attributes to the span in progress (nothing when there is none or tracing is off)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(_attributes(**attributes))


def _describe_outcome(stage: Stage) -> None:
    """A stage that returned a failure is an error span too; any other end but ok is noted."""
    if stage.outcome == "error":
        stage.span.set_status(trace.StatusCode.ERROR, "the stage returned a failure")
    if stage.outcome != "ok":
        stage.span.set_attribute("eagle.outcome", stage.outcome)


def _attributes(**values: AttributeValue | None) -> Mapping[str, AttributeValue]:
    """``eagle.``-prefixed span attributes, leaving out the unknown ones."""
    return {f"eagle.{key}": value for key, value in values.items() if value is not None}


def build_tracing(config: TracingSettings) -> Tracing:
    """The tracing the settings ask for: off, OTLP over HTTP (batched), or in memory."""
    if not config.enabled:
        return Tracing.off()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        resource=Resource.create({"service.name": config.service_name}),
        sampler=ParentBased(TraceIdRatioBased(config.sample_ratio)),
    )
    if config.exporter == "memory":
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        return Tracing(provider, memory)
    return Tracing(provider_with_otlp(provider, config))


def provider_with_otlp(provider: TracerProvider, config: TracingSettings) -> TracerProvider:
    """Batch spans to the OTLP/HTTP receiver: export runs on the SDK's thread, off the request."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:  # the exporter is a dependency; a broken install says so
        raise SettingsError(
            "telemetry.tracing.exporter is otlp but opentelemetry-exporter-otlp-proto-http "
            "is not installed",
            setting="telemetry.tracing.exporter",
        ) from exc
    exporter = OTLPSpanExporter(endpoint=config.endpoint, timeout=config.timeout_s)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
