"""Background work as the core sees it: the work the store is owed (memories lacking a current
embedding or enrichment, found in the graph and queued as jobs), the runs the API queues, and
the state of the queues.

The reconcile job (at every start and on cron), a re-embedding run, a restore and the reprocess
route all ask the same questions of the graph, so the answers live here, in the core: the worker
side runs these functions inside its jobs, the API runs them inside requests. Nothing here
embeds, enriches or consolidates; it only hands ids and runs to the queue.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import redis

from automem.counters import ENRICHMENT_STATS_KEY, FAILED_ITEMS_KEY
from automem.errors import Forbidden, StoreUnavailable
from automem.models import is_uuid
from automem.stores.codec import as_text, decoded
from automem.stores.queue import PAGE_SIZE
from automem.timeutil import now_iso

if TYPE_CHECKING:
    from automem.services import Services

# Bump when what enrichment derives changes: reconcile then re-enriches older memories. The
# worker side stamps it on every memory it enriches (`enrichment.enrich`).
ENRICHMENT_VERSION = 3
# Memories per enrichment job: small enough to retry cheaply, large enough to amortise the queue.
ENRICH_CHUNK = 50
# The last re-embedding run, for GET /admin/reembed and the run's live progress: run (its id),
# started_at, mode, queued (memories put in the run's jobs), done (memories those jobs handled),
# enqueued_all (every job is queued), finished_at.
REEMBED_KEY = "automem:reembed"
PAGE = PAGE_SIZE
# One step of a run's progress, atomically: count the memories a job of run ARGV[1] handled
# (ARGV[2]; 0 from the run itself), mark the enqueueing over (ARGV[4] = "1"), and claim the run's
# end (finished_at = ARGV[3]) for exactly one caller once every queued memory is done.
_REEMBED_STEP = """
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] then return false end
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'enqueued_all', '1') end
local done = redis.call('HINCRBY', KEYS[1], 'done', ARGV[2])
local queued = tonumber(redis.call('HGET', KEYS[1], 'queued') or '0')
local over = redis.call('HGET', KEYS[1], 'enqueued_all') == '1'
local finished = 0
if over and done >= queued and redis.call('HSETNX', KEYS[1], 'finished_at', ARGV[3]) == 1 then
    finished = 1
end
return {done, queued, over and 1 or 0, finished}
"""


def queue_missing_work(svc: Services, page: int = PAGE) -> dict[str, int]:
    """Queue embedding for memories lacking a current vector of the configured model and
    enrichment for active memories not enriched at the current version."""
    queued = queue_embedding(svc, every=False, page=page)
    enrich_queued = queue_enrichment(svc, page=page) if svc.settings.enrichment_enabled else 0
    return {"queued": queued, "enrichment_queued": enrich_queued}


def queue_embedding(
    svc: Services,
    every: bool,
    page: int = PAGE,
    limit: int | None = None,
    batch_size: int | None = None,
    run: str | None = None,
) -> int:
    """Queue embedding jobs for memories lacking a current vector of this model (`every`: all),
    at most `limit` memories, `batch_size` a job (default EMBEDDING_BATCH_SIZE); with `run`, the
    jobs report that re-embedding run's progress."""
    queued = 0
    size = batch_size or svc.settings.embedding_batch_size
    for rows in svc.graph.reembed_pages(svc.embedder.label, every, page):
        if limit is not None:
            rows = rows[: max(0, limit - queued)]
            if not rows:
                break
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            if run:  # counted before the job exists, so a fast job never finds done > queued
                svc.queue_redis.hincrby(REEMBED_KEY, "queued", len(chunk))
            ids, hashes = [i for i, _ in chunk], [h for _, h in chunk]
            if svc.jobs.enqueue_embed(ids, hashes, force=every, run=run):
                queued += len(chunk)
            elif run:  # the same work was already waiting in a job of its own
                svc.queue_redis.hincrby(REEMBED_KEY, "queued", -len(chunk))
    return queued


