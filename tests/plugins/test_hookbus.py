from __future__ import annotations

import asyncio

import pytest

from eagle_rag.errors import (
    HookInvocationError,
    HookResultError,
    InvalidInputError,
    PluginError,
    PluginValidationError,
)
from eagle_rag.plugins import hooks
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.hookbus import HookBus
from eagle_rag.plugins.payloads import (
    ClassificationDecision,
    DocumentSource,
    ParseResult,
    QueryHints,
    QueryRequest,
    QueryRouteDecision,
    TextChunk,
)
from eagle_rag.tracing import Timing, Tracing

CORE_CTX = HookContext(plugin_namespace="core")
BIO_CTX = HookContext(plugin_namespace="biomed")
SOURCE = DocumentSource("d1", "kb", "a.txt", "text/plain", 3, "00")


def _chunk(text: str = "some text") -> TextChunk:
    return TextChunk("c1", "d1", "kb", text, "doc/a", 1, 0)


def _decider(label: str):  # type: ignore[no-untyped-def]
    def decide(chunk: TextChunk) -> tuple[ClassificationDecision, ...]:
        return (ClassificationDecision(collection=label, encoder="e"),)

    return decide


async def test_first_orders_by_priority_then_registration(bus: HookBus) -> None:
    bus.subscribe(hooks.classify_chunk, _decider("low"), plugin="a", priority=-1000)
    bus.subscribe(hooks.classify_chunk, _decider("high-1"), plugin="b", priority=100)
    bus.subscribe(hooks.classify_chunk, _decider("high-2"), plugin="c", priority=100)
    result = await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk())
    assert result is not None and result[0].collection == "high-1"
    assert [s.plugin for s in bus.subscribers(hooks.classify_chunk)] == ["b", "c", "a"]


async def test_first_skips_subscribers_that_abstain(bus: HookBus) -> None:
    bus.subscribe(hooks.classify_chunk, lambda chunk: None, plugin="abstains", priority=100)
    bus.subscribe(hooks.classify_chunk, _decider("fallback"), plugin="core", priority=-1000)
    result = await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk())
    assert result is not None and result[0].collection == "fallback"


async def test_first_returns_none_when_all_abstain(bus: HookBus) -> None:
    bus.subscribe(hooks.classify_chunk, lambda chunk: None, plugin="a")
    assert await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk()) is None


async def test_transform_chains_in_order_and_none_keeps_value(bus: HookBus) -> None:
    def append(suffix: str):  # type: ignore[no-untyped-def]
        def step(result: ParseResult) -> ParseResult:
            return ParseResult(text=result.text + suffix)

        return step

    bus.subscribe(hooks.parse, append("-core"), plugin="core", priority=-1000)
    bus.subscribe(hooks.parse, append("-domain"), plugin="dom", priority=100)
    bus.subscribe(hooks.parse, lambda result: None, plugin="noop", priority=0)
    out = await bus.invoke_transform(hooks.parse, ParseResult("x"), ctx=CORE_CTX, source=SOURCE)
    assert out.text == "x-domain-core"


async def test_all_collects_non_none_results_in_order(bus: HookBus) -> None:
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("late"), plugin="a", priority=1)
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("early"), plugin="b", priority=5)
    bus.subscribe(hooks.query_assemble, lambda: None, plugin="c", priority=3)
    results = await bus.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=QueryRequest("q"))
    assert [r.source for r in results] == ["early", "late"]


async def test_namespace_filter(bus: HookBus) -> None:
    bus.subscribe(
        hooks.query_assemble, lambda: QueryHints("bio"), plugin="biomed", namespace="biomed"
    )
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("any"), plugin="core", namespace=None)
    query = QueryRequest("q")
    in_core = await bus.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=query)
    in_bio = await bus.invoke_all(hooks.query_assemble, ctx=BIO_CTX, query=query)
    assert [r.source for r in in_core] == ["any"]
    assert [r.source for r in in_bio] == ["bio", "any"]


async def test_async_and_sync_subscribers_mix(bus: HookBus) -> None:
    async def slow(query: QueryRequest) -> QueryHints:
        await asyncio.sleep(0)
        return QueryHints("async", expansions=(query.text.upper(),))

    bus.subscribe(hooks.query_assemble, slow, plugin="a", priority=10)
    bus.subscribe(hooks.query_assemble, lambda query: QueryHints("sync"), plugin="b")
    results = await bus.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=QueryRequest("q"))
    assert [(r.source, r.expansions) for r in results] == [("async", ("Q",)), ("sync", ())]


