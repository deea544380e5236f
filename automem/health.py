"""The service's health: per-dependency status, counts, graph-to-vector drift, queue depths,
the embedding provider; and the repair of the drift it reports."""

from __future__ import annotations

from typing import Any

import redis

from automem import __version__
from automem.errors import StoreUnavailable
from automem.services import Services
from automem.timeutil import now_iso


def _graph_section(svc: Services) -> tuple[dict[str, Any], dict[str, int] | None]:
    try:
        counts = svc.graph.counts()
    except StoreUnavailable:
        return {"status": "disconnected"}, None
    return {"status": "connected", "graph": svc.graph.graph_name}, counts


def _vector_section(svc: Services) -> tuple[dict[str, Any], int | None]:
    if svc.vectors is None:
        return {"status": "not_owned", "backend": svc.settings.resolved_vector_backend()}, None
    try:
        count = svc.vectors.count()
    except Exception as exc:  # any client error means the index is unreachable right now
        return {"status": "disconnected", "backend": svc.vectors.backend, "error": type(exc).__name__}, None
    return {
        "status": "connected",
        "backend": svc.vectors.backend,
        "points": count,
        "dimension": svc.vectors.dimension(),
    }, count


def _queue_section(svc: Services) -> dict[str, Any]:
    try:
        svc.queue_redis.ping()
    except redis.exceptions.RedisError:
        return {"status": "disconnected"}
    return {
        "status": "connected",
        "depths": svc.jobs.depths(),
        "failed": svc.jobs.failed_counts(),
        "vector_sync_backlog": svc.sync.backlog(),
    }


def health_report(svc: Services) -> tuple[dict[str, Any], int]:
    """The health body and its status: 200, or 503 when the graph (the source of truth) is down."""
    graph, counts = _graph_section(svc)
    vectors, vector_count = _vector_section(svc)
    queues = _queue_section(svc)
    drift = None
    if counts is not None and vector_count is not None:
        drift = {**drift_of(counts["total"], vector_count), "embedding_pending": counts["embedding_pending"]}
    warnings = list(svc.warnings)
    if not svc.settings.api_token:
        warnings.append("AUTOMEM_API_TOKEN is not set: the API accepts unauthenticated requests on loopback")
    degraded = (
        graph["status"] != "connected"
        or vectors["status"] == "disconnected"
        or queues["status"] != "connected"
        or bool(drift and drift["difference"])
    )
    body = {
        "status": "degraded" if degraded else "healthy",
        "version": __version__,
        "timestamp": now_iso(),
        "mode": "embedded" if svc.settings.resolved_vector_backend() == "edge" else "server",
        "falkordb": graph["status"],
        "qdrant": vectors["status"],
        "graph": graph,
        "vectors": vectors,
        "queues": queues,
        "memory_count": counts["active"] if counts else None,
        "vector_count": vector_count,
        "counts": counts,
        "drift": drift,
        "embedding": {
            "provider": svc.embedder.name,
            "model": svc.embedder.model,
            "dimension": svc.embedder.dimension,
        },
        "warnings": warnings,
    }
    return body, 200 if graph["status"] == "connected" else 503


def drift_of(graph_memories: int, vector_points: int) -> dict[str, int]:
    """Graph-to-vector drift: memory nodes against vector points (0 once the index caught up)."""
    return {
        "graph_memories": graph_memories,
        "vector_points": vector_points,
        "difference": graph_memories - vector_points,
    }


def repair_vectors(svc: Services, every: bool) -> dict[str, int]:
    """POST /admin/sync: rewrite every point missing or older than its memory (`every`: all),
    then report the drift that is left."""
    if svc.vectors is None:
        raise StoreUnavailable("this process does not own the vector store")
    repaired = svc.sync.repair(force=every)
    return {"repaired": repaired, **drift_of(svc.graph.counts()["total"], svc.vectors.count())}
