"""What every bridge shares: an async HTTP call with a timeout and errors that say which
service failed and why (refused, unreachable, timed out, or answered something malformed)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from eagle_rag.engines.bridge_guard import BridgeGuard, BridgePolicy
from eagle_rag.engines.schema import SchemaItem
from eagle_rag.errors import (
    BackendUnavailableError,
    InvalidInputError,
    PayloadTooLargeError,
    UpstreamError,
)
from eagle_rag.http_bodies import ACCEPT_ENCODING, aread_capped
from eagle_rag.net_addresses import CONNECT_FAILURES, Route
from eagle_rag.plugins.payloads import RetrievedHit

ECHO_MAX_CHARS = 200  # of a refusing answer's body, in the error: enough for an operator
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # a retrieval answer is kilobytes; a bomb is gigabytes
# A dataset id as every bridged service makes them (Dify and RAGFlow UUIDs, FastGPT ObjectIds):
# one URL path segment, so a '/' or '..' in it cannot move a call to another endpoint.
DATASET_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# Headers of the body as sent, which no longer describe it once it is decoded.
_RE_ENCODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class BridgeClient:
    """One KB's connection to its service: every call checked by the guard and sent along its
    route (the checked addresses in turn, or the environment's proxy); no redirect is followed."""

    def __init__(
        self,
        service: str,
        base_url: str,
        api_key: str,
        *,
        guard: BridgeGuard,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.service = service
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._guard = guard
        self._timeout = timeout_s
        self._transport = transport

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: Any = None,
        files: Any = None,
        params: Any = None,
    ) -> Any:
        route = await self._guard.route(self.service, self._base + path)
        try:
            response = await self._send(
                route, method, json=json, data=data, files=files, params=params
            )
        except httpx.TimeoutException as exc:
            raise BackendUnavailableError(
                f"{self.service} did not answer within {self._timeout:g} s", backend=self.service
            ) from exc
        except (
            httpx.LocalProtocolError,
            UnicodeEncodeError,
        ) as exc:  # ours: its text quotes the key
            raise InvalidInputError(
                f"{self.service} cannot be called with these creation_settings: a header value "
                "(the api_key) holds a character HTTP does not allow",
                backend=self.service,
            ) from exc
        except httpx.InvalidURL as exc:  # httpx reads a redirect's Location while it answers
            raise UpstreamError(
                f"{self.service} answered a redirect to a malformed URL", backend=self.service
            ) from exc
        except httpx.HTTPError as exc:
            raise BackendUnavailableError(
                f"{self.service} is unreachable: {exc}", backend=self.service
            ) from exc
        return self._body(response)

    async def _send(self, route: Route, method: str, **request: Any) -> httpx.Response:
        """The request along ``route``: each checked address in turn until one connects; the
        answer read under ``MAX_ANSWER_BYTES`` after decompression (http_bodies)."""
        transport = self._transport or httpx.AsyncHTTPTransport(proxy=route.proxy)
        async with httpx.AsyncClient(
            timeout=self._timeout,
            headers={**self._headers, **ACCEPT_ENCODING},
            transport=transport,
            follow_redirects=False,
        ) as client:
            sent = [
                client.build_request(
                    method, url, headers=route.headers, extensions=route.extensions, **request
                )
                for url in route.urls
            ]
            for attempt in sent[:-1]:
                with contextlib.suppress(*CONNECT_FAILURES):
                    return await self._read(client, attempt)
            return await self._read(client, sent[-1])

    async def _read(self, client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
        response = await client.send(request, stream=True)
        try:
            content = await aread_capped(response, MAX_ANSWER_BYTES, f"{self.service}'s answer")
        except PayloadTooLargeError as exc:  # the service's fault, not the caller's: a 502
            raise UpstreamError(exc.message, service=self.service) from exc
        finally:
            await response.aclose()
        decoded = [
            (k, v) for k, v in response.headers.multi_items() if k.lower() not in _RE_ENCODED
        ]
        return httpx.Response(response.status_code, headers=decoded, content=content)

    def _body(self, response: httpx.Response) -> Any:
        if response.status_code in (401, 403):
            raise UpstreamError(
                f"{self.service} refused the API key ({response.status_code})",
                service=self.service,
                status=response.status_code,
            )
        if response.is_redirect:
            # Not followed: it could lead anywhere the guard did not check.
            raise UpstreamError(
                f"{self.service} answered a redirect ({response.status_code}), not followed",
                service=self.service,
                status=response.status_code,
            )
        if response.status_code >= 400:
            raise UpstreamError(
                f"{self.service} refused the request ({response.status_code}): "
                f"{echo(response.text)}",
                service=self.service,
                status=response.status_code,
            )
        if response.status_code == 204 or not response.content:
            return {}
        try:
            return response.json()
        except ValueError as exc:
            raise UpstreamError(f"{self.service} answered with something that is not JSON") from exc

    def malformed(self, reason: object) -> UpstreamError:
        return UpstreamError(
            f"{self.service} answered a malformed body: {reason}", service=self.service
        )


def echo(text: object) -> str:
    """A remote answer quoted in an error: one line, at most ECHO_MAX_CHARS. Enough to tell an
    operator what the service said, too little to read an internal page back through it."""
    printable = "".join(c if c.isprintable() else " " for c in str(text))
    line = " ".join(printable.split())
    if len(line) <= ECHO_MAX_CHARS:
        return line
    return line[: ECHO_MAX_CHARS - 1] + "…"


def setting(settings: Mapping[str, Any], name: str) -> str:
    return str(settings.get(name) or "")


def path_segment(value: str) -> str:
    """``value`` as exactly one URL path segment: '/', '?', '#', '%' and the rest escaped. An
    empty, '.' or '..' segment would be resolved away by the URL, so it is refused."""
    if value in ("", ".", ".."):
        raise InvalidInputError(f"{value!r} is not a usable URL path segment")
    return quote(value, safe="")


def check_dataset_id(settings: Mapping[str, Any]) -> None:
    """Refuse a ``dataset_id`` that is not one plain path segment (DATASET_ID)."""
    if not DATASET_ID.fullmatch(setting(settings, "dataset_id")):
        raise InvalidInputError(
            "creation_settings: dataset_id must be 1 to 128 letters, digits, '-' or '_' "
            "(the service's dataset id, as it shows it)",
            field="dataset_id",
        )


def check_api_key(settings: Mapping[str, Any]) -> None:
    """Refuse an ``api_key`` no HTTP header can carry: a line break or other control character
    (a key pasted with its newline) was sent, refused by HTTP itself and reported as the service
    being unreachable, the key quoted; a non-ASCII one (a zero-width space) was a 500."""
    key = setting(settings, "api_key")
    if not key.isascii() or any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise InvalidInputError(
            "creation_settings: api_key holds a line break, a control character or a "
            "character outside ASCII (pasted with a newline?)",
            field="api_key",
        )


def connection_schema(service: str, default_url: str | None = None) -> tuple[SchemaItem, ...]:
    """What every bridge asks when a KB is created: where the service is, a key, a dataset."""
    return (
        SchemaItem(
            "base_url",
            "string",
            {"en_US": f"{service} base URL", "zh_Hans": f"{service} 地址"},
            required=True,
            default=default_url,
        ),
        SchemaItem("api_key", "secret", {"en_US": "API key", "zh_Hans": "API 密钥"}, required=True),
        SchemaItem(
            "dataset_id", "string", {"en_US": "Dataset id", "zh_Hans": "知识库 ID"}, required=True
        ),
    )


class BridgeEngine:
    """What the bridges share: a client per KB's settings, and the body's own success code.

    Some services answer errors with HTTP 200 and a code in the body (RAGFlow ``code != 0``,
    FastGPT ``code != 200``); ``ok_code`` names the success code to check, None for none.
    """

    name = ""
    service = ""
    ok_code: int | None = None

    def __init__(
        self,
        *,
        guard: BridgeGuard | None = None,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        # No guard given: the defaults of ``engines.*`` (private and loopback allowed).
        self._guard = guard or BridgeGuard(BridgePolicy())
        self._timeout = timeout_s
        self._transport = transport

    async def check_creation_settings(self, settings: Mapping[str, Any]) -> None:
        """Refuse a ``dataset_id`` that is not one plain path segment, an ``api_key`` no header
        can carry and a ``base_url`` the guard would refuse, before the KB is stored or called."""
        check_dataset_id(settings)
        check_api_key(settings)
        await self._guard.check(self.service, setting(settings, "base_url"))

    def _client(self, settings: Mapping[str, Any]) -> BridgeClient:
        return BridgeClient(
            self.service,
            setting(settings, "base_url"),
            setting(settings, "api_key"),
            guard=self._guard,
            timeout_s=self._timeout,
            transport=self._transport,
        )

    async def _call(self, settings: Mapping[str, Any], method: str, path: str, **kw: Any) -> Any:
        client = self._client(settings)
        body = await client.call(method, path, **kw)
        if self.ok_code is None:
            return body
        if not isinstance(body, dict) or "code" not in body:
            raise client.malformed("no code in the answer")
        if body["code"] != self.ok_code:
            message = body.get("message") or body.get("statusText", "")
            raise UpstreamError(
                f"{self.service} refused the request ({echo(body['code'])}): {echo(message)}",
                service=self.service,
            )
        return body

    def _malformed(self, settings: Mapping[str, Any], reason: object) -> UpstreamError:
        return self._client(settings).malformed(reason)

    def _hit(
        self,
        kb_name: str,
        remote_id: object,
        *,
        document_id: object,
        text: str,
        filename: str,
        score: float,
        **metadata: Any,
    ) -> RetrievedHit:
        """A remote chunk as a hit: ids prefixed with the engine (``dify:<id>``) so they never
        collide with native chunks, the service's score under the engine's name, and the
        document's name as its path and filename."""
        chunk_id = f"{self.name}:{remote_id}"
        return RetrievedHit(
            chunk_id=chunk_id,
            collection=self.name,
            document_id=str(document_id or ""),
            kb_name=kb_name,
            text=text,
            path=filename,
            score=score,
            scores={self.name: score},
            source_chunk_id=chunk_id,
            metadata={"type": "text", "engine": self.name, "filename": filename, **metadata},
        )