async def test_async_subscriber_on_first_hook(bus: HookBus) -> None:
    async def decide(chunk: TextChunk) -> tuple[ClassificationDecision, ...]:
        return (ClassificationDecision("eagle_text", "e5", reason=chunk.text),)

    bus.subscribe(hooks.classify_chunk, decide, plugin="a")
    result = await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk("hello"))
    assert result == (ClassificationDecision("eagle_text", "e5", reason="hello"),)


async def test_ingest_hook_fails_fast_naming_plugin_and_hook(bus: HookBus) -> None:
    def broken(result: ParseResult) -> ParseResult:
        raise RuntimeError("boom")

    bus.subscribe(hooks.parse, broken, plugin="biomed")
    with pytest.raises(HookInvocationError) as info:
        await bus.invoke_transform(hooks.parse, ParseResult("x"), ctx=CORE_CTX, source=SOURCE)
    assert info.value.plugin == "biomed"
    assert info.value.hook == "PARSE"
    assert isinstance(info.value.__cause__, RuntimeError)


async def test_a_refused_input_keeps_its_own_error(bus: HookBus) -> None:
    """A corrupt file is the input's fault, not the parser plugin's: the user reads the reason
    as it is ("the PDF is corrupt…"), not "plugin 'core' failed in hook PARSE"."""

    def refuse(result: ParseResult) -> ParseResult:
        raise InvalidInputError("the PDF is encrypted; upload it without a password")

    bus.subscribe(hooks.parse, refuse, plugin="core")
    with pytest.raises(InvalidInputError) as info:
        await bus.invoke_transform(hooks.parse, ParseResult("x"), ctx=CORE_CTX, source=SOURCE)
    assert not isinstance(info.value, HookInvocationError)
    assert info.value.message == "the PDF is encrypted; upload it without a password"


async def test_async_failure_on_ingest_hook_fails_fast(bus: HookBus) -> None:
    async def broken(chunk: TextChunk) -> ClassificationDecision:
        raise ValueError("bad chunk")

    bus.subscribe(hooks.classify_chunk, broken, plugin="dom")
    with pytest.raises(HookInvocationError, match="CLASSIFY_CHUNK"):
        await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk())


async def test_query_hook_degrades_per_subscriber_and_audits(
    bus: HookBus, audit: PluginAudit
) -> None:
    def broken(query: QueryRequest) -> QueryHints:
        raise RuntimeError("entity service down")

    bus.subscribe(hooks.query_assemble, broken, plugin="biomed", priority=100)
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("core"), plugin="core")
    results = await bus.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=QueryRequest("q"))
    assert [r.source for r in results] == ["core"]
    [decision] = audit.recent(10)
    assert decision.category == "hook_failure"
    assert decision.plugin == "biomed"
    assert decision.details["hook"] == "QUERY_ASSEMBLE"
    assert "entity service down" in decision.details["error"]


async def test_degraded_first_hook_falls_through_to_next(bus: HookBus) -> None:
    def broken(query: QueryRequest) -> None:
        raise RuntimeError("x")

    bus.subscribe(hooks.classify_query, broken, plugin="dom", priority=100)
    core_decision = QueryRouteDecision(plans=(), classifier="core")
    bus.subscribe(hooks.classify_query, lambda: core_decision, plugin="core", priority=-1000)
    result = await bus.invoke_first(
        hooks.classify_query, ctx=CORE_CTX, query=QueryRequest("q"), hints=()
    )
    assert result is core_decision


def test_subscriber_with_unknown_parameter_is_rejected_at_registration(bus: HookBus) -> None:
    def wrong(chunk: TextChunk, collection: str) -> None:
        return None

    with pytest.raises(PluginValidationError) as info:
        bus.subscribe(hooks.classify_chunk, wrong, plugin="dom")
    assert info.value.fields["argument"] == "collection"
    assert info.value.hook == "CLASSIFY_CHUNK" and info.value.plugin == "dom"


def test_subscriber_with_varargs_is_rejected(bus: HookBus) -> None:
    def loose(*args: object) -> None:
        return None

    with pytest.raises(PluginValidationError, match="name its parameters"):
        bus.subscribe(hooks.query_assemble, loose, plugin="dom")


def test_transform_subscriber_must_take_the_value(bus: HookBus) -> None:
    with pytest.raises(PluginValidationError, match="'result'"):
        bus.subscribe(hooks.parse, lambda source: None, plugin="dom")


