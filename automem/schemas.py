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
    """POST /memory: 201, for a new memory or (`deduplicated: true`) identical content already
    stored. AutoMem's fields (memory_id, stored_at, type, confidence, qdrant, embedding_status,
    enrichment, metadata, timestamp, updated_at, last_accessed, query_time_ms) and ours."""

    memory_id: str
    type: str | None = None
    confidence: float | None = None
    stored_at: str | None = None
    qdrant: str | None = Field(None, description="AutoMem's: stored | queued")
    embedding_status: str | None = Field(None, description="AutoMem's: provided | queued | pending | skipped")
    metadata: dict[str, Any] = {}
    updated_at: str | None = None
    last_accessed: str | None = None
    query_time_ms: float | None = None
    deduplicated: bool = False
    embedding: str | None = Field(None, description="stored | queued | pending (absent when deduplicated)")
    enrichment: str | None = Field(None, description="queued | pending | disabled")
    tags: list[str] = []
    importance: float | None = None
    timestamp: str | None = None
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
    """POST /memory/batch: AutoMem's `stored`, `memory_ids`, `qdrant`, `enrichment`,
    `query_time_ms`, and our per-item `results`."""

    stored: int
    created: int
    duplicates: int
    results: list[BatchItem]
    memory_ids: list[str]
    qdrant: str | None = Field(None, description="AutoMem's: stored (N), stored (N), queued (M), or queued")
    enrichment: str | None = None
    query_time_ms: float | None = None


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
    """DELETE /memory/by-tag: the deletion (AutoMem's `tags` and `deleted_count`), or with
    `?preview=true` the count and a sample of what it would delete."""

    tags: list[str] = []
    deleted_count: int | None = None
    deleted: Literal["soft", "hard"] | None = None
    recoverable_days: int | None = None
    preview: bool = False
    count: int | None = None
    sample_ids: list[str] = []


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
    """One recall item."""

    id: str
    memory: Memory
    score: float
    final_score: float | None = None
    original_score: float | None = Field(None, description="the best raw channel score (AutoMem's)")
    score_components: dict[str, float] = {}
    channels: list[str] = []
    source: str | None = Field(None, description="qdrant (a vector or keyword hit) | graph (AutoMem's)")
    relations: list[Relation] = []
    match_type: str
    replaces: str | None = None
    expanded_from: list[dict[str, Any]] = Field([], description="the seeds and edges that brought it in")


class RecallResponse(Success):
    """GET|POST /recall."""

    query: str = ""
    queries: list[str] | None = None
    results: list[RecallResult]
    count: int
    limit: int | None = None
    sort: str | None = None
    state_mode: str | None = None
    tag_mode: str | None = None
    tag_match: str | None = None
    mode: str | None = None
    filters: dict[str, Any] = {}
    min_score: float | None = None
    dedup_removed: int = 0
    vector_search: dict[str, Any] = {}
    expansion: dict[str, Any] = {}
    entity_expansion: dict[str, Any] = {}
    state_filter: dict[str, Any] = {}
    score_filter: dict[str, Any] = {}
    degraded: list[str] = []
    timings_ms: dict[str, float] = {}
    query_time_ms: float | None = None


class ListedMemory(Memory):
    """A memory in a listing (GET /memory/by-tag): AutoMem's flat memory object, with its score."""

    score: float | None = Field(None, description="the memory's importance (listings rank by it)")
    match_type: str | None = None


class ByTagResponse(Success):
    """GET /memory/by-tag."""

    tags: list[str]
    tag_mode: str | None = None
    tag_match: str | None = None
    limit: int
    offset: int
    count: int
    has_more: bool
    memories: list[ListedMemory]


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


# --- the graph visualisation API ------------------------------------------------------------------
class GraphNode(_Model):
    """A memory as a viewer draws it: AutoMem's node fields and its visual ones."""

    id: str
    content: str | None = None
    type: str | None = None
    importance: float | None = None
    confidence: float | None = None
    tags: list[str] = []
    timestamp: str | None = None
    updated_at: str | None = None
    metadata: dict[str, Any] = {}
    color: str = Field(description="by memory type (meta.type_colors)")
    radius: float = Field(description="0.5 + 1.5 x importance")
    opacity: float = Field(description="0.4 + 0.6 x confidence")


