"""Pydantic models of the API's response bodies, shared by the server and the Python SDK.

The server documents its responses with them (`automem/openapi.py`), the SDK (`automem.client`)
returns them as typed results, and `tests/test_sdk.py` validates real responses of the app
against them. Every model allows extra fields: the server may add fields (AutoMem echo keys,
new diagnostics) without breaking older clients. The module imports nothing but pydantic, so
the SDK stays light.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Success(_Model):
    status: str = "success"


# --- memories -------------------------------------------------------------------------------------
class Memory(_Model):
    """A stored memory as the API shows it (GET /memory/<id>, recall items, PATCH results)."""

    id: str
    memory_id: str | None = Field(None, description="the same as `id` (AutoMem's name)")
    content: str | None = None
    type: str | None = None
    confidence: float | None = None
    tags: list[str] = []
    tag_prefixes: list[str] = []
    importance: float | None = None
    metadata: dict[str, Any] = {}
    timestamp: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    last_accessed: str | None = None
    t_valid: str | None = None
    t_invalid: str | None = None
    version: int | None = None
    state: str | None = None
    embedding_status: str | None = None
    enriched: bool | None = None


class StoreResult(Success):
    """POST /memory: 201 for a new memory, 200 with `deduplicated: true` for identical content."""

    memory_id: str
    type: str | None = None
    confidence: float | None = None
    deduplicated: bool = False
    embedding: str | None = Field(None, description="stored | queued | pending (absent when deduplicated)")
    enrichment: str | None = Field(None, description="queued | pending | disabled")
    tags: list[str] = []
    importance: float | None = None
    timestamp: str | None = None
    stored_at: str | None = None
    version: int | None = None
    summarized: bool | None = None
    original_length: int | None = None
    summarized_length: int | None = None
    memory: Memory | None = Field(None, description="the existing memory, when deduplicated")


class BatchItem(_Model):
    id: str
    status: Literal["created", "duplicate", "conflict"]
    embedding: str | None = None
    enrichment: str | None = None
    requested_id: str | None = None
    error: str | None = None


class BatchResult(Success):
    """POST /memory/batch."""

    stored: int
    created: int
    duplicates: int
    results: list[BatchItem]
    memory_ids: list[str]


class MemoryResult(Success):
    """GET /memory/<id> and PATCH /memory/<id>."""

    memory_id: str | None = None
    memory: Memory


class DeleteResult(Success):
    """DELETE /memory/<id>."""

    memory_id: str
    deleted: Literal["soft", "hard"]
    message: str | None = None
    recoverable_days: int | None = None


class RecoverResult(Success):
    memory_id: str
    recovered: bool
    memory: Memory


class DeleteByTagResult(Success):
    """DELETE /memory/by-tag: a preview (with `confirm_token`) or, confirmed, the deletion."""

    preview: bool
    count: int | None = None
    sample_ids: list[str] = []
    confirm_token: str | None = None
    expires_in: int | None = None
    deleted: int | None = None
    recoverable_days: int | None = None


# --- recall and listings ---------------------------------------------------------------------------
class RelatedSummary(_Model):
    id: str
    type: str | None = None
    timestamp: str | None = None
    importance: float | None = None
    tags: list[str] = []
    content: str | None = None


class Relation(_Model):
    type: str
    direction: Literal["outgoing", "incoming"]
    strength: float | None = None
    system: bool = False
    memory: RelatedSummary


class RecallResult(_Model):
    """One recall (or by-tag) item."""

    id: str
    memory: Memory
    score: float
    score_components: dict[str, float] = {}
    channels: list[str] = []
    relations: list[Relation] = []
    match_type: str
    replaces: str | None = None
    expanded_from: list[dict[str, Any]] = Field([], description="the seeds and edges that brought it in")


class RecallResponse(Success):
    """GET|POST /recall."""

    query: str = ""
    results: list[RecallResult]
    count: int
    limit: int | None = None
    sort: str | None = None
    mode: str | None = None
    filters: dict[str, Any] = {}
    min_score: float | None = None
    degraded: list[str] = []
    timings_ms: dict[str, float] = {}


class ByTagResponse(Success):
    """GET /memory/by-tag."""

    tags: list[str]
    tag_mode: str | None = None
    tag_match: str | None = None
    limit: int
    offset: int
    count: int
    has_more: bool
    memories: list[RecallResult]


class TagNode(_Model):
    name: str
    tag: str
    count: int
    children: list[TagNode] = []


class TagCount(_Model):
    tag: str
    count: int


class TagsResponse(Success):
    """GET /tags."""

    prefix: str | None = None
    tags: list[TagNode]
    flat: list[TagCount]


# --- relationships --------------------------------------------------------------------------------
class AssociateResult(Success):
    """POST /associate with one association (201)."""

    memory1_id: str
    memory2_id: str
    relation_type: str
    strength: float
    message: str | None = None


class AssociationOutcome(_Model):
    index: int
    memory1_id: str | None = None
    memory2_id: str | None = None
    relation_type: str | None = None
    strength: float | None = None
    reason: str | None = None
    field: str | None = None


class AssociateBatchResult(Success):
    """POST /associate with `associations` (201, or 207 with `status: partial_success`)."""

    created_count: int
    failed_count: int
    succeeded: list[AssociationOutcome]
    failed: list[AssociationOutcome]
    summary: str | None = None


class RelatedMemory(Memory):
    hops: int


class RelatedResponse(Success):
    """GET /memories/<id>/related."""

    memory_id: str
    count: int
    related_memories: list[RelatedMemory]
    relationship_types: list[str]
    max_depth: int
    limit: int


# --- sessions and statistics ----------------------------------------------------------------------
class StartupLesson(_Model):
    id: str
    content: str
    tags: list[str] = []
    importance: float | None = None
    type: str | None = None
    metadata: dict[str, Any] = {}
    timestamp: str | None = None


class StartupRule(_Model):
    id: str
    content: str
    tags: list[str] = []


class StartupRecallResponse(Success):
    """GET /startup-recall."""

    critical_lessons: list[StartupLesson]
    system_rules: list[StartupRule]
    lesson_count: int
    rule_count: int
    has_critical: bool
    summary: str


class TypeStats(_Model):
    count: int
    average_confidence: float | None = None
    average_importance: float | None = None


class Analytics(_Model):
    total_memories: int
    memory_types: dict[str, TypeStats]
    confidence_distribution: dict[str, int]
    patterns: list[dict[str, Any]]
    clusters: list[dict[str, Any]]
    preferences: list[dict[str, Any]]
    temporal_insights: dict[str, Any]
    entity_frequency: list[dict[str, Any]]
    top_tags: list[TagCount]
    relationships: dict[str, int]


class AnalyzeResponse(Success):
    """GET /analyze."""

    analytics: Analytics
    elapsed_ms: float


class HistoryEvent(_Model):
    """One entry of a memory's audit trail (SPEC §4; the field names beyond these may vary)."""

    event: str | None = None
    at: str | None = None
    actor: str | None = None
    reason: str | None = None


