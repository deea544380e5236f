"""Authored relationships between memories: POST /associate and GET /memories/<id>/related.

Written edges are announced as one `association.created` live event per request (a batch of 500
is one event with its count), published after the graph write."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from automem.errors import InvalidInput, NotFound
from automem.events import MAX_LISTED_IDS, EventPublisher, EventType
from automem.models import parse_uuid
from automem.record import DEFAULT_TENANT
from automem.relations import AUTHORABLE, DEFAULT_STRENGTH, SYSTEM, canonical_relation
from automem.stores.graph import GraphStore
from automem.timeutil import now_iso
from automem.validation import as_graph_float

MAX_BATCH = 500
_PRIMITIVE = (str, int, float, bool)


def validate_association(body: Any) -> dict[str, Any]:
    """One association as {a, b, type, props}; raises InvalidInput naming the field."""
    if not isinstance(body, dict):
        raise InvalidInput("an association must be a JSON object", field="body")
    a = _memory_id(body, "memory1_id")
    b = _memory_id(body, "memory2_id")
    if a == b:
        raise InvalidInput("cannot associate a memory with itself", field="memory2_id")
    rel_type = _relation_type(body.get("type", "RELATES_TO"))
    props: dict[str, Any] = {"strength": _strength(body.get("strength", DEFAULT_STRENGTH))}
    for key in AUTHORABLE[rel_type]:
        if key in body and body[key] is not None:
            if not isinstance(body[key], _PRIMITIVE):
                raise InvalidInput(f"{key} must be a string, number or boolean", field=key)
            props[key] = as_graph_float(body[key])
    return {"a": a, "b": b, "type": rel_type, "props": props}


def _memory_id(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field} is required", field=field)
    return parse_uuid(value, field)


def _relation_type(value: Any) -> str:
    name = canonical_relation(value) if isinstance(value, str) else None
    if name is None or name in SYSTEM:
        allowed = ", ".join(AUTHORABLE)
        raise InvalidInput(f"type must be one of {allowed} (system types are not authorable)", field="type")
    return name


def _strength(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidInput("strength must be a number between 0 and 1", field="strength")
    return as_graph_float(float(value))  # as the graph returns it, so the answer says it


def write(graph: GraphStore, items: list[dict[str, Any]], tenant: str) -> set[tuple[str, str, str]]:
    """Write valid associations (between memories of `tenant`) grouped by type; returns the
    (a, b, type) triples written."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    now = now_iso()
    for item in items:
        by_type[item["type"]].append({"a": item["a"], "b": item["b"], "props": item["props"], "now": now})
    written: set[tuple[str, str, str]] = set()
    for rel_type, rows in by_type.items():
        written |= {(a, b, rel_type) for a, b in graph.associate(rel_type, rows, tenant)}
    return written


def _announce(events: EventPublisher | None, tenant: str, edges: list[dict[str, Any]], **facts: Any) -> None:
    """One association.created event for the edges a request wrote (none written: no event)."""
    if events is None or not edges:
        return
    data: dict[str, Any] = {
        "count": len(edges),
        "relation_types": sorted({e["relation_type"] for e in edges}),
        "associations": [
            {k: e[k] for k in ("memory1_id", "memory2_id", "relation_type", "strength")}
            for e in edges[:MAX_LISTED_IDS]
        ],
        **facts,
    }
    if len(edges) == 1:
        data.update(data["associations"][0])  # AutoMem's fields of a single association
    events.publish(EventType.ASSOCIATION_CREATED, data, tenant)


def associate_one(
    graph: GraphStore,
    body: Any,
    events: EventPublisher | None = None,
    tenant: str = DEFAULT_TENANT,
) -> dict[str, Any]:
    item = validate_association(body)
    if not write(graph, [item], tenant):
        raise NotFound("one or both memories do not exist", field="memory1_id")
    edge = {
        "memory1_id": item["a"],
        "memory2_id": item["b"],
        "relation_type": item["type"],
        "strength": item["props"]["strength"],
    }
    _announce(events, tenant, [edge])
    return {
        "status": "success",
        "message": f"{item['type']} association created",
        "memory1_id": item["a"],
        "memory2_id": item["b"],
        "relation_type": item["type"],
        **item["props"],
    }


def associate_many(
    graph: GraphStore,
    bodies: Any,
    events: EventPublisher | None = None,
    tenant: str = DEFAULT_TENANT,
) -> tuple[int, dict[str, Any]]:
    if not isinstance(bodies, list) or not bodies:
        raise InvalidInput("associations must be a non-empty array", field="associations")
    if len(bodies) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} associations per request", field="associations")
    valid: list[tuple[int, dict[str, Any]]] = []
    failed: list[dict[str, Any]] = []
    for index, body in enumerate(bodies):
        try:
            valid.append((index, validate_association(body)))
        except InvalidInput as exc:
            failed.append({"index": index, "reason": exc.message, "field": exc.field})
    written = write(graph, [item for _, item in valid], tenant) if valid else set()
    succeeded = []
    for index, item in valid:
        if (item["a"], item["b"], item["type"]) in written:
            succeeded.append(
                {
                    "index": index,
                    "memory1_id": item["a"],
                    "memory2_id": item["b"],
                    "relation_type": item["type"],
                    "strength": item["props"]["strength"],
                }
            )
        else:
            failed.append({"index": index, "reason": "one or both memories do not exist"})
    failed.sort(key=lambda f: f["index"])
    _announce(events, tenant, succeeded, failed_count=len(failed))
    status = 201 if not failed else 207
    return status, {
        "status": "success" if not failed else "partial_success",
        "created_count": len(succeeded),
        "failed_count": len(failed),
        "succeeded": succeeded,
        "failed": failed,
        "summary": f"{len(succeeded)}/{len(bodies)} associations created successfully",
    }
