"""Every failure the UI can be answered with has a Chinese name for its code."""

from __future__ import annotations

import eagle_rag.api.app  # noqa: F401  (defines, through its imports, every error class)
from eagle_rag import errors
from eagle_rag.web.i18n import EN, ZH

# Raised while settings and plugins load, before any request is served.
_AT_START = {
    "settings_error",
    "plugin_error",
    "plugin_load_error",
    "plugin_dependency_error",
    "plugin_validation_error",
    "mcp_tool_name_error",
}
# Raised inside a worker to stop an attempt, or inside the hook bus as a subscriber's failure
# (skipped, or the cause of a hook_invocation_error); never the answer to a request.
_IN_WORKERS = {"cancelled", "superseded", "hook_result_error", "hook_timeout_error"}
# The HTTP edge's own codes (eagle_rag/api/errors.py).
_EDGE = {"invalid_request", "method_not_allowed", "internal_error"}


def _codes(kind: type[errors.EagleError]) -> set[str]:
    """The codes of Eagle-RAG's own errors (a plugin's own codes are its to name: the UI shows
    the server's message for a code it has no name for)."""
    found = {kind.code} if kind.__module__.startswith("eagle_rag.") else set()
    for sub in kind.__subclasses__():
        found |= _codes(sub)
    return found


def test_every_error_code_a_request_can_meet_is_named_in_chinese() -> None:
    codes = (
        _codes(errors.EagleError) - {"eagle_error", "hook_error"} - _AT_START - _IN_WORKERS
    ) | _EDGE
    assert "unsupported_media_type" in codes and "backend_unavailable" in codes
    assert sorted(c for c in codes if f"err_{c}" not in ZH) == []


def test_english_names_no_code_twice() -> None:
    """In English the server's own message is the name; a catalog entry would say it twice."""
    assert [key for key in EN if key.startswith("err_")] == []
