"""Where a bridged engine may call: a KB's ``base_url`` is supplied by whoever creates the KB and
called from this server, so it must not reach cloud metadata or, where the settings say so,
private services.

Checked when the KB is created and again on every call (DNS may answer differently later): the
scheme is http(s), there is no userinfo, the host is one ``engines.bridge_hosts`` lists (when it
lists any), and every address the host resolves to passes :func:`address_refusal`. The call then
goes to the checked addresses in turn, with the original Host header and TLS server name, or,
when the environment's proxy settings cover the URL, to the proxy with the URL as given
(:func:`eagle_rag.net_addresses.checked_route`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial

from eagle_rag import net_addresses
from eagle_rag.errors import BackendUnavailableError, InvalidInputError
from eagle_rag.net_addresses import (
    HttpTarget,
    Resolver,
    Route,
    checked_route,
    host_entry,
    http_target,
    normal_host,
    system_resolver,
)
from eagle_rag.settings import EngineSettings

FIELD = "base_url"


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why a bridge may not call ``address`` (None when it may)."""
    return net_addresses.address_refusal(
        address, allow_private=allow_private, setting="engines.bridge_private"
    )


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

    def check_url(self, url: str) -> HttpTarget:
        """The URL read for a call, once its scheme, userinfo, host and port pass (no
        resolution); host names are compared in their IDNA form."""
        try:
            target = http_target(url)
        except InvalidInputError as exc:
            raise _refused(exc.message) from None
        host, port = normal_host(target.host), target.port
        if self.hosts and not any(h == host and p in (None, port) for h, p in self.hosts):
            raise _refused(f"host {host}:{port} is not in engines.bridge_hosts")
        return target

    def route(self, target: HttpTarget, addresses: list[str]) -> Route:
        """The call's route once every address passes."""
        refusal = partial(address_refusal, allow_private=self.allow_private)
        try:
            return checked_route(target, addresses, refusal)
        except InvalidInputError as exc:
            raise _refused(exc.message) from None


class BridgeGuard:
    """A policy and a resolver: checks a KB's base_url and routes each call to checked
    addresses."""

    def __init__(self, policy: BridgePolicy, resolver: Resolver = system_resolver) -> None:
        self.policy = policy
        self._resolve = resolver

    async def check(self, service: str, url: str) -> None:
        """The KB's ``base_url`` passes now: a 400 naming base_url and the reason if not, a 503
        if its name does not resolve (DNS may be down for a while)."""
        await self.route(service, url)

    async def route(self, service: str, url: str) -> Route:
        """``url`` checked, resolved, every address checked, and routed (see the module)."""
        target = self.policy.check_url(url)
        try:
            addresses = await asyncio.to_thread(self._resolve, target.host, target.port)
        except InvalidInputError as exc:
            raise BackendUnavailableError(
                f"{service} is unreachable: {exc.message}", backend=service
            ) from exc
        return self.policy.route(target, addresses)


def _refused(reason: str) -> InvalidInputError:
    return InvalidInputError(f"{FIELD} refused: {reason}", field=FIELD)
