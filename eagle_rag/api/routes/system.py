"""Health, plugin health, metrics, and the parser catalog."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from eagle_rag import __version__
from eagle_rag.api.deps import App, Who
from eagle_rag.api.schemas import ERRORS
from eagle_rag.errors import EagleError
from eagle_rag.probes import overall_status, probe_running

router = APIRouter()
# With server.api_keys set, every route here but /health needs a key (and counts against the
# rate limit).
KEYED: dict[int | str, dict[str, Any]] = {status: ERRORS[status] for status in (401, 429)}


@router.get("/health", tags=["system"])
async def health(request: Request, app: App) -> JSONResponse:
    """Liveness plus every backend: ``ok``, ``degraded`` (a non-critical one is down) or
    ``down`` (the metadata database or Milvus does not answer; HTTP 503); ``visuals`` says
    whether visual chunks are made, and ``warnings`` why not (``visuals off: <reason>``).
    Open to probes; behind API keys a caller without a valid key is not told where the
    backends are (each check's ``target``: database host, user and name, URIs, the data dir)."""
    results = await asyncio.to_thread(probe_running, app)
    status = overall_status(results)
    checks = {r.name: r.to_dict() for r in results}
    if not _may_see_targets(request):
        checks = {name: {k: v for k, v in c.items() if k != "target"} for name, c in checks.items()}
    body = {
        "status": status,
        "version": __version__,
        "namespace": app.settings.plugins.default_namespace,
        "checks": checks,
        "visuals": "off" if app.visuals_off else "on",
        "warnings": [w for w in (app.visuals_warning,) if w],
    }
    return JSONResponse(body, status_code=503 if status == "down" else 200)


def _may_see_targets(request: Request) -> bool:
    gate = request.app.state.gate
    if gate.open:
        return True
    if not request.headers.get("authorization"):  # a probe: no key, no rate-limit cost
        return False
    client = request.client.host if request.client else None
    try:
        gate.authenticate(request.headers.get("authorization"), client=client)
    except EagleError:  # no key, a wrong one, or too many wrong ones: still a health answer
        return False
    return True


@router.get("/health/plugins", tags=["system"], responses=KEYED)
async def health_plugins(app: App, who: Who) -> dict[str, Any]:
    """Plugins, manifests, hooks and their subscribers, collections, recent audit decisions."""
    payload = app.plugins.health_payload()
    payload["collections"] = await asyncio.to_thread(app.vectors.collections)
    return payload


@router.get("/metrics", tags=["system"], response_class=Response, responses=KEYED)
async def metrics(request: Request, app: App, who: Who) -> Response:
    """Prometheus text format."""
    return await asyncio.to_thread(request.app.state.metrics.render, app)


@router.get("/engines", tags=["system"], responses=KEYED)
async def engines(app: App, who: Who) -> list[dict[str, Any]]:
    """Knowledge engines a KB can be bound to, with their capabilities and the creation and
    retrieval schemas the UI renders forms from."""
    return app.knowledge.engines()


@router.get("/parsers", tags=["system"], responses=KEYED)
async def parsers(app: App, who: Who) -> list[dict[str, Any]]:
    """Registered Parser components and the MIME types each declares."""
    return [
        {
            "name": registered.name,
            "owner": registered.owner,
            "supported_mime_types": sorted(
                getattr(registered.component, "supported_mime_types", ())
            ),
        }
        for registered in app.registries.parsers
    ]
