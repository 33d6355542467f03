"""API keys, per-key KB scope, rate limits, CORS and the MCP Origin/Host guard."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api.server import RunningServer, running_server, wait_for_task

ADMIN, SCOPED, LIMITED = "admin-key-123", "scoped-key-456", "limited-key-789"
OTHER = "other-key-321"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = [
        {"name": "admin", "key": ADMIN},
        {"name": "agent", "key": SCOPED, "kb_names": ["alpha"]},
        {"name": "other", "key": OTHER, "kb_names": ["beta"]},
    ]
    with running_server(
        tmp_path_factory.mktemp("secured"),
        server={
            "api_keys": keys,
            "cors_origins": ["https://app.example.com"],
            "rate_limit_per_minute": 0,
        },
    ) as running:
        admin = running.client(Authorization=f"Bearer {ADMIN}")
        for kb in ("alpha", "beta"):
            assert admin.post("/knowledge_bases", json={"kb_name": kb}).status_code == 201
        yield running


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic YWRtaW4=", "Bearer", "token abc"])
def test_missing_or_unknown_keys_are_401(secured: RunningServer, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    answer = secured.client(**headers).post("/search", json={"query": "x"})
    assert answer.status_code == 401
    assert answer.json()["code"] == "unauthorized"
    assert answer.headers["www-authenticate"] == "Bearer"


def test_health_stays_open_for_probes(secured: RunningServer) -> None:
    """...without telling an anonymous caller where the backends are (database host, user
    and name, Milvus URI, the data dir)."""
    anonymous = secured.client().get("/health")
    assert anonymous.status_code == 200
    checks = anonymous.json()["checks"]
    assert checks and all("target" not in c and "status" in c for c in checks.values())
    wrong = secured.client(Authorization="Bearer nope").get("/health").json()["checks"]
    assert all("target" not in c for c in wrong.values())
    admin = secured.client(Authorization=f"Bearer {ADMIN}").get("/health").json()["checks"]
    assert admin["data_dir"]["target"]


def test_a_scoped_key_sees_only_its_kbs(secured: RunningServer) -> None:
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    assert [kb["kb_name"] for kb in agent.get("/knowledge_bases").json()] == ["alpha"]
    assert agent.post("/search", json={"query": "x", "kb_name": "alpha"}).status_code == 200
    refused = agent.post("/search", json={"query": "x", "kb_name": "beta"})
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    upload = agent.post(
        "/ingest", data={"kb_name": "beta"}, files={"file": ("a.txt", b"hello", "text/plain")}
    )
    assert upload.status_code == 403
    assert agent.delete("/knowledge_bases/beta").status_code == 403
    # With no KB named, the search runs over the key's KBs only.
    assert agent.post("/search", json={"query": "x"}).json()["kb_names"] == ["alpha"]


def test_a_conversation_stays_within_the_scope_it_was_held_in(secured: RunningServer) -> None:
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    other = secured.client(Authorization=f"Bearer {OTHER}")
    # Without a KB named, the agent's search read its own KBs: the session records them.
    session_id = agent.post("/query", json={"query": "secret plan"}).json()["session_id"]
    listed = {s["session_id"]: s for s in agent.get("/sessions").json()}
    assert listed[session_id]["kb_names"] == ["alpha"]
    assert session_id not in {s["session_id"] for s in other.get("/sessions").json()}
    assert session_id not in other.get("/ui/fragments/sessions").text
    assert other.get(f"/sessions/{session_id}/messages").status_code == 404
    # Continuing it would send its history to the model and write into it.
    carry_on = {"query": "and then?", "kb_name": "beta", "session_id": session_id}
    for route in ("/query", "/query/stream"):
        refused = other.post(route, json=carry_on)
        assert refused.status_code == 404, route
    chat = {
        "model": "eagle:beta",
        "messages": [{"role": "user", "content": "and then?"}],
        "eagle": {"session_id": session_id},
    }
    assert other.post("/v1/chat/completions", json=chat).status_code == 404
    assert other.delete(f"/sessions/{session_id}").status_code == 404
    assert len(agent.get(f"/sessions/{session_id}/messages").json()["messages"]) == 2


def test_a_conversation_continued_over_another_kb_leaves_a_narrower_keys_reach(
    secured: RunningServer,
) -> None:
    """A wide key continuing a narrow key's session over another KB stored that KB's answer
    where the narrow key could read it (the session still said alpha only)."""
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    session_id = agent.post("/query", json={"query": "plan"}).json()["session_id"]
    assert agent.get(f"/sessions/{session_id}/messages").status_code == 200
    carry_on = {"query": "and beta's secret?", "kb_name": "beta", "session_id": session_id}
    assert admin.post("/query", json=carry_on).status_code == 200
    assert agent.get(f"/sessions/{session_id}/messages").status_code == 404
    assert session_id not in {s["session_id"] for s in agent.get("/sessions").json()}
    listed = {s["session_id"]: s for s in admin.get("/sessions").json()}
    assert listed[session_id]["kb_names"] == ["alpha", "beta"]
    # Over every KB (no KB named by an unlimited key): for unlimited keys only from then on.
    admin.post("/query", json={"query": "all?", "session_id": session_id})
    assert {s["session_id"]: s for s in admin.get("/sessions").json()}[session_id]["kb_names"] == []


def test_a_conversation_over_every_kb_is_for_unlimited_keys_only(secured: RunningServer) -> None:
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    session_id = admin.post("/query", json={"query": "all of it"}).json()["session_id"]
    assert session_id not in {s["session_id"] for s in agent.get("/sessions").json()}
    assert agent.get(f"/sessions/{session_id}/messages").status_code == 404
    carry_on = {"query": "more", "session_id": session_id}
    assert agent.post("/query", json=carry_on).status_code == 404
    assert admin.post("/query", json=carry_on).status_code == 200


@pytest.mark.parametrize(
    ("route", "head", "tail"),
    [
        ("/v1/chat/completions", '{"model": "eagle:alpha", "messages": [], "x": ', "}"),
        ("/search", '{"query": "x", "filters": ', "}"),
        ("/retrieval", '{"knowledge_id": "alpha", "x": ', "}"),
    ],
)
def test_a_body_nested_too_deeply_is_refused_as_the_callers_mistake(
    secured: RunningServer, route: str, head: str, tail: str
) -> None:
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    deep = head + '{"a": ' * 5000 + "1" + "}" * 5000 + tail
    answer = admin.post(route, content=deep, headers={"Content-Type": "application/json"})
    assert 400 <= answer.status_code < 500, answer.text
    if route == "/search":  # the others answer in their protocol's own error shape
        # A documented code ("http_error", "There was an error parsing the body" was not).
        assert answer.json()["code"] in ("invalid_request", "invalid_input"), answer.text


def test_cors_is_explicit(secured: RunningServer) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    allowed = secured.client(Origin="https://app.example.com", **preflight).options("/search")
    assert allowed.headers.get("access-control-allow-origin") == "https://app.example.com"
    other = secured.client(Origin="https://evil.example", **preflight).options("/search")
    assert "access-control-allow-origin" not in other.headers


def test_an_allowed_origin_may_read_the_documented_headers_and_the_guards_refusals(
    secured: RunningServer,
) -> None:
    app = secured.client(Origin="https://app.example.com", Authorization=f"Bearer {ADMIN}")
    listed = app.get("/knowledge_bases")
    exposed = {
        h.strip().lower() for h in listed.headers["access-control-expose-headers"].split(",")
    }
    assert {"retry-after", "content-disposition", "x-request-id", "etag"} <= exposed
    # BodyLimit refuses before any route runs: its 413 still carries the CORS answer
    limit = secured.settings.server.max_body_bytes
    too_large = app.post("/search", json={"query": "x" * (limit + 10)})
    assert too_large.status_code == 413
    assert too_large.headers["access-control-allow-origin"] == "https://app.example.com"
    evil = secured.client(Origin="https://evil.example").post("/search", json={"query": "x"})
    assert evil.status_code == 403 and "access-control-allow-origin" not in evil.headers


def test_rate_limit_answers_429_with_retry_after(tmp_path_factory: pytest.TempPathFactory) -> None:
    with running_server(
        tmp_path_factory.mktemp("limited"),
        server={"api_keys": [{"name": "l", "key": LIMITED}], "rate_limit_per_minute": 3},
    ) as running:
        client = running.client(Authorization=f"Bearer {LIMITED}")
        statuses = [client.get("/knowledge_bases").status_code for _ in range(5)]
        assert statuses[:3] == [200, 200, 200] and statuses[3:] == [429, 429]
        limited = client.get("/knowledge_bases")
        assert limited.json()["code"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1


@pytest.mark.parametrize("route", ["/knowledge_bases", "/mcp"])
def test_guessing_keys_is_rate_limited_per_address(
    tmp_path_factory: pytest.TempPathFactory, route: str
) -> None:
    with running_server(
        tmp_path_factory.mktemp("guessing"),
        server={"api_keys": [{"name": "l", "key": LIMITED}], "rate_limit_per_minute": 3},
    ) as running:
        # Keyless health probes (a load balancer's, from the callers' address) cost nothing.
        assert all(running.client().get("/health").status_code == 200 for _ in range(5))
        guesses = [
            running.client(Authorization=f"Bearer guess-{n}").get(route).status_code
            for n in range(5)
        ]
        assert guesses[:3] == [401, 401, 401] and guesses[3:] == [429, 429]
        refused = running.client(Authorization="Bearer guess-6").get(route)
        assert int(refused.headers["retry-after"]) >= 1
        # The key's own bucket is not the address's: its holder is not locked out.
        assert running.client(Authorization=f"Bearer {LIMITED}").get(route).status_code != 429


def test_an_open_api_answers_only_its_own_host_names(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """DNS rebinding: a page whose name was re-pointed at 127.0.0.1 reaches the open API as
    its own origin; its requests carry that name in Host."""
    with running_server(tmp_path_factory.mktemp("open")) as running:
        port = running.settings.server.port
        assert (
            running.client().post("/knowledge_bases", json={"kb_name": "mine"}).status_code == 201
        )
        rebound = running.client(Host=f"evil.example:{port}", Origin=f"http://evil.example:{port}")
        for method, path in [
            ("GET", "/knowledge_bases"),
            ("DELETE", "/knowledge_bases/mine"),
            ("GET", "/ui"),
            ("GET", "/ui/fragments/kbs"),
            ("POST", "/ui/kbs/mine/delete"),
        ]:
            refused = rebound.request(method, path)
            assert refused.status_code == 403 and refused.json()["code"] == "forbidden", path
        assert rebound.get("/health").status_code == 200  # probes name the pod or node
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"localhost.:{port}"):
            assert running.client(Host=host).get("/knowledge_bases/mine").status_code == 200


def test_another_sites_page_cannot_change_anything(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """CSRF: a form on any site could upload into the open API (a multipart POST needs no
    preflight) or queue a rebuild (a POST with no body); the Host check let both through."""
    with running_server(tmp_path_factory.mktemp("csrf")) as running:
        port = running.settings.server.port
        plain = running.client()
        assert plain.post("/knowledge_bases", json={"kb_name": "mine"}).status_code == 201
        forged = running.client(Origin="https://evil.example")
        upload = {"file": ("planted.md", b"# Planted\n\nThe password is swordfish.", "text/md")}
        for method, path, options in [
            ("POST", "/ingest", {"data": {"kb_name": "mine"}, "files": upload}),
            ("POST", "/knowledge_bases/mine/rebuild", {}),
            ("DELETE", "/knowledge_bases/mine", {}),
            ("POST", "/knowledge_bases", {"json": {"kb_name": "theirs"}}),
        ]:
            refused = forged.request(method, path, **options)
            assert refused.status_code == 403, path
            assert refused.json()["details"] == {"origin": "https://evil.example"}
        sandboxed = running.client(Origin="null").post("/knowledge_bases/mine/rebuild")
        assert sandboxed.status_code == 403
        assert plain.get("/documents", params={"kb_name": "mine"}).json() == []
        assert forged.get("/knowledge_bases/mine").status_code == 200  # reading is not forged
        # The UI's own requests carry this server's origin; other clients carry none.
        own = running.client(Origin=f"http://127.0.0.1:{port}")
        assert own.post("/knowledge_bases", json={"kb_name": "ours"}).status_code == 201
        local_tool = running.client(Origin="http://localhost:3000")  # e.g. the MCP Inspector
        assert local_tool.post("/knowledge_bases", json={"kb_name": "tools"}).status_code == 201


def test_an_allowed_cors_origin_may_post(secured: RunningServer) -> None:
    app = secured.client(Origin="https://app.example.com", Authorization=f"Bearer {ADMIN}")
    assert app.post("/search", json={"query": "x"}).status_code == 200
    evil = secured.client(Origin="https://evil.example", Authorization=f"Bearer {ADMIN}")
    assert evil.post("/search", json={"query": "x"}).status_code == 403


def test_with_keys_or_on_every_interface_host_names_are_not_checked(
    secured: RunningServer,
) -> None:
    from eagle_rag.api.hosts import open_host_names
    from eagle_rag.settings import ServerSettings

    admin = secured.client(Authorization=f"Bearer {ADMIN}", Host="api.example.com")
    assert admin.get("/knowledge_bases").status_code == 200
    assert open_host_names(ServerSettings(host="0.0.0.0")) is None
    named = open_host_names(ServerSettings(host="10.0.0.5", mcp_allowed_hosts=["Rag.Example:443"]))
    assert named == {"localhost", "127.0.0.1", "::1", "10.0.0.5", "rag.example"}


def mcp_initialize(client: httpx.Client, **headers: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return client.post(
        "/mcp",
        json=body,
        headers={"Accept": "application/json, text/event-stream", **headers},
    )


def test_mcp_refuses_foreign_origins_and_hosts(secured: RunningServer) -> None:
    client = secured.client(Authorization=f"Bearer {ADMIN}")
    assert mcp_initialize(client).status_code == 200
    assert mcp_initialize(client, Origin="https://evil.example").status_code == 403
    assert mcp_initialize(client, Host="evil.example").status_code in (403, 421)


def test_the_rate_limiter_forgets_idle_callers() -> None:
    from eagle_rag.api import security

    clock = [0.0]
    limiter = security.RateLimiter(60, clock=lambda: clock[0])
    for n in range(security.MAX_BUCKETS + 1):
        limiter.check(f"ip:{n}")
    clock[0] += 61.0  # every bucket has refilled
    limiter.check("ip:new")
    limiter.check("ip:newer")  # the map overflowed again and was pruned of the idle callers
    assert len(limiter._buckets) <= 2


def test_a_callers_scope_is_what_it_asked_for_or_all_it_may_read() -> None:
    from eagle_rag.api.security import Caller
    from eagle_rag.errors import PermissionDeniedError

    assert Caller("open").scope(()) is None  # every KB of the namespace
    restricted = Caller("k", frozenset({"b", "a"}))
    assert restricted.scope(()) == ("a", "b")
    assert restricted.scope(["b", "b"]) == ("b",)
    with pytest.raises(PermissionDeniedError, match="may not use knowledge base 'c'"):
        restricted.scope(["c"])
    with pytest.raises(PermissionDeniedError, match="may use no knowledge base"):
        Caller("none", frozenset()).scope(())


def test_a_scoped_key_lists_its_sessions_behind_a_hundred_of_others(
    secured: RunningServer,
) -> None:
    """The listing filtered one page of everyone's sessions: a key scoped to alpha saw none of
    its own once 100 newer sessions on beta existed."""
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    own = agent.post("/query", json={"query": "alpha question", "kb_name": "alpha"}).json()
    for i in range(100):
        admin.post("/query", json={"query": f"beta question {i}", "kb_name": "beta"})
    listed = agent.get("/sessions").json()
    assert own["session_id"] in [s["session_id"] for s in listed]
    assert all(s["kb_names"] == ["alpha"] for s in listed)
    assert len(admin.get("/sessions").json()) == 100
    # The UI's list filtered the same one page (it was fixed in the repository for both).
    assert own["session_id"] in agent.get("/ui/fragments/sessions").text


def test_a_scoped_key_cannot_use_another_keys_session(secured: RunningServer) -> None:
    """A key scoped to alpha could continue (so send to the model the history of) a session on
    beta it may not read, and list and read an unscoped key's session over every KB."""
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    on_beta = admin.post("/query", json={"query": "beta secret", "kb_name": "beta"}).json()
    everywhere = admin.post("/query", json={"query": "all secret"}).json()
    for session in (on_beta["session_id"], everywhere["session_id"]):
        for route in ("/query", "/query/stream"):
            body = {"query": "go on", "kb_name": "alpha", "session_id": session}
            refused = agent.post(route, json=body)
            assert refused.status_code == 404 and refused.json()["code"] == "not_found", route
        assert agent.get(f"/sessions/{session}/messages").status_code == 404
        assert agent.delete(f"/sessions/{session}").status_code == 404
        assert session not in [s["session_id"] for s in agent.get("/sessions").json()]
        assert len(admin.get(f"/sessions/{session}/messages").json()["messages"]) == 2
    # A scoped key's own session without a KB named is over its KBs: it sees and continues it.
    own = agent.post("/query", json={"query": "mine"}).json()["session_id"]
    assert own in [s["session_id"] for s in agent.get("/sessions").json()]
    again = agent.post("/query", json={"query": "more", "session_id": own})
    assert again.status_code == 200 and again.json()["session_id"] == own