class HistoryResponse(Success):
    """GET /memory/<id>/history."""

    memory_id: str | None = None
    events: list[HistoryEvent] = []


# --- operations -----------------------------------------------------------------------------------
class EmbeddingInfo(_Model):
    provider: str
    model: str | None = None
    dimension: int


class HealthResponse(_Model):
    """GET /health (200, or 503 when the graph is unreachable: the SDK returns it either way)."""

    status: str = Field(description="healthy | degraded")
    version: str | None = None
    timestamp: str | None = None
    mode: str | None = None
    falkordb: str
    qdrant: str
    graph: dict[str, Any] = {}
    vectors: dict[str, Any] = {}
    queues: dict[str, Any] = {}
    memory_count: int | None = None
    vector_count: int | None = None
    counts: dict[str, int] | None = None
    drift: dict[str, int] | None = None
    embedding: EmbeddingInfo
    warnings: list[str] = []


class QueueCounts(_Model):
    queued: int
    in_flight: int
    scheduled: int
    failed: int
    finished: int


class EnrichmentStatus(Success):
    """GET /enrichment/status."""

    enabled: bool
    queues: dict[str, QueueCounts]
    queue_size: int
    in_flight: int
    failed: int
    pending_memories: int
    stats: dict[str, Any]
    llm: dict[str, Any]


class ReprocessResult(Success):
    """POST /enrichment/reprocess (202)."""

    queued: int | None = None
    unknown_ids: list[str] = []
    requeued_failed: int | None = None


class FailedJob(_Model):
    id: str
    queue: str
    function: str | None = None
    ended_at: str | None = None
    error: str | None = None


class JobsResponse(Success):
    """GET /admin/jobs."""

    queues: dict[str, QueueCounts]
    failed_jobs: list[FailedJob]


class SyncResult(Success):
    """POST /admin/sync."""

    repaired: int
    graph_memories: int
    vector_points: int
    difference: int


class ReembedStarted(Success):
    """POST /admin/reembed (202)."""

    mode: Literal["missing", "all"]
    model: str
    job_status: Literal["queued", "already_queued"]
    progress_url: str | None = None


class ReembedProgress(Success):
    """GET /admin/reembed."""

    model: str
    mode: str | None = None
    started_at: str | None = None
    queued: int
    memories: int
    done: int
    remaining: int


class ConsolidateResult(Success):
    """POST /consolidate: a dry run's report (`consolidation`), or a queued real run (202)."""

    consolidation: dict[str, Any] | None = None
    mode: str | None = None
    dry_run: bool | None = None
    job_id: str | None = None
    job_status: str | None = None


class ConsolidationStatus(Success):
    """GET /consolidate/status."""

    enabled: bool
    running: bool
    intervals: dict[str, int]
    next_runs: dict[str, str]
    scheduler: dict[str, Any]
    history: list[dict[str, Any]]


class RestoreResult(Success):
    """POST /admin/restore (SPEC §4; the fields beyond `status` are the server's)."""


# --- live events ----------------------------------------------------------------------------------
class StreamInfo(_Model):
    """One open stream of the answering API process."""

    id: str
    opened_at: str
    queued: int = Field(description="events waiting to be written to the client")
    delivered: int
    dropped: int = Field(description="events lost because the client read too slowly")


class StreamStatus(Success):
    """GET /stream/status: the live streams of the API process that answers (AutoMem's
    `subscribers`, plus the bounds and counters)."""

    subscribers: int
    max_subscribers: int = Field(description="streams this process admits (AUTOMEM_STREAM_MAX_CLIENTS)")
    queue_size: int
    keepalive_seconds: float
    max_seconds: float
    channel_ready: bool = Field(description="subscribed to the event channel (false until a first stream)")
    events_received: int
    rejected: int = Field(description="streams refused with 503 too_many_streams")
    streams: list[StreamInfo] = []
