"""URL ingest must not become an SSRF proxy. Public-looking hosts are served by httpx's
MockTransport (a real transport used as a fake) behind a fixed resolver, so no request ever leaves
this machine; the loopback cases use a real local HTTP server."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from eagle_rag.api.errors import status_for
from eagle_rag.errors import InvalidInputError, PayloadTooLargeError, UpstreamError
from eagle_rag.ingest import detect as d
from eagle_rag.ingest.fetch import UrlFetcher, check_address
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.html import HtmlParser
from eagle_rag.settings import IngestSettings
from tests.http_fakes import forward_proxy

PUBLIC = {
    "docs.example.com": ["93.184.216.34"],
    "evil.example.com": ["93.184.216.35"],
    "xn--bcher-kva.example": ["93.184.216.36"],
}


def _resolver(host: str, port: int) -> list[str]:
    return PUBLIC.get(host, ["127.0.0.1"] if host == "localhost" else [host])


def _fetcher(handler, **settings: object) -> UrlFetcher:  # type: ignore[no-untyped-def]
    return UrlFetcher(
        IngestSettings(**settings),  # type: ignore[arg-type]
        resolver=_resolver,
        transport=httpx.MockTransport(handler),
    )


PRIVATE = ["127.0.0.1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "::1", "fd00::1"]
PRIVATE += ["::ffff:127.0.0.1", "2002:7f00:1::1"]  # mapped, 6to4 around 127.0.0.1
UNROUTABLE = [
    "169.254.169.254",
    "168.63.129.16",  # Azure's WireServer, a public address
    "fe80::1",
    "0.0.0.0",
    "224.0.0.1",
    "100.100.100.200",  # Alibaba Cloud's metadata service, in the shared space 100.64/10
    "100.64.0.1",
    "2002:a9fe:a9fe::1",  # 6to4 around 169.254.169.254
    "::ffff:100.100.100.200",
]


@pytest.mark.parametrize("address", PRIVATE)
def test_private_addresses_are_refused_unless_allowed(address: str) -> None:
    with pytest.raises(InvalidInputError, match="refusing to fetch"):
        check_address(address, allow_private=False)
    check_address(address, allow_private=True)


@pytest.mark.parametrize("address", UNROUTABLE)
def test_metadata_and_unroutable_addresses_are_refused_even_when_private_ones_are_allowed(
    address: str,
) -> None:
    for allow_private in (False, True):
        with pytest.raises(InvalidInputError, match="refusing to fetch"):
            check_address(address, allow_private=allow_private)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://docs.example.com/a",
        "gopher://x",
        "javascript:alert(1)",
        "http://user:pw@docs.example.com/a",
        "http:///nohost",
        "http://[::1/",
        "http://[evil.com]/",
        "http://a..b/",
        f"http://{'a' * 70}.example.com/",
        "http://docs.example.com:0/",
    ],
)
def test_only_plain_http_and_https_urls(url: str) -> None:
    fetcher = _fetcher(lambda request: httpx.Response(200, content=b"x"))
    with pytest.raises(InvalidInputError) as raised:
        fetcher.fetch(url)
    assert "url" in raised.value.fields


def test_an_idn_host_is_sent_in_its_idna_form() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"x")

    _fetcher(handler).fetch("https://Bücher.example/a.txt")
    [request] = seen
    assert request.url.host == "93.184.216.36"
    assert request.headers["host"] == "xn--bcher-kva.example"
    assert request.extensions["sni_hostname"] == "xn--bcher-kva.example"


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses_pass(address: str) -> None:
    check_address(address, allow_private=False)


def test_public_url_is_fetched_through_the_checked_address() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            content=b"# Title\n",
            headers={
                "content-type": "text/markdown; charset=utf-8",
                "content-disposition": 'attachment; filename="guide.md"',
            },
        )

    fetched = _fetcher(handler).fetch("https://docs.example.com/files/x?y=1")
    assert (fetched.data, fetched.filename, fetched.content_type) == (
        b"# Title\n",
        "guide.md",
        "text/markdown",
    )
    [request] = seen
    assert request.url.host == "93.184.216.34" and request.headers["host"] == "docs.example.com"
    assert request.url.path == "/files/x" and request.url.query == b"y=1"


def test_redirects_are_checked_at_every_hop() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.headers["host"] == "docs.example.com":
            return httpx.Response(
                302, headers={"location": "http://169.254.169.254/latest/meta-data"}
            )
        return httpx.Response(200, content=b"cloud credentials")

    with pytest.raises(InvalidInputError, match=r"169\.254\.169\.254"):
        _fetcher(handler).fetch("http://docs.example.com/start")


def test_redirect_chains_are_bounded() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(301, headers={"location": "http://docs.example.com/again"})

    with pytest.raises(InvalidInputError, match="too many redirects"):
        _fetcher(handler, url_max_redirects=3).fetch("http://docs.example.com/")


def test_a_host_resolving_to_any_private_address_is_refused() -> None:
    def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.1.2.3"]  # one answer would be enough to reach the inside

    fetcher = UrlFetcher(
        IngestSettings(),
        resolver=resolver,
        transport=httpx.MockTransport(lambda r: httpx.Response(200, content=b"x")),
    )
    with pytest.raises(InvalidInputError, match=r"10\.1\.2\.3"):
        fetcher.fetch("http://mixed.example.com/")


def test_downloads_are_capped_while_streaming() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=iter([b"x" * 600, b"x" * 600]))

    with pytest.raises(InvalidInputError, match="larger than 1000 bytes"):
        _fetcher(handler, max_file_bytes=1000).fetch("http://docs.example.com/big")


def test_error_statuses_are_reported() -> None:
    with pytest.raises(InvalidInputError, match="answered 404"):
        _fetcher(lambda r: httpx.Response(404)).fetch("http://docs.example.com/missing")


@pytest.mark.parametrize(
    "failure",
    [httpx.ConnectError("connection refused"), httpx.ReadTimeout("no answer")],
)
def test_a_site_that_does_not_answer_is_an_upstream_error_not_our_outage(
    failure: httpx.HTTPError,
) -> None:
    """It was a 503 backend_unavailable with Retry-After: Eagle-RAG itself reported down."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise failure

    with pytest.raises(UpstreamError, match=r"fetching http://docs\.example\.com/page") as raised:
        _fetcher(handler).fetch("http://docs.example.com/page")
    assert status_for(raised.value) == 502


