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

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

import redis
from redis.exceptions import LockError, LockNotOwnedError
from redis.lock import Lock

from automem.record import MemoryRecord
from automem.similarity import SimilarMemories
from automem.stores.graph import GraphStore

LOCK_SECONDS = 30


class SequenceLocks:
    """The Redis lock of a sequence (its tenant and scope), held while its memories are linked:
    splices of one sequence by two workers would interleave. An enrichment job keeps the lock of
    the sequence it last linked until it links a memory of another (a job's memories mostly
    share one; taking and freeing it for each was a seventh of an enrichment's time), renews its
    lifetime once a third of LOCK_SECONDS has passed (one round trip, and no moment in which it
    is free), takes it anew if it expired meanwhile, and frees it when the job ends."""

    def __init__(self, locks: redis.Redis) -> None:
        self._locks = locks
        self._held: tuple[str, Lock, float] | None = None  # name, lock, monotonic time taken

    def __enter__(self) -> SequenceLocks:
        return self

    def __exit__(self, *exc: object) -> None:
        self._release()

    @contextmanager
    def hold(self, doc: MemoryRecord) -> Iterator[None]:
        name = f"automem:seq-lock:{doc.tenant}:{doc.seq_scope or ''}"
        held = self._held
        if held is None or held[0] != name:
            self._release()
            self._take(name)
        elif time.monotonic() - held[2] > LOCK_SECONDS / 3:
            self._renew(name, held[1])
        try:
            yield
        except BaseException:
            self._release()  # an error ends the hold; the job's next memory takes the lock anew
            raise

    def _take(self, name: str) -> None:
        lock = self._locks.lock(name, timeout=LOCK_SECONDS, blocking_timeout=LOCK_SECONDS)
        if not lock.acquire():
            raise LockError(f"sequence lock {name} not acquired in {LOCK_SECONDS} s")
        self._held = (name, lock, time.monotonic())

    def _renew(self, name: str, lock: Lock) -> None:
        try:
            lock.reacquire()  # the lifetime starts again at LOCK_SECONDS
        except LockNotOwnedError:  # it expired, and may have been taken by another worker
            self._held = None
            self._take(name)
            return
        self._held = (name, lock, time.monotonic())

    def _release(self) -> None:
        if self._held is not None:
            _, lock, _ = self._held
            self._held = None
            with suppress(LockError):  # expired: another worker may hold it by now
                lock.release()


def link_sequence(graph: GraphStore, doc: MemoryRecord, now: str) -> dict[str, str]:
    """Put `doc` in its place in its sequence (under its `SequenceLocks` lock); the memories whose
    predecessor changed, each with its new predecessor ("" for none)."""
    prev_id, next_id, before, after = graph.sequence_place(doc)
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


def link_similar(
    graph: GraphStore, similar: SimilarMemories, memory_id: str, k: int, threshold: float, now: str
) -> int:
    """SIMILAR_TO edges to the memory's nearest neighbours; the number linked."""
    return graph.link_similar(memory_id, similar.one(memory_id, k, threshold), now)


def link_similar_many(
    graph: GraphStore, similar: SimilarMemories, memory_ids: Sequence[str], k: int, threshold: float, now: str
) -> int:
    """`link_similar` for the vectors an embedding job wrote, in one search and one write (two
    round trips a memory were ~8 % of an import's embedding time); the pairs linked."""
    return graph.link_similar_many(similar.of(memory_ids, k, threshold), now)


def _set(value: str | None) -> set[str]:
    return {value} if value else set()
