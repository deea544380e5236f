"""Relationships: POST /associate and GET /memories/<id>/related."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import associations
from automem.api import json_body, respond, services
from automem.models import RelatedQuery, parse, parse_uuid

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
    query = parse(RelatedQuery, dict(request.args), svc.settings)
    types = query.relationship_types
    memories = svc.memories.related(memory_id, types, query.max_depth, query.limit)
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
