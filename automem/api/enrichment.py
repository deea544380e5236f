"""Background work: GET /enrichment/status, POST /enrichment/reprocess, GET /admin/jobs."""

from __future__ import annotations

from flask import Blueprint, Response

from automem import backlog
from automem.api import json_body, respond, services
from automem.auth import require_admin
from automem.models import ReprocessBody, parse

bp = Blueprint("enrichment", __name__)


@bp.get("/enrichment/status")
def status() -> tuple[Response, int]:
    return respond({"status": "success", **backlog.enrichment_status(services())})


@bp.post("/enrichment/reprocess")
@require_admin
def reprocess() -> tuple[Response, int]:
    svc = services()
    body = parse(ReprocessBody, json_body(), svc.settings)
    out = backlog.reprocess(svc, body.ids, every=body.all, failed=body.failed)
    return respond({"status": "success", **out}, 202)


@bp.get("/admin/jobs")
@require_admin
def jobs() -> tuple[Response, int]:
    return respond({"status": "success", **backlog.jobs_overview(services())})