def queue_enrichment(svc: Services, force: bool = False, page: int = PAGE, tenant: str | None = None) -> int:
    """Queue every active memory (of `tenant`, or of all) not enriched at the current version
    (with `force`, every active memory)."""
    queued = 0
    version = 1 << 30 if force else ENRICHMENT_VERSION
    for rows in svc.graph.enrichment_pages(page, version, retry_failed=force, tenant=tenant):
        owners = {memory_id: owner for memory_id, owner, _ in rows}
        entries = sorted((memory_id, memory_version) for memory_id, _, memory_version in rows)
        for owner, part in by_tenant(entries, owners, ENRICH_CHUNK):
            if svc.jobs.enqueue_enrich([i for i, _ in part], [v for _, v in part], force=force, tenant=owner):
                queued += len(part)
    return queued


def reenrich(svc: Services, ids: list[str], tenant: str | None = None) -> tuple[list[str], list[str]]:
    """Queue re-enrichment of these active memories (of `tenant`, when given); (queued ids, ids
    unknown or not active: AutoMem queues any id it is given, ids that name nothing are
    reported here instead)."""
    wellformed = [i for i in ids if is_uuid(i)]
    docs = {
        m.id: m
        for m in svc.graph.get_memories(wellformed)
        if m.state == "active" and (tenant is None or m.tenant == tenant)
    }
    known = [i for i in dict.fromkeys(ids) if i in docs]
    owners = {i: docs[i].tenant for i in known}
    for owner, part in by_tenant([(i, docs[i].version) for i in known], owners, ENRICH_CHUNK):
        svc.jobs.enqueue_enrich([i for i, _ in part], [v for _, v in part], force=True, tenant=owner)
    return known, [i for i in ids if i not in docs]


def start_reembed(
    svc: Services, every: bool, page: int = PAGE, limit: int | None = None, batch_size: int | None = None
) -> dict[str, Any]:
    """Queue re-embedding with the current model: memories lacking its vector, or (`every`) all
    of them (at most `limit`). Old vectors keep answering recall until each new one replaces it
    (rev-guarded), so there is no recall downtime; progress is `reembed_progress`."""
    started, run = now_iso(), uuid.uuid4().hex[:12]
    mode = "all" if every else "missing"
    pipe = svc.queue_redis.pipeline(transaction=True)
    pipe.delete(REEMBED_KEY)  # the previous run's counters and finished_at go
    pipe.hset(REEMBED_KEY, mapping={"run": run, "started_at": started, "mode": mode, "queued": 0, "done": 0})
    pipe.execute()
    queued = queue_embedding(svc, every=every, page=page, limit=limit, batch_size=batch_size, run=run)
    progress = reembed_step(svc, run, 0, enqueued_all=True)
    return {"queued": queued, "model": svc.embedder.label, "started_at": started, "progress": progress}


def reembed_step(svc: Services, run: str, handled: int, enqueued_all: bool = False) -> dict[str, Any] | None:
    """Count `handled` memories done by a job of re-embedding run `run`; the run's progress from
    Redis counters (no graph scan per job), or None when a newer run replaced it or Redis failed
    (progress is bookkeeping: it never fails the embedding job that reports it)."""
    try:
        raw = svc.queue_redis.eval(
            _REEMBED_STEP, 1, REEMBED_KEY, run, handled, now_iso(), "1" if enqueued_all else "0"
        )
        info = svc.queue_redis.hmget(REEMBED_KEY, ["mode", "started_at"])
    except redis.exceptions.RedisError:
        return None
    if not raw:
        return None
    done, queued, over, finished = (int(v) for v in raw)
    mode, started = (None if v is None else as_text(v) for v in info)
    return {
        "run_id": run,
        "mode": mode,
        "model": svc.embedder.label,
        "started_at": started,
        "queued": queued,
        "done": done,
        "remaining": max(0, queued - done),
        "enqueued_all": bool(over),
        "finished": bool(finished),
    }


