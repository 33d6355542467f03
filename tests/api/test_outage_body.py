"""One reading of an error body: ``outage_in`` (the REST edge re-raising an answer's outage) is
``error_from_event`` (SSE, MCP and the OpenAI-compatible edge) restricted to outages."""

from __future__ import annotations

import json

from eagle_rag.api.errors import error_response, outage_in
from eagle_rag.client.errors import error_from_event
from eagle_rag.errors import BackendUnavailableError, EagleError, NotFoundError


def test_an_outage_body_is_raised_again_with_the_same_body_and_retry_after() -> None:
    raised = BackendUnavailableError("milvus does not answer", backend="milvus", retry_after=7)
    outage = outage_in(raised.to_dict())
    assert isinstance(outage, BackendUnavailableError)
    assert outage.to_dict() == raised.to_dict()
    response = error_response(outage)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "7"
    assert json.loads(bytes(response.body)) == raised.to_dict()


def test_other_bodies_are_no_outage() -> None:
    assert outage_in(None) is None
    assert outage_in({}) is None
    assert outage_in(NotFoundError("no such kb", kb_name="x").to_dict()) is None


def test_event_details_become_the_errors_fields_and_unknown_codes_are_kept() -> None:
    missing = error_from_event(NotFoundError("no such kb", kb_name="x").to_dict())
    assert isinstance(missing, NotFoundError)
    assert missing.fields == {"kb_name": "x"}
    cancelled = error_from_event({"code": "cancelled", "message": "stopped"})
    assert type(cancelled) is EagleError
    assert cancelled.fields == {"remote_code": "cancelled"}
    # A details key that is no keyword of the error (or is "message") cannot break the parse.
    odd = error_from_event({"code": "not_found", "message": "m", "details": {"message": "x"}})
    assert odd.message == "m" and odd.fields == {}
    assert error_from_event("broken").message == "broken"


def test_a_conflict_that_ends_soon_says_when_to_retry() -> None:
    from eagle_rag.errors import ConflictError

    soon = error_response(ConflictError("still undoing", job_id="t", retry_after=4))
    assert soon.status_code == 409 and soon.headers["Retry-After"] == "4"
    assert "Retry-After" not in error_response(ConflictError("the task completed")).headers