def test_another_kbs_ids_read_as_ids_that_never_existed(secured: RunningServer) -> None:
    """A 403 for a document, task or conversation of a KB outside the key confirmed that the id
    exists and named its KB; each is now the same 404 as an id that never existed, and a
    refused delete deletes nothing."""
    admin = secured.client(Authorization=f"Bearer {ADMIN}")
    agent = secured.client(Authorization=f"Bearer {SCOPED}")
    files = {"file": ("plan.txt", b"The beta launch plan is confidential.", "text/plain")}
    submitted = admin.post("/ingest", data={"kb_name": "beta"}, files=files).json()
    assert wait_for_task(admin, submitted["job_id"])["status"] == "completed"
    session = admin.post("/query", json={"query": "launch plan", "kb_name": "beta"}).json()
    hidden = {
        "document": submitted["document_id"],
        "task": submitted["job_id"],
        "session": session["session_id"],
    }
    requests = [
        ("GET", "/documents/{document}", None),
        ("GET", "/documents/{document}/structure", None),
        ("GET", "/documents/{document}/chunks", None),
        ("GET", "/documents/{document}/file", None),
        ("GET", "/documents/{document}/pages/1", None),
        ("POST", "/documents/{document}/pages/search", {"query": "plan"}),
        ("DELETE", "/documents/{document}", None),
        ("POST", "/search", {"query": "plan", "document_ids": ["{document}"]}),
        ("GET", "/tasks/{task}", None),
        ("GET", "/tasks/{task}/stream", None),
        ("POST", "/tasks/{task}/retry", None),
        ("POST", "/tasks/{task}/cancel", None),
        ("GET", "/sessions/{session}/messages", None),
        ("DELETE", "/sessions/{session}", None),
        ("POST", "/query", {"query": "and then?", "session_id": "{session}"}),
    ]
    never = {kind: f"{n:032x}" for n, kind in enumerate(hidden, start=1)}
    for method, path, body in requests:
        refused = _send(agent, method, path, body, hidden)
        missing = _send(agent, method, path, body, never)
        assert refused.status_code == missing.status_code == 404, path
        text = refused.text
        for kind, ident in hidden.items():
            text = text.replace(ident, never[kind])
        assert text == missing.text, path
        assert "beta" not in refused.text, path
    assert admin.get(f"/documents/{hidden['document']}").status_code == 200
    assert len(admin.get(f"/sessions/{hidden['session']}/messages").json()["messages"]) == 2


def _send(
    client: httpx.Client, method: str, path: str, body: object, ids: dict[str, str]
) -> httpx.Response:
    def fill(text: str) -> str:
        return text.format(**ids)

    if isinstance(body, dict):
        body = {k: list(map(fill, x)) if isinstance(x, list) else fill(x) for k, x in body.items()}
    return client.request(method, fill(path), json=body)
