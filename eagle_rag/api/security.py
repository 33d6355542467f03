"""Who is calling: API keys (bearer), per-key KB scope, namespace checks and rate limits.

With no keys configured the API is open (the embedded default listens on 127.0.0.1). With keys,
every REST and MCP request needs ``Authorization: Bearer <key>``; a key may be limited to some
knowledge bases: naming another one is a 403, and the id of a document, task, image or session
in another one is a 404, as if it did not exist (a 403 would confirm the id and name its KB).
A request naming another namespace (the ``X-Eagle-Namespace`` header) is a 403. Rate limits are
a token bucket per key (or per client address when the API is open).
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from eagle_rag.db.namespace import resolve_namespace
from eagle_rag.errors import AuthenticationError, PermissionDeniedError, RateLimitedError
from eagle_rag.settings import Settings

NAMESPACE_HEADER = "x-eagle-namespace"
NAMESPACE_FIELD = "plugin_namespace"  # the seeds' name, in query strings and JSON bodies
MAX_BUCKETS = 10_000


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller: a key name (or ``anonymous``) and its KBs (None: all)."""

    name: str
    kb_names: frozenset[str] | None = None

    def check_kb(self, kb_name: str) -> None:
        if self.kb_names is not None and kb_name not in self.kb_names:
            raise PermissionDeniedError(
                f"this API key may not use knowledge base {kb_name!r}", kb_name=kb_name
            )

    def check_kbs(self, kb_names: Iterable[str]) -> None:
        for name in kb_names:
            self.check_kb(name)

    def scope(self, requested: Iterable[str]) -> tuple[str, ...] | None:
        """The KBs a search may read: those requested (each checked), else the key's own, else
        None for every KB of the namespace. A key restricted to no KB at all is refused."""
        names = tuple(dict.fromkeys(requested))
        self.check_kbs(names)
        if names:
            return names
        if self.kb_names is None:
            return None
        if not self.kb_names:
            raise PermissionDeniedError("this API key may use no knowledge base")
        return tuple(sorted(self.kb_names))


class RateLimiter:
    """A token bucket per caller: ``per_minute`` requests, refilled continuously."""

    def __init__(self, per_minute: int, clock: object = time.monotonic) -> None:
        self._rate = per_minute / 60.0
        self._capacity = float(per_minute)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, who: str) -> None:
        if self._capacity <= 0:
            return
        now = self._clock()  # type: ignore[operator]
        with self._lock:
            tokens, last = self._buckets.get(who, (self._capacity, now))
            tokens = min(self._capacity, tokens + (now - last) * self._rate)
            if tokens < 1:
                wait = int((1 - tokens) / self._rate) + 1
                raise RateLimitedError(
                    f"rate limit of {int(self._capacity)} requests per minute exceeded",
                    retry_after=wait,
                )
            self._buckets[who] = (tokens - 1, now)
            if len(self._buckets) > MAX_BUCKETS:
                self._forget_idle(now)

    def _forget_idle(self, now: float) -> None:
        """Drop callers whose bucket has refilled: they are as if never seen (bounded memory)."""
        full = self._capacity / self._rate
        self._buckets = {
            who: (tokens, last)
            for who, (tokens, last) in self._buckets.items()
            if now - last < full
        }


class Gatekeeper:
    """Authenticates a request from its headers, then applies namespace and rate checks."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._keys = [
            (k.key.get_secret_value().encode(), Caller(k.name, frozenset(k.kb_names) or None))
            for k in settings.server.api_keys
        ]
        self._limiter = RateLimiter(settings.server.rate_limit_per_minute)

    @property
    def open(self) -> bool:
        return not self._keys

    def admit(self, authorization: str | None, namespace: str | None, client: str | None) -> Caller:
        caller = self.authenticate(authorization, client=client)
        resolve_namespace(namespace, self._settings.plugins)
        self._limiter.check(caller.name if caller.name != "anonymous" else f"ip:{client}")
        return caller

    def check_namespace(self, requested: str | None) -> None:
        """Refuse (NamespaceError, a 403) a request that names another namespace."""
        resolve_namespace(requested, self._settings.plugins)

    def authenticate(self, authorization: str | None, *, client: str | None = None) -> Caller:
        """The caller a bearer key names (no namespace or rate checks: see ``admit``). A refused
        key costs ``client``'s address a request of its rate limit, so keys cannot be guessed
        faster than the limit lets any caller call (RateLimitedError once it is spent)."""
        if self.open:
            return Caller("anonymous")
        try:
            return self._known(authorization)
        except AuthenticationError:
            if client is not None:
                self._limiter.check(f"ip:{client}")
            raise

    def _known(self, authorization: str | None) -> Caller:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError("an API key is required: send Authorization: Bearer <key>")
        presented = token.strip().encode()
        for key, caller in self._keys:
            if hmac.compare_digest(key, presented):  # constant time: no key oracle
                return caller
        raise AuthenticationError("unknown API key")
