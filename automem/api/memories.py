"""Memory CRUD: POST /memory, POST /memory/batch, GET|PATCH|DELETE /memory/<id>."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from automem.api import idempotent, json_body, respond, services
from automem.auth import require_admin
from automem.errors import InvalidInput
from automem.models import BatchCreate, MemoryCreate, MemoryUpdate, parse, parse_uuid

bp = Blueprint("memories", __name__)


@bp.post("/memory")
@idempotent
def create_memory() -> tuple[Response, int]:
    svc = services()
    body = parse(MemoryCreate, json_body(), svc.settings)
    status, payload = svc.memories.create(body)
    return respond(payload, status)


@bp.post("/memory/batch")
@idempotent
def create_batch() -> tuple[Response, int]:
    svc = services()
    batch = parse(BatchCreate, json_body(), svc.settings)
    items = [
        parse(MemoryCreate, item, svc.settings, f"memories[{n}].") for n, item in enumerate(batch.memories)
    ]
    results = svc.memories.create_batch(items)
    created = sum(1 for r in results if r["status"] == "created")
    body: dict[str, Any] = {
        "status": "success",
        "stored": created,
        "created": created,
        "duplicates": sum(1 for r in results if r["status"] == "duplicate"),
        "results": results,
        "memory_ids": [r["id"] for r in results],
    }
    return respond(body, 201)


@bp.get("/memory/<memory_id>")
def get_memory(memory_id: str) -> tuple[Response, int]:
    memory = services().memories.get(parse_uuid(memory_id, "id"))
    return respond({"status": "success", "memory": memory})


@bp.patch("/memory/<memory_id>")
@idempotent
def update_memory(memory_id: str) -> tuple[Response, int]:
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    body = parse(MemoryUpdate, json_body(), svc.settings)
    return respond(svc.memories.update(memory_id, body))


@bp.delete("/memory/<memory_id>")
def delete_memory(memory_id: str) -> tuple[Response, int]:
    memory_id = parse_uuid(memory_id, "id")
    if request.args.get("hard", "").lower() in ("1", "true", "yes"):
        return _purge(memory_id)
    if_version = _int_arg("if_version")
    return respond(services().memories.delete(memory_id, if_version))


@bp.post("/memory/<memory_id>/recover")
def recover_memory(memory_id: str) -> tuple[Response, int]:
    return respond(services().memories.recover(parse_uuid(memory_id, "id")))


@require_admin
def _purge(memory_id: str) -> tuple[Response, int]:
    return respond(services().memories.purge(memory_id))


def _int_arg(name: str) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be an integer", field=name) from exc
