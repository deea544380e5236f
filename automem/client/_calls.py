"""Every API call as a `Call` description, built once for both clients.

The keyword fields are typed by the TypedDicts below; `tests/test_sdk.py` holds them equal to the
service's request models (`MemoryCreate`, `MemoryUpdate`, `RecallQuery`), so the SDK accepts
exactly the fields the service reads and rejects a misspelt one instead of sending it to be
ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Required, TypedDict

from automem.client._core import Call, body, json_of, model, query, text_of
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
    ExistingResult,
    HealthResponse,
    HistoryResponse,
    JobsResponse,
    MemoryResult,
    RecallResponse,
    RecoverResult,
    ReembedProgress,
    ReembedStarted,
    RelatedResponse,
    ReprocessResult,
    RestoreResult,
    StartupRecallResponse,
    StoreResult,
    SyncResult,
    TagsResponse,
)

Time = str | datetime
MemoryType = Literal["Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context"]
TagMode = Literal["any", "all"]
TagMatch = Literal["prefix", "exact"]
RestoreMode = Literal["empty", "replace"]
RestoreVectors = Literal["archive", "graph"]


class MemoryFields(TypedDict, total=False):
    """Optional fields of a new memory (POST /memory)."""

    type: MemoryType | str
    confidence: float
    tags: list[str] | str
    importance: float
    metadata: dict[str, Any]
    timestamp: Time
    t_valid: Time
    t_invalid: Time
    updated_at: Time
    last_accessed: Time
    embedding: list[float]
    id: str


class NewMemory(MemoryFields, total=False):
    """One item of `store_batch`."""

    content: Required[str]


class UpdateFields(TypedDict, total=False):
    """Fields of PATCH /memory/<id>; a field left out keeps its value, `t_invalid=None` clears
    it, and a metadata key set to None is removed (metadata is merged)."""

    content: str
    type: MemoryType | str
    confidence: float
    tags: list[str] | str
    importance: float
    metadata: dict[str, Any]
    timestamp: Time
    t_valid: Time | None
    t_invalid: Time | None
    updated_at: Time
    last_accessed: Time
    embedding: list[float]
    if_version: int
    reason: str


class RecallParams(TypedDict, total=False):
    """Parameters of recall besides the query (see docs/api.md, "Recall parameters")."""

    queries: list[str]
    per_query_limit: int
    embedding: list[float]
    limit: int
    tags: list[str] | str
    tag_mode: TagMode
    tag_match: TagMatch
    exclude_tags: list[str] | str
    context_tags: list[str] | str
    types: list[str] | str
    time_query: str
    start: Time
    end: Time
    reference_time: Time
    sort: Literal["score", "time_desc", "time_asc", "updated_desc", "updated_asc"]
    state_mode: Literal["current", "history"]
    current_only: bool
    min_score: float
    min_importance: float
    offset: int
    expand_relations: bool
    expand_entities: bool
    relation_limit: int
    expansion_limit: int
    expand_min_importance: float
    expand_min_strength: float


class AssociationProps(TypedDict, total=False):
    """Properties some relationship types carry besides strength (the service keeps the ones
    its type allows: PREFERS_OVER context/reason, EXEMPLIFIES pattern_type/confidence, ...)."""

    context: str
    reason: str
    pattern_type: str
    confidence: float
    resolution: str
    observations: str
    timestamp: str
    transformation: str
    role: str


class Association(AssociationProps, total=False):
    memory1_id: Required[str]
    memory2_id: Required[str]
    type: str
    strength: float


def keys_of(cls: Any) -> frozenset[str]:
    """Every key of a TypedDict, inherited ones included."""
    return frozenset(cls.__required_keys__ | cls.__optional_keys__)


CREATE_FIELDS = keys_of(NewMemory)
UPDATE_FIELDS = keys_of(UpdateFields)
RECALL_FIELDS = keys_of(RecallParams) | {"query"}
ASSOCIATION_FIELDS = keys_of(Association)


# --- memories -------------------------------------------------------------------------------------
def store(content: str, fields: MemoryFields, idempotency_key: str | None) -> Call[StoreResult]:
    data = body({"content": content, **fields}, CREATE_FIELDS, "store()")
    return Call("POST", "/memory", model(StoreResult), json=data, headers=_idem(idempotency_key))


def store_batch(memories: Sequence[NewMemory], idempotency_key: str | None) -> Call[BatchResult]:
    items = [body(dict(m), CREATE_FIELDS, f"store_batch() item {n}") for n, m in enumerate(memories)]
    return Call(
        "POST", "/memory/batch", model(BatchResult), json={"memories": items}, headers=_idem(idempotency_key)
    )


def get(memory_id: str) -> Call[MemoryResult]:
    return Call("GET", f"/memory/{memory_id}", model(MemoryResult))


def update(memory_id: str, fields: UpdateFields, idempotency_key: str | None) -> Call[MemoryResult]:
    data = body(dict(fields), UPDATE_FIELDS, "update()")
    return Call(
        "PATCH", f"/memory/{memory_id}", model(MemoryResult), json=data, headers=_idem(idempotency_key)
    )


def delete(memory_id: str, if_version: int | None, hard: bool, reason: str | None) -> Call[DeleteResult]:
    params = query({"if_version": if_version, "hard": True if hard else None, "reason": reason})
    return Call("DELETE", f"/memory/{memory_id}", model(DeleteResult), params=params, admin=hard)


def recover(memory_id: str, reason: str | None) -> Call[RecoverResult]:
    params = query({"reason": reason})
    return Call("POST", f"/memory/{memory_id}/recover", model(RecoverResult), params=params)


def history(memory_id: str, limit: int, before: int | None) -> Call[HistoryResponse]:
    params = query({"limit": limit, "before": before})
    return Call("GET", f"/memory/{memory_id}/history", model(HistoryResponse), params=params)


# --- tags and recall ------------------------------------------------------------------------------
def _tag_params(tags: Sequence[str] | str, tag_mode: TagMode, tag_match: TagMatch) -> dict[str, Any]:
    return {
        "tags": [tags] if isinstance(tags, str) else list(tags),
        "tag_mode": tag_mode,
        "tag_match": tag_match,
    }


def by_tag(
    tags: Sequence[str] | str, limit: int, offset: int, tag_mode: TagMode, tag_match: TagMatch
) -> Call[ByTagResponse]:
    params = query({**_tag_params(tags, tag_mode, tag_match), "limit": limit, "offset": offset})
    return Call("GET", "/memory/by-tag", model(ByTagResponse), params=params)


def delete_by_tag(
    tags: Sequence[str] | str,
    tag_mode: TagMode,
    tag_match: TagMatch,
    preview: bool,
    hard: bool,
    reason: str | None,
) -> Call[DeleteByTagResult]:
    flags = {"preview": "true" if preview else None, "hard": "true" if hard else None}
    params = query({**_tag_params(tags, tag_mode, tag_match), **flags, "reason": reason})
    return Call("DELETE", "/memory/by-tag", model(DeleteByTagResult), params=params, admin=hard)


def tags(prefix: str | None) -> Call[TagsResponse]:
    return Call("GET", "/tags", model(TagsResponse), params=query({"prefix": prefix}))


def recall(query_text: str | None, params: RecallParams) -> Call[RecallResponse]:
    data = body({"query": query_text or "", **params}, RECALL_FIELDS, "recall()")
    # POST carries long embeddings and lists as JSON; the service treats it as a read.
    return Call("POST", "/recall", model(RecallResponse), json=data)


def startup_recall(limit: int, rules_limit: int) -> Call[StartupRecallResponse]:
    params = query({"limit": limit, "rules_limit": rules_limit})
    return Call("GET", "/startup-recall", model(StartupRecallResponse), params=params)


def analyze() -> Call[AnalyzeResponse]:
    return Call("GET", "/analyze", model(AnalyzeResponse))


# --- relationships --------------------------------------------------------------------------------
def associate(
    memory1_id: str, memory2_id: str, rel_type: str, strength: float, props: AssociationProps
) -> Call[AssociateResult]:
    data = body(
        {"memory1_id": memory1_id, "memory2_id": memory2_id, "type": rel_type, "strength": strength, **props},
        ASSOCIATION_FIELDS,
        "associate()",
    )
    return Call("POST", "/associate", model(AssociateResult), json=data)


def associate_many(associations: Sequence[Association]) -> Call[AssociateBatchResult]:
    items = [
        body(dict(a), ASSOCIATION_FIELDS, f"associate_many() item {n}") for n, a in enumerate(associations)
    ]
    # 207 (some failed) is an answer: the result lists what failed and why.
    return Call("POST", "/associate", model(AssociateBatchResult), json={"associations": items})


def related(
    memory_id: str, relationship_types: Sequence[str] | None, max_depth: int, limit: int
) -> Call[RelatedResponse]:
    types = ",".join(relationship_types) if relationship_types else None
    params = query({"relationship_types": types, "max_depth": max_depth, "limit": limit})
    return Call("GET", f"/memories/{memory_id}/related", model(RelatedResponse), params=params)


# --- operations -----------------------------------------------------------------------------------
def health() -> Call[HealthResponse]:
    return Call("GET", "/health", model(HealthResponse), accept=(503,))


def enrichment_status() -> Call[EnrichmentStatus]:
    return Call("GET", "/enrichment/status", model(EnrichmentStatus))


def reprocess(ids: Sequence[str] | None, every: bool, failed: bool) -> Call[ReprocessResult]:
    data: dict[str, Any] = {"all": every, "failed": failed}
    if ids:
        data["ids"] = list(ids)
    return Call("POST", "/enrichment/reprocess", model(ReprocessResult), json=data, admin=True)


def jobs() -> Call[JobsResponse]:
    return Call("GET", "/admin/jobs", model(JobsResponse), admin=True)


def sync_vectors(every: bool) -> Call[SyncResult]:
    return Call("POST", "/admin/sync", model(SyncResult), json={"all": every}, admin=True)


class RelationKey(TypedDict):
    """An edge named by its endpoints and type (POST /admin/existing)."""

    memory1_id: str
    memory2_id: str
    type: str


def existing(ids: Sequence[str], relations: Sequence[RelationKey]) -> Call[ExistingResult]:
    data = {"ids": list(ids), "relations": [dict(r) for r in relations]}
    return Call("POST", "/admin/existing", model(ExistingResult), json=data, admin=True)


def reembed(mode: Literal["missing", "all"]) -> Call[ReembedStarted]:
    return Call("POST", "/admin/reembed", model(ReembedStarted), json={"mode": mode}, admin=True)


def reembed_progress() -> Call[ReembedProgress]:
    return Call("GET", "/admin/reembed", model(ReembedProgress), admin=True)


def consolidate(mode: str, dry_run: bool) -> Call[ConsolidateResult]:
    # Real `forget`/`full` runs need the admin token; it is sent when the client has one.
    return Call(
        "POST",
        "/consolidate",
        model(ConsolidateResult),
        json={"mode": mode, "dry_run": dry_run},
        admin=not dry_run,
    )


def consolidation_status() -> Call[ConsolidationStatus]:
    return Call("GET", "/consolidate/status", model(ConsolidationStatus))


def backup() -> Call[None]:
    """GET /backup, streamed: each client reads the body in chunks itself."""
    return Call(
        "GET",
        "/backup",
        lambda _: None,
        admin=True,
        stream=True,
        headers={"Accept": "application/gzip, application/octet-stream"},
    )


def restore(archive: bytes, mode: RestoreMode, vectors: RestoreVectors) -> Call[RestoreResult]:
    params = query({"mode": mode, "vectors": vectors})
    return Call(
        "POST",
        "/admin/restore",
        model(RestoreResult),
        content=archive,
        params=params,
        headers={"Content-Type": "application/gzip"},
        admin=True,
    )


def metrics() -> Call[str]:
    return Call("GET", "/metrics", text_of, headers={"Accept": "text/plain"})


def openapi() -> Call[dict[str, Any]]:
    return Call("GET", "/openapi.json", json_of)


def _idem(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key} if key else {}