def reembed_progress(svc: Services) -> dict[str, Any]:
    """The last re-embedding run and how many memories carry a current vector of this model
    (written since the run started, for a run over every memory)."""
    raw = decoded(svc.queue_redis.hgetall(REEMBED_KEY))
    since = raw.get("started_at") if raw.get("mode") == "all" else None
    counts = svc.graph.embedding_progress(svc.embedder.label, since)
    return {
        "model": svc.embedder.label,
        "mode": raw.get("mode"),
        "started_at": raw.get("started_at"),
        "queued": int(raw.get("queued") or 0),
        "memories": counts["total"],
        "done": counts["current"],
        "remaining": counts["total"] - counts["current"],
    }


def enrichment_status(
    svc: Services, tenant: str | None = None, counts: dict[str, int] | None = None
) -> dict[str, Any]:
    """GET /enrichment/status: per-queue job counts, the intake, memories awaiting enrichment,
    the enrichment job's counters and last error, and the LLM's breaker and counters. With
    `tenant` (any key but the admin's), memory ids of other tenants are left out. `counts`: the
    graph's counts when the caller has just read them (a scan of every memory)."""
    try:
        queues = svc.jobs.registry_counts()
        intake = svc.jobs.intake_depths()
        stats = decoded(svc.queue_redis.hgetall(ENRICHMENT_STATS_KEY))
        failed_items = _failed_items(svc, tenant)
        if tenant is not None and not _of_tenant(svc, [stats.get("last_success_id")], tenant):
            stats.pop("last_success_id", None)
    except redis.exceptions.RedisError as exc:
        raise StoreUnavailable("the job queue is unreachable") from exc
    enrich = queues["enrich"]
    counts = counts or svc.graph_counts()
    pending = counts["enrichment_pending"]
    enriched, failures = int(stats.get("enriched", 0)), int(stats.get("failures", 0))
    return {
        # AutoMem's `status`: whether a worker is there to do the work.
        "status": "running" if svc.jobs.workers() else "stopped",
        "enabled": svc.settings.enrichment_enabled,
        "enrichment_version": ENRICHMENT_VERSION,
        "queues": queues,
        "intake": intake,
        # Work waiting: memories not yet dispatched plus enrich jobs (of up to 50 memories) queued.
        "queue_size": intake["enrich"] + enrich["queued"],
        "pending": pending,
        "pending_memories": pending,
        "inflight": enrich["in_flight"],
        "in_flight": enrich["in_flight"],
        "max_attempts": len(svc.settings.retry_intervals()) + 1,
        "failed": sum(q["failed"] for q in queues.values()),
        "stats": {
            "enriched": enriched,
            "processed_total": enriched + failures,
            "successes": enriched,
            "failures": failures,
            "last_success_id": stats.get("last_success_id"),
            "last_success_at": stats.get("last_success_at"),
            "last_error": stats.get("last_error"),
            "last_error_at": stats.get("last_error_at"),
            # Seconds enrichment jobs waited while clients were reading (automem.foreground).
            "yielded_seconds": round(float(stats.get("yielded_seconds", 0.0)), 3),
        },
        # Memories a job skipped after an error of their own (the rest of their batch went on).
        "failed_items": failed_items,
        "failed_memories": counts["enrichment_failed"],
        "classification": _classification_status(svc),
        "llm": _llm_status(svc),
    }


def _failed_items(svc: Services, tenant: str | None, sample: int = 20) -> dict[str, Any]:
    """How many (job, memory) pairs are recorded as failed, and up to `sample` of them (with
    `tenant`: that tenant's only)."""
    items = []
    for _, raw in svc.queue_redis.hscan_iter(FAILED_ITEMS_KEY, count=sample):
        items.append(json.loads(raw))
        if tenant is None and len(items) >= sample:
            break
    if tenant is not None:
        mine = _of_tenant(svc, [str(i.get("memory_id")) for i in items], tenant)
        items = [i for i in items if i.get("memory_id") in mine]
        count = len(items)
    else:
        count = int(svc.queue_redis.hlen(FAILED_ITEMS_KEY))
    items.sort(key=lambda item: str(item.get("at")), reverse=True)
    return {"count": count, "items": items[:sample]}


def _of_tenant(svc: Services, ids: list[str | None], tenant: str) -> set[str]:
    wanted = [i for i in ids if i and is_uuid(i)]
    return set(svc.graph.tenant_memory_ids(wanted, tenant)) if wanted else set()


