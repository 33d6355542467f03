"""When a failed search is an outage (a 503 naming the backends) and when it is not."""

from __future__ import annotations

from eagle_rag.errors import BackendUnavailableError, HookInvocationError, InvalidInputError
from eagle_rag.retrieval.outage import backend_outage, total_outage


def _wrapped(cause: Exception) -> HookInvocationError:
    """What the hook bus raises when a fail-fast subscriber (the query embedder) fails."""
    try:
        raise HookInvocationError("embed failed", plugin="core", hook="embed_text") from cause
    except HookInvocationError as exc:
        return exc


def test_an_outage_is_found_behind_the_hook_bus_wrapper() -> None:
    down = BackendUnavailableError("embedding endpoint unreachable", backend="embedding")
    assert backend_outage(_wrapped(down)) is down
    assert backend_outage(InvalidInputError("bad filter")) is None


def test_every_source_down_is_one_outage_naming_each_backend() -> None:
    milvus = BackendUnavailableError("Milvus search failed", backend="milvus")
    embedder = _wrapped(BackendUnavailableError("endpoint timed out", backend="embedding"))
    outage = total_outage([milvus, embedder, milvus])
    assert outage is not None
    assert outage.fields["backend"] == "milvus"
    assert outage.fields["backends"] == ["embedding", "milvus"]
    assert "Milvus search failed" in outage.message and "endpoint timed out" in outage.message
    assert outage.message.count("Milvus search failed") == 1  # each reason once


def test_no_failure_or_one_that_is_not_an_outage_is_no_outage() -> None:
    milvus = BackendUnavailableError("Milvus search failed", backend="milvus")
    assert total_outage([]) is None
    assert total_outage([milvus, RuntimeError("a bug")]) is None
    assert total_outage([InvalidInputError("bad filter")]) is None
