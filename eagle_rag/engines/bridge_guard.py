"""Where a bridged engine may call: a KB's ``base_url`` is supplied by whoever creates the KB and
called from this server, so it must not reach cloud metadata or, where the settings say so,
private services.

Checked when the KB is created and again on every call (DNS may answer differently later): the
scheme is http(s), there is no userinfo, the host is one ``engines.bridge_hosts`` lists (when it
lists any), and every address the host resolves to passes :func:`address_refusal`. The call then
goes to the checked address itself, with the original Host header and TLS server name.
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from eagle_rag.errors import BackendUnavailableError, InvalidInputError
from eagle_rag.net_addresses import (
    Resolver,
    embedded_ipv4,
    host_entry,
    non_public,
    normal_host,
    pinned_url,
    system_resolver,
    unroutable_reason,
)
from eagle_rag.settings import EngineSettings

FIELD = "base_url"


@dataclass(frozen=True, slots=True)
class PinnedRequest:
    """A bridge call aimed at a checked address: the URL to connect to, the Host header and the
    TLS server name that keep the name the KB gave."""

    url: str
    host_header: str
    server_name: str


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why a bridge may not call ``address`` (None when it may); the IPv4 addresses an IPv6 one
    carries (mapped, 6to4, Teredo) are judged as well."""
    ip = ipaddress.ip_address(address)
    for candidate in (ip, *embedded_ipv4(ip)):
        reason = unroutable_reason(candidate)
        if reason is None and not allow_private and non_public(candidate):
            reason = "a private or loopback address (engines.bridge_private is false)"
        if reason is not None:
            shown = f"{address} ({candidate})" if candidate != ip else address
            return f"{shown} is {reason}"
    return None


@dataclass(frozen=True, slots=True)
class BridgePolicy:
    """``engines.*`` as a check of one URL: the hosts allowed (empty: any) and whether private
    and loopback addresses are."""

    hosts: tuple[tuple[str, int | None], ...] = ()
    allow_private: bool = True

    @classmethod
    def from_settings(cls, settings: EngineSettings) -> BridgePolicy:
        hosts = tuple(host_entry(entry) for entry in settings.bridge_hosts)
        return cls(hosts=hosts, allow_private=settings.bridge_private)

    def check_url(self, url: str) -> tuple[SplitResult, int]:
        """The URL's parts and port, once its scheme, userinfo and host pass (no resolution)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _refused(f"{url[:200]!r} is not an http or https URL")
        if parts.username is not None or parts.password is not None:
            raise _refused("credentials in the URL are refused (the api_key field holds the key)")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise _refused(f"{url[:200]!r} has no valid port") from None
        host = normal_host(parts.hostname)
        if self.hosts and not any(h == host and p in (None, port) for h, p in self.hosts):
            raise _refused(f"host {host}:{port} is not in engines.bridge_hosts")
        return parts, port

    def check_addresses(self, addresses: list[str]) -> None:
        if not addresses:
            raise _refused("the host has no address")
        for address in addresses:
            reason = address_refusal(address, allow_private=self.allow_private)
            if reason is not None:
                raise _refused(reason)


class BridgeGuard:
    """A policy and a resolver: checks a KB's base_url and pins each call to a checked address."""

    def __init__(self, policy: BridgePolicy, resolver: Resolver = system_resolver) -> None:
        self.policy = policy
        self._resolve = resolver

    async def check(self, service: str, url: str) -> None:
        """The KB's ``base_url`` passes now: a 400 naming base_url and the reason if not."""
        await self.pin(service, url)

    async def pin(self, service: str, url: str) -> PinnedRequest:
        """``url`` checked, resolved, every address checked, and aimed at the first of them."""
        parts, port = self.policy.check_url(url)
        hostname = parts.hostname or ""
        try:
            addresses = await asyncio.to_thread(self._resolve, hostname, port)
        except InvalidInputError as exc:
            raise BackendUnavailableError(
                f"{service} is unreachable: {exc.message}", backend=service
            ) from exc
        self.policy.check_addresses(addresses)
        return PinnedRequest(
            pinned_url(parts, addresses[0], port),
            host_header=parts.netloc,
            server_name=hostname,
        )


def _refused(reason: str) -> InvalidInputError:
    return InvalidInputError(f"{FIELD} refused: {reason}", field=FIELD)