class GraphEdge(_Model):
    id: str = Field(description="<source>-<type>-<target>")
    source: str
    target: str
    type: str
    strength: float = Field(description="the edge's strength (or similarity score), else 0.5")
    color: str
    properties: dict[str, Any] = {}


class SnapshotStats(_Model):
    total_nodes: int = Field(description="active memories of the store")
    total_edges: int = Field(description="edges leaving them, entity mentions left out (from degrees)")
    matching_nodes: int = Field(description="active memories matching the filters")
    returned_nodes: int
    returned_edges: int
    sampled: bool = Field(description="fewer nodes returned than matched (the cap or the limit)")
    sample_ratio: float


class GraphMeta(_Model):
    type_colors: dict[str, str]
    relation_colors: dict[str, str]
    query_time_ms: float
    archive_threshold: float | None = None


class SnapshotMeta(GraphMeta):
    sampling: dict[str, Any] = Field(description="how the nodes were chosen: method, order, limit, cap")


class GraphSnapshot(Success):
    """GET /graph/snapshot."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    stats: SnapshotStats
    meta: SnapshotMeta


class NeighbourNode(_Model):
    id: str
    content: str | None = None
    type: str | None = None
    importance: float | None = None
    confidence: float | None = None
    tags: list[str] = []
    color: str
    radius: float
    opacity: float
    hops: int | None = Field(None, description="graph neighbours: edges from the centre")
    similarity: float | None = Field(None, description="semantic neighbours: cosine similarity")


class GraphNeighbors(Success):
    """GET /graph/neighbors/<id>."""

    center: dict[str, Any] = Field(description="the memory (as GET /memory/<id>) and its visual fields")
    graph_neighbors: list[NeighbourNode]
    semantic_neighbors: list[NeighbourNode]
    edges: list[GraphEdge]
    meta: dict[str, Any]


class ActivityDay(_Model):
    date: str
    count: int


class GraphStats(Success):
    """GET /graph/stats."""

    totals: dict[str, int] = Field(description="nodes, edges")
    by_type: dict[str, int]
    by_relationship: dict[str, int]
    importance_distribution: dict[str, int] = Field(description="high >= 0.8, medium 0.5-0.8, low < 0.5")
    recent_activity: list[ActivityDay] = Field(description="the last 7 UTC days, newest first")
    meta: GraphMeta


class GraphTypes(Success):
    """GET /graph/types."""

    types: list[str]
    colors: dict[str, str]


class GraphRelations(Success):
    """GET /graph/relations."""

    relations: list[str]
    colors: dict[str, str]


# --- entities -------------------------------------------------------------------------------------
class EntityInfo(_Model):
    """An entity enrichment extracted (AutoMem's `id` is its tag, its kind is `category`)."""

    id: str = Field(description="entity:<category>:<slug>")
    slug: str
    name: str | None = None
    category: str
    kind: str | None = None
    tag: str | None = None
    key: str | None = None
    aliases: list[str] = []
    alias_names: list[str] = []
    reference_count: int = Field(description="MENTIONS edges (memories not yet purged)")
    memory_count: int | None = Field(None, description="active memories mentioning it")
    created_at: str | None = None
    merged_into: str | None = None
    merged_at: str | None = None


class EntitiesResponse(Success):
    """GET /entities."""

    entities: list[EntityInfo]
    count: int


class EntityResponse(Success):
    """GET /entity/<slug>."""

    entity: EntityInfo
    matched_by: Literal["slug", "alias"]
    memories: list[Memory]
    memory_count: int


class MergeCandidate(_Model):
    entity_a: str
    entity_b: str
    canonical: str
    alias: str
    confidence: float
    reason: str
    auto_merge: bool


class MergeCandidatesResponse(Success):
    """GET /entities/merge-candidates."""

    candidates: list[MergeCandidate]
    count: int


class EntityAuditEntry(_Model):
    tag: str
    category: str | None = None
    slug: str | None = None
    memory_count: int
    accepted: bool
    reasons: list[str]


class EntityAuditResponse(Success):
    """GET /entities/audit (a dry run: nothing is written)."""

    dry_run: bool
    summary: dict[str, Any]
    entries: list[EntityAuditEntry]
    count: int
    merge_candidates: list[MergeCandidate] | None = None


class MergeOutcome(_Model):
    canonical: str
    alias: str
    alias_slug: str
    edges_moved: int
    memories_updated: int
    tags_rewritten: int
    skipped: list[str] = []
    already_merged: bool = False
    reversed: bool = False


class EntityMergeResult(Success):
    """POST /entity/<slug>/merge."""

    merge: MergeOutcome
    entity: EntityInfo = Field(description="the surviving entity")
    merged: EntityInfo = Field(description="the merged entity (merged_into set)")


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
    graph: str | None = Field(None, description="the graph's name (AutoMem's)")
    graph_store: dict[str, Any] = {}
    vectors: dict[str, Any] = {}
    queues: dict[str, Any] = {}
    memory_count: int | None = None
    vector_count: int | None = None
    sync_status: str | None = Field(None, description="synced | drift_detected | orphaned_vectors | unknown")
    vector_dimensions: dict[str, Any] = {}
    enrichment: dict[str, Any] = {}
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


class FailedItem(_Model):
    memory_id: str
    job: str
    reason: str
    at: str


class FailedItems(_Model):
    """Memories a job skipped after an error of their own: how many, and the newest few."""

    count: int
    items: list[FailedItem]


class EnrichmentStatus(Success):
    """GET /enrichment/status: AutoMem's fields (`status` running | stopped, queue_size, pending,
    inflight, max_attempts, stats, classification) and ours."""

    enabled: bool
    queues: dict[str, QueueCounts]
    queue_size: int
    pending: int
    inflight: int
    max_attempts: int
    in_flight: int
    failed: int
    pending_memories: int
    stats: dict[str, Any]
    failed_items: FailedItems
    failed_memories: int
    classification: dict[str, Any]
    llm: dict[str, Any]


class ReprocessResult(Success):
    """POST /enrichment/reprocess (202, AutoMem's `status: queued`, `count`, `ids`)."""

    count: int = 0
    ids: list[str] = []
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
    """POST /admin/sync: `status` complete | already_synced | dry_run (AutoMem's words), AutoMem's
    counts and samples, and ours."""

    falkordb_count: int
    qdrant_count: int
    missing_count: int
    orphaned_count: int
    stale_count: int = 0
    synced: int | None = None
    failed: int | None = None
    repaired: int | None = None
    orphans_deleted: int | None = None
    rebuilt: bool = False
    ranked: int | None = Field(None, description="points given the listings' `rank` written without one")
    unrepaired: dict[str, Any] | None = None
    dry_run: bool = False
    graph_memories: int
    vector_points: int
    difference: int
    missing_sample: list[str] = []
    stale_sample: list[str] = []
    orphaned_sample: list[str] = []


class ExistingRelation(_Model):
    memory1_id: str
    memory2_id: str
    type: str


class ExistingResult(Success):
    """POST /admin/existing: the asked ids and edges that exist, in the order asked."""

    ids: list[str]
    relations: list[ExistingRelation]


class ReembedStarted(Success):
    """POST /admin/reembed (202, `status: queued`): the run is queued; progress at GET /admin/reembed."""

    mode: Literal["missing", "all"]
    model: str
    job_status: Literal["queued", "already_queued"]
    total: int | None = None
    batch_size: int | None = None
    limit: int | None = None
    processed: int | None = None
    failed: int | None = None
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
    next_runs: dict[str, str] = Field(description='AutoMem\'s words: "Due now", "In N day(s)", "Disabled"')
    next_run_at: dict[str, str] = Field({}, description="the next run's time, or disabled")
    thread_alive: bool = False
    tick_seconds: float | None = None
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
