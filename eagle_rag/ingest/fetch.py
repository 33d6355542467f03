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
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from pathlib import PurePosixPath
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit

import httpx

from eagle_rag.errors import InvalidInputError, PayloadTooLargeError, UpstreamError
from eagle_rag.settings import IngestSettings

Resolver = Callable[[str, int], list[str]]


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    data: bytes
    filename: str
    content_type: str | None


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InvalidInputError(f"cannot resolve host {host!r}: {exc}", host=host) from exc
    return sorted({str(info[4][0]) for info in infos})


def check_address(address: str, *, allow_private: bool) -> None:
    ip = ipaddress.ip_address(address)
    if not allow_private and any(_non_public(a) for a in (ip, *_embedded_ipv4(ip))):
        raise InvalidInputError(
            f"refusing to fetch from {address}: private, loopback and link-local addresses "
            "are not allowed",
            address=address,
        )


def _non_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Not a global unicast address. ``is_global`` is what catches the shared address space
    100.64.0.0/10, where clouds (Alibaba's 100.100.100.200) serve instance metadata and which
    ``is_private`` leaves out."""
    return (
        not ip.is_global
        or ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def _embedded_ipv4(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 one carries (mapped, 6to4, Teredo client): a relay or a dual
    stack may deliver to them, so they are checked as well."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    teredo = ip.teredo[1] if ip.teredo else None
    return [a for a in (ip.ipv4_mapped, ip.sixtofour, teredo) if a is not None]


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
        pinned = _with_host(parts, addresses[0], port)
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


def _with_host(parts: SplitResult, address: str, port: int) -> str:
    """The same URL aimed at the checked address (the Host header keeps the name)."""
    host = f"[{address}]" if ":" in address else address
    return urlunsplit((parts.scheme, f"{host}:{port}", parts.path or "/", parts.query, ""))


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
