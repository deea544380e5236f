"""Relationships: POST /associate, GET /memories/<id>/related, and the graph visualisation API
(GET /graph/snapshot, /graph/neighbors/<id>, /graph/stats, /graph/types, /graph/relations)."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import associations, graphview
from automem.api import json_body, respond, services
from automem.auth import current_tenant
from automem.models import RelatedQuery, parse, parse_uuid

bp = Blueprint("graph", __name__)


@bp.post("/associate")
def associate() -> tuple[Response, int]:
    svc = services()
    body = json_body()
    if isinstance(body, dict) and "associations" in body:
        status, payload = associations.associate_many(
            svc.graph, body["associations"], svc.events, current_tenant()
        )
        return respond(payload, status)
    return respond(associations.associate_one(svc.graph, body, svc.events, current_tenant()), 201)


@bp.get("/memories/<memory_id>/related")
def related(memory_id: str) -> tuple[Response, int]:
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    query = parse(RelatedQuery, dict(request.args), svc.settings)
    types = query.relationship_types
    memories = svc.memories.related(memory_id, types, query.max_depth, query.limit, current_tenant())
    return respond(
        {
            "status": "success",
            "memory_id": memory_id,
            "count": len(memories),
            "related_memories": memories,
            "relationship_types": types,
            "max_depth": query.max_depth,
            "limit": query.limit,
        }
    )


@bp.get("/graph/snapshot")
def graph_snapshot() -> tuple[Response, int]:
    svc = services()
    args = request.args.to_dict()
    if "types" in request.args:  # a comma list, or the parameter repeated (OpenAPI's form style)
        args["types"] = ",".join(request.args.getlist("types"))
    query = parse(graphview.SnapshotQuery, args, svc.settings)
    return respond(graphview.snapshot(svc.graph, svc.settings, current_tenant(), query))


@bp.get("/graph/neighbors/<memory_id>")
def graph_neighbors(memory_id: str) -> tuple[Response, int]:
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    query = parse(graphview.NeighborsQuery, request.args.to_dict(), svc.settings)
    return respond(
        graphview.neighbors(svc.graph, svc.similar, svc.settings, current_tenant(), memory_id, query)
    )


@bp.get("/graph/stats")
def graph_stats() -> tuple[Response, int]:
    svc = services()
    return respond(graphview.stats(svc.graph, svc.settings, current_tenant()))


@bp.get("/graph/types")
def graph_types() -> tuple[Response, int]:
    return respond(graphview.types())


@bp.get("/graph/relations")
def graph_relations() -> tuple[Response, int]:
    return respond(graphview.relations())
