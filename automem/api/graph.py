"""Relationships: POST /associate and GET /memories/<id>/related."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import associations
from automem.api import json_body, respond, services
from automem.errors import InvalidInput
from automem.models import parse_uuid
from automem.relations import AUTHORABLE, canonical_relation

bp = Blueprint("graph", __name__)


@bp.post("/associate")
def associate() -> tuple[Response, int]:
    svc = services()
    body = json_body()
    if isinstance(body, dict) and "associations" in body:
        status, payload = associations.associate_many(svc.graph, body["associations"], svc.events)
        return respond(payload, status)
    return respond(associations.associate_one(svc.graph, body, svc.events), 201)


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
