"""OpenAPI 3.1 for the HTTP API, generated from the routes and the pydantic models.

The paths come from the app's own URL map, and each route's description from OPERATIONS, which
names its request model (the same pydantic class the route validates with). A route without an
entry, or an entry without a route, makes `tests/test_openapi.py` fail, so the document cannot
drift from the routes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from flask import Flask
from pydantic import BaseModel, ConfigDict, Field

from automem import __version__
from automem.entities import (
    EntitiesQuery,
    EntityAuditQuery,
    EntityMergeBody,
    EntityQuery,
    MergeCandidatesQuery,
)
from automem.graphview import NeighborsQuery, SnapshotQuery
from automem.insights import StartupRecallQuery
from automem.models import (
    BatchCreate,
    ByTagQuery,
    ConsolidateRequest,
    ExistingQuery,
    HistoryQuery,
    KeyCreate,
    MemoryCreate,
    MemoryUpdate,
    ReembedBody,
    RelatedQuery,
    ReprocessBody,
    RestoreQuery,
    SyncBody,
    TagsQuery,
    TenantCreate,
    TenantUpdate,
)
from automem.recall.query import RecallQuery
from automem.relations import AUTHORABLE
from automem.schemas import (
    AnalyzeResponse,
    AssociateBatchResult,
    AssociateResult,
    BatchResult,
    ByTagResponse,
    ConsolidateResult,
    ConsolidationStatus,
    DeleteByTagResult,
    DeleteResult,
    EnrichmentStatus,
    EntitiesResponse,
    EntityAuditResponse,
    EntityMergeResult,
    EntityResponse,
    ExistingResult,
    GraphNeighbors,
    GraphRelations,
    GraphSnapshot,
    GraphStats,
    GraphTypes,
    HealthResponse,
    HistoryResponse,
    JobsResponse,
    MemoryResult,
    MergeCandidatesResponse,
    RecallResponse,
    RecoverResult,
    ReembedProgress,
    ReembedStarted,
    RelatedResponse,
    ReprocessResult,
    RestoreResult,
    StartupRecallResponse,
    StoreResult,
    StreamStatus,
    SyncResult,
    TagsResponse,
)

_SCHEMA_REF = "#/components/schemas/{model}"
_IGNORED_METHODS = {"HEAD", "OPTIONS"}


class ErrorEnvelope(BaseModel):
    """Every error response: AutoMem's envelope (`status`, `code`, `message`) plus ours."""

    status: Literal["error"] = "error"
    code: int = Field(description="the HTTP status (AutoMem's `code`)")
    message: str = Field(description="a message for humans")
    error: str = Field(description="the same message (earlier clients of this service read it)")
    reason: str = Field(description="a machine code, e.g. invalid_input, not_found, version_conflict")
    field: str | None = Field(default=None, description="the field at fault, when one is")


class Association(BaseModel):
    """One authored edge (validated in `automem.associations`)."""

    model_config = ConfigDict(extra="allow")

    memory1_id: str = Field(json_schema_extra={"format": "uuid"})
    memory2_id: str = Field(json_schema_extra={"format": "uuid"})
    type: Literal[tuple(AUTHORABLE)] = "RELATES_TO"  # type: ignore[valid-type]
    strength: float = Field(default=0.5, ge=0.0, le=1.0)


class AssociationBatch(BaseModel):
    associations: list[Association] = Field(max_length=500)


class DeleteQuery(BaseModel):
    if_version: int | None = None
    hard: bool = False
    reason: str | None = Field(default=None, description="why: recorded in the memory's history")


class ReasonQuery(BaseModel):
    reason: str | None = Field(default=None, description="why: recorded in the memory's history")


class DeleteByTagQuery(ByTagQuery):
    preview: bool = Field(default=False, description="only count and sample what would be deleted")
    hard: bool = Field(default=False, description="purge at once instead of a soft delete (admin token)")
    reason: str | None = Field(default=None, description="why: recorded in each memory's history")


