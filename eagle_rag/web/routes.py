"""The UI's pages (shells, open to all) and fragments (behind the caller's key, like the API).

Pages carry no data: with API keys the browser holds the key (sessionStorage) and sends it with
every fragment and API call, so a page shell is the same for everyone (with the API open, the page
of a KB or document that does not exist is a 404; behind keys its fragment's 404 says so).
Fragments are rendered here with Jinja (autoescape on: names and text from documents are always
escaped). Form posts change state only after a same-origin check; GET never changes state.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape

from eagle_rag import __version__
from eagle_rag.api.deps import App, Who
from eagle_rag.api.page_images import is_paged
from eagle_rag.api.schemas import document_out
from eagle_rag.bootstrap import EagleApp
from eagle_rag.db.records import KB_NAME
from eagle_rag.errors import InvalidInputError
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.index.filters import eq
from eagle_rag.web.csrf import check_same_origin
from eagle_rag.web.forms import form_fields, parse_form
from eagle_rag.web.i18n import CATALOGS, COOKIE, pick_language
from eagle_rag.web.stats import kb_counts

STATIC = Path(__file__).parent / "static"
# Scripts and styles from this server only: even markup that slipped through could not run.
CSP = (
    "default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
KB_PAGE = 25
DOC_PAGE = 50
MAX_PAGE = 100_000  # larger page numbers would overflow the database offset
CHUNK_LIMIT = 2000
THUMBNAILS = 50  # page thumbnails on a document's page; a longer document says how many it has
# A list showing documents still being ingested refreshes itself every POLL_SECONDS, for at
# most POLL_LIMIT refreshes (30 minutes): a worker that died must not keep a tab polling forever.
POLL_SECONDS = 3
POLL_LIMIT = 600
BUSY = frozenset({"pending", "processing"})

router = APIRouter(include_in_schema=False)


def mount_web(api: FastAPI) -> None:
    """Add the UI to the app: ``/`` and ``/ui/...``; the MCP endpoint matches only ``/mcp``."""
    api.state.web_templates = Environment(
        loader=PackageLoader("eagle_rag.web", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    api.include_router(router)
    api.mount("/ui/static", StaticFiles(directory=STATIC), name="ui-static")


def _render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    env: Environment = request.app.state.web_templates
    lang = pick_language(request.cookies.get(COOKIE), request.headers.get("accept-language"))
    messages = CATALOGS[lang]
    html = env.get_template(template).render(
        t=messages,
        lang=lang,
        version=__version__,
        gate_open=request.app.state.gate.open,
        path=request.url.path,
        poll_seconds=POLL_SECONDS,
        **context,
    )
    headers = {
        "Vary": "Accept-Language, Cookie",
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }
    return HTMLResponse(html, status_code=status, headers=headers)


def _lang(request: Request) -> str:
    return pick_language(request.cookies.get(COOKIE), request.headers.get("accept-language"))


# --- pages --------------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> HTMLResponse:
    return _render(request, "kbs.html", screen="kbs")


@router.get("/ui", response_class=RedirectResponse)
async def ui_root() -> RedirectResponse:
    return RedirectResponse("/", status_code=307)


@router.get("/ui/kb/{kb_name}", response_class=HTMLResponse)
async def kb_page(request: Request, app: App, kb_name: str) -> HTMLResponse:
    kbs = app.repositories.knowledge_bases
    if _may_look_up(request) and await asyncio.to_thread(kbs.find, kb_name) is None:
        return _not_found(request, "kb_not_found", kb_name)
    return _render(request, "kb.html", screen="kbs", kb_name=kb_name)


@router.get("/ui/documents/{document_id}", response_class=HTMLResponse)
async def document_page(request: Request, app: App, document_id: str) -> HTMLResponse:
    documents = app.repositories.documents
    if _may_look_up(request) and await asyncio.to_thread(documents.find, document_id) is None:
        return _not_found(request, "document_not_found", document_id)
    return _render(request, "document.html", screen="kbs", document_id=document_id)


def _may_look_up(request: Request) -> bool:
    """Whether a page may look things up: only with the API open. Behind keys the browser holds
    the key and a page request carries none, so a lookup there would tell anyone which KBs
    exist; the page stays a shell and its fragment's 404 shows the same message in place."""
    gate_open: bool = request.app.state.gate.open
    return gate_open


def _not_found(request: Request, message: str, name: str) -> HTMLResponse:
    return _render(request, "not_found.html", status=404, screen="kbs", message=message, name=name)


