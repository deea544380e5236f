"""The dashboard's pages: sign-in, overview, tags, memories, a memory (edit, delete, recover,
associate, history), search, operations. Each calls the same services as the API, in the
signed-in principal's tenant."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from flask import Response, current_app, redirect, request

from automem import backlog, health
from automem.associations import associate_one
from automem.auth import current_tenant, is_admin_secret, principal, principal_of, tenant_bound
from automem.errors import Conflict, InvalidInput, NotFound, Unauthorized
from automem.eventhub import current_hub, event_stream
from automem.history import memory_history
from automem.models import ByTagQuery, MemoryUpdate, parse, parse_uuid
from automem.recall.engine import RecallEngine
from automem.recall.query import RecallQuery
from automem.recall.timeparse import TimeQueryError
from automem.relations import PUBLIC
from automem.tenants import LEGACY, Principal, Scope, digest
from automem.ui import COOKIE, bp, page, require, services, sessions, who

PAGE_SIZE = 50
MEMORY_TYPES = ("Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context")


def _redirect(location: str) -> Response:
    return redirect(location, code=303)  # type: ignore[return-value]


# --- signing in ----------------------------------------------------------------------------------
@bp.get("/sign-in")
def sign_in() -> str:
    return page("sign_in.html", title="Sign in", next=_next_path(), message=request.args.get("message"))


@bp.post("/sign-in")
def sign_in_post() -> Response | tuple[str, int]:
    svc = services()
    key = request.form.get("api_key", "").strip()
    admin = request.form.get("admin_token", "").strip()
    found = _principal_of(key)
    admin_ok = not admin or is_admin_secret(svc.settings, admin)
    if found is None or not admin_ok:
        error = Unauthorized("that key (or admin token) is not valid, or was revoked or has expired")
        return page("sign_in.html", title="Sign in", next=_next_path(), error=error), 401
    legacy = found is LEGACY
    session_id, _ = sessions().open(digest(key) if key else "", digest(admin) if admin else "", legacy)
    response = _redirect(_next_path())
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=svc.settings.ui_idle_minutes * 60 * 24,
        path="/ui",
        httponly=True,
        samesite="Strict",
        secure=request.is_secure,
    )
    return response


def _principal_of(key: str) -> Principal | None:
    svc = services()
    if not key:  # no key is needed only on a stack without AUTOMEM_API_TOKEN (loopback only)
        return None if svc.settings.api_token else LEGACY
    return principal_of(svc.settings, svc.keys, key)


def _next_path() -> str:
    """Where to go after signing in: a path of the dashboard only (never another site)."""
    wanted = request.values.get("next", "/ui/")
    return wanted if wanted.startswith("/ui/") and not wanted.startswith("//") else "/ui/"


@bp.post("/sign-out")
def sign_out() -> Response:
    sessions().close(request.cookies.get(COOKIE, ""))
    response = _redirect("/ui/sign-in")
    response.delete_cookie(COOKIE, path="/ui")
    return response


# --- overview and tags -------------------------------------------------------------------------------
@bp.get("/")
def overview() -> str:
    svc = services()
    tags = svc.memories.tag_tree(None, current_tenant())
    return page("overview.html", title="Overview", tags=tags["flat"][:30], health=_health_summary())


def _health_summary() -> dict[str, Any]:
    body, _ = health.health_report(services())
    return body


@bp.get("/tags")
def tags() -> str:
    svc = services()
    prefix = request.args.get("prefix", "").strip() or None
    mode = request.args.get("mode", "any")
    match = request.args.get("match", "prefix")
    offset = _offset()
    tree = svc.memories.tag_tree(prefix, current_tenant())
    listing = None
    if prefix:
        query = parse(
            ByTagQuery,
            {"tags": prefix, "tag_mode": mode, "tag_match": match, "limit": PAGE_SIZE, "offset": offset},
            svc.settings,
        )
        listing = svc.memories.by_tag(query, current_tenant())
    return page(
        "tags.html",
        title=f"Tags: {prefix}" if prefix else "Tags",
        prefix=prefix,
        mode=mode,
        match=match,
        offset=offset,
        page_size=PAGE_SIZE,
        children=_children(tree["flat"], prefix),
        listing=listing,
    )


def _children(flat: list[dict[str, Any]], prefix: str | None) -> list[dict[str, Any]]:
    """The tags one segment below `prefix` (or the top level), with their counts."""
    depth = 0 if not prefix else prefix.count(":") + 1
    return [
        t for t in flat if t["tag"].count(":") == depth and (not prefix or t["tag"].startswith(prefix + ":"))
    ]


# --- memories ----------------------------------------------------------------------------------------
def _engine() -> RecallEngine:
    found: RecallEngine = current_app.extensions["automem.recall"]
    return found


@bp.get("/memories")
def memories() -> str:
    args = request.args
    offset = _offset()
    data: dict[str, Any] = {
        "limit": PAGE_SIZE + 1,  # one more says whether a next page exists
        "offset": offset,
        "sort": args.get("sort", "time_desc"),
        "expand_relations": False,
        "expand_entities": False,
        "min_importance": args.get("importance") or 0,
    }
    if args.get("type") in MEMORY_TYPES:
        data["types"] = [args["type"]]
    for name in ("start", "end"):
        if args.get(name):
            data[name] = args[name]
    if args.get("state") == "history":
        data["state_mode"] = "history"
    results = _recall(data)["results"]
    kept = {k: v for k, v in args.items() if k != "offset" and v}
    return page(
        "memories.html",
        title="Memories",
        results=results[:PAGE_SIZE],
        args=args,
        types=MEMORY_TYPES,
        offset=offset,
        previous=urlencode({**kept, "offset": max(0, offset - PAGE_SIZE)}) if offset else None,
        next=urlencode({**kept, "offset": offset + PAGE_SIZE}) if len(results) > PAGE_SIZE else None,
        queued=args.get("queued"),
    )


def _recall(data: dict[str, Any]) -> dict[str, Any]:
    query = parse(RecallQuery, data, services().settings)
    try:
        return _engine().recall(query, current_tenant())
    except TimeQueryError as exc:
        raise InvalidInput(str(exc), field=exc.field) from exc


@bp.get("/memory/<memory_id>")
def memory(memory_id: str) -> str:
    return _memory_page(parse_uuid(memory_id, "id"))


def _memory_page(memory_id: str, conflict: str | None = None, status_message: str | None = None) -> str:
    svc = services()
    tenant = current_tenant()
    history = memory_history(svc.graph, memory_id, 50, None, tenant)  # 404 unless the tenant's
    try:
        shown: dict[str, Any] | None = svc.memories.get(memory_id, tenant)
    except NotFound:  # deleted: shown from its history, with Recover
        shown = None
    related = svc.memories.related(memory_id, list(PUBLIC), 1, 50, tenant) if shown else []
    return page(
        "memory.html",
        title="Memory",
        memory_id=memory_id,
        memory=shown,
        deleted=shown is None,
        metadata=json.dumps(shown["metadata"], indent=2, ensure_ascii=False) if shown else "",
        related=related,
        history=history,
        conflict=conflict,
        message=status_message,
        types=MEMORY_TYPES,
    )


@bp.post("/memory/<memory_id>/edit")
def edit(memory_id: str) -> str | Response:
    require(Scope.WRITE)
    memory_id = parse_uuid(memory_id, "id")
    form = request.form
    body: dict[str, Any] = {
        "content": form.get("content", ""),
        "if_version": _int(form.get("version"), "version"),
    }
    body["tags"] = [t.strip() for t in form.get("tags", "").split(",") if t.strip()]
    if form.get("importance"):
        body["importance"] = float(form["importance"])
    if form.get("type") in MEMORY_TYPES:
        body["type"] = form["type"]
    svc = services()
    update = parse(MemoryUpdate, body, svc.settings)
    try:
        svc.memories.update(memory_id, update, who(), current_tenant())
    except Conflict as exc:
        if exc.reason != "version_conflict":
            raise
        message = "This memory changed since you opened it. Here it is as it is now; your edit was not saved."
        return _memory_page(memory_id, conflict=message)
    return _redirect(f"/ui/memory/{memory_id}?saved=1")


def _int(raw: str | None, field: str) -> int:
    try:
        return int(raw or "")
    except ValueError as exc:
        raise InvalidInput("a number was expected; reload the page", field=field) from exc


def _offset() -> int:
    """The page's `?offset=` (0 when absent)."""
    return max(0, _int(request.args.get("offset") or "0", "offset"))


