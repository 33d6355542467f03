"""Where a bridged KB may call: its base_url is checked when the KB is created (a 400 naming
base_url, nothing stored) and on every call (DNS may change), calls are pinned to the checked
address, redirects are not followed, and a refusing answer is quoted short and on one line.

The app is the real one on a real port; the services are local HTTP servers. Names that must
resolve to a chosen address go through a hosts-style resolver handed to the real guard."""

from __future__ import annotations

import datetime
import gzip
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from eagle_rag.engines.base import EngineQuery
from eagle_rag.engines.bridge_guard import BridgeGuard, BridgePolicy, address_refusal
from eagle_rag.engines.dify import DifyEngine
from eagle_rag.engines.http_bridge import ECHO_MAX_CHARS, MAX_ANSWER_BYTES, BridgeClient, echo
from eagle_rag.errors import InvalidInputError
from eagle_rag.settings import EngineSettings
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.engines.dify_fake import DATASET, KEY, dify
from tests.http_fakes import Recorded, forward_proxy, json_answer, serve

ALWAYS_REFUSED = [
    "169.254.169.254",  # AWS, GCP, Azure instance metadata
    "168.63.129.16",  # Azure's WireServer: a public address
    "169.254.0.1",
    "fe80::1",
    "100.100.100.200",  # Alibaba Cloud's metadata, in the shared space 100.64.0.0/10
    "100.64.0.1",
    "fd00:ec2::254",  # AWS's IPv6 metadata
    "0.0.0.0",
    "::",
    "224.0.0.1",
    "ff02::1",
    "255.255.255.255",
    "240.0.0.1",
    "::ffff:169.254.169.254",  # mapped
    "2002:a9fe:a9fe::1",  # 6to4 around 169.254.169.254
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, client 169.254.169.254 (bits inverted)
]
PRIVATE = ["127.0.0.1", "::1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "fd00::1"]
PRIVATE += ["::ffff:127.0.0.1", "2002:c0a8:101::1"]  # mapped loopback, 6to4 around 192.168.1.1


def url_for(address: str) -> str:
    return f"http://[{address}]" if ":" in address else f"http://{address}"


def create(client: httpx.Client, name: str, url: str, **settings: str) -> httpx.Response:
    return client.post(
        "/knowledge_bases",
        json={
            "kb_name": name,
            "engine": "dify",
            "creation_settings": {"base_url": url, "api_key": KEY, "dataset_id": DATASET},
            **settings,
        },
    )


def assert_refused(client: httpx.Client, answer: httpx.Response, name: str, reason: str) -> None:
    body = answer.json()
    assert answer.status_code == 400, body
    assert body["code"] == "invalid_input" and body["details"]["field"] == "base_url"
    assert body["message"].startswith("base_url refused") and reason in body["message"]
    assert client.get(f"/knowledge_bases/{name}").status_code == 404


@pytest.fixture(scope="module")
def dify_server() -> Iterator[tuple[str, Recorded]]:
    with serve(dify) as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("guard")) as running:
        yield running


# --- at creation, through the REST API -----------------------------------------------------------


@pytest.mark.parametrize("address", ALWAYS_REFUSED)
def test_metadata_and_unroutable_addresses_are_refused_at_creation(
    server: RunningServer, address: str
) -> None:
    client = server.client()
    assert_refused(client, create(client, "meta", url_for(address)), "meta", " is ")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://127.0.0.1/", "not an http or https URL"),
        ("file:///etc/passwd", "not an http or https URL"),
        ("dify.example.com", "not an http or https URL"),
        ("http://admin:pw@127.0.0.1/", "credentials in the URL"),
        ("http://127.0.0.1:99999/", "no valid port"),
        ("http://127.0.0.1:0/", "no valid port"),
        ("http://[::1/", "not a valid URL"),
        ("http://[evil.com]/", "not a valid URL"),
        ("http://a..b/", "no valid host name"),
        (f"http://{'a' * 70}.example.com/", "no valid host name"),
        ("http://2852039166/", "169.254.169.254"),  # a decimal IPv4, resolved before the check
    ],
)
def test_a_base_url_that_is_not_a_plain_http_url_is_refused(
    server: RunningServer, url: str, reason: str
) -> None:
    client = server.client()
    assert_refused(client, create(client, "odd", url), "odd", reason)


def test_loopback_stays_reachable_by_default(
    server: RunningServer, dify_server: tuple[str, Recorded]
) -> None:
    url, recorded = dify_server
    client = server.client()
    assert create(client, "lan", url).status_code == 201
    # The call went to the checked address, with the Host the KB named.
    assert recorded.requests[-1][2]["host"] == url.removeprefix("http://")
    assert_refused(client, create(client, "meta", "http://169.254.169.254"), "meta", "link-local")


