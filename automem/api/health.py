"""GET /health: per-dependency status, counts, graph-to-vector drift, queue depths, embedding."""

from __future__ import annotations

from typing import Any

import redis
from flask import Blueprint, Response

from automem import __version__
from automem.api import respond, services
from automem.errors import StoreUnavailable
from automem.services import Services
from automem.timeutil import now_iso

bp = Blueprint("health", __name__)


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


@bp.get("/health")
def health() -> tuple[Response, int]:
    svc = services()
    graph, counts = _graph_section(svc)
    vectors, vector_count = _vector_section(svc)
    queues = _queue_section(svc)
    drift = None
    if counts is not None and vector_count is not None:
        drift = {
            "graph_memories": counts["total"],
            "vector_points": vector_count,
            "difference": counts["total"] - vector_count,
            "embedding_pending": counts["embedding_pending"],
        }
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
    return respond(body, 200 if graph["status"] == "connected" else 503)