@router.get("/ui/ask", response_class=HTMLResponse)
async def ask_page(request: Request) -> HTMLResponse:
    """With the API open (the embedded default) the KB picker and the conversations come with
    the page: it is usable at its first paint, without a second round trip."""
    if not request.app.state.gate.open:
        return _render(request, "ask.html", screen="ask", inline=False)
    eagle: EagleApp = request.app.state.eagle
    kbs, sessions = await asyncio.to_thread(
        lambda: (eagle.repositories.knowledge_bases.list(), eagle.repositories.sessions.list())
    )
    return _render(request, "ask.html", screen="ask", inline=True, kbs=kbs, sessions=sessions)


# --- fragments ----------------------------------------------------------------------------------


@router.get("/ui/fragments/kbs", response_class=HTMLResponse)
async def kb_rows(
    request: Request,
    app: App,
    who: Who,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    polls: Annotated[int, Query(ge=0)] = 0,
) -> HTMLResponse:
    """One page of the KB list with counts (documents, chunks, by status)."""

    def load() -> tuple[list[Any], dict[str, Any], int, int]:
        kbs = [
            kb
            for kb in app.repositories.knowledge_bases.list()
            if who.kb_names is None or kb.name in who.kb_names
        ]
        at = _last_page_at_most(page, len(kbs), KB_PAGE)
        shown = kbs[(at - 1) * KB_PAGE : at * KB_PAGE]
        counts = kb_counts(app.database, app.namespace, [kb.name for kb in shown])
        return shown, counts, len(kbs), at

    shown, counts, total, page = await asyncio.to_thread(load)
    busy = any(BUSY & counts[kb.name].statuses.keys() for kb in shown)
    return _render(
        request,
        "fragments/kb_rows.html",
        kbs=shown,
        counts=counts,
        page=page,
        pages=_pages(total, KB_PAGE),
        total=total,
        poll_url=_poll_url("/ui/fragments/kbs", busy, polls, page=page),
        refresh_url=_page_url("/ui/fragments/kbs", page=page),
        refresh_on="kbs-changed",
    )


@router.get("/ui/fragments/engine-form", response_class=HTMLResponse)
async def engine_form(request: Request, app: App, who: Who, engine: str = "eagle") -> HTMLResponse:
    """The creation form of one engine, rendered from its ``creation_schema``."""
    described = _engine(app, engine)
    return _render(
        request,
        "fragments/engine_form.html",
        engines=app.knowledge.engines(),
        engine=described,
        fields=form_fields(described["creation_schema"], _lang(request)),
    )


@router.get("/ui/fragments/kb-picker", response_class=HTMLResponse)
async def kb_picker(request: Request, app: App, who: Who) -> HTMLResponse:
    """The Ask page's KB multi-select: only the KBs this caller may use."""
    kbs = await asyncio.to_thread(app.repositories.knowledge_bases.list)
    visible = [kb for kb in kbs if who.kb_names is None or kb.name in who.kb_names]
    return _render(request, "fragments/kb_picker.html", kbs=visible)


@router.get("/ui/fragments/documents", response_class=HTMLResponse)
async def document_rows(
    request: Request,
    app: App,
    who: Who,
    kb_name: str,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    polls: Annotated[int, Query(ge=0)] = 0,
) -> HTMLResponse:
    """One page of a KB's documents (never the whole KB: a KB may hold many thousands)."""
    who.check_kb(kb_name)

    def load() -> tuple[list[dict[str, Any]], int, int]:
        repo = app.repositories.documents
        app.repositories.knowledge_bases.get(kb_name)  # 404 for an unknown KB
        total = repo.count(kb_name=kb_name)
        at = _last_page_at_most(page, total, DOC_PAGE)
        rows = repo.list(kb_name=kb_name, limit=DOC_PAGE, offset=(at - 1) * DOC_PAGE)
        return [document_out(d) for d in rows], total, at

    documents, total, page = await asyncio.to_thread(load)
    busy = any(d["status"] in BUSY for d in documents)
    return _render(
        request,
        "fragments/documents.html",
        kb_name=kb_name,
        documents=documents,
        page=page,
        pages=_pages(total, DOC_PAGE),
        total=total,
        poll_url=_poll_url("/ui/fragments/documents", busy, polls, kb_name=kb_name, page=page),
        refresh_url=_page_url("/ui/fragments/documents", kb_name=kb_name, page=page),
        refresh_on="docs-changed",
    )


def _pages(total: int, per_page: int) -> int:
    return max(1, math.ceil(total / per_page))


def _last_page_at_most(page: int, total: int, per_page: int) -> int:
    """The page asked for, or the last one there is: after a delete empties the last page (or
    from a stale link) the list shows the rows before it, not "no documents" under a count."""
    return min(page, _pages(total, per_page))