def test_bridge_hosts_narrow_the_hosts_a_bridge_may_call(
    tmp_path_factory: pytest.TempPathFactory, dify_server: tuple[str, Recorded]
) -> None:
    url, _ = dify_server
    port = int(url.rsplit(":", 1)[1])
    listed = {"bridge_hosts": ["dify.example.com", f"127.0.0.1:{port}"]}
    with running_server(tmp_path_factory.mktemp("hosts"), engines=listed) as running:
        client = running.client()
        assert create(client, "listed", url).status_code == 201
        other_port = f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}"
        for name, other in (("port", other_port), ("name", f"http://localhost:{port}")):
            assert_refused(client, create(client, name, other), name, "not in engines.bridge_hosts")


def test_bridge_private_false_refuses_loopback_and_private(
    tmp_path_factory: pytest.TempPathFactory, dify_server: tuple[str, Recorded]
) -> None:
    url, recorded = dify_server
    before = len(recorded.requests)
    public_only = {"bridge_private": False}
    with running_server(tmp_path_factory.mktemp("public"), engines=public_only) as running:
        client = running.client()
        for name, target in (("loop", url), ("lan", "http://10.1.2.3:8080")):
            assert_refused(client, create(client, name, target), name, "private or loopback")
    assert len(recorded.requests) == before  # on_knowledge_base_create never ran


# --- on every call ------------------------------------------------------------------------------


def hosts_resolver(table: dict[str, list[str]]) -> Any:
    """An /etc/hosts the test can rewrite between calls (DNS that changes its answer)."""
    return lambda host, port: list(table.get(host, [host]))


async def test_a_name_that_now_resolves_to_link_local_is_refused_on_the_call(
    dify_server: tuple[str, Recorded],
) -> None:
    url, recorded = dify_server
    port = url.rsplit(":", 1)[1]
    table = {"dify.test": ["127.0.0.1"]}
    engine = DifyEngine(guard=BridgeGuard(BridgePolicy(), resolver=hosts_resolver(table)))
    settings = {"base_url": f"http://dify.test:{port}", "api_key": KEY, "dataset_id": DATASET}
    query = EngineQuery("battery storage", "kb", 3, settings, {})

    await engine.check_creation_settings(settings)
    assert await engine.retrieve(query)
    assert recorded.requests[-1][2]["host"] == f"dify.test:{port}"  # pinned, name kept
    calls = len(recorded.requests)

    table["dify.test"] = ["127.0.0.1", "169.254.169.254"]  # one bad address is enough
    with pytest.raises(InvalidInputError, match=r"base_url refused: 169\.254\.169\.254 is a link"):
        await engine.retrieve(query)
    with pytest.raises(InvalidInputError, match="link-local"):
        await engine.check_creation_settings(settings)
    assert len(recorded.requests) == calls


async def test_an_idn_host_is_sent_and_listed_in_its_idna_form(
    dify_server: tuple[str, Recorded],
) -> None:
    url, recorded = dify_server
    port = url.rsplit(":", 1)[1]
    table = {"xn--bcher-kva.example": ["127.0.0.1"]}
    policy = BridgePolicy.from_settings(EngineSettings(bridge_hosts=["bücher.example"]))
    engine = DifyEngine(guard=BridgeGuard(policy, resolver=hosts_resolver(table)))
    settings = {"base_url": f"http://BÜCHER.example:{port}", "api_key": KEY, "dataset_id": DATASET}

    await engine.check_creation_settings(settings)
    assert await engine.retrieve(EngineQuery("battery storage", "kb", 3, settings, {}))
    assert recorded.requests[-1][2]["host"] == f"xn--bcher-kva.example:{port}"
    policy.check_url("http://xn--bcher-kva.example/")  # the same host, written either way


def test_port_0_is_refused_not_read_as_the_default_port() -> None:
    policy = BridgePolicy.from_settings(EngineSettings(bridge_hosts=["127.0.0.1:80"]))
    with pytest.raises(InvalidInputError, match="no valid port"):
        policy.check_url("http://127.0.0.1:0/")


async def test_the_checked_addresses_are_tried_in_the_resolvers_order(
    dify_server: tuple[str, Recorded],
) -> None:
    # ::1 first, as a dual-stack name resolves: nothing listens there (the fake is IPv4 only),
    # so a host without IPv6 egress must still reach the service over IPv4.
    url, recorded = dify_server
    port = url.rsplit(":", 1)[1]
    table = {"dify.test": ["::1", "127.0.0.1"]}
    engine = DifyEngine(guard=BridgeGuard(BridgePolicy(), resolver=hosts_resolver(table)))
    settings = {"base_url": f"http://dify.test:{port}", "api_key": KEY, "dataset_id": DATASET}
    assert await engine.retrieve(EngineQuery("battery storage", "kb", 3, settings, {}))
    assert recorded.requests[-1][2]["host"] == f"dify.test:{port}"


