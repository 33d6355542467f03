"""SSE events as the clients type them: an ``error`` event keeps what the server said."""

from __future__ import annotations

from eagle_rag.client import ErrorEvent
from eagle_rag.client.models import query_event, search_event
from eagle_rag.errors import BackendUnavailableError, EagleError

OUTAGE = {
    "code": "backend_unavailable",
    "message": "milvus did not answer",
    "details": {"backend": "milvus", "retry_after": 5},
}


def test_an_error_event_keeps_its_details() -> None:
    """The details (which backend, when to retry) were dropped: only code and message stayed."""
    for event in (search_event("error", OUTAGE), query_event("error", OUTAGE)):
        assert isinstance(event, ErrorEvent) and event.details == OUTAGE["details"]
        error = event.to_error()
        assert isinstance(error, BackendUnavailableError)
        assert error.fields == {"backend": "milvus", "retry_after": 5}


def test_an_error_event_that_is_not_json_is_its_text() -> None:
    event = search_event("error", "502 Bad Gateway")
    assert event == ErrorEvent("error", "502 Bad Gateway")
    assert isinstance(event.to_error(), EagleError)
