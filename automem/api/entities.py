"""Entities: GET /entities, GET /entity/<slug>, GET /entities/merge-candidates, and the admin
routes GET /entities/audit (a dry run) and POST /entity/<slug>/merge."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import entities
from automem.api import change, json_body, respond, services
from automem.auth import current_tenant, require_tenant_admin
from automem.history import Change, checked_reason
from automem.models import parse

bp = Blueprint("entities", __name__)


@bp.get("/entities")
def list_entities() -> tuple[Response, int]:
    svc = services()
    query = parse(entities.EntitiesQuery, request.args.to_dict(), svc.settings)
    return respond(entities.list_entities(svc.graph, current_tenant(), query))


@bp.get("/entity/<slug>")
def get_entity(slug: str) -> tuple[Response, int]:
    svc = services()
    query = parse(entities.EntityQuery, request.args.to_dict(), svc.settings)
    return respond(entities.get_entity(svc.graph, current_tenant(), slug, query))


@bp.get("/entities/merge-candidates")
def merge_candidates() -> tuple[Response, int]:
    svc = services()
    query = parse(entities.MergeCandidatesQuery, request.args.to_dict(), svc.settings)
    return respond(entities.candidates(svc.graph, current_tenant(), svc.settings.entity_scan_limit, query))


@bp.get("/entities/audit")
@require_tenant_admin
def audit() -> tuple[Response, int]:
    svc = services()
    query = parse(entities.EntityAuditQuery, request.args.to_dict(), svc.settings)
    return respond(entities.audit(svc.graph, current_tenant(), svc.settings.entity_scan_limit, query))


@bp.post("/entity/<slug>/merge")
@require_tenant_admin
def merge(slug: str) -> tuple[Response, int]:
    """Fold this entity into `merge_into` on every memory (see automem.entities)."""
    svc = services()
    body = parse(entities.EntityMergeBody, json_body(), svc.settings)
    who = change(admin=True)
    if body.reason is not None:
        who = Change(who.actor, checked_reason(body.reason, svc.settings.max_reason_length))
    return respond(entities.merge(svc, current_tenant(), slug, body, who))