@dataclass(frozen=True)
class Operation:
    summary: str
    body: type[BaseModel] | tuple[type[BaseModel], ...] | None = None
    query: type[BaseModel] | None = None
    success: int | None = 200  # None: a route with no success answer yet (a placeholder)
    admin: bool = False
    public: bool = False
    # The success body's model (`automem.schemas`, the SDK's typed results); None: any JSON object.
    response: type[BaseModel] | tuple[type[BaseModel], ...] | None = None
    raw_body: str | None = None  # media type of a non-JSON request body
    produces: str | None = None  # media type of a non-JSON success response
    also: tuple[int, ...] = ()  # other success codes (deduplicated store, partial batch, queued run)
    statuses: tuple[str, ...] = ("success",)  # what the body's `status` says on success
    errors: tuple[tuple[int, str], ...] = ()  # what an error status means on this route


_STREAM_UNAVAILABLE = (
    "this API process serves its maximum of streams (too_many_streams), or the event channel "
    "is unreachable (events_unavailable)"
)

OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/memory"): Operation(
        "Store a memory (identical content already stored: its id, with deduplicated: true)",
        body=MemoryCreate,
        success=201,
        response=StoreResult,
    ),
    ("POST", "/memory/batch"): Operation(
        "Store up to 1000 memories at once", body=BatchCreate, success=201, response=BatchResult
    ),
    ("GET", "/memory/<memory_id>"): Operation("Read a memory", response=MemoryResult),
    ("PATCH", "/memory/<memory_id>"): Operation("Update a memory", body=MemoryUpdate, response=MemoryResult),
    ("DELETE", "/memory/<memory_id>"): Operation(
        "Delete a memory (soft; hard with the admin token)", query=DeleteQuery, response=DeleteResult
    ),
    ("GET", "/memory/by-tag"): Operation("Memories under tags", query=ByTagQuery, response=ByTagResponse),
    ("GET", "/tags"): Operation("The tag tree with counts", query=TagsQuery, response=TagsResponse),
    ("GET", "/recall"): Operation("Recall memories", query=RecallQuery, response=RecallResponse),
    ("POST", "/recall"): Operation(
        "Recall memories (fields as JSON)", body=RecallQuery, response=RecallResponse
    ),
    ("POST", "/associate"): Operation(
        "Create one or up to 500 authored edges (207: some of a batch failed)",
        body=(Association, AssociationBatch),
        success=201,
        also=(207,),
        statuses=("success", "partial_success"),
        response=(AssociateResult, AssociateBatchResult),
    ),
    ("GET", "/memories/<memory_id>/related"): Operation(
        "Memories linked to a memory", query=RelatedQuery, response=RelatedResponse
    ),
    ("GET", "/health"): Operation(
        "Dependencies, counts, drift, queues",
        public=True,
        statuses=("healthy", "degraded"),
        response=HealthResponse,
    ),
    ("GET", "/enrichment/status"): Operation(
        "Background work: queues, counters, LLM breaker",
        statuses=("running", "stopped"),
        response=EnrichmentStatus,
    ),
    ("POST", "/enrichment/reprocess"): Operation(
        "Re-enrich memories or requeue failed jobs",
        body=ReprocessBody,
        success=202,
        admin=True,
        statuses=("queued",),
        response=ReprocessResult,
    ),
    ("GET", "/admin/jobs"): Operation("Job registries and failed jobs", admin=True, response=JobsResponse),
    ("POST", "/admin/keys"): Operation(
        "Mint an API key of a tenant (the secret is in this answer only)",
        body=KeyCreate,
        success=201,
        admin=True,
        errors=((404, "the tenant does not exist"),),
    ),
    ("GET", "/admin/keys"): Operation("API keys (never their secrets)", admin=True),
    ("DELETE", "/admin/keys/<key_id>"): Operation(
        "Revoke an API key (every API process refuses it within a second)",
        admin=True,
        errors=((404, "no such key"),),
    ),
    ("POST", "/admin/tenants"): Operation(
        "Create a tenant with its limits",
        body=TenantCreate,
        success=201,
        admin=True,
        errors=((409, "the tenant exists (tenant_exists)"),),
    ),
    ("GET", "/admin/tenants"): Operation("Tenants with their limits and usage", admin=True),
    ("GET", "/admin/tenants/<name>"): Operation(
        "A tenant's limits and usage", admin=True, errors=((404, "no such tenant"),)
    ),
    ("PATCH", "/admin/tenants/<name>"): Operation(
        "Set a tenant's limits (null removes one)",
        body=TenantUpdate,
        admin=True,
        errors=((404, "no such tenant"),),
    ),
    ("DELETE", "/admin/tenants/<name>"): Operation(
        "Erase a tenant: every memory, edge, history event, vector, entity and key of it; a receipt",
        admin=True,
        errors=((404, "no such tenant (or already deleted)"),),
    ),
    ("POST", "/admin/sync"): Operation(
        "Repair vectors from the graph (dry_run: only report)",
        body=SyncBody,
        admin=True,
        statuses=("complete", "already_synced", "dry_run"),
        response=SyncResult,
    ),
    ("POST", "/admin/reembed"): Operation(
        "Re-embed with the configured model",
        body=ReembedBody,
        success=202,
        admin=True,
        statuses=("queued",),
        response=ReembedStarted,
    ),
    ("GET", "/admin/reembed"): Operation("Re-embedding progress", admin=True, response=ReembedProgress),
    ("POST", "/admin/existing"): Operation(
        "Which of these memory ids and edges already exist (a read, for importers)",
        body=ExistingQuery,
        admin=True,
        response=ExistingResult,
    ),
    ("POST", "/consolidate"): Operation(
        "Run consolidation (dry run by default; 202: a real run was queued)",
        body=ConsolidateRequest,
        also=(202,),
        response=ConsolidateResult,
    ),
    ("GET", "/consolidate/status"): Operation(
        "Consolidation schedule and history", response=ConsolidationStatus
    ),
    ("GET", "/openapi.json"): Operation("This document"),
    ("GET", "/metrics"): Operation(
        "Prometheus metrics (text exposition format)", public=True, produces="text/plain"
    ),
    ("GET", "/memory/<memory_id>/history"): Operation(
        "Audit trail of a memory, newest first", query=HistoryQuery, response=HistoryResponse
    ),
    ("POST", "/memory/<memory_id>/recover"): Operation(
        "Recover a deleted memory", query=ReasonQuery, response=RecoverResult
    ),
    ("DELETE", "/memory/by-tag"): Operation(
        "Delete memories under tags (soft; ?hard=true with the admin token purges)",
        query=DeleteByTagQuery,
        response=DeleteByTagResult,
    ),
    ("GET", "/startup-recall"): Operation(
        "Lessons and rules for the start of a session",
        query=StartupRecallQuery,
        response=StartupRecallResponse,
    ),
    ("GET", "/analyze"): Operation("Statistics over the store", response=AnalyzeResponse),
    ("GET", "/backup"): Operation(
        "Stream a backup archive (gzip'd JSON lines: graph, history, vectors)",
        admin=True,
        produces="application/gzip",
    ),
    ("GET", "/graph/snapshot"): Operation(
        "Memories and their edges for a graph viewer (bounded: the most important first)",
        query=SnapshotQuery,
        response=GraphSnapshot,
    ),
    ("GET", "/graph/neighbors/<memory_id>"): Operation(
        "A memory's graph neighbours (depth 1-3) and nearest memories by embedding",
        query=NeighborsQuery,
        response=GraphNeighbors,
    ),
    ("GET", "/graph/stats"): Operation(
        "Counts by type and relation, importance bands, the last 7 days", response=GraphStats
    ),
    ("GET", "/graph/types"): Operation("Memory types and their colours", response=GraphTypes),
    ("GET", "/graph/relations"): Operation(
        "Public relation types and their colours", response=GraphRelations
    ),
    ("GET", "/entities"): Operation(
        "Entities enrichment extracted, most mentioned first", query=EntitiesQuery, response=EntitiesResponse
    ),
    ("GET", "/entity/<slug>"): Operation(
        "An entity by slug or alias, with the memories mentioning it",
        query=EntityQuery,
        response=EntityResponse,
    ),
    ("GET", "/entities/merge-candidates"): Operation(
        "Pairs of entities that may be one (for review)",
        query=MergeCandidatesQuery,
        response=MergeCandidatesResponse,
    ),
    ("GET", "/entities/audit"): Operation(
        "Dry run: entity tags on memories and whether they pass the quality rules",
        query=EntityAuditQuery,
        admin=True,
        response=EntityAuditResponse,
    ),
    ("POST", "/entity/<slug>/merge"): Operation(
        "Merge an entity into another on every memory (history recorded, aliases kept)",
        body=EntityMergeBody,
        admin=True,
        response=EntityMergeResult,
    ),
    ("POST", "/admin/restore"): Operation(
        "Rebuild the store from a backup archive (the request body)",
        query=RestoreQuery,
        admin=True,
        raw_body="application/gzip",
        response=RestoreResult,
    ),
    ("GET", "/stream"): Operation(
        "Live events as Server-Sent Events (memories, associations, enrichment, consolidation, "
        "re-embedding), ending after AUTOMEM_STREAM_MAX_SECONDS",
        produces="text/event-stream",
        errors=((503, _STREAM_UNAVAILABLE),),
    ),
    ("GET", "/stream/status"): Operation("Live streams of the answering API process", response=StreamStatus),
    ("GET", "/viewer/"): Operation(
        "AutoMem's viewer path: a redirect (302) to the built-in dashboard, /ui/",
        public=True,
        success=302,
        produces="text/html",
    ),
    ("GET", "/viewer/<path:subpath>"): Operation(
        "AutoMem's viewer paths: a redirect (302) to the built-in dashboard, /ui/",
        public=True,
        success=302,
        produces="text/html",
    ),
}