@bp.post("/memory/<memory_id>/delete")
def delete(memory_id: str) -> Response:
    require(Scope.WRITE)
    memory_id = parse_uuid(memory_id, "id")
    services().memories.delete(memory_id, None, who(), current_tenant())
    return _redirect(f"/ui/memory/{memory_id}")


@bp.post("/memory/<memory_id>/recover")
def recover(memory_id: str) -> Response:
    require(Scope.WRITE)
    memory_id = parse_uuid(memory_id, "id")
    services().memories.recover(memory_id, who(), current_tenant())
    return _redirect(f"/ui/memory/{memory_id}")


@bp.post("/memory/<memory_id>/associate")
def associate(memory_id: str) -> Response:
    require(Scope.WRITE)
    memory_id = parse_uuid(memory_id, "id")
    body = {
        "memory1_id": memory_id,
        "memory2_id": request.form.get("other", "").strip(),
        "type": request.form.get("type", "RELATES_TO"),
    }
    svc = services()
    associate_one(svc.graph, body, svc.events, current_tenant())
    return _redirect(f"/ui/memory/{memory_id}")


# --- search and operations -----------------------------------------------------------------------------
@bp.get("/search")
def search() -> str:
    args = request.args
    body = None
    if args.get("q") or args.get("tags") or args.get("time"):
        data: dict[str, Any] = {"query": args.get("q", ""), "limit": 20}
        if args.get("tags"):
            data["tags"] = [t.strip() for t in args["tags"].split(",") if t.strip()]
        if args.get("time"):
            data["time_query"] = args["time"]
        if args.get("type") in MEMORY_TYPES:
            data["types"] = [args["type"]]
        body = _recall(data)
    return page("search.html", title="Search", args=args, body=body, types=MEMORY_TYPES)


