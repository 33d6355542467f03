"""The address classes and allowlist entries shared by URL ingest and the bridged engines
(their policies are tested where they apply them: tests/ingest/test_fetch.py,
tests/engines/test_bridge_guard.py)."""

from __future__ import annotations

import ipaddress

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.net_addresses import host_entry, normal_host, unroutable_reason


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