_ERRORS = {
    400: "invalid input (names the field)",
    401: "missing or wrong API key",
    403: "the key's scope does not allow this route (insufficient_scope), or admin routes are disabled",
    404: "unknown memory or entity",
    409: "version conflict or duplicate id",
    413: "body too large",
    429: "too many write requests, or a tenant limit reached (see reason and Retry-After)",
    503: "graph store unavailable",
}
# Routes the rate limiter counts (automem.ratelimit): writes, except POST /recall, which only reads.
_RATE_LIMITED_METHODS = {"POST", "PATCH", "PUT", "DELETE"}
_NOT_RATE_LIMITED = {("POST", "/recall")}


def routes(app: Flask) -> set[tuple[str, str]]:
    """(method, Flask rule) of every API route of the app."""
    found = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or rule.endpoint.startswith("ui."):  # the dashboard's pages
            continue
        for method in (rule.methods or set()) - _IGNORED_METHODS:
            found.add((method, rule.rule))
    return found


def build_spec(app: Flask) -> dict[str, Any]:
    schemas: dict[str, Any] = {"ErrorEnvelope": _schema(ErrorEnvelope, {})}
    paths: dict[str, dict[str, Any]] = {}
    for method, rule in sorted(routes(app)):
        op = OPERATIONS.get((method, rule)) or Operation("(undocumented)")
        paths.setdefault(openapi_path(rule), {})[method.lower()] = _operation(method, rule, op, schemas)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "automem",
            "version": __version__,
            "description": "Long-term memory for AI assistants and agents (AutoMem-compatible).",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "adminToken": {"type": "apiKey", "in": "header", "name": "X-Admin-Token"},
            },
        },
        "security": [{"apiKey": []}, {"bearer": []}],
    }


