"""Links enrichment writes between memories: sequence (PRECEDED_BY) and similarity (SIMILAR_TO).

Sequence: each memory is PRECEDED_BY the previous memory of its sequence scope (see
`automem.tags.sequence_scope`) by event time, so a chain runs through every conversation or
project. A memory arriving late (an import, a backfill) is spliced into its place and the gap it
leaves when its time or scope changes is closed. Splices of one scope are serialised by a Redis
lock, so concurrent workers cannot interleave them.

Similarity: once a memory has its vector, its nearest neighbours at or above the threshold get
SIMILAR_TO edges both ways, found through the graph's own vector index (workers do not own the
vector store in embedded mode).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from automem.record import MemoryRecord
from automem.stores.graph import GraphStore

LOCK_SECONDS = 30


@contextmanager
def sequence_lock(locks: redis.Redis, doc: MemoryRecord) -> Iterator[None]:
    """Held while memories of `doc`'s sequence (its tenant and scope) are linked: splices of
    one sequence by two workers would interleave. An enrichment job holds it for its memories of
    the sequence (50 a job from the intake, a few ms each), far inside LOCK_SECONDS."""
    name = f"automem:seq-lock:{doc.tenant}:{doc.seq_scope or ''}"
    with locks.lock(name, timeout=LOCK_SECONDS, blocking_timeout=LOCK_SECONDS):
        yield


def link_sequence(graph: GraphStore, doc: MemoryRecord, now: str) -> dict[str, str]:
    """Put `doc` in its place in its sequence (under its `sequence_lock`); the memories whose
    predecessor changed, each with its new predecessor ("" for none)."""
    prev_id, next_id = graph.sequence_position(doc)
    before, after = graph.sequence_links(doc.id)
    if set(before) == _set(prev_id) and set(after) == _set(next_id):
        return {}
    stale_before = [i for i in before if i != prev_id]
    stale_after = [i for i in after if i != next_id]
    heal = None
    if len(stale_before) == 1 and len(stale_after) == 1:
        heal = (stale_after[0], stale_before[0])
    graph.relink_sequence(doc.id, prev_id, next_id, heal, now)
    changed = {doc.id: prev_id or ""} if set(before) != _set(prev_id) else {}
    if next_id and set(after) != {next_id}:
        changed[next_id] = doc.id
    if heal:
        changed[heal[0]] = heal[1]
    return changed


def link_similar(graph: GraphStore, memory_id: str, k: int, threshold: float, now: str) -> int:
    """SIMILAR_TO edges to the memory's nearest neighbours; the number linked."""
    neighbours = graph.similar_memories(memory_id, k, threshold)
    return graph.link_similar(memory_id, neighbours, now)


def _set(value: str | None) -> set[str]:
    return {value} if value else set()
