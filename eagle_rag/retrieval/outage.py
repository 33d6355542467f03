"""When a search failed because a backend is down, not because of what was asked.

A plan's searches fail for two kinds of reason: a backend did not answer (Milvus, the embedder
endpoint: a :class:`BackendUnavailableError`, often wrapped by the hook bus in a
``HookInvocationError``), or something else went wrong. When every source of hits failed for
the first kind, the search as a whole is an outage: the caller gets a 503 naming the backends
and a Retry-After, not a 200 with nothing in it.
"""

from __future__ import annotations

from collections.abc import Sequence

from eagle_rag.errors import BackendUnavailableError, describe

# How deep the cause chain is followed: hook bus and retries wrap a cause once or twice.
MAX_CAUSE_DEPTH = 8


def backend_outage(exc: BaseException) -> BackendUnavailableError | None:
    """The BackendUnavailableError behind ``exc`` (itself or a cause), or None."""
    current: BaseException | None = exc
    for _ in range(MAX_CAUSE_DEPTH):
        if current is None:
            return None
        if isinstance(current, BackendUnavailableError):
            return current
        current = current.__cause__ or current.__context__
    return None


def total_outage(failures: Sequence[BaseException]) -> BackendUnavailableError | None:
    """One 503 error for a search whose every source failed, when each failure was an outage.

    ``details.backend`` names the first backend (``milvus``, ``embedding``...), ``backends``
    all of them; None when there was no failure or one of them was not an outage.
    """
    outages = [backend_outage(f) for f in failures]
    if not outages or any(o is None for o in outages):
        return None
    found = [o for o in outages if o is not None]
    backends = sorted({str(o.fields.get("backend", "unknown")) for o in found})
    first = str(found[0].fields.get("backend", "unknown"))
    reasons = "; ".join(dict.fromkeys(describe(o) for o in found))
    return BackendUnavailableError(
        f"retrieval is unavailable: every search failed ({reasons})",
        backend=first,
        backends=backends,
    )