def _operation(method: str, rule: str, op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "summary": op.summary,
        "operationId": _operation_id(method, rule),
        "parameters": _path_parameters(rule) + (_query_parameters(op.query, schemas) if op.query else []),
        "responses": _responses(op, schemas, _rate_limited(method, rule)),
    }
    if op.body is not None:
        models = op.body if isinstance(op.body, tuple) else (op.body,)
        refs = [{"$ref": _SCHEMA_REF.format(model=_register(m, schemas))} for m in models]
        schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
        required = method != "DELETE" and not all(
            m in (SyncBody, ReembedBody, ConsolidateRequest) for m in models
        )
        out["requestBody"] = {"required": required, "content": {"application/json": {"schema": schema}}}
    if op.raw_body is not None:
        binary = {"type": "string", "contentMediaType": op.raw_body}
        out["requestBody"] = {"required": True, "content": {op.raw_body: {"schema": binary}}}
    if op.public:
        out["security"] = []
    elif op.admin:
        out["security"] = [{"apiKey": [], "adminToken": []}, {"bearer": [], "adminToken": []}]
    return out


def _rate_limited(method: str, rule: str) -> bool:
    return method in _RATE_LIMITED_METHODS and (method, rule) not in _NOT_RATE_LIMITED


def _responses(op: Operation, schemas: dict[str, Any], rate_limited: bool) -> dict[str, Any]:
    error = {"application/json": {"schema": {"$ref": _SCHEMA_REF.format(model="ErrorEnvelope")}}}
    content = (
        {op.produces: {"schema": {"type": "string", "contentMediaType": op.produces}}}
        if op.produces
        else {"application/json": {"schema": _success_schema(op, schemas)}}
    )
    codes = () if op.success is None else (op.success, *op.also)
    responses: dict[str, Any] = {str(code): {"description": "success", "content": content} for code in codes}
    meanings = dict(op.errors)
    for status, description in _ERRORS.items():
        if status in (401, 403) and op.public:
            continue
        if status == 429 and not rate_limited:
            continue
        responses[str(status)] = {"description": meanings.get(status, description), "content": error}
    return responses


