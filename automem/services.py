"""Builds the service's clients from settings; the one place that wires stores together.

The API process and the RQ worker processes use the same builder. `owner_of_vectors` says whether
this process opens the vector store: always in server mode (Qdrant handles many clients); in
embedded mode only the API process may hold the Qdrant Edge shard, so workers hand their vector
writes to it through `VectorSync`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import redis

from automem.embedding import EmbeddingProvider, build_provider
from automem.embedding.metered import MeteredEmbedder
from automem.errors import ConfigurationError, DimensionMismatch, ShardLocked
from automem.events import EventPublisher
from automem.foreground import ReadActivity
from automem.idempotency import IdempotencyStore
from automem.llm import LlmClient
from automem.memories import MemoryService
from automem.ports import ConsolidationPort
from automem.settings import Settings
from automem.similarity import SimilarMemories, similar_memories
from automem.stores.access import AccessStore
from automem.stores.graph import GraphStore
from automem.stores.queue import JobQueue
from automem.stores.vectors import VectorStore, open_vector_store
from automem.tenants import KeyRing, TenantBook
from automem.vectorsync import VectorSync

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    graph: GraphStore
    queue_redis: redis.Redis
    jobs: JobQueue
    embedder: EmbeddingProvider
    vectors: VectorStore | None
    sync: VectorSync
    memories: MemoryService
    idempotency: IdempotencyStore
    # Live events (automem.events): published by the write path and by jobs, in every process.
    events: EventPublisher
    # Memories alike by embedding: the graph's vector index, or the vector store (automem.similarity).
    similar: SimilarMemories
    warnings: list[str] = field(default_factory=list)
    llm: LlmClient | None = None
    # Worker-side logic the API runs in the request; set by the app factory (automem.ports).
    consolidation: ConsolidationPort | None = None
    # Tenants and scoped API keys (automem.tenants), in their own graph beside the memories.
    keys: KeyRing | None = None
    tenants: TenantBook | None = None
    # Marks served reads, which enrichment yields to (automem.foreground).
    reads: ReadActivity | None = None
    _counts: tuple[float, float, dict[str, int]] | None = field(default=None, repr=False)
    _counts_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def graph_counts(self) -> dict[str, int]:
        """The graph's memory counts (GraphStore.counts, a scan of every memory), reused while
        younger than the scan's own duration x (1 / AUTOMEM_COUNTS_MAX_SHARE - 1): health probes
        and dashboards then spend at most that share of the graph's time counting (a 100k store's
        scan took ~200 ms under load and held writes back meanwhile), and a small store's counts
        are fresh to the millisecond."""
        with self._counts_lock:
            now = time.monotonic()
            if self._counts is not None:
                taken_at, took, counts = self._counts
                share = max(self.settings.counts_max_share, 1e-6)
                if now - taken_at < took * (1.0 / share - 1.0):
                    return dict(counts)
            counts = self.graph.counts()
            done = time.monotonic()
            self._counts = (done, done - now, counts)
            return dict(counts)

    def close(self) -> None:
        self.embedder.flush()  # the embedding counts still waiting in this process
        self.events.close()
        if self.vectors is not None:
            self.vectors.close()


def require_urls(settings: Settings) -> tuple[str, str]:
    graph_url, queue_url = settings.graph_url(), settings.queue_url()
    if not graph_url or not queue_url:
        raise ConfigurationError(
            "no FalkorDB configured: set FALKORDB_URL (or FALKORDB_HOST) for server mode, "
            "or start the embedded stack with `automem serve`"
        )
    return graph_url, queue_url


def _ensure_collection(vectors: VectorStore, dimension: int, wait_seconds: float) -> None:
    """Open/create the collection, waiting a little for a previous owner of the shard to exit.

    After a crash of the API, its orphaned worker may hold the Edge shard for a moment."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            vectors.ensure_collection(dimension)
            return
        except ShardLocked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.25)


def open_vectors(settings: Settings, dimension: int) -> VectorStore:
    vectors = open_vector_store(settings)
    try:
        _ensure_collection(vectors, dimension, settings.shard_lock_wait_seconds)
    except DimensionMismatch as exc:
        vectors.close()
        raise DimensionMismatch(
            f"{exc}. The embedding provider now yields {dimension}-dimensional vectors. Restore the "
            "previous EMBEDDING_PROVIDER / EMBEDDING_MODEL / VECTOR_SIZE. A model of the same "
            "dimension is adopted with `automem reembed --all`; moving to another dimension (a new "
            "collection swapped in when full) is not implemented yet."
        ) from exc
    return vectors


def build_services(settings: Settings, *, owner_of_vectors: bool) -> Services:
    graph_url, queue_url = require_urls(settings)
    graph = GraphStore.from_url(graph_url, settings.falkordb_graph, settings.graph_timeout_seconds)
    queue_redis = redis.Redis.from_url(queue_url)
    provider, warnings = build_provider(settings)
    embedder = MeteredEmbedder(provider, queue_redis)
    vectors = open_vectors(settings, embedder.dimension) if owner_of_vectors else None
    graph.ensure_schema(embedder.dimension, settings.graph_vector_index_wanted())
    context_chars = settings.retrieval_context_chars if settings.retrieval_context_keywords else 0
    sync = VectorSync(graph, vectors, queue_redis, settings.vector_sync_batch, context_chars)
    jobs = JobQueue(queue_redis, settings)
    llm = LlmClient.from_settings(settings, queue_redis)
    events = EventPublisher.from_url(queue_url)
    memories = MemoryService(settings, graph, embedder, jobs, sync, llm, events)
    idempotency = IdempotencyStore(queue_redis, settings.idempotency_ttl_seconds)
    access = AccessStore(graph.db, f"{settings.falkordb_graph}__access", settings.graph_timeout_seconds)
    access.ensure_schema()
    return Services(
        settings=settings,
        graph=graph,
        queue_redis=queue_redis,
        jobs=jobs,
        embedder=embedder,
        vectors=vectors,
        sync=sync,
        memories=memories,
        idempotency=idempotency,
        events=events,
        similar=similar_memories(settings, graph, vectors),
        warnings=list(warnings),
        llm=llm,
        keys=KeyRing(access),
        tenants=TenantBook(access),
        reads=ReadActivity(queue_redis, settings.enrichment_read_window_ms),
    )


def vectors_owned_here(settings: Settings, role: str) -> bool:
    """API processes always own the vector store; workers only when it is a Qdrant server."""
    return role == "api" or settings.resolved_vector_backend() == "qdrant"