async def test_calling_a_hook_in_the_wrong_mode_is_an_error(bus: HookBus) -> None:
    with pytest.raises(PluginError, match="invoke_transform"):
        await bus.invoke_first(hooks.parse, ctx=CORE_CTX, result=ParseResult("x"), source=SOURCE)


async def test_calling_with_wrong_arguments_is_an_error(bus: HookBus) -> None:
    with pytest.raises(PluginError, match="takes"):
        await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, text="x")


async def test_unsubscribe_plugin_removes_all_its_subscriptions(bus: HookBus) -> None:
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("a"), plugin="a")
    bus.subscribe(hooks.classify_chunk, _decider("a"), plugin="a")
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("b"), plugin="b")
    bus.unsubscribe_plugin("a")
    results = await bus.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=QueryRequest("q"))
    assert [r.source for r in results] == ["b"]
    assert bus.subscribers(hooks.classify_chunk) == []


async def test_observer_hears_every_subscriber_call_with_its_time(bus: HookBus) -> None:
    heard: list[tuple[str, str, float]] = []

    async def slow(chunk: TextChunk) -> None:
        await asyncio.sleep(0.02)

    def abstains(chunk: TextChunk) -> None:
        return None

    bus.subscribe(hooks.classify_chunk, slow, plugin="slow", priority=10)
    bus.subscribe(hooks.classify_chunk, abstains, plugin="quick")
    bus.observe(lambda hook, plugin, ms: heard.append((hook, plugin, ms)))
    assert await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk()) is None
    assert [(h, p) for h, p, _ in heard] == [
        ("CLASSIFY_CHUNK", "slow"),
        ("CLASSIFY_CHUNK", "quick"),
    ]
    assert heard[0][2] >= 15 and heard[1][2] < heard[0][2]  # each subscriber's own wall time
    bus.observe(None)
    await bus.invoke_first(hooks.classify_chunk, ctx=CORE_CTX, chunk=_chunk())
    assert len(heard) == 2


# --- a subscriber's result must be of its hook's declared type -----------------------------------


class _Timings:
    """A tracing observer that keeps every finished stage."""

    def __init__(self) -> None:
        self.seen: list[Timing] = []

    def observe(self, timing: Timing) -> None:
        self.seen.append(timing)


async def test_a_wrong_result_type_on_a_query_hook_is_skipped_audited_and_timed_as_error(
    audit: PluginAudit,
) -> None:
    timings = _Timings()
    tracing = Tracing.off()
    tracing.add_observer(timings)
    bus = HookBus(audit, tracing)
    core_decision = QueryRouteDecision(plans=(), classifier="core")
    bus.subscribe(hooks.classify_query, lambda: "oops", plugin="legal", priority=100)
    bus.subscribe(hooks.classify_query, lambda: core_decision, plugin="core", priority=-1000)
    result = await bus.invoke_first(
        hooks.classify_query, ctx=CORE_CTX, query=QueryRequest("q"), hints=()
    )
    assert result is core_decision  # the bad answer is skipped, the next subscriber answers
    [decision] = audit.recent(10)
    assert (decision.category, decision.plugin) == ("hook_failure", "legal")
    assert decision.details["hook"] == "CLASSIFY_QUERY"
    assert "returned a str, not QueryRouteDecision | None" in decision.details["error"]
    assert [(t.plugin, t.outcome) for t in timings.seen] == [("legal", "error"), ("core", "ok")]


async def test_a_tuple_of_the_wrong_items_is_a_wrong_result_type(
    bus: HookBus, audit: PluginAudit
) -> None:
    bus.subscribe(hooks.rerank_merged, lambda merged: ("a", "b"), plugin="legal")
    result = await bus.invoke_first(
        hooks.rerank_merged, ctx=CORE_CTX, query=QueryRequest("q"), merged=()
    )
    assert result is None
    [decision] = audit.recent(10)
    assert "a tuple of str" in decision.details["error"]


async def test_a_list_where_a_tuple_is_declared_is_taken_as_the_tuple(bus: HookBus) -> None:
    """Plugins return lists as often as tuples: a list of the right items was refused."""
    bus.subscribe(hooks.celery_tasks, lambda: ["legal.tasks"], plugin="legal")
    assert await bus.invoke_all(hooks.celery_tasks, ctx=CORE_CTX) == [("legal.tasks",)]
    bus.subscribe(hooks.celery_tasks, lambda: [1, 2], plugin="odd")
    with pytest.raises(HookInvocationError):
        await bus.invoke_all(hooks.celery_tasks, ctx=CORE_CTX)


