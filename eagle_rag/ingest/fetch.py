"""Fetch a URL for ingest without becoming an SSRF proxy.

Only http(s). The host is resolved here and every address checked: loopback, private,
link-local, multicast, reserved and unspecified addresses are refused (unless the settings allow
private targets, for tests). The request then goes to the checked address itself, with the
original Host header and TLS server name, so DNS cannot answer differently between the check and
the connection. Redirects are followed by hand and each hop is checked again. The body streams
under a size cap and a timeout.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass
from email.message import Message
from pathlib import PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

import httpx

from eagle_rag.errors import InvalidInputError, PayloadTooLargeError, UpstreamError
from eagle_rag.net_addresses import (
    Resolver,
    embedded_ipv4,
    non_public,
    pinned_url,
    system_resolver,
)
from eagle_rag.settings import IngestSettings


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    data: bytes
    filename: str
    content_type: str | None


def check_address(address: str, *, allow_private: bool) -> None:
    ip = ipaddress.ip_address(address)
    if not allow_private and any(non_public(a) for a in (ip, *embedded_ipv4(ip))):
        raise InvalidInputError(
            f"refusing to fetch from {address}: private, loopback and link-local addresses "
            "are not allowed",
            address=address,
        )


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
        with httpx.Client(
            timeout=self._settings.url_timeout_s, follow_redirects=False, transport=self._transport
        ) as client:
            for _hop in range(self._settings.url_max_redirects + 1):
                self._check_deadline(url, deadline)
                response_url, response = self._request(client, current, deadline)
                if response is None:
                    current = response_url
                    continue
                return response
        raise InvalidInputError(
            f"too many redirects (more than {self._settings.url_max_redirects})", url=url
        )

    def _request(
        self, client: httpx.Client, url: str, deadline: float
    ) -> tuple[str, Fetched | None]:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInputError("only http and https URLs can be ingested", url=url[:200])
        if parts.username or parts.password:
            raise InvalidInputError("URLs with credentials are refused", url=parts.hostname)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = self._resolve(parts.hostname, port)
        if not addresses:
            raise InvalidInputError(f"host {parts.hostname!r} has no address")
        for address in addresses:
            check_address(address, allow_private=self._settings.url_allow_private)
        pinned = pinned_url(parts, addresses[0], port)
        headers = {"Host": parts.netloc.rsplit("@", 1)[-1], "Accept": "*/*"}
        try:
            with client.stream(
                "GET", pinned, headers=headers, extensions={"sni_hostname": parts.hostname}
            ) as response:
                if response.is_redirect:
                    location = response.headers.get("location", "")
                    return urljoin(url, location), None
                if response.status_code >= 400:
                    raise InvalidInputError(
                        f"the URL answered {response.status_code}", url=url[:200]
                    )
                data = self._read_capped(response, url, deadline)
                return url, Fetched(url, data, _filename(response, parts.path), _ctype(response))
        # The site the caller named did not answer: a 502 upstream_error. A 503 with Retry-After
        # said Eagle-RAG itself was down, and its health and retry logic read it so.
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"fetching {url[:200]} timed out", url=url[:200]) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(f"fetching {url[:200]} failed: {exc}", url=url[:200]) from exc

    def _check_deadline(self, url: str, deadline: float) -> None:
        if time.monotonic() > deadline:
            raise UpstreamError(
                f"fetching {url[:200]} took longer than {self._settings.url_deadline_s:g} s",
                url=url[:200],
                deadline_s=self._settings.url_deadline_s,
            )

    def _read_capped(self, response: httpx.Response, url: str, deadline: float) -> bytes:
        limit = self._settings.max_file_bytes
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLargeError(f"the download is larger than {limit} bytes", url=url[:200])
        chunks, total = [], 0
        for chunk in response.iter_bytes():
            self._check_deadline(url, deadline)
            total += len(chunk)
            if total > limit:
                raise PayloadTooLargeError(
                    f"the download is larger than {limit} bytes", url=url[:200]
                )
            chunks.append(chunk)
        return b"".join(chunks)


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
