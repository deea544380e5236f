"""Consolidation: POST /consolidate and GET /consolidate/status.

Dry runs (the default) run in the request and return what a run would do; they write nothing.
Real runs are queued on the `maintenance` RQ queue (202 with the job id; one job per mode, so a
repeated request while it waits is a no-op) and recorded in the history once done. Runs that
can archive memories (`forget`, `full`) need the admin token.
"""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import backlog
from automem.api import json_body, respond, services
from automem.auth import require_admin
from automem.errors import NotImplementedYet
from automem.models import ConsolidateRequest, parse
from automem.ports import ConsolidationPort
from automem.schemas import ConsolidationStatus

bp = Blueprint("consolidation", __name__)


def _consolidation() -> ConsolidationPort:
    port = services().consolidation
    if port is None:
        raise NotImplementedYet("consolidation is not wired into this process (no worker side)")
    return port


@bp.post("/consolidate")
def consolidate() -> tuple[Response, int]:
    svc = services()
    data = json_body() if request.get_data(cache=True) else {}
    body = parse(ConsolidateRequest, data, svc.settings)
    port = _consolidation()
    if body.dry_run:
        return respond({"status": "success", "consolidation": port.preview(body.mode)})
    if body.mode in port.destructive_modes:
        return _enqueue_destructive(body.mode)
    return _enqueue(body.mode)


@require_admin
def _enqueue_destructive(mode: str) -> tuple[Response, int]:
    return _enqueue(mode)


def _enqueue(mode: str) -> tuple[Response, int]:
    return respond({"status": "success", **backlog.request_consolidation(services(), mode)}, 202)


@bp.get("/consolidate/status")
def status() -> tuple[Response, int]:
    body = ConsolidationStatus(**_consolidation().status())
    return respond(body.model_dump())
