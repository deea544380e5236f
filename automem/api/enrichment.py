"""Background work: GET /enrichment/status, POST /enrichment/reprocess, GET /admin/jobs."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import backlog
from automem.api import json_body, respond, services
from automem.auth import require_admin, require_tenant_admin, tenant_bound
from automem.models import ReprocessBody, parse

bp = Blueprint("enrichment", __name__)


@bp.get("/enrichment/status")
def status() -> tuple[Response, int]:
    return respond(backlog.enrichment_status(services(), tenant_bound()))


@bp.post("/enrichment/reprocess")
@require_tenant_admin
def reprocess() -> tuple[Response, int]:
    svc = services()
    data = json_body() if request.get_data(cache=True) else {}
    if "ids" in request.args and isinstance(data, dict) and "ids" not in data:
        data = {**data, "ids": request.args["ids"]}  # AutoMem also takes ?ids=a,b
    body = parse(ReprocessBody, data, svc.settings)
    queued = backlog.reprocess(svc, body.ids, every=body.all, failed=body.failed, tenant=tenant_bound())
    return respond(queued, 202)


@bp.get("/admin/jobs")
@require_admin
def jobs() -> tuple[Response, int]:
    return respond({"status": "success", **backlog.jobs_overview(services())})
