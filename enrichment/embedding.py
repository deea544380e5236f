"""Embedding jobs: a memory's vector from its current content, and re-embedding runs.

The embedding is written only if the content is still the one that was embedded (the graph write
checks the content hash), so an edit during the job is never reverted: the edit queued its own
embedding job. Client-supplied vectors are the client's and are never replaced. A memory whose
vector or links fail on their own is recorded and skipped; the rest of the batch is written.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from automem import backlog
from automem.events import EventType
from automem.jobnames import JobName
from automem.record import MemoryRecord
from automem.services import Services
from automem.timeutil import now_iso
from automem.validation import check_vector
from enrichment.context import current_services
from enrichment.isolation import ItemFailed, clear_failures, isolated
from enrichment.links import link_similar
from enrichment.registry import job


@job(JobName.EMBED)
def embed_memories(memory_ids: list[str], force: bool = False, run: str | None = None) -> dict[str, Any]:
    """Embed the memories whose stored embedding does not match their current content or was
    made by another model (`force`: every one not embedded by the client). A job of re-embedding
    run `run` then announces the run's progress (a `reembed.progress` live event)."""
    svc = current_services()
    result = _embed(svc, memory_ids, force)
    if run:
        _report_progress(svc, backlog.reembed_step(svc, run, len(memory_ids)))
    return result


def _embed(svc: Services, memory_ids: list[str], force: bool) -> dict[str, Any]:
    label = svc.embedder.label
    docs = svc.graph.get_memories(memory_ids)
    todo = [d for d in docs if d.state != "deleted" and _needs_embedding(d, label, force)]
    if not todo:
        return {"embedded": 0, "skipped": len(memory_ids)}
    vectors = svc.embedder.embed([d.content for d in todo])
    now = now_iso()
    rows, failed = [], 0
    for doc, vector in zip(todo, vectors, strict=True):
        checked = isolated(svc, JobName.EMBED, doc.id, partial(check_vector, vector, svc.embedder.dimension))
        if isinstance(checked, ItemFailed):  # a provider's NaN or short vector: this memory only
            failed += 1
            continue
        rows.append({"id": doc.id, "hash": doc.content_hash, "vector": checked, "model": label, "at": now})
    written = svc.graph.set_embeddings(rows) if rows else []
    linked = _link_similar_all(svc, written)
    svc.sync.request(written)
    clear_failures(svc, JobName.EMBED, written)
    return {
        "embedded": len(written),
        "skipped": len(memory_ids) - len(written) - failed,
        "failed": failed,
        "similar_links": linked,
    }


def _needs_embedding(doc: MemoryRecord, label: str, force: bool) -> bool:
    if doc.embedding_hash != doc.content_hash:
        return True
    model = doc.embedding_model
    return model != "client" and (force or model != label)


def _link_similar_all(svc: Services, memory_ids: list[str]) -> int:
    if not svc.settings.enrichment_enabled:
        return 0
    s = svc.settings
    now = now_iso()
    linked = 0
    for memory_id in memory_ids:
        link = partial(
            link_similar,
            svc.graph,
            memory_id,
            s.enrichment_similarity_limit,
            s.enrichment_similarity_threshold,
            now,
        )
        outcome = isolated(svc, JobName.EMBED, memory_id, link)
        linked += 0 if isinstance(outcome, ItemFailed) else outcome
    return linked


@job(JobName.REEMBED)
def reembed(
    every: bool = False, page: int = backlog.PAGE, limit: int | None = None, batch_size: int | None = None
) -> dict[str, Any]:
    """A re-embedding run (`automem reembed`, POST /admin/reembed): queue embedding jobs for the
    memories lacking a current vector of the configured model, or (`every`) all of them. Its first
    `reembed.progress` event says how many were queued (and that it is finished if none were)."""
    svc = current_services()
    started = backlog.start_reembed(svc, every, page, limit, batch_size)
    _report_progress(svc, started["progress"])
    return started


def _report_progress(svc: Services, progress: dict[str, Any] | None) -> None:
    """A service-wide event: a run spans every tenant and the event carries counts only."""
    if progress is not None:
        svc.events.publish(EventType.REEMBED_PROGRESS, progress, None)