@contextmanager
def _local_site(
    body: bytes, encoding: str | None = None, asked: list[str] | None = None
) -> Iterator[str]:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if asked is not None:
                asked.append(self.headers.get("accept-encoding", ""))
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            if encoding:
                self.send_header("content-encoding", encoding)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/notes.txt"
    finally:
        server.shutdown()
        server.server_close()


def test_loopback_is_refused_by_default_and_allowed_only_by_setting() -> None:
    with _local_site(b"internal admin page") as url:
        with pytest.raises(InvalidInputError, match=r"refusing to fetch from 127\.0\.0\.1"):
            UrlFetcher(IngestSettings()).fetch(url)
        fetched = UrlFetcher(IngestSettings(url_allow_private=True)).fetch(url)
    assert (fetched.data, fetched.filename) == (b"internal admin page", "notes.txt")


def test_a_compressed_download_is_capped_after_it_is_inflated() -> None:
    """httpx inflated each read whole before it was counted: 25 KB of zstd grew memory by
    800 MB before the cap refused it. Only gzip and deflate are asked for, and inflated here
    no further than the cap."""
    fetcher = UrlFetcher(IngestSettings(url_allow_private=True, max_file_bytes=1024 * 1024))
    text = b"Kites fly in the spring wind. " * 1000
    asked: list[str] = []
    for encoding, packed in (("gzip", gzip.compress(text)), ("deflate", zlib.compress(text))):
        with _local_site(packed, encoding, asked) as url:
            assert fetcher.fetch(url).data == text
    assert asked == ["gzip, deflate", "gzip, deflate"]
    bomb = gzip.compress(bytes(200 * 1024 * 1024))  # 200 KB on the wire, 200 MiB inflated
    with _local_site(bomb, "gzip") as url, pytest.raises(PayloadTooLargeError):
        fetcher.fetch(url)
    unasked = b"\x28\xb5\x2f\xfd" + text  # sent as zstd, which was not asked for
    with _local_site(unasked, "zstd") as url, pytest.raises(UpstreamError, match="'zstd'"):
        fetcher.fetch(url)


