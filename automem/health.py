"""The service's health: per-dependency status, counts, graph-to-vector drift, queue depths,
the embedding provider; and the repair of the drift it reports."""

from __future__ import annotations

from typing import Any

import redis

from automem import __version__
from automem.counters import ENRICHMENT_STATS_KEY
from automem.errors import StoreUnavailable
from automem.services import Services
from automem.stores.codec import decoded
from automem.timeutil import now_iso


def _graph_section(svc: Services) -> tuple[dict[str, Any], dict[str, int] | None]:
    try:
        counts = svc.graph_counts()
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
        "graph": svc.graph.graph_name,  # AutoMem's: the graph's name
        "graph_store": graph,
        "vectors": vectors,
        "queues": queues,
        "memory_count": counts["active"] if counts else None,
        "vector_count": vector_count,
        "sync_status": _sync_status(drift),
        "vector_dimensions": _dimensions(svc, vectors),
        "enrichment": _enrichment(svc, counts, queues),
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


def _sync_status(drift: dict[str, int] | None) -> str:
    """AutoMem's words: synced, drift_detected (fewer points than memories), orphaned_vectors
    (more), unknown (a store unreachable)."""
    if drift is None:
        return "unknown"
    if drift["difference"] == 0:
        return "synced"
    return "drift_detected" if drift["difference"] > 0 else "orphaned_vectors"


def _dimensions(svc: Services, vectors: dict[str, Any]) -> dict[str, Any]:
    collection = vectors.get("dimension")
    configured = svc.settings.vector_size or svc.embedder.dimension
    effective = svc.embedder.dimension
    mismatch = configured != effective or (collection is not None and collection != effective)
    return {"configured": configured, "effective": effective, "collection": collection, "mismatch": mismatch}


def _enrichment(svc: Services, counts: dict[str, int] | None, queues: dict[str, Any]) -> dict[str, Any]:
    """AutoMem's enrichment summary: whether a worker runs, what waits, what was done."""
    if queues["status"] != "connected":
        return {"status": "unknown"}
    try:
        stats = decoded(svc.queue_redis.hgetall(ENRICHMENT_STATS_KEY))
        workers = svc.jobs.workers()
        inflight = svc.jobs.queues["enrich"].started_job_registry.count
    except redis.exceptions.RedisError:
        return {"status": "unknown"}
    depths = queues["depths"]
    return {
        "status": "running" if workers else "stopped",
        "queue_depth": max(0, depths.get("enrich", 0)) + max(0, depths.get("intake_enrich", 0)),
        "pending": counts["enrichment_pending"] if counts else None,
        "inflight": inflight,
        "processed": int(stats.get("enriched", 0)),
        "failed": int(stats.get("failures", 0)),
    }


def drift_of(graph_memories: int, vector_points: int) -> dict[str, int]:
    """Graph-to-vector drift: memory nodes against vector points (0 once the index caught up)."""
    return {
        "graph_memories": graph_memories,
        "vector_points": vector_points,
        "difference": graph_memories - vector_points,
    }


def repair_vectors(svc: Services, every: bool, dry_run: bool = False) -> dict[str, Any]:
    """POST /admin/sync: bring the vector store in line with the graph, the source of truth:
    rewrite every point missing or older than its memory (`every`: all of them) and delete points
    whose memory is gone; then report the drift that is left. `dry_run` only reports what it would
    do. AutoMem's fields (falkordb_count, qdrant_count, missing_count, orphaned_count, synced,
    failed) and ours."""
    if svc.vectors is None:
        raise StoreUnavailable("this process does not own the vector store")
    before = svc.sync.audit()
    counts = {
        "missing_count": before["missing"]["count"],
        "stale_count": before["stale"]["count"],
        "orphaned_count": before["orphaned"]["count"],
    }
    if dry_run:
        samples = {f"{k}_sample": v["sample"] for k, v in before.items()}
        return {"status": "dry_run", "dry_run": True, **_counts(svc), **counts, **samples}
    rebuilt = svc.sync.rebuild_if_marked()  # an interrupted restore: revs cannot be trusted
    ranked = svc.sync.fill_ranks()  # points written before listings' ranks existed
    if rebuilt is None and not every and not any(counts.values()):
        return {
            "status": "already_synced",
            "synced": 0,
            "failed": 0,
            "repaired": 0,
            "ranked": ranked,
            **_counts(svc),
            **counts,
        }
    repaired = rebuilt if rebuilt is not None else svc.sync.repair(force=every)
    orphans = svc.sync.orphans()
    svc.vectors.delete(orphans)
    return {
        "status": "complete",
        "synced": repaired,
        "repaired": repaired,
        "rebuilt": rebuilt is not None,
        "ranked": ranked,
        "orphans_deleted": len(orphans),
        **_unrepaired(svc),
        **_counts(svc),
        **counts,
    }


def _unrepaired(svc: Services) -> dict[str, Any]:
    """What a repair left (nothing, unless the vector store refused writes meanwhile): `failed`
    counts it, `unrepaired` says which points and why."""
    left = {k: v for k, v in svc.sync.audit().items() if v["count"]}
    if not left:
        return {"failed": 0}
    return {
        "failed": sum(v["count"] for v in left.values()),
        "unrepaired": {
            **left,
            "reason": "the vector store did not take every write (see the service log); "
            "run POST /admin/sync again once it is healthy",
        },
    }


def _counts(svc: Services) -> dict[str, int]:
    assert svc.vectors is not None
    graph_memories, points = svc.graph.counts()["total"], svc.vectors.count()
    return {"falkordb_count": graph_memories, "qdrant_count": points, **drift_of(graph_memories, points)}