def _success_schema(op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    """The success body: the route's response model(s), or an object whose `status` is one of
    the operation's success statuses."""
    if op.response is None:
        status = {"const": op.statuses[0]} if len(op.statuses) == 1 else {"enum": list(op.statuses)}
        return {"type": "object", "properties": {"status": status}, "additionalProperties": True}
    models = op.response if isinstance(op.response, tuple) else (op.response,)
    refs = [{"$ref": _SCHEMA_REF.format(model=_register(m, schemas))} for m in models]
    return refs[0] if len(refs) == 1 else {"oneOf": refs}


def _register(model: type[BaseModel], schemas: dict[str, Any]) -> str:
    if model.__name__ not in schemas:
        schemas[model.__name__] = _schema(model, schemas)
    return model.__name__


def _schema(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    """The model's JSON Schema (2020-12, as OpenAPI 3.1 uses) with nested models hoisted."""
    schema = model.model_json_schema(ref_template=_SCHEMA_REF)
    for name, definition in schema.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    return schema


def _query_parameters(model: type[BaseModel], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _schema(model, schemas)
    required = set(schema.get("required", []))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": prop}
        for name, prop in schema.get("properties", {}).items()
    ]


# Path parameters other than memory ids (those are UUIDs).
_PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "slug": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 200},
}
_UUID = {"type": "string", "format": "uuid"}


def _path_parameters(rule: str) -> list[dict[str, Any]]:
    """Memory ids are UUIDs; a `path` converter (the viewer's) takes any text."""
    return [
        {"name": name, "in": "path", "required": True, "schema": _path_schema(converter, name)}
        for converter, name in re.findall(r"<(?:([^:>]+):)?([^>]+)>", rule)
    ]


def _path_schema(converter: str, name: str) -> dict[str, Any]:
    return {"type": "string"} if converter == "path" else _PATH_SCHEMAS.get(name, _UUID)


def openapi_path(rule: str) -> str:
    """A Flask rule as an OpenAPI path: `<memory_id>` and `<path:subpath>` become `{name}`."""
    return re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule)


def _operation_id(method: str, rule: str) -> str:
    words = re.sub(r"[^a-zA-Z0-9]+", "_", openapi_path(rule).replace("{", "by_").replace("}", "")).strip("_")
    return f"{method.lower()}_{words or 'root'}"
