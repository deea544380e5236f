"""Memory CRUD: POST /memory, POST /memory/batch, GET|PATCH|DELETE /memory/<id>."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from automem import tenant_admin
from automem.api import change, elapsed_ms, idempotent, json_body, respond, services
from automem.auth import current_tenant, require_tenant_admin
from automem.errors import InvalidInput
from automem.history import memory_history
from automem.models import BatchCreate, HistoryQuery, MemoryCreate, MemoryUpdate, parse, parse_uuid

bp = Blueprint("memories", __name__)


@bp.post("/memory")
@idempotent
def create_memory() -> tuple[Response, int]:
    svc = services()
    body = parse(MemoryCreate, json_body(), svc.settings)
    tenant_admin.check_write(svc, current_tenant(), 1, len(body.content))
    status, payload = svc.memories.create(body, current_tenant(), change=change())
    return respond({**payload, "query_time_ms": elapsed_ms()}, status)


@bp.post("/memory/batch")
@idempotent
def create_batch() -> tuple[Response, int]:
    svc = services()
    batch = parse(BatchCreate, json_body(), svc.settings)
    items = [
        parse(MemoryCreate, item, svc.settings, f"memories[{n}].") for n, item in enumerate(batch.memories)
    ]
    tenant_admin.check_write(svc, current_tenant(), len(items), sum(len(i.content) for i in items))
    results = svc.memories.create_batch(items, tenant=current_tenant(), change=change())
    created = sum(1 for r in results if r["status"] == "created")
    body: dict[str, Any] = {
        "status": "success",
        "stored": created,
        "created": created,
        "duplicates": sum(1 for r in results if r["status"] == "duplicate"),
        "results": results,
        "memory_ids": [r["id"] for r in results],
        # AutoMem's summary of where the vectors and the enrichment stand.
        "qdrant": _batch_vectors(results),
        "enrichment": results[0].get("enrichment", "queued") if created else "none",
        "query_time_ms": elapsed_ms(),
    }
    return respond(body, 201)


@bp.get("/memory/<memory_id>")
def get_memory(memory_id: str) -> tuple[Response, int]:
    memory = services().memories.get(parse_uuid(memory_id, "id"), current_tenant())
    return respond({"status": "success", "memory": memory})


@bp.patch("/memory/<memory_id>")
@idempotent
def update_memory(memory_id: str) -> tuple[Response, int]:
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    body = parse(MemoryUpdate, json_body(), svc.settings)
    return respond(svc.memories.update(memory_id, body, change(), current_tenant()))


@bp.delete("/memory/<memory_id>")
def delete_memory(memory_id: str) -> tuple[Response, int]:
    memory_id = parse_uuid(memory_id, "id")
    if request.args.get("hard", "").lower() in ("1", "true", "yes"):
        return _purge(memory_id)
    if_version = _int_arg("if_version")
    return respond(
        services().memories.delete(memory_id, if_version, change(reason_arg="reason"), current_tenant())
    )


@bp.post("/memory/<memory_id>/recover")
def recover_memory(memory_id: str) -> tuple[Response, int]:
    memory_id = parse_uuid(memory_id, "id")
    return respond(services().memories.recover(memory_id, change(reason_arg="reason"), current_tenant()))


@bp.get("/memory/<memory_id>/history")
def history(memory_id: str) -> tuple[Response, int]:
    """The memory's audit trail, newest first (deleted memories keep theirs until purged)."""
    svc = services()
    memory_id = parse_uuid(memory_id, "id")
    query = parse(HistoryQuery, dict(request.args), svc.settings)
    return respond(memory_history(svc.graph, memory_id, query.limit, query.before, current_tenant()))


@require_tenant_admin
def _purge(memory_id: str) -> tuple[Response, int]:
    who = change(admin=True, reason_arg="reason")
    return respond(services().memories.purge(memory_id, who, current_tenant()))


def _int_arg(name: str) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be an integer", field=name) from exc


def _batch_vectors(results: list[dict[str, Any]]) -> str:
    """AutoMem's `qdrant` summary of a batch: "stored (N)", "stored (N), queued (M)" or "queued"."""
    stored = sum(1 for r in results if r.get("embedding") == "stored")
    queued = sum(1 for r in results if r["status"] == "created" and r.get("embedding") != "stored")
    if stored and queued:
        return f"stored ({stored}), queued ({queued})"
    return f"stored ({stored})" if stored else "queued"
