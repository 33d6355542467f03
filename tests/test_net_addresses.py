"""The address classes and allowlist entries shared by URL ingest and the bridged engines
(their policies are tested where they apply them: tests/ingest/test_fetch.py,
tests/engines/test_bridge_guard.py)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.net_addresses import (
    checked_route,
    environment_proxy,
    host_entry,
    http_target,
    normal_host,
    system_resolver,
    unroutable_reason,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dify.lan", ("dify.lan", None)),
        ("Dify.LAN.:8080", ("dify.lan", 8080)),
        ("10.0.0.7", ("10.0.0.7", None)),
        ("10.0.0.7:80", ("10.0.0.7", 80)),
        ("fd00:0::5", ("fd00::5", None)),
        ("[fd00::5]", ("fd00::5", None)),
        ("[FD00::5]:443", ("fd00::5", 443)),
        ("Bücher.example:8080", ("xn--bcher-kva.example", 8080)),
    ],
)
def test_host_entries_parse_to_a_normal_host_and_port(
    text: str, expected: tuple[str, int | None]
) -> None:
    assert host_entry(text) == expected


@pytest.mark.parametrize("text", ["https://dify.lan", "user@dify.lan", "dify.lan:99999", ":80"])
def test_bad_host_entries_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError):
        host_entry(text)


def test_normal_host_makes_one_name_of_equal_addresses() -> None:
    assert normal_host("[0:0::1]") == normal_host("::1") == "::1"


@pytest.mark.parametrize(
    ("address", "unroutable"),
    [
        ("169.254.169.254", True),
        ("168.63.129.16", True),  # Azure's WireServer, a public address
        ("100.100.100.200", True),
        ("fd00:ec2::254", True),
        ("fd00:ec2::253", False),  # a private address like any other
        ("::1", False),  # in IPv6's reserved ::/8, but the loopback
        ("10.0.0.1", False),
        ("8.8.8.8", False),
    ],
)
def test_unroutable_addresses(address: str, unroutable: bool) -> None:
    assert (unroutable_reason(ipaddress.ip_address(address)) is not None) is unroutable


def test_a_url_host_is_read_in_its_idna_form() -> None:
    target = http_target("https://BÜCHER.example:8443/a?b=1#c")
    assert (target.host, target.port) == ("xn--bcher-kva.example", 8443)
    assert target.host_header == "xn--bcher-kva.example:8443"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[::1/", "not a valid URL"),
        ("http://[evil.com]/", "not a valid URL"),
        ("http://a..b/", "no valid host name"),
        (f"http://{'a' * 64}.example/", "no valid host name"),
        (f"http://{'a.' * 127}example/", "no valid host name"),
        ("http://exa%41mple.com/", "no valid host name"),
        ("http://127.0.0.1:0/", "no valid port"),
        ("http://127.0.0.1:65536/", "no valid port"),
        ("ftp://example.com/", "not an http or https URL"),
        ("http://u:p@example.com/", "credentials"),
    ],
)
def test_malformed_urls_are_invalid_input_naming_the_url(url: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason) as raised:
        http_target(url)
    assert "url" in raised.value.fields


def test_the_resolver_keeps_its_order_and_drops_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    def getaddrinfo(host: str, port: int, **_: Any) -> list[Any]:
        answers = ["2001:db8::1", "192.0.2.1", "2001:db8::1", "192.0.2.0"]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert system_resolver("dual.example", 80) == ["2001:db8::1", "192.0.2.1", "192.0.2.0"]


@pytest.mark.parametrize("host", ["a..b", "a" * 70 + ".example"])
def test_a_name_the_idna_codec_refuses_is_invalid_input(host: str) -> None:
    with pytest.raises(InvalidInputError, match="not a valid host name"):
        system_resolver(host, 80)


@pytest.mark.parametrize(
    ("proxies", "url", "expected"),
    [
        ({}, "https://dify.internal/", None),
        ({"https": "proxy:3128"}, "https://dify.internal/", "http://proxy:3128"),
        ({"https": "http://proxy:3128"}, "http://dify.internal/", None),  # http not covered
        ({"all": "socks5://proxy:1080"}, "http://dify.internal/", "socks5://proxy:1080"),
        ({"http": "http://p:1", "no": "dify.internal"}, "http://dify.internal:8080/", None),
        ({"http": "http://p:1", "no": ".internal"}, "http://dify.internal/", None),
        ({"http": "http://p:1", "no": "*"}, "http://dify.internal/", None),
        ({"http": "http://p:1", "no": "other.internal"}, "http://dify.internal/", "http://p:1"),
        ({"http": "http://p:1", "no": "xn--bcher-kva.de"}, "http://bücher.de/", None),
    ],
)
def test_the_environment_proxy_as_urllib_and_httpx_read_it(
    proxies: dict[str, str], url: str, expected: str | None
) -> None:
    assert environment_proxy(http_target(url), proxies) == expected


def test_the_environment_is_read_when_no_proxies_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.setenv("NO_PROXY", "dify.internal")
    assert environment_proxy(http_target("https://kb.example/")) == "http://proxy:3128"
    assert environment_proxy(http_target("https://dify.internal/")) is None


def test_a_route_is_pinned_in_order_or_proxied_whole() -> None:
    target = http_target("https://bücher.example/v1/x?q=1#frag")
    pinned = checked_route(target, ["2001:db8::1", "192.0.2.1"], lambda a: None, proxies={})
    assert pinned.urls == ("https://[2001:db8::1]/v1/x?q=1", "https://192.0.2.1/v1/x?q=1")
    assert pinned.headers == {"Host": "xn--bcher-kva.example"} and pinned.proxy is None
    assert pinned.extensions == {"sni_hostname": "xn--bcher-kva.example"}

    proxied = checked_route(target, ["192.0.2.1"], lambda a: None, proxies={"https": "p:1"})
    assert proxied.urls == ("https://xn--bcher-kva.example/v1/x?q=1",)
    assert proxied.proxy == "http://p:1" and not proxied.headers and not proxied.extensions

    with pytest.raises(InvalidInputError, match="no address"):
        checked_route(target, [], lambda a: None, proxies={})
    with pytest.raises(InvalidInputError, match="bad 192"):  # checked, proxy or not
        checked_route(target, ["192.0.2.1"], lambda a: f"bad {a}", proxies={"https": "p:1"})
