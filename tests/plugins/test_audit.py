from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from eagle_rag.plugins.audit import AuditDecision, JsonlSink, PluginAudit, RedisListSink

REDIS_URL = "redis://127.0.0.1:6379/0"


def _log(audit: PluginAudit, n: int, namespace: str = "core") -> None:
    for i in range(n):
        audit.log_decision("route_query", f"d{i}", plugin="core", namespace=namespace, i=i)


def test_memory_ring_keeps_the_newest_up_to_its_cap() -> None:
    audit = PluginAudit(ring_cap=3)
    _log(audit, 5)
    assert [d.decision for d in audit.recent(10)] == ["d4", "d3", "d2"]
    assert [d.decision for d in audit.recent(2)] == ["d4", "d3"]
    assert audit.stats()["decisions_by_category"] == {"route_query": 5}


def test_jsonl_sink_writes_one_event_per_line(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "audit.jsonl"
    audit = PluginAudit(ring_cap=10, sinks=[JsonlSink(path)])
    audit.log_decision("classify_chunk", "eagle_text", plugin="bio", namespace="biomed", k="v")
    audit.log_decision("hook_failure", "skipped", plugin="bio", namespace="biomed")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["category"] for line in lines] == ["classify_chunk", "hook_failure"]
    assert lines[0]["event"] == "plugin_audit_decision"
    assert lines[0]["details"] == {"k": "v"}
    assert lines[0]["namespace"] == "biomed"


class _BrokenSink:
    name = "broken"

    def write(self, decision: AuditDecision) -> None:
        raise OSError("disk full")


def test_a_failing_sink_never_fails_the_caller_and_is_counted() -> None:
    audit = PluginAudit(ring_cap=10, sinks=[_BrokenSink()])
    _log(audit, 2)
    assert audit.stats()["sink_errors"] == {"broken": 2}
    assert len(audit.recent(10)) == 2  # the other sinks still got them


def test_disabled_audit_records_nothing() -> None:
    audit = PluginAudit(ring_cap=10, enabled=False)
    _log(audit, 3)
    assert audit.recent(10) == []


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=2)
    client.ping()
    yield client
    client.close()


@pytest.mark.integration
def test_redis_sink_pushes_and_trims_per_namespace(redis_client: redis.Redis) -> None:
    namespace = f"test-{uuid.uuid4().hex[:8]}"
    key = RedisListSink.key(namespace)
    try:
        sink = RedisListSink(redis_client, cap=3)
        audit = PluginAudit(ring_cap=10, sinks=[sink])
        _log(audit, 5, namespace=namespace)
        assert redis_client.llen(key) == 3
        assert [d.decision for d in sink.recent(namespace, 10)] == ["d4", "d3", "d2"]
        assert sink.recent(namespace, 1)[0].details == {"i": 4}
        assert redis_client.llen(RedisListSink.key("other-namespace-" + namespace)) == 0
    finally:
        redis_client.delete(key)


@pytest.mark.integration
def test_redis_sink_down_does_not_fail_the_caller() -> None:
    dead = redis.Redis.from_url(
        "redis://127.0.0.1:1/0", socket_timeout=0.2, socket_connect_timeout=0.2
    )
    audit = PluginAudit(ring_cap=10, sinks=[RedisListSink(dead, cap=10)])
    _log(audit, 1)
    assert audit.stats()["sink_errors"] == {"redis": 1}
    assert audit.recent(1)[0].decision == "d0"
