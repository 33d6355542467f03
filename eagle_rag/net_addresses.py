"""Where an outbound request may go: host resolution, address classes, and the URL pinned to a
checked address.

Shared by URL ingest (``ingest/fetch.py``) and the bridged engines (``engines/bridge_guard.py``):
each applies its own policy on top of these classes. Both resolve the host themselves, check
every address, then connect to the checked address with the original Host header and TLS server
name, so DNS cannot answer differently between the check and the connection.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlunsplit

from eagle_rag.errors import InvalidInputError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

# 100.64.0.0/10 (carrier-grade NAT) is where Alibaba Cloud serves instance metadata
# (100.100.100.200); AWS serves it over IPv6 at fd00:ec2::254 inside a private range.
SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
METADATA_ADDRESSES = frozenset({ipaddress.IPv6Address("fd00:ec2::254")})


def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver, sorted and without repeats."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InvalidInputError(f"cannot resolve host {host!r}: {exc}", host=host) from exc
    return sorted({str(info[4][0]) for info in infos})


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


def pinned_url(parts: SplitResult, address: str, port: int) -> str:
    """The same URL aimed at the checked address (the Host header keeps the name)."""
    host = f"[{address}]" if ":" in address else address
    return urlunsplit((parts.scheme, f"{host}:{port}", parts.path or "/", parts.query, ""))


def normal_host(host: str) -> str:
    """A host name lower-cased without its final dot, or an IP literal in its canonical form
    (``0:0::1`` and ``::1`` are one host)."""
    host = host.strip().strip("[]").lower().rstrip(".")
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
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
