"""RQ entry points. Top-level functions taking ids; each is idempotent and safe to retry."""

from __future__ import annotations

import logging
from typing import Any

from enrichment.context import current_services

log = logging.getLogger(__name__)


def embed_memories(memory_ids: list[str]) -> dict[str, Any]:
    """Embed the memories whose stored embedding does not match their current content.

    The embedding is written only if the content is still the one that was embedded (the graph
    write checks the content hash), so an edit during the job is never reverted: the edit queued
    its own embedding job.
    """
    svc = current_services()
    docs = svc.graph.get_memories(memory_ids)
    todo = [
        d for d in docs if d.get("state") != "deleted" and d.get("embedding_hash") != d.get("content_hash")
    ]
    if not todo:
        return {"embedded": 0, "skipped": len(memory_ids)}
    vectors = svc.embedder.embed([d["content"] for d in todo])
    rows = [
        {"id": d["id"], "hash": d["content_hash"], "vector": v, "model": svc.embedder.label}
        for d, v in zip(todo, vectors, strict=True)
    ]
    written = svc.graph.set_embeddings(rows)
    svc.sync.request(written)
    return {"embedded": len(written), "skipped": len(memory_ids) - len(written)}


def reconcile(page: int = 500) -> dict[str, Any]:
    """Queue embedding for every memory missing one, so a lost queue loses no work, and repair
    vectors that lag the graph when this process owns the vector store."""
    svc = current_services()
    queued, after = 0, ""
    while True:
        ids = svc.graph.ids_needing_embedding(page, after)
        if not ids:
            break
        docs = {d["id"]: d for d in svc.graph.get_memories(ids)}
        for start in range(0, len(ids), svc.settings.embedding_batch_size):
            chunk = [i for i in ids[start : start + svc.settings.embedding_batch_size] if i in docs]
            if chunk and svc.jobs.enqueue_embed(chunk, [docs[i]["content_hash"] for i in chunk]):
                queued += len(chunk)
        after = ids[-1]
    # Where this process owns the vectors (server mode), also repair vectors the graph outran.
    repaired = svc.sync.repair() if svc.sync.owns_vectors else 0
    return {"queued": queued, "vectors_repaired": repaired}


def flush_access(batch: int = 5000) -> int:
    """Apply logged recall accesses: last_accessed and access_count, one graph write per batch."""
    svc = current_services()
    applied = 0
    while entries := svc.jobs.take_access_log(batch):
        latest: dict[str, str] = {}
        counts: dict[str, int] = {}
        for memory_id, at in entries:
            latest[memory_id] = max(at, latest.get(memory_id, ""))
            counts[memory_id] = counts.get(memory_id, 0) + 1
        applied += svc.graph.touch([{"id": i, "at": latest[i], "n": counts[i]} for i in latest])
    return applied
