"""Where an outbound request may go: the URL's host, its addresses and their classes, and the
route a checked request takes.

Shared by URL ingest (``ingest/fetch.py``) and the bridged engines (``engines/bridge_guard.py``):
each applies its own policy on top of these classes. Both read the URL with httpx's own parser
(:func:`http_target`), resolve the host themselves, check every address, then connect to a
checked address with the original Host header and TLS server name (:func:`checked_route`), so DNS
cannot answer differently between the check and the connection. When the environment's proxy
settings cover the URL, the request goes to the proxy with the URL as given instead: the proxy
resolves the name, and pinning would defeat both its TLS tunnel and ``NO_PROXY``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.request import (  # type: ignore[attr-defined]  # not in typeshed, in CPython since 2.x
    getproxies_environment,
    proxy_bypass_environment,
)

import httpx

from eagle_rag.errors import InvalidInputError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
# Why an address is refused (None when it is not): each caller's policy.
Refusal = Callable[[str], str | None]

# 100.64.0.0/10 (carrier-grade NAT) is where Alibaba Cloud serves instance metadata
# (100.100.100.200); AWS serves it over IPv6 at fd00:ec2::254 inside a private range, and
# Azure's WireServer (168.63.129.16, which hands VMs their configuration) is a public address.
SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    {ipaddress.IPv6Address("fd00:ec2::254"), ipaddress.IPv4Address("168.63.129.16")}
)
# Failures before a byte was sent: the next checked address may still answer (a dual-stack name
# on a host without IPv6 egress).
CONNECT_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout)
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True)
class HttpTarget:
    """An http(s) URL as httpx reads it, with its host in the IDNA (punycode) form that is
    resolved, sent as the Host header and TLS server name, and matched against allowlists."""

    url: httpx.URL
    host: str
    port: int

    @property
    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")


@dataclass(frozen=True, slots=True)
class Route:
    """How a checked request goes out: ``urls`` tried in turn while the connection fails (one per
    checked address, in the resolver's order) with ``headers`` and ``extensions`` keeping the
    URL's name; or the URL alone through ``proxy``, the environment's (None: direct)."""

    urls: tuple[str, ...]
    headers: Mapping[str, str] = field(default_factory=dict)
    extensions: Mapping[str, Any] = field(default_factory=dict)
    proxy: str | None = None


def http_target(url: str) -> HttpTarget:
    """``url`` read as httpx reads it: an InvalidInputError naming the URL unless it is http(s)
    without credentials, with a valid host name or IP literal and a port in 1..65535."""
    shown = repr(url[:200])
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise InvalidInputError(f"{shown} is not a valid URL: {exc}", url=url[:200]) from None
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise InvalidInputError(f"{shown} is not an http or https URL", url=url[:200])
    if parsed.userinfo:
        raise InvalidInputError("credentials in the URL are refused", url=parsed.host)
    port = parsed.port if parsed.port is not None else (443 if parsed.scheme == "https" else 80)
    if not 0 < port < 65536:
        raise InvalidInputError(f"{shown} has no valid port", url=url[:200])
    host = parsed.raw_host.decode("ascii").lower()
    if not _ip_literal(host) and not _valid_name(host):
        raise InvalidInputError(f"{shown} has no valid host name", url=url[:200])
    return HttpTarget(parsed, host, port)


def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver, in its order (it puts first what this
    machine can reach, RFC 6724) and without repeats."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InvalidInputError(f"cannot resolve host {host!r}: {exc}", host=host) from exc
    except UnicodeError as exc:  # an empty or over-long label, refused by the idna codec
        raise InvalidInputError(f"{host!r} is not a valid host name: {exc}", host=host) from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def environment_proxy(target: HttpTarget, proxies: Mapping[str, str] | None = None) -> str | None:
    """The proxy ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` name for the URL, None when there
    is none or ``NO_PROXY`` exempts its host (urllib's reading, which httpx's follows)."""
    found = getproxies_environment() if proxies is None else dict(proxies)
    proxy = found.get(target.url.scheme) or found.get("all")
    if not proxy:
        return None
    names = (target.host, f"{target.host}:{target.port}")
    if any(proxy_bypass_environment(name, found) for name in names):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def checked_route(
    target: HttpTarget,
    addresses: Sequence[str],
    refusal: Refusal,
    *,
    proxies: Mapping[str, str] | None = None,
) -> Route:
    """The route for ``target`` once every one of its addresses passes ``refusal`` (an
    InvalidInputError with the first reason otherwise), proxied or pinned to those addresses."""
    if not addresses:
        raise InvalidInputError(f"host {target.host!r} has no address", host=target.host)
    for address in addresses:
        reason = refusal(address)
        if reason is not None:
            raise InvalidInputError(reason, address=address)
    proxy = environment_proxy(target, proxies)
    if proxy is not None:
        return Route((str(target.url.copy_with(fragment=None)),), proxy=proxy)
    return Route(
        tuple(str(target.url.copy_with(host=a, fragment=None)) for a in addresses),
        headers={"Host": target.host_header},
        extensions={"sni_hostname": target.host},
    )


def address_refusal(address: str, *, allow_private: bool, setting: str) -> str | None:
    """Why ``address`` may not be called (None when it may): never an unroutable one, a private
    or loopback one only when ``allow_private``; the IPv4 addresses an IPv6 one carries (mapped,
    6to4, Teredo) are judged as well. ``setting`` names what allows private addresses."""
    ip = ipaddress.ip_address(address)
    for candidate in (ip, *embedded_ipv4(ip)):
        reason = unroutable_reason(candidate)
        if reason is None and not allow_private and non_public(candidate):
            reason = f"a private or loopback address ({setting} is false)"
        if reason is not None:
            shown = f"{address} ({candidate})" if candidate != ip else address
            return f"{shown} is {reason}"
    return None


def non_public(ip: IPAddress) -> bool:
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


def embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 one carries (mapped, 6to4, Teredo client): a relay or a dual
    stack may deliver to them, so they are checked as well."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    teredo = ip.teredo[1] if ip.teredo else None
    return [a for a in (ip.ipv4_mapped, ip.sixtofour, teredo) if a is not None]


def unroutable_reason(ip: IPAddress) -> str | None:
    """Why no service Eagle-RAG talks to can live at ``ip`` (None when one can): link-local
    and metadata addresses, the shared space, multicast, broadcast, reserved, unspecified.
    Loopback and private addresses are not among them: a LAN service is a normal target."""
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_link_local:
        return "a link-local address (cloud instance metadata lives there)"
    if isinstance(ip, ipaddress.IPv4Address) and ip in SHARED_ADDRESS_SPACE:
        return "in the shared address space 100.64.0.0/10 (cloud metadata lives there)"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    # IPv6's reserved ::/8 holds the loopback ::1 and the IPv4-mapped block, whose embedded
    # address is checked on its own.
    mapped = isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None
    if ip.is_reserved and not ip.is_loopback and not mapped:
        return "a reserved or broadcast address"
    return None


def normal_host(host: str) -> str:
    """A host name lower-cased in its IDNA form without its final dot, or an IP literal in its
    canonical form (``0:0::1`` and ``::1`` are one host; ``bücher.de`` is ``xn--bcher-kva.de``)."""
    host = host.strip().strip("[]").lower().rstrip(".")
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        pass
    if host.isascii():
        return host
    try:  # the IDNA form, as http_target reads a URL's host
        return httpx.URL(scheme="http", host=host).raw_host.decode("ascii").rstrip(".")
    except (httpx.InvalidURL, ValueError):
        return host


def host_entry(text: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, an IP literal, or ``[v6]:port`` as (normal host, port or None)."""
    entry = text.strip()
    host, port = entry, ""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else rest
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    if not host or "/" in host or "@" in host or (port and not port.isdigit()):
        raise InvalidInputError(f"{text!r} is not a host, host:port or IP literal", entry=text)
    number = int(port) if port else None
    if number is not None and not 0 < number < 65536:
        raise InvalidInputError(f"{text!r} has no valid port", entry=text)
    return normal_host(host), number


def _ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _valid_name(host: str) -> bool:
    """Labels of 1 to 63 letters, digits, ``-`` or ``_``, at most 253 characters in all: what the
    resolver accepts (its idna codec raises on anything else)."""
    name = host.removesuffix(".")
    labels = name.split(".")
    return (
        0 < len(name) <= 253
        and all(0 < len(label) <= 63 for label in labels)
        and set(name) <= _NAME_CHARACTERS | {"."}
    )