def _page_url(path: str, **query: Any) -> str:
    return path + "?" + urlencode(query)


def _poll_url(path: str, busy: bool, polls: int, **query: Any) -> str | None:
    """The fragment's next refresh (same page, so the reader's place is kept) while something
    it shows is still being ingested; None once nothing is, or after POLL_LIMIT refreshes."""
    if not busy or polls >= POLL_LIMIT:
        return None
    return _page_url(path, **query, polls=polls + 1)


@router.get("/ui/fragments/document/{document_id}", response_class=HTMLResponse)
async def document_detail(request: Request, app: App, who: Who, document_id: str) -> HTMLResponse:
    """A document: its facts, section tree (paths, levels, pages) and chunks in reading order."""
    document = await asyncio.to_thread(
        app.repositories.documents.get, document_id, within=who.kb_names
    )
    rows = await asyncio.to_thread(
        app.vectors.query, TEXT_COLLECTION, eq("document_id", document.id), limit=CHUNK_LIMIT
    )
    rows.sort(key=lambda r: ((r.get("metadata") or {}).get("start_offset") or 0, r["type"]))
    sections = list((document.structure or {}).get("sections") or [])
    # The chunk count includes the figures, tables and page tiles, which the list below (text
    # chunks) does not show: a scan read "Chunks 2" over a list of one.
    visuals = 0
    if VISUAL_COLLECTION in document.collections_used:
        where = eq("document_id", document.id)
        visuals = await asyncio.to_thread(app.vectors.count, VISUAL_COLLECTION, where)
    return _render(
        request,
        "fragments/document.html",
        document=document_out(document),
        sections=sections,
        chunks=rows,
        visuals=visuals,
        paged=is_paged(document.mime_type) and bool(document.object_key),
        thumbnails=THUMBNAILS,
    )


@router.get("/ui/fragments/sessions", response_class=HTMLResponse)
async def session_list(request: Request, app: App, who: Who) -> HTMLResponse:
    visible = await asyncio.to_thread(app.repositories.sessions.list_within, who.kb_names)
    return _render(request, "fragments/sessions.html", sessions=visible)


# --- form posts (same-origin only) ------------------------------------------------------------


@router.post("/ui/kbs", response_class=HTMLResponse)
async def create_kb(request: Request, app: App, who: Who) -> HTMLResponse:
    """Create a KB from the schema form; errors come back as JSON naming the field."""
    check_same_origin(request)
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    name = form.get("kb_name", "").strip()
    _check_kb_name(request, name)
    who.check_kb(name)
    described = _engine(app, form.get("engine", "eagle"))
    settings = parse_form(described["creation_schema"], form)
    await app.knowledge.create(
        name,
        engine=described["name"],
        description=form.get("description", ""),
        creation_settings=settings,
    )
    return _changed(request, "created", name)


def _check_kb_name(request: Request, name: str) -> None:
    """The store's rule for a KB name, said in words in the reader's language (the store's own
    error quotes its regex, in English)."""
    messages = CATALOGS[_lang(request)]
    if not name:
        raise InvalidInputError(messages["kb_name_needed"], field="kb_name")
    if not KB_NAME.fullmatch(name):
        raise InvalidInputError(messages["kb_name_rule"], field="kb_name")


@router.post("/ui/kbs/{kb_name}/delete", response_class=HTMLResponse)
async def delete_kb(request: Request, app: App, who: Who, kb_name: str) -> HTMLResponse:
    check_same_origin(request)
    who.check_kb(kb_name)
    await app.knowledge.delete(kb_name)
    return _changed(request, "deleted", kb_name)


@router.post("/ui/kbs/{kb_name}/rebuild", response_class=HTMLResponse)
async def rebuild_kb(request: Request, app: App, who: Who, kb_name: str) -> HTMLResponse:
    check_same_origin(request)
    who.check_kb(kb_name)
    submissions = await asyncio.to_thread(app.ingest.rebuild, kb_name)
    return _changed(request, "rebuilt", kb_name, count=len(submissions))


def _changed(request: Request, action: str, kb_name: str, count: int = 0) -> HTMLResponse:
    response = _render(
        request, "fragments/notice.html", action=action, kb_name=kb_name, count=count
    )
    response.headers["HX-Trigger"] = "kbs-changed"
    return response


def _engine(app: EagleApp, name: str) -> dict[str, Any]:
    for described in app.knowledge.engines():
        if described["name"] == name:
            return described
    raise InvalidInputError(f"unknown engine {name!r}", field="engine")


@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> Response:
    return Response(status_code=204)  # no icon, and no 404 noise in the console
