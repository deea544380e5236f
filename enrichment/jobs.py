"""RQ entry points. Top-level functions taking ids; each is idempotent and safe to retry."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from automem.history import JOB_CLASSIFY, JOB_ENRICH, JOB_PURGE, diff
from automem.memories import ENRICH_CHUNK
from automem.services import Services
from automem.timeutil import format_utc, now_iso, utc_now
from enrichment.context import current_services
from enrichment.enrich import ENRICHMENT_VERSION, derive
from enrichment.links import link_sequence, link_similar
from enrichment.llm import LlmFailed, LlmPaused, LlmRateLimited

log = logging.getLogger(__name__)

STATS_KEY = "automem:enrichment:stats"
REEMBED_KEY = "automem:reembed"
# Reads and guarded writes per memory before giving up: a client editing the memory meanwhile
# queued its own enrichment of the newer version.
_ATTEMPTS = 3


# Intake entries a dispatch job pops per round.
INTAKE_BATCH = 5000


def dispatch_intake(batch: int = INTAKE_BATCH) -> dict[str, int]:
    """Turn the intake (new memories the API handed over) into embed and enrich jobs of full
    chunks, with the usual deterministic ids. Entries are popped atomically; if this job dies
    between popping and enqueueing, reconcile (run at every worker start) finds the memories."""
    svc = current_services()
    embedded = enriched = 0
    while True:
        embed, enrich = svc.jobs.take_intake(batch)
        if not embed and not enrich:
            break
        size = svc.settings.embedding_batch_size
        for start in range(0, len(embed), size):
            part = embed[start : start + size]
            svc.jobs.enqueue_embed([i for i, _ in part], [h for _, h in part])
        for start in range(0, len(enrich), ENRICH_CHUNK):
            chunk = enrich[start : start + ENRICH_CHUNK]
            svc.jobs.enqueue_enrich([i for i, _ in chunk], [v for _, v in chunk])
        embedded, enriched = embedded + len(embed), enriched + len(enrich)
    return {"embed": embedded, "enrich": enriched}


def embed_memories(memory_ids: list[str], force: bool = False) -> dict[str, Any]:
    """Embed the memories whose stored embedding does not match their current content or was
    made by another model (`force`: every one not embedded by the client).

    The embedding is written only if the content is still the one that was embedded (the graph
    write checks the content hash), so an edit during the job is never reverted: the edit queued
    its own embedding job.
    """
    svc = current_services()
    label = svc.embedder.label
    docs = svc.graph.get_memories(memory_ids)
    todo = [d for d in docs if d.get("state") != "deleted" and _needs_embedding(d, label, force)]
    if not todo:
        return {"embedded": 0, "skipped": len(memory_ids)}
    vectors = svc.embedder.embed([d["content"] for d in todo])
    now = now_iso()
    rows = [
        {"id": d["id"], "hash": d["content_hash"], "vector": v, "model": label, "at": now}
        for d, v in zip(todo, vectors, strict=True)
    ]
    written = svc.graph.set_embeddings(rows)
    linked = _link_similar_all(svc, written)
    svc.sync.request(written)
    return {"embedded": len(written), "skipped": len(memory_ids) - len(written), "similar_links": linked}


def _needs_embedding(doc: dict[str, Any], label: str, force: bool) -> bool:
    if doc.get("embedding_hash") != doc.get("content_hash"):
        return True
    model = doc.get("embedding_model")
    return model != "client" and (force or model != label)


def reembed(every: bool = False, page: int = 500) -> dict[str, Any]:
    """Queue re-embedding with the current model: memories lacking its vector, or (`every`) all
    of them. Old vectors keep answering recall until each new one replaces it (rev-guarded), so
    there is no recall downtime; progress is `GET /admin/reembed`."""
    svc = current_services()
    label = svc.embedder.label
    started = now_iso()
    svc.queue_redis.hset(REEMBED_KEY, mapping={"started_at": started, "mode": "all" if every else "missing"})
    queued = _queue_embedding(svc, every=every, page=page)
    svc.queue_redis.hset(REEMBED_KEY, mapping={"queued": queued})
    return {"queued": queued, "model": label, "started_at": started}


def _queue_embedding(svc: Services, every: bool, page: int) -> int:
    """Queue embedding jobs for memories lacking a current vector of this model (`every`: all)."""
    queued, after = 0, ""
    size = svc.settings.embedding_batch_size
    while rows := svc.graph.reembed_page(svc.embedder.label, every, after, page):
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            if svc.jobs.enqueue_embed([i for i, _ in chunk], [h for _, h in chunk], force=every):
                queued += len(chunk)
        after = rows[-1][0]
    return queued


def reembed_progress(svc: Services) -> dict[str, Any]:
    """The last re-embedding run and how many memories carry a current vector of this model
    (written since the run started, for a run over every memory)."""
    raw = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in svc.queue_redis.hgetall(REEMBED_KEY).items()
    }
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


def _link_similar_all(svc: Services, memory_ids: list[str]) -> int:
    if not svc.settings.enrichment_enabled:
        return 0
    s = svc.settings
    now = now_iso()
    return sum(
        link_similar(svc.graph, i, s.enrichment_similarity_limit, s.enrichment_similarity_threshold, now)
        for i in memory_ids
    )


def enrich_memories(memory_ids: list[str], force: bool = False) -> dict[str, Any]:
    """Enrich each memory: entities and their tags, MENTIONS edges, a summary, its place in its
    sequence (PRECEDED_BY) and, once it has a vector, SIMILAR_TO links.

    Idempotent: a memory already enriched at the current version is skipped unless `force`.
    The write is guarded by the memory's version, so a client change made while the job ran is
    never reverted; the job re-reads and tries again, and the change also queued its own job."""
    svc = current_services()
    enriched = 0
    with _recording(svc) as record:
        for memory_id in memory_ids:
            if _enrich_one(svc, memory_id, force):
                enriched += 1
                record(memory_id)
    return {"enriched": enriched, "skipped": len(memory_ids) - enriched}


def _enrich_one(svc: Services, memory_id: str, force: bool) -> bool:
    s = svc.settings
    for _ in range(_ATTEMPTS):
        doc = svc.graph.get_memory(memory_id)
        if doc is None or doc.get("state") != "active":
            return False
        if (
            not force
            and doc.get("enriched")
            and int(doc.get("enrichment_version") or 0) >= ENRICHMENT_VERSION
        ):
            return False
        now = now_iso()
        plan = derive(
            doc,
            now=now,
            max_entities=s.enrichment_max_entities,
            max_tags=s.max_tags,
            summary_length=s.enrichment_summary_length,
        )
        event = JOB_ENRICH.event("enriched", now, diff(doc, plan.props))
        if svc.graph.apply_enrichment(memory_id, int(doc["version"]), plan.props, plan.entities, event):
            _classify_if_unsure(svc, doc)
            link_sequence(svc.graph, svc.queue_redis, {**doc, **plan.props}, now)
            if doc.get("embedding_hash") and doc.get("embedding_hash") == doc.get("content_hash"):
                link_similar(
                    svc.graph,
                    memory_id,
                    s.enrichment_similarity_limit,
                    s.enrichment_similarity_threshold,
                    now,
                )
            svc.sync.request([memory_id], payload_only=True)  # tags and rev: the vector is as it was
            return True
    return False


def _classify_if_unsure(svc: Services, doc: dict[str, Any]) -> None:
    """Hand a memory the rules classified with low confidence to the LLM classification job."""
    if svc.llm is None or doc.get("classification") == "explicit" or doc.get("classification") == "llm":
        return
    if float(doc.get("confidence") or 0.0) >= svc.settings.llm_classify_below:
        return
    svc.jobs.enqueue_classify(doc["id"], int(doc["version"]))


def classify_memory(memory_id: str, attempt: int = 0) -> dict[str, Any]:
    """LLM classification of a memory the rules were unsure about. The type lands only if the
    client has neither changed the memory nor set a type since it was read. While the LLM is
    paused (circuit breaker) or over its rate, the job reschedules itself for when it may call
    again instead of failing into a retry storm."""
    svc = current_services()
    doc = svc.graph.get_memory(memory_id)
    if svc.llm is None or doc is None or doc.get("classification") in ("explicit", "llm"):
        return {"classified": False}
    try:
        found = svc.llm.classify(str(doc["content"]))
    except (LlmPaused, LlmRateLimited) as exc:
        delay = max(1.0, exc.retry_after)
        svc.jobs.enqueue_classify(memory_id, int(doc["version"]), attempt + 1, delay=delay)
        return {"classified": False, "deferred_seconds": exc.retry_after}
    except LlmFailed:
        return {"classified": False, "kept": doc.get("type")}
    if found is None:
        return {"classified": False}
    changes = diff(doc, {"type": found[0], "confidence": found[1]})
    event = JOB_CLASSIFY.event("classified", now_iso(), changes)
    landed = svc.graph.set_llm_type(memory_id, int(doc["version"]), found[0], found[1], event)
    if landed:
        svc.sync.request([memory_id], payload_only=True)
    return {"classified": landed, "type": found[0], "confidence": found[1]}


@contextmanager
def _recording(svc: Services) -> Iterator[Any]:
    """Count successes and failures in Redis for GET /enrichment/status (no content logged)."""
    last: list[str] = []
    try:
        yield last.append
    except Exception as exc:
        svc.queue_redis.hset(
            STATS_KEY,
            mapping={"last_error": f"{exc.__class__.__name__}: {str(exc)[:200]}", "last_error_at": now_iso()},
        )
        svc.queue_redis.hincrby(STATS_KEY, "failures", 1)
        raise
    finally:
        if last:
            svc.queue_redis.hincrby(STATS_KEY, "enriched", len(last))
            svc.queue_redis.hset(
                STATS_KEY,
                mapping={
                    "last_success_id": last[-1],
                    "last_success_at": now_iso(),
                    "last_success_epoch": str(time.time()),
                },
            )


def reconcile(page: int = 500) -> dict[str, Any]:
    """Queue embedding for every memory lacking a current vector of the configured model (so a
    lost queue loses no work, and a model change re-embeds), enrichment for every memory not
    enriched at the current version, and repair vectors that lag the graph when this process
    owns the vector store."""
    svc = current_services()
    queued = queue_missing_work(svc, page)
    # Where this process owns the vectors (server mode), also repair vectors the graph outran.
    repaired = svc.sync.repair() if svc.sync.owns_vectors else 0
    return {**queued, "vectors_repaired": repaired}


def queue_missing_work(svc: Services, page: int = 500) -> dict[str, int]:
    """Queue embedding for memories lacking a current vector of the configured model and
    enrichment for active memories not enriched at the current version."""
    queued = _queue_embedding(svc, every=False, page=page)
    enrich_queued = queue_enrichment(svc, page=page) if svc.settings.enrichment_enabled else 0
    return {"queued": queued, "enrichment_queued": enrich_queued}


def queue_enrichment(svc: Services, force: bool = False, page: int = 500) -> int:
    """Queue every active memory not enriched at the current version (with `force`, every
    active memory)."""
    queued, after = 0, ""
    version = 1 << 30 if force else ENRICHMENT_VERSION
    while ids := svc.graph.ids_needing_enrichment(page, after, version):
        versions = {d["id"]: int(d["version"]) for d in svc.graph.get_memories(ids)}
        chunk = [i for i in ids if i in versions]
        for start in range(0, len(chunk), ENRICH_CHUNK):
            part = chunk[start : start + ENRICH_CHUNK]
            if svc.jobs.enqueue_enrich(part, [versions[i] for i in part], force=force):
                queued += len(part)
        after = ids[-1]
    return queued


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


def purge_deleted(page: int = 500) -> dict[str, Any]:
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