# --- through the environment's proxy ------------------------------------------------------------


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


async def test_through_a_proxy_the_call_names_the_host_and_is_still_checked(
    monkeypatch: pytest.MonkeyPatch, dify_server: tuple[str, Recorded]
) -> None:
    url, recorded = dify_server
    port = url.rsplit(":", 1)[1]
    table = {"dify.test": ["127.0.0.1"]}
    engine = DifyEngine(guard=BridgeGuard(BridgePolicy(), resolver=hosts_resolver(table)))
    settings = {"base_url": f"http://dify.test:{port}", "api_key": KEY, "dataset_id": DATASET}
    query = EngineQuery("battery storage", "kb", 3, settings, {})
    clear_proxies(monkeypatch)
    with forward_proxy({"dify.test": "127.0.0.1"}) as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        assert await engine.retrieve(query)
        assert seen and seen[-1].startswith(f"POST http://dify.test:{port}/")
        assert recorded.requests[-1][2]["host"] == f"dify.test:{port}"

        table["dify.test"] = ["169.254.169.254"]  # the proxy would resolve it; the check refuses
        calls = len(seen)
        with pytest.raises(InvalidInputError, match="link-local"):
            await engine.retrieve(query)
        assert len(seen) == calls


async def test_no_proxy_names_the_host_and_the_call_goes_direct(
    monkeypatch: pytest.MonkeyPatch, dify_server: tuple[str, Recorded]
) -> None:
    url, recorded = dify_server
    port = url.rsplit(":", 1)[1]
    guard = BridgeGuard(BridgePolicy(), resolver=hosts_resolver({"dify.test": ["127.0.0.1"]}))
    settings = {"base_url": f"http://dify.test:{port}", "api_key": KEY, "dataset_id": DATASET}
    clear_proxies(monkeypatch)
    with forward_proxy({}) as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "localhost,dify.test")
        await DifyEngine(guard=guard).retrieve(EngineQuery("battery", "kb", 3, settings, {}))
    assert seen == [] and recorded.requests[-1][2]["host"] == f"dify.test:{port}"


def self_signed(name: str, folder: Path) -> tuple[Path, Path]:
    """A certificate for ``name`` that is its own CA, and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@contextmanager
def tls_site(cert_file: Path, key_file: Path) -> Iterator[int]:
    """An HTTPS server on 127.0.0.1 answering ``{}`` to every GET; yields its port."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def test_https_through_a_connect_proxy_verifies_the_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Pinned, the tunnel would be opened to the address and TLS would check the certificate
    # against it (CERTIFICATE_VERIFY_FAILED): through a proxy the URL keeps its name.
    cert_file, key_file = self_signed("dify.test", tmp_path)
    clear_proxies(monkeypatch)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    guard = BridgeGuard(BridgePolicy(), resolver=hosts_resolver({"dify.test": ["127.0.0.1"]}))
    with (
        tls_site(cert_file, key_file) as port,
        forward_proxy({"dify.test": "127.0.0.1"}) as (
            proxy,
            seen,
        ),
    ):
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        client = BridgeClient("Dify", f"https://dify.test:{port}", KEY, guard=guard)
        assert await client.call("GET", "/v1/ping") == {}
    assert seen == [f"CONNECT dify.test:{port}"]


def test_a_stored_kb_pointing_at_metadata_fails_clearly_on_search_and_ingest(
    server: RunningServer,
) -> None:
    # As a KB stored before the guard existed: never created through the check.
    server.eagle.repositories.knowledge_bases.create(
        "stale",
        engine="dify",
        creation_settings={
            "base_url": "http://169.254.169.254",
            "api_key": KEY,
            "dataset_id": DATASET,
        },
    )
    client = server.client()
    client.post("/knowledge_bases", json={"kb_name": "native"})
    answer = client.post("/search", json={"query": "x", "kb_names": ["native", "stale"]})
    assert answer.status_code == 200
    step = next(s for s in answer.json()["steps"] if s["name"] == "stale:dify")
    assert step["status"] == "warning" and "base_url refused" in step["detail"]

    job = client.post("/ingest", data={"kb_name": "stale"}, files={"file": ("a.txt", b"x")})
    task = wait_for_task(client, job.json()["job_id"])
    assert task["status"] == "failed" and "base_url refused" in str(task["error"])


def test_a_redirect_is_not_followed(server: RunningServer) -> None:
    moved = json_answer(302, {"records": []}, location="http://169.254.169.254/latest/meta-data")
    with serve(lambda *_: moved) as (url, recorded):
        answer = create(server.client(), "moved", url)
    assert answer.status_code == 502 and "redirect (302), not followed" in answer.json()["message"]
    assert len(recorded.requests) == 1


# --- what a refusing answer may say -------------------------------------------------------------