async def test_a_wrong_result_type_on_an_ingest_hook_fails_fast_naming_the_plugin(
    bus: HookBus,
) -> None:
    bus.subscribe(hooks.parse, lambda result: "not a ParseResult", plugin="legal")
    with pytest.raises(HookInvocationError) as info:
        await bus.invoke_transform(hooks.parse, ParseResult("x"), ctx=CORE_CTX, source=SOURCE)
    assert (info.value.plugin, info.value.hook) == ("legal", "PARSE")
    assert "returned a str, not ParseResult" in info.value.message
    assert isinstance(info.value.__cause__, HookResultError)


async def test_a_transform_check_blames_the_subscriber_whose_result_it_refuses(
    bus: HookBus,
) -> None:
    def keep_text(before: ParseResult, after: ParseResult) -> None:
        if after.text != before.text:
            raise PluginError("it changed the text")

    bus.subscribe(hooks.parse, lambda result: ParseResult(result.text), plugin="good", priority=9)
    bus.subscribe(hooks.parse, lambda result: ParseResult("other"), plugin="bad")
    with pytest.raises(HookInvocationError) as info:
        await bus.invoke_transform(
            hooks.parse, ParseResult("x"), ctx=CORE_CTX, source=SOURCE, check=keep_text
        )
    assert info.value.plugin == "bad" and "it changed the text" in info.value.message


async def test_a_hung_async_query_subscriber_times_out_as_a_failure(audit: PluginAudit) -> None:
    bus = HookBus(audit, query_hook_timeout_s=0.05)
    never = asyncio.Event()

    async def hangs(query: QueryRequest) -> QueryHints:
        await never.wait()
        return QueryHints("never")

    bus.subscribe(hooks.query_assemble, hangs, plugin="legal", priority=100)
    bus.subscribe(hooks.query_assemble, lambda: QueryHints("core"), plugin="core")
    results = await bus.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=QueryRequest("q"))
    assert [r.source for r in results] == ["core"]
    [decision] = audit.recent(10)
    assert decision.plugin == "legal" and "HookTimeoutError" in decision.details["error"]
    assert "plugins.query_hook_timeout_s" in decision.details["error"]


# --- a plugin's view of the bus subscribes under its own name -----------------------------------


async def test_a_plugin_view_subscribes_as_its_plugin(bus: HookBus) -> None:
    legal = bus.for_plugin("legal")
    legal.subscribe(hooks.query_assemble, lambda: QueryHints("legal"))
    legal.subscribe(hooks.query_assemble, lambda: QueryHints("again"), plugin="legal")
    assert [s.plugin for s in bus.subscribers(hooks.query_assemble)] == ["legal", "legal"]
    heard: list[str] = []
    bus.observe(lambda hook, plugin, ms: heard.append(plugin))  # the view shares the observer
    await legal.invoke_all(hooks.query_assemble, ctx=CORE_CTX, query=QueryRequest("q"))
    assert heard == ["legal", "legal"]
    bus.unsubscribe_plugin("legal")
    assert legal.subscribers(hooks.query_assemble) == []


def test_a_plugin_view_refuses_to_subscribe_as_another_plugin(bus: HookBus) -> None:
    with pytest.raises(PluginValidationError) as info:
        bus.for_plugin("legal").subscribe(hooks.query_assemble, lambda: None, plugin="core")
    assert (info.value.plugin, info.value.fields["argument"]) == ("legal", "plugin")
    assert bus.subscribers(hooks.query_assemble) == []


def test_a_plugin_view_unsubscribes_only_its_own_and_observes_nothing(bus: HookBus) -> None:
    bus.subscribe(hooks.query_assemble, lambda query: None, plugin="core")
    view = bus.for_plugin("legal")
    view.subscribe(hooks.query_assemble, lambda query: None)
    with pytest.raises(PluginError, match="cannot unsubscribe 'core'"):
        view.unsubscribe_plugin("core")
    with pytest.raises(PluginError, match="cannot observe"):
        view.observe(None)
    view.unsubscribe_plugin("legal")
    assert [s.plugin for s in bus.subscribers(hooks.query_assemble)] == ["core"]


def test_the_app_bus_needs_a_plugin_name(bus: HookBus) -> None:
    with pytest.raises(PluginError, match="plugin="):
        bus.subscribe(hooks.query_assemble, lambda: None)