@bp.get("/ops")
def ops() -> str:
    svc = services()
    health_now = _health_summary()
    status = backlog.enrichment_status(svc, tenant_bound(), health_now["counts"])
    admin = principal().admin
    jobs = backlog.jobs_overview(svc) if admin else None
    reembed = backlog.reembed_progress(svc) if admin else None
    consolidation = svc.consolidation.status() if svc.consolidation is not None else None
    return page(
        "ops.html",
        script="feed.js",
        title="Operations",
        health=health_now,
        status=status,
        jobs=jobs,
        reembed=reembed,
        consolidation=consolidation,
        queued=request.args.get("queued"),
        requeued=request.args.get("requeued"),
    )


@bp.get("/feed")
def feed() -> Response:
    """The live feed of the operations page: the signed-in tenant's events, as GET /stream."""
    return event_stream(current_hub(), current_tenant())


@bp.post("/reprocess")
def reprocess() -> Response:
    """Re-enrich every memory, or the chosen ones (tenant-admin); requeue failed jobs (admin)."""
    require(Scope.TENANT_ADMIN)
    form = request.form
    failed = form.get("what") == "failed_jobs"
    ids = [parse_uuid(i, "ids") for i in form.getlist("ids")]
    every = form.get("what") == "all"
    if not (failed or every or ids):
        raise InvalidInput("choose at least one memory to re-enrich", field="ids")
    done = backlog.reprocess(services(), ids or None, every=every, failed=failed, tenant=tenant_bound())
    back = "/ui/memories" if form.get("back") == "memories" else "/ui/ops"
    report = {"queued": done.get("queued"), "requeued": done.get("requeued_failed")}
    return _redirect(f"{back}?" + urlencode({k: v for k, v in report.items() if v is not None}))