def test_a_refusing_answer_is_quoted_short_and_on_one_line(server: RunningServer) -> None:
    page = "root:x:0:0\r\n" + "\n\t".join(f"line {i} of an internal page" for i in range(200))
    page += "SECRET-TAIL"
    with serve(lambda *_: (400, {"content-type": "text/plain"}, page.encode())) as (url, _):
        answer = create(server.client(), "echo", url)
    message = answer.json()["message"]
    assert answer.status_code == 502 and message.startswith("Dify refused the request (400): ")
    quoted = message.removeprefix("Dify refused the request (400): ")
    assert quoted.startswith("root:x:0:0 line 0 of an internal page line 1")
    assert len(quoted) <= ECHO_MAX_CHARS and "\n" not in message and "\t" not in message
    assert "SECRET-TAIL" not in message


def test_a_message_in_the_body_is_quoted_short_too(server: RunningServer) -> None:
    refusal = {"code": 102, "message": "first\n" + "y" * 1000 + "SECRET-TAIL"}
    with serve(lambda *_: json_answer(200, refusal)) as (url, _):
        answer = server.client().post(
            "/knowledge_bases",
            json={
                "kb_name": "rf",
                "engine": "ragflow",
                "creation_settings": {"base_url": url, "api_key": KEY, "dataset_id": DATASET},
            },
        )
    message = answer.json()["message"]
    assert answer.status_code == 502 and message.startswith("RAGFlow refused the request (102)")
    assert "first y" in message and "\n" not in message and "SECRET-TAIL" not in message
    assert len(message) < 300


def test_echo_is_one_bounded_line() -> None:
    assert echo("short") == "short"
    assert echo("a\r\n\tb  \x1b[31mc") == "a b [31mc"
    assert echo("x" * 500) == "x" * (ECHO_MAX_CHARS - 1) + "…"
    assert echo(102) == "102"  # a body's code may be a number


# --- the address rules --------------------------------------------------------------------------


@pytest.mark.parametrize("address", ALWAYS_REFUSED)
def test_always_refused_whatever_the_settings(address: str) -> None:
    assert address_refusal(address, allow_private=True) is not None
    assert address_refusal(address, allow_private=False) is not None


@pytest.mark.parametrize("address", PRIVATE)
def test_private_and_loopback_follow_bridge_private(address: str) -> None:
    assert address_refusal(address, allow_private=True) is None
    assert "private or loopback" in (address_refusal(address, allow_private=False) or "")
    for public in ("93.184.216.34", "2606:2800:220:1::1"):
        assert address_refusal(public, allow_private=False) is None


@pytest.mark.parametrize(
    ("hosts", "allowed", "refused"),
    [
        (
            ["dify.lan"],
            ["http://dify.lan/", "https://DIFY.lan.:8443/v1"],  # case, final dot; any port
            ["http://dify.lan.evil.com/", "http://10.0.0.7/"],
        ),
        (
            ["dify.lan:8080", "dify.lan:443"],
            ["http://dify.lan:8080", "https://dify.lan"],
            ["http://dify.lan", "http://dify.lan:8081"],
        ),
        (["10.0.0.7"], ["http://10.0.0.7:5000"], ["http://10.0.0.8"]),
        (["[fd00::5]:80"], ["http://[fd00:0::5]/"], ["http://[fd00::5]:81/", "http://[fd00::6]"]),
    ],
)
def test_bridge_hosts_match_host_and_port(
    hosts: list[str], allowed: list[str], refused: list[str]
) -> None:
    policy = BridgePolicy.from_settings(EngineSettings(bridge_hosts=hosts))
    for url in allowed:
        policy.check_url(url)
    for url in refused:
        with pytest.raises(InvalidInputError, match=r"not in engines\.bridge_hosts"):
            policy.check_url(url)


def test_a_compressed_answer_is_capped_after_it_is_inflated(server: RunningServer) -> None:
    """A "Dify" answering 49 KB of zstd (1.5 GB inflated) took the server to 5 GB: the answer
    was read whole, and every search naming no KB asked every bridged KB again."""
    bomb = gzip.compress(bytes(MAX_ANSWER_BYTES + 1))
    packed = {"content-type": "application/json", "content-encoding": "gzip"}
    with serve(lambda *_: (200, packed, bomb)) as (url, recorded):
        answer = create(server.client(), "bomb", url)
    assert answer.status_code == 502, answer.text
    assert "Dify's answer is larger than" in answer.json()["message"]
    assert recorded.requests[0][2]["accept-encoding"] == "gzip, deflate"
    unasked = {"content-type": "application/json", "content-encoding": "zstd"}
    with serve(lambda *_: (200, unasked, b"\x28\xb5\x2f\xfd{}")) as (url, _):
        answer = create(server.client(), "zstd", url)
    assert answer.status_code == 502 and "'zstd'-compressed" in answer.json()["message"]
