"""Embedding jobs: a memory's vector from its current content, and re-embedding runs.

The embedding is written only if the content is still the one that was embedded (the graph write
checks the content hash), so an edit during the job is never reverted: the edit queued its own
embedding job. Client-supplied vectors are the client's and are never replaced. A memory whose
vector or links fail on their own is recorded and skipped; the rest of the batch is written.

Retrieval context: a memory is embedded with the start of the memory it follows in its
sequence (RETRIEVAL_CONTEXT_CHARS), because a reply alone ("Yes, twice last month!") does not
say what it is about. Which memory that was is stored with the vector (`embedding_context`);
when enrichment finds a memory spliced in before it later, the memory is embedded again.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from automem import backlog
from automem.events import EventType
from automem.jobnames import JobName
from automem.record import MemoryRecord
from automem.services import Services
from automem.timeutil import now_iso, parse_iso
from automem.validation import check_vector
from enrichment.context import current_services
from enrichment.isolation import TRANSIENT, ItemFailed, clear_failures, isolated
from enrichment.links import link_similar, link_similar_many
from enrichment.registry import job

log = logging.getLogger(__name__)


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
    docs = [d for d in svc.graph.get_memories(memory_ids) if d.state != "deleted"]
    contexts = retrieval_contexts(svc, docs)
    todo = [d for d in docs if _needs_embedding(d, label, force, contexts.get(d.id))]
    if not todo:
        return {"embedded": 0, "skipped": len(memory_ids)}
    chars = svc.settings.retrieval_context_chars
    vectors = svc.embedder.embed([retrieval_text(d, contexts.get(d.id), chars) for d in todo])
    now = now_iso()
    rows, failed = [], 0
    for doc, vector in zip(todo, vectors, strict=True):
        checked = isolated(svc, JobName.EMBED, doc.id, partial(check_vector, vector, svc.embedder.dimension))
        if isinstance(checked, ItemFailed):  # a provider's NaN or short vector: this memory only
            failed += 1
            continue
        context = contexts.get(doc.id)
        row = {"id": doc.id, "hash": doc.content_hash, "vector": checked, "model": label, "at": now}
        rows.append({**row, "context": context.id if context else ""})
    written = svc.graph.set_embeddings(rows) if rows else []
    # The points first: where the vector store finds the similar memories (automem.similarity),
    # the job's own vectors must be in it.
    svc.sync.request(written)
    linked = _link_similar_all(svc, written)
    clear_failures(svc, JobName.EMBED, written)
    return {
        "embedded": len(written),
        "skipped": len(memory_ids) - len(written) - failed,
        "failed": failed,
        "similar_links": linked,
    }


def retrieval_contexts(svc: Services, docs: list[MemoryRecord]) -> dict[str, MemoryRecord]:
    """Each memory's predecessor in its sequence (RETRIEVAL_CONTEXT_CHARS), for the memories
    the service embeds, when it is the earlier turn of the same conversation (`in_context`);
    memories with a client's vector or no such predecessor are left out."""
    if svc.settings.retrieval_context_chars <= 0:
        return {}
    candidates = [d for d in docs if d.embedding_model != "client" and d.seq_scope]
    previous = svc.graph.previous_in_sequence_many(candidates)
    return contexts_of(svc, {d.id: d for d in candidates}, previous)


def contexts_of(
    svc: Services,
    docs: dict[str, MemoryRecord],
    previous: dict[str, str | None],
    known: dict[str, MemoryRecord] | None = None,
) -> dict[str, MemoryRecord]:
    """memory id -> the predecessor whose words its vector carries, for the ids in `previous`
    whose predecessor passes `in_context`. Predecessors in `known` (read by the caller) are not
    read again."""
    wanted = {p for p in previous.values() if p}
    found = {p: known[p] for p in wanted if p in known} if known else {}
    missing = wanted - found.keys()
    found |= {d.id: d for d in svc.graph.get_memories(list(missing))} if missing else {}
    gap = svc.settings.retrieval_context_gap_seconds
    return {
        i: found[p]
        for i, p in previous.items()
        if p in found and i in docs and in_context(docs[i], found[p], gap)
    }


def in_context(doc: MemoryRecord, previous: MemoryRecord, gap_seconds: float) -> bool:
    """Whether `previous` is the earlier turn of `doc`'s conversation rather than an unrelated
    note of the same stream: both in a named sequence (a session id or a tag; the untagged
    stream is no conversation) and at most `gap_seconds` apart."""
    if not doc.seq_scope or not doc.timestamp or not previous.timestamp:
        return False
    try:
        apart = (parse_iso(str(doc.timestamp)) - parse_iso(str(previous.timestamp))).total_seconds()
    except ValueError:
        return False  # a timestamp no one can read (an old import): no conversation to speak of
    return 0 <= apart <= gap_seconds


def retrieval_text(doc: MemoryRecord, context: MemoryRecord | None, chars: int) -> str:
    """The memory's own words first (a long one keeps them when the model cuts), then the
    first `chars` of what it follows."""
    if context is None:
        return doc.content
    return f"{doc.content}\n{context.content[:chars]}"


def _needs_embedding(doc: MemoryRecord, label: str, force: bool, context: MemoryRecord | None) -> bool:
    if doc.embedding_hash != doc.content_hash:
        return True
    model = doc.embedding_model
    if model == "client":
        return False
    return force or model != label or (doc.embedding_context or "") != (context.id if context else "")


def _link_similar_all(svc: Services, memory_ids: list[str]) -> int:
    """SIMILAR_TO edges for the vectors just written, all in one search and one write; if that
    fails for a reason of its own, one memory at a time, so a bad memory fails alone."""
    if not svc.settings.enrichment_enabled or not memory_ids:
        return 0
    s = svc.settings
    now = now_iso()
    try:
        return link_similar_many(
            svc.graph,
            svc.similar,
            memory_ids,
            s.enrichment_similarity_limit,
            s.enrichment_similarity_threshold,
            now,
        )
    except TRANSIENT:
        raise
    except Exception:
        log.exception("linking %d similar memories together failed; linking them one by one", len(memory_ids))
    linked = 0
    for memory_id in memory_ids:
        link = partial(
            link_similar,
            svc.graph,
            svc.similar,
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
