"""Housekeeping jobs: reconcile (nothing is lost with the queue), access bookkeeping, and the
purge of memories deleted longer ago than RETENTION_DAYS."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from automem import backlog
from automem.history import JOB_PURGE
from automem.jobnames import JobName
from automem.timeutil import format_utc, now_iso, utc_now
from enrichment.context import current_services
from enrichment.registry import job


@job(JobName.RECONCILE)
def reconcile(page: int = backlog.PAGE) -> dict[str, Any]:
    """Queue embedding for every memory lacking a current vector of the configured model (so a
    lost queue loses no work, and a model change re-embeds), enrichment for every memory not
    enriched at the current version, and repair vectors that lag the graph when this process
    owns the vector store."""
    svc = current_services()
    queued = backlog.queue_missing_work(svc, page)
    # Where this process owns the vectors (server mode), also repair vectors the graph outran.
    repaired = svc.sync.repair() if svc.sync.owns_vectors else 0
    return {**queued, "vectors_repaired": repaired}


@job(JobName.FLUSH_ACCESS)
def flush_access(batch: int = 5000) -> int:
    """Apply logged recall accesses: last_accessed and access_count, one graph write per batch.
    Each access carries the version recall saw, so one that predates a client's own
    `last_accessed` change cannot move it (see GraphStore.touch)."""
    svc = current_services()
    applied = 0
    while entries := svc.jobs.take_access_log(batch):
        latest: dict[str, tuple[str, int | None]] = {}
        counts: dict[str, int] = {}
        for memory_id, at, version in entries:
            if memory_id not in latest or at > latest[memory_id][0]:
                latest[memory_id] = (at, version)
            counts[memory_id] = counts.get(memory_id, 0) + 1
        rows = [{"id": i, "at": at, "version": v, "n": counts[i]} for i, (at, v) in latest.items()]
        applied += svc.graph.touch(rows)
    return applied


@job(JobName.PURGE)
def purge_deleted(page: int = backlog.PAGE) -> dict[str, Any]:
    """Remove memories deleted more than RETENTION_DAYS ago: node, edges, history and vector (a
    tombstone event stays), and prune history events older than HISTORY_RETENTION_DAYS (RQ cron)."""
    svc = current_services()
    before = format_utc(utc_now() - timedelta(days=svc.settings.retention_days))
    purged = 0
    while ids := svc.graph.deleted_before(before, page):
        removed = svc.graph.purge_many(ids, JOB_PURGE.event("purged", now_iso()))
        svc.sync.request(ids)  # the owner finds no node and deletes the points
        purged += removed
        if removed == 0:
            break
    pruned, history_before = 0, None
    if svc.settings.history_retention_days > 0:
        history_before = format_utc(utc_now() - timedelta(days=svc.settings.history_retention_days))
        while (n := svc.graph.prune_events(history_before, page * 10)) > 0:
            pruned += n
    return {
        "purged": purged,
        "deleted_before": before,
        "events_pruned": pruned,
        "events_before": history_before,
    }
