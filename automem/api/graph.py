"""Relationships: POST /associate, GET /memories/<id>/related, and the graph visualisation API
(GET /graph/snapshot, /graph/neighbors/<id>, /graph/stats, /graph/types, /graph/relations)."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import associations, graphview
from automem.api import json_body, respond, services
from automem.errors import InvalidInput
from automem.models import parse, parse_uuid
from automem.record import DEFAULT_TENANT
from automem.relations import AUTHORABLE, canonical_relation

bp = Blueprint("graph", __name__)


@bp.post("/associate")
def associate() -> tuple[Response, int]:
    graph = services().graph
    body = json_body()
    if isinstance(body, dict) and "associations" in body:
        status, payload = associations.associate_many(graph, body["associations"])
        return respond(payload, status)
    return respond(associations.associate_one(graph, body), 201)


@bp.get("/memories/<memory_id>/related")
def related(memory_id: str) -> tuple[Response, int]:
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    types = _types(request.args.get("relationship_types", ""))
    depth = _bounded_int("max_depth", 1, 1, 3)
    limit = _bounded_int("limit", svc.settings.recall_relation_limit, 1, 200)
    memories = svc.memories.related(memory_id, types, depth, limit)
    return respond(
        {
            "status": "success",
            "memory_id": memory_id,
            "count": len(memories),
            "related_memories": memories,
            "relationship_types": types,
            "max_depth": depth,
            "limit": limit,
        }
    )


def _types(raw: str) -> list[str]:
    names = [n for n in raw.split(",") if n.strip()]
    if not names:
        return list(AUTHORABLE)
    types = []
    for name in names:
        canonical = canonical_relation(name)
        if canonical is None:
            raise InvalidInput(f"unknown relationship type {name.strip()!r}", field="relationship_types")
        types.append(canonical)
    return types


def _bounded_int(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be an integer", field=name) from exc
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}", field=name)
    return value


@bp.get("/graph/snapshot")
def graph_snapshot() -> tuple[Response, int]:
    svc = services()
    args = request.args.to_dict()
    if "types" in request.args:  # a comma list, or the parameter repeated (OpenAPI's form style)
        args["types"] = ",".join(request.args.getlist("types"))
    query = parse(graphview.SnapshotQuery, args, svc.settings)
    return respond(graphview.snapshot(svc.graph, svc.settings, DEFAULT_TENANT, query))


@bp.get("/graph/neighbors/<memory_id>")
def graph_neighbors(memory_id: str) -> tuple[Response, int]:
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    query = parse(graphview.NeighborsQuery, request.args.to_dict(), svc.settings)
    return respond(graphview.neighbors(svc.graph, svc.settings, DEFAULT_TENANT, memory_id, query))


@bp.get("/graph/stats")
def graph_stats() -> tuple[Response, int]:
    svc = services()
    return respond(graphview.stats(svc.graph, svc.settings, DEFAULT_TENANT))


@bp.get("/graph/types")
def graph_types() -> tuple[Response, int]:
    return respond(graphview.types())


@bp.get("/graph/relations")
def graph_relations() -> tuple[Response, int]:
    return respond(graphview.relations())