def test_the_checked_addresses_are_tried_in_the_resolvers_order() -> None:
    # ::1 first, as a dual-stack name resolves: nothing listens there (the site is IPv4 only).
    def resolver(host: str, port: int) -> list[str]:
        return ["::1", "127.0.0.1"]

    with _local_site(b"notes") as url:
        named = url.replace("127.0.0.1", "docs.test")
        fetched = UrlFetcher(IngestSettings(url_allow_private=True), resolver=resolver).fetch(named)
    assert fetched.data == b"notes"


def test_through_the_environments_proxy_the_url_keeps_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)

    def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    fetcher = UrlFetcher(IngestSettings(url_allow_private=True), resolver=resolver)
    with _local_site(b"notes") as url, forward_proxy({"docs.test": "127.0.0.1"}) as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        named = url.replace("127.0.0.1", "docs.test")
        assert fetcher.fetch(named).data == b"notes"
        assert seen == [f"GET {named}"]
        with pytest.raises(InvalidInputError, match="refusing to fetch from 127"):
            UrlFetcher(IngestSettings(), resolver=resolver).fetch(named)  # checked all the same
        assert len(seen) == 1


def _served_as(body: bytes, content_type: str) -> bytes:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": content_type})

    return _fetcher(handler).fetch("https://docs.example.com/page").data


@pytest.mark.parametrize(
    ("content_type", "codec", "words"),
    [
        ("text/html; charset=windows-1251", "cp1251", "Привет мир"),
        ('text/html; charset="Shift_JIS"', "cp932", "東京都の見出し"),
        ("text/plain; charset=ISO-8859-1", "cp1252", "Grüße aus München"),
        ("text/csv;charset=gbk", "gb18030", "城市,人口"),
    ],
)
def test_the_charset_a_server_declares_is_applied_to_the_page(
    content_type: str, codec: str, words: str
) -> None:
    """Only the MIME type was kept: a page whose charset only its server declared was decoded
    by guessing, and Windows-1251 or Shift_JIS pages were stored garbled."""
    page = f"<html><head><meta charset='koi8-r'></head><body><p>{words}</p></body></html>"
    data = _served_as(page.encode(codec), content_type)
    # Stored as UTF-8 behind a byte order mark, which the parsers read before any <meta>.
    assert data == b"\xef\xbb\xbf" + page.encode()
    parsed = HtmlParser().parse(ParseContext(data, "page.html", d.HTML))
    assert parsed.text == words


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("Grüße".encode(), "text/plain; charset=windows-1252"),  # valid UTF-8: the label is stale
        ("Grüße".encode("cp1252"), "text/plain"),  # nothing declared
        ("Grüße".encode("cp1252"), "application/pdf; charset=windows-1251"),  # not text
        ("Grüße".encode("cp1252"), "text/plain; charset=no-such-codec"),
        ("\ufeffGrüße".encode("utf-16"), "text/plain; charset=windows-1251"),  # its own BOM
        ("日本語の段落です".encode()[:-1], "text/plain; charset=ascii"),  # does not fit
        # Latin-1 fits every byte: a PDF a server labels as text stays a PDF.
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "text/plain; charset=ISO-8859-1"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff", "text/plain; charset=ISO-8859-1"),
    ],
)
def test_a_body_the_declared_charset_does_not_apply_to_is_stored_as_it_came(
    body: bytes, content_type: str
) -> None:
    assert _served_as(body, content_type) == body


@pytest.mark.parametrize("location", ["http:169.254.169.254/", "https:example.com"])
def test_a_redirect_to_a_malformed_url_is_the_sites_error(location: str) -> None:
    """httpx reads the Location while it answers, and its InvalidURL was a 500 internal_error."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": location})

    with pytest.raises(UpstreamError, match="redirected to a malformed URL") as refused:
        _fetcher(handler).fetch("https://docs.example.com/start")
    assert status_for(refused.value) == 502