def _classification_status(svc: Services) -> dict[str, Any]:
    """AutoMem's classification counters, from the LLM client's (rules are not counted)."""
    llm = svc.llm.stats() if svc.llm is not None else {}
    return {
        "llm_attempts": llm.get("calls", 0),
        "llm_successes": llm.get("successes", 0),
        "fallbacks": llm.get("failures", 0) + llm.get("paused", 0) + llm.get("rate_limited", 0),
        "pattern_classifications": None,
        "last_error": None,
        "last_error_at": None,
    }


def _llm_status(svc: Services) -> dict[str, Any]:
    if svc.llm is None:
        return {"configured": False}
    return {"configured": True, "breaker": svc.llm.breaker_state(), "stats": svc.llm.stats()}


def reprocess(
    svc: Services, ids: list[str] | None, every: bool, failed: bool, tenant: str | None = None
) -> dict[str, Any]:
    """POST /enrichment/reprocess: requeue failed jobs, re-enrich every active memory or these;
    with `tenant` (a tenant-admin key), only that tenant's memories (failed jobs are the
    service's, requeued by the admin only)."""
    out: dict[str, Any] = {"status": "queued", "count": 0, "ids": []}
    if failed and tenant is not None:
        raise Forbidden(
            "failed jobs belong to the whole service: requeueing them needs the admin token",
            field="failed",
            reason="admin_required",
        )
    if failed:
        out["requeued_failed"] = svc.jobs.requeue_failed()
    if every:
        out["queued"] = out["count"] = queue_enrichment(svc, force=True, tenant=tenant)
    elif ids:
        queued, unknown = reenrich(svc, ids, tenant)
        out.update(queued=len(queued), count=len(queued), ids=sorted(queued), unknown_ids=unknown)
    return out


def request_reembed(
    svc: Services, every: bool, limit: int | None = None, batch_size: int | None = None
) -> dict[str, Any]:
    """POST /admin/reembed: queue a re-embedding run (a run already waiting is not doubled).
    AutoMem re-embeds in the request and answers `complete`; here a worker does it and the run's
    progress is at GET /admin/reembed."""
    queued = svc.jobs.enqueue_reembed(every=every, limit=limit, batch_size=batch_size)
    progress = reembed_progress(svc)
    return {
        "status": "queued",
        "mode": "all" if every else "missing",
        "model": svc.embedder.label,
        "job_status": "queued" if queued else "already_queued",
        "total": progress["memories"] if every else progress["remaining"],
        "batch_size": batch_size or svc.settings.embedding_batch_size,
        "limit": limit,
        "processed": 0,
        "failed": 0,
        "progress_url": "/admin/reembed",
    }


def request_consolidation(svc: Services, mode: str) -> dict[str, Any]:
    """POST /consolidate with `dry_run: false`: queue the run (one job per mode)."""
    job_id, queued = svc.jobs.enqueue_consolidation(mode, dry_run=False)
    return {
        "mode": mode,
        "dry_run": False,
        "job_id": job_id,
        "job_status": "queued" if queued else "already_queued",
        "status_url": "/consolidate/status",
    }


def jobs_overview(svc: Services) -> dict[str, Any]:
    """GET /admin/jobs: job counts per queue and registry, and the newest failed jobs."""
    return {"queues": svc.jobs.registry_counts(), "failed_jobs": svc.jobs.failed_jobs()}


T = TypeVar("T")


def by_tenant(
    entries: Sequence[tuple[str, T]], tenants: dict[str, str], size: int
) -> Iterator[tuple[str, list[tuple[str, T]]]]:
    """(tenant, up to `size` entries of its memories); memories gone from the graph are left
    out (there is nothing to do for them)."""
    groups: dict[str, list[tuple[str, T]]] = {}
    for entry in entries:
        tenant = tenants.get(entry[0])
        if tenant is not None:
            groups.setdefault(tenant, []).append(entry)
    for tenant, group in groups.items():
        for start in range(0, len(group), size):
            yield tenant, group[start : start + size]
