"""Fetch a URL for ingest without becoming an SSRF proxy.

Only http(s). The host is resolved here and every address checked: link-local and cloud metadata
addresses, the shared space, multicast, reserved and unspecified ones are always refused, loopback
and private ones unless ``ingest.url_allow_private``. The request then goes to the checked
addresses in turn, with the original Host header and TLS server name, so DNS cannot answer
differently between the check and the connection; or, when the environment's proxy settings
cover the URL, to the proxy with the URL as given (see ``net_addresses``). Redirects are followed
by hand and each hop is checked again. The body streams under a size cap and a timeout.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from email.message import Message
from functools import partial
from pathlib import PurePosixPath
from urllib.parse import unquote, urljoin

import httpx

from eagle_rag.errors import InvalidInputError, UpstreamError
from eagle_rag.http_bodies import ACCEPT_ENCODING, read_capped
from eagle_rag.ingest.http_charset import as_declared_utf8
from eagle_rag.net_addresses import (
    CONNECT_FAILURES,
    Resolver,
    Route,
    address_refusal,
    checked_route,
    http_target,
    system_resolver,
)
from eagle_rag.settings import IngestSettings

_ACCEPT = {"Accept": "*/*", **ACCEPT_ENCODING}


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    data: bytes
    filename: str
    content_type: str | None


def fetch_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why URL ingest may not fetch from ``address`` (None when it may)."""
    reason = address_refusal(
        address, allow_private=allow_private, setting="ingest.url_allow_private"
    )
    return None if reason is None else f"refusing to fetch from {address}: {reason}"


def check_address(address: str, *, allow_private: bool) -> None:
    reason = fetch_refusal(address, allow_private=allow_private)
    if reason is not None:
        raise InvalidInputError(reason, address=address)


class UrlFetcher:
    def __init__(
        self,
        settings: IngestSettings,
        *,
        resolver: Resolver = system_resolver,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = settings
        self._resolve = resolver
        self._transport = transport

    def fetch(self, url: str) -> Fetched:
        """GET ``url`` (redirects checked hop by hop) within ``url_deadline_s`` overall: the
        per-read timeout alone lets a server that trickles bytes hold a request for ever."""
        current = url
        deadline = time.monotonic() + self._settings.url_deadline_s
        for _hop in range(self._settings.url_max_redirects + 1):
            self._check_deadline(url, deadline)
            response_url, response = self._request(current, deadline)
            if response is None:
                current = response_url
                continue
            return response
        raise InvalidInputError(
            f"too many redirects (more than {self._settings.url_max_redirects})", url=url
        )

    def _route(self, url: str) -> Route:
        """``url`` checked, resolved, every address checked, and routed."""
        target = http_target(url)
        addresses = self._resolve(target.host, target.port)
        refusal = partial(fetch_refusal, allow_private=self._settings.url_allow_private)
        return checked_route(target, addresses, refusal)

    def _request(self, url: str, deadline: float) -> tuple[str, Fetched | None]:
        route = self._route(url)
        transport = self._transport or httpx.HTTPTransport(proxy=route.proxy)
        try:
            with httpx.Client(
                timeout=self._settings.url_timeout_s,
                follow_redirects=False,
                transport=transport,
            ) as client:
                response = _open(client, route)
                try:
                    return self._answer(response, url, deadline)
                finally:
                    response.close()
        # The site the caller named did not answer: a 502 upstream_error. A 503 with Retry-After
        # said Eagle-RAG itself was down, and its health and retry logic read it so.
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"fetching {url[:200]} timed out", url=url[:200]) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(f"fetching {url[:200]} failed: {exc}", url=url[:200]) from exc
        except httpx.InvalidURL as exc:  # httpx reads a redirect's Location while it answers
            raise UpstreamError(
                f"fetching {url[:200]} failed: it redirected to a malformed URL ({exc})",
                url=url[:200],
            ) from exc

    def _answer(
        self, response: httpx.Response, url: str, deadline: float
    ) -> tuple[str, Fetched | None]:
        """The next hop's URL for a redirect, else the body read under the caps."""
        if response.is_redirect:
            return urljoin(url, response.headers.get("location", "")), None
        if response.status_code >= 400:
            raise InvalidInputError(f"the URL answered {response.status_code}", url=url[:200])
        data = as_declared_utf8(
            self._read_capped(response, url, deadline), response.headers.get("content-type")
        )
        path = httpx.URL(url).raw_path.decode("ascii").partition("?")[0]
        return url, Fetched(url, data, _filename(response, path), _ctype(response))

    def _check_deadline(self, url: str, deadline: float) -> None:
        if time.monotonic() > deadline:
            raise UpstreamError(
                f"fetching {url[:200]} took longer than {self._settings.url_deadline_s:g} s",
                url=url[:200],
                deadline_s=self._settings.url_deadline_s,
            )

    def _read_capped(self, response: httpx.Response, url: str, deadline: float) -> bytes:
        """The body under ``max_file_bytes`` after decompression (http_bodies)."""
        limit = self._settings.max_file_bytes
        return read_capped(
            response, limit, "the download", on_read=lambda: self._check_deadline(url, deadline)
        )


def _open(client: httpx.Client, route: Route) -> httpx.Response:
    """The response's head along ``route``: each checked address in turn until one connects."""
    requests = [
        client.build_request(
            "GET", url, headers={**_ACCEPT, **route.headers}, extensions=dict(route.extensions)
        )
        for url in route.urls
    ]
    for request in requests[:-1]:
        with contextlib.suppress(*CONNECT_FAILURES):
            return client.send(request, stream=True)
    return client.send(requests[-1], stream=True)


def _filename(response: httpx.Response, path: str) -> str:
    disposition = response.headers.get("content-disposition")
    if disposition:
        message = Message()
        message["content-disposition"] = disposition
        name = message.get_filename()
        if name:
            return PurePosixPath(name).name or "download"
    return PurePosixPath(unquote(path)).name or "download"


def _ctype(response: httpx.Response) -> str | None:
    value = response.headers.get("content-type")
    return value.split(";", 1)[0].strip() if value else None
