"""Admin maintenance routes: POST /admin/sync (vectors repaired from the graph),
POST|GET /admin/reembed (re-embedding with the configured model, and its progress) and
POST /admin/existing (which memories and edges exist: importers skip them on a re-run)."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import backlog
from automem.api import json_body, respond, services
from automem.auth import current_tenant, require_admin, require_tenant_admin
from automem.health import repair_vectors
from automem.models import ExistingQuery, ReembedBody, SyncBody, parse

bp = Blueprint("admin", __name__)


@bp.post("/admin/sync")
@require_admin
def sync() -> tuple[Response, int]:
    """Bring the vector store back in line with the graph, the source of truth: every point
    missing or older than its memory is rewritten (`{"all": true}`: every point)."""
    svc = services()
    body = parse(SyncBody, json_body() if request.get_data(cache=True) else {}, svc.settings)
    return respond(repair_vectors(svc, every=body.all, dry_run=body.dry_run))


@bp.post("/admin/reembed")
@require_admin
def reembed() -> tuple[Response, int]:
    """Queue re-embedding on the maintenance queue; old vectors answer recall until replaced."""
    svc = services()
    body = parse(ReembedBody, json_body() if request.get_data(cache=True) else {}, svc.settings)
    started = backlog.request_reembed(svc, every=body.every, limit=body.limit, batch_size=body.batch_size)
    return respond(started, 202)


@bp.get("/admin/reembed")
@require_admin
def reembed_status() -> tuple[Response, int]:
    return respond({"status": "success", **backlog.reembed_progress(services())})


@bp.post("/admin/existing")
@require_tenant_admin
def existing() -> tuple[Response, int]:
    """Which of these memory ids and edges already exist. A read: `automem import-automem` asks
    before each batch, so a re-run writes only what is missing."""
    svc = services()
    body = parse(ExistingQuery, json_body(), svc.settings)
    return respond({"status": "success", **svc.memories.existing(body, current_tenant())})
