"""Restore a store from a backup archive (POST /admin/restore, `automem restore FILE`).

The guarantee: a restore either replaces the store with exactly the archive's contents or
refuses and leaves the store exactly as it was. A crash of any one process at any moment leaves
the old graph or the new one whole, never a mix.

1. Validate the whole archive before touching anything. It is spooled to a temporary file
   while it is checked line by line: gzip integrity, record shapes and order, the end record's
   counts, every value storable (finite numbers within float32 for vectors, no NUL or lone
   surrogates, property keys that are identifiers, times in years 1000-9000, UUID ids), ids
   unique, every edge's endpoints and every vector's memory present in the archive. Any fault
   answers 400 naming the line; nothing is held in memory but one batch.
2. The target must hold no memories, history or vector points (409 `store_not_empty`) unless
   `mode=replace`; its embedding dimension must match the archive's (409 `dimension_mismatch`).
3. Build the archive's graph in a staging graph beside the live one (same indexes and unique
   constraints) and check it took every record (500 `restore_incomplete` otherwise, staging
   deleted, live store untouched).
4. Mark the vectors for a rebuild (a Redis key holding the dimension), then commit: one atomic
   MULTI renames live -> previous and staging -> live, then drops previous. Before this step
   nothing visible changed; after it the graph is the archive's.
5. Drop queued work and stored idempotent answers (they were about the old store). From here
   on a failure is a warning in a 200: the graph, the source of truth, is restored.
6. Vectors are derived: the collection is re-created and filled from the archive's points, or
   (with `vectors=graph`, an archive without points, or a failure writing them) rebuilt from
   the restored graph by the repair path; then the rebuild mark is cleared. A process killed
   before that leaves the mark, and the vector owner's next start (or POST /admin/sync)
   rebuilds every point from the graph.
7. Reconcile queues embedding and enrichment for whatever still lacks it.

Only one restore runs at a time: a Redis lock of LOCK_SECONDS, renewed while the restore runs,
so a killed restore frees it within LOCK_SECONDS. A staging graph left by a killed restore is
removed by the next restore; until then it is invisible to the service.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

import redis

from automem.backlog import queue_missing_work
from automem.backup import CHUNK, ArchiveCheck, checked_records
from automem.errors import AutomemError, Conflict
from automem.stores.graph import GraphStore
from automem.stores.vectors import VectorPoint
from automem.vectorsync import keyword_text

if TYPE_CHECKING:
    from automem.services import Services

log = logging.getLogger(__name__)

LOCK = "automem:restore:running"
LOCK_SECONDS = 30
NODE_BATCH = 500
EDGE_BATCH = 1000


class RestoreIncomplete(AutomemError):
    """The staging graph did not take the whole archive; the live store is unchanged."""

    status = 500
    reason = "restore_incomplete"


def restore_archive(
    svc: Services, chunks: Iterable[bytes], mode: str = "empty", vectors: str = "archive"
) -> dict[str, Any]:
    """Validate the archive in `chunks`, then replace the store with it (see the module doc)."""
    with restore_lock(svc), tempfile.TemporaryFile(prefix="automem-restore-") as spool:
        if mode != "replace":
            _require_empty(svc)  # before reading the upload: fail fast
        check = ArchiveCheck(settings=svc.settings)
        for _ in checked_records(tee(chunks, spool), check):
            pass
        require_compatible(svc, check)
        if mode != "replace":
            _require_empty(svc)
        writer = _staged_graph(svc, spool, check)
        # Until the vectors are rewritten a crash leaves them to a full rebuild at the next start.
        svc.sync.mark_rebuild(svc.embedder.dimension)
        svc.graph.swap_in(writer.graph)  # the commit point: before it nothing changed
        dropped, warnings = _reset_work(svc)
        points, repaired, vector_warnings = _refill_vectors(svc, spool, vectors == "archive")
        warnings += vector_warnings
    queued = queue_missing_work(svc)
    header = check.header or {}
    return {
        "status": "success",
        "mode": mode,
        "vectors_source": "archive" if points else "graph",
        "restored": {
            "memories": writer.counts["memory"],
            "events": writer.counts["event"],
            "nodes": writer.counts["node"],
            "edges": writer.counts["edge"],
            "vectors": points,
        },
        "skipped_edges": 0,
        "vectors_rebuilt_from_graph": repaired,
        "dropped_jobs": dropped,
        "queued": queued,
        "archive": {
            "created_at": header.get("created_at"),
            "service_version": header.get("service_version"),
            "embedding": header.get("embedding"),
            "counts": dict(check.counts),
        },
        "warnings": _warnings(svc, header) + warnings,
    }


def _staged_graph(svc: Services, spool: IO[bytes], check: ArchiveCheck) -> ArchiveWriter:
    """The archive's graph, written into a staging graph beside the live one and checked
    complete (every record became a node or an edge); on any failure the staging graph is
    deleted and the live store was never touched."""
    staging = svc.graph.sibling("restore")
    staging.wipe()  # what an interrupted restore left
    try:
        staging.ensure_schema(svc.embedder.dimension, svc.settings.graph_vector_index_wanted())
        staging.ensure_consolidation_schema()
        spool.seek(0)
        writer = ArchiveWriter(staging)
        for record in checked_records(spooled(spool)):
            writer.add(record)
        writer.flush()
        writer.require_complete(check)
    except BaseException:
        staging.wipe()
        raise
    return writer


def _reset_work(svc: Services) -> tuple[int, list[str]]:
    """Queued work and stored idempotent answers were about the old store: (jobs dropped,
    warnings). The graph is restored by now, so a failure here is a warning, not an error: a job
    left behind finds its memory gone or of another version and does nothing."""
    try:
        dropped = svc.jobs.clear()
        svc.idempotency.clear()
    except Exception:
        log.exception("dropping the old store's queued work failed")
        return 0, ["queued jobs of the old store could not all be dropped; they find nothing to do"]
    return dropped, []


def _refill_vectors(svc: Services, spool: IO[bytes], use_archive: bool) -> tuple[int, int, list[str]]:
    """(points written from the archive, points rebuilt from the graph, warnings). The graph is
    restored by now: a vector store that fails here leaves the rebuild marked for its owner's
    next start or POST /admin/sync, and the restore still answers 200 with a warning."""
    if svc.vectors is None:
        return 0, 0, []
    try:
        points = _rebuild_vectors(svc, spool, use_archive)
        repaired = svc.sync.repair()
    except Exception:
        log.exception("the vector store failed after the graph was restored")
        return (
            0,
            0,
            [
                "the graph was restored but the vector store failed: its points will be rebuilt from "
                "the graph at the next start of the service or by POST /admin/sync"
            ],
        )
    svc.sync.clear_rebuild()
    return points, repaired, []


def _rebuild_vectors(svc: Services, spool: IO[bytes], use_archive: bool) -> int:
    """The vector store is derived: emptied and refilled with the archive's points (`use_archive`)
    or left for the repair from the graph that follows. A failure here is repaired from the graph
    (the restored source of truth) rather than failing a restore that has already committed."""
    assert svc.vectors is not None
    svc.vectors.drop()
    svc.vectors.ensure_collection(svc.embedder.dimension)
    if not use_archive:
        return 0
    written = 0
    try:
        spool.seek(0)
        batch: list[dict[str, Any]] = []
        for record in checked_records(spooled(spool)):
            if record["kind"] == "vector":
                batch.append(record)
            if len(batch) >= NODE_BATCH:
                written, batch = written + _write_points(svc, batch), []
        return written + _write_points(svc, batch)
    except Exception:
        log.exception("writing the archive's vector points failed; rebuilding them from the graph")
        svc.sync.repair(force=True)
        return 0


def _write_points(svc: Services, records: list[dict[str, Any]]) -> int:
    """The archive's vector records as points, with each memory's keyword text and retrieval
    context read from the restored graph, as the write path makes them."""
    assert svc.vectors is not None
    docs = svc.graph.get_memories([r["id"] for r in records]) if records else []
    fields = svc.sync.keyword_fields(docs)
    svc.vectors.upsert([_point(record, fields.get(record["id"])) for record in records])
    return len(records)


def _point(record: dict[str, Any], fields: tuple[str, str] | None) -> VectorPoint:
    payload = record["payload"]
    if fields is None:  # a point without its memory: older archives carried content in fat payloads
        fields = (keyword_text(payload.get("content"), payload.get("timestamp")), "")
    return VectorPoint(record["id"], record.get("vector"), payload, *fields)


@contextmanager
def restore_lock(svc: Services) -> Iterator[None]:
    """One restore at a time. The lock lives LOCK_SECONDS and is renewed while the restore runs,
    so a process killed mid-restore frees it within LOCK_SECONDS rather than blocking restores."""
    token = secrets.token_hex(8)
    if not svc.queue_redis.set(LOCK, token, nx=True, ex=LOCK_SECONDS):
        raise Conflict("another restore is running", reason="restore_in_progress")
    done = threading.Event()
    renewer = threading.Thread(target=_renew_lock, args=(svc, token, done), name="restore-lock", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        done.set()
        renewer.join()
        svc.queue_redis.eval(_RELEASE, 1, LOCK, token)


_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
)


def _renew_lock(svc: Services, token: str, done: threading.Event) -> None:
    while not done.wait(LOCK_SECONDS / 3):
        try:
            svc.queue_redis.eval(_RENEW, 1, LOCK, token, LOCK_SECONDS)
        except redis.exceptions.RedisError:
            log.warning("could not renew the restore lock", exc_info=True)


def _require_empty(svc: Services) -> None:
    """Memories, history events or vector points make a store non-empty; consolidation
    bookkeeping of a store without memories does not (a fresh service records runs)."""
    counts = svc.graph.graph_counts()
    held = {k: counts.get(k, 0) for k in ("Memory", "MemoryEvent")}
    held["vectors"] = svc.vectors.count() if svc.vectors is not None else 0
    if any(held.values()):
        raise Conflict(
            f"the store is not empty (memories: {held['Memory']}, history events: {held['MemoryEvent']}, "
            f"vector points: {held['vectors']}); restore with mode=replace (automem restore --replace) "
            "to wipe it first",
            reason="store_not_empty",
            extra={"counts": held},
        )


def require_compatible(svc: Services, check: ArchiveCheck) -> None:
    if (check.counts["vector"] or check.embeddings) and check.dimension != svc.embedder.dimension:
        raise Conflict(
            f"the archive holds {check.dimension}-dimensional vectors; this service embeds with "
            f"{svc.embedder.label} ({svc.embedder.dimension} dimensions). Configure the archive's "
            "embedding model (EMBEDDING_PROVIDER / EMBEDDING_MODEL / VECTOR_SIZE) to restore it",
            reason="dimension_mismatch",
            extra={"archive_dimension": check.dimension, "service_dimension": svc.embedder.dimension},
        )


def tee(chunks: Iterable[bytes], spool: IO[bytes]) -> Iterator[bytes]:
    for chunk in chunks:
        spool.write(chunk)
        yield chunk


def spooled(spool: IO[bytes]) -> Iterator[bytes]:
    while chunk := spool.read(CHUNK):
        yield chunk


class ArchiveWriter:
    """Writes the archive's graph records into a graph store in batches, nodes before edges."""

    def __init__(self, graph: GraphStore) -> None:
        self.graph = graph
        self.memories: list[dict[str, Any]] = []
        self.nodes: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        self.edges: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, record: dict[str, Any]) -> None:
        kind = record["kind"]
        if kind == "memory":
            props = record["props"]
            self.memories.append({"props": props, "embedding": record.get("embedding")})
            if len(self.memories) >= NODE_BATCH:
                self._flush_memories()
        elif kind in ("event", "node"):
            labels = tuple(record.get("labels") or ["MemoryEvent"])
            self.nodes[labels].append(record["props"])
            if len(self.nodes[labels]) >= NODE_BATCH:
                self._flush_nodes(labels, kind)
        elif kind == "edge":
            self._flush_all_nodes()
            key = (record["type"], record["from"]["label"], record["to"]["label"])
            self.edges[key].append(
                {"a": record["from"]["key"], "b": record["to"]["key"], "props": record["props"]}
            )
            if len(self.edges[key]) >= EDGE_BATCH:
                self._flush_edges(key)

    def _flush_memories(self) -> None:
        if self.memories:
            self.counts["memory"] += self.graph.restore_memories(self.memories)
            self.memories = []

    def _flush_nodes(self, labels: tuple[str, ...], kind: str) -> None:
        rows = self.nodes.pop(labels, [])
        if rows:
            self.counts[kind] += self.graph.restore_nodes(labels, rows)

    def _flush_all_nodes(self) -> None:
        self._flush_memories()
        for labels in list(self.nodes):
            self._flush_nodes(labels, "event" if labels == ("MemoryEvent",) else "node")

    def _flush_edges(self, key: tuple[str, str, str]) -> None:
        rows = self.edges.pop(key, [])
        if rows:
            self.counts["edge"] += self.graph.restore_edges(*key, rows)

    def flush(self) -> None:
        self._flush_all_nodes()
        for key in list(self.edges):
            self._flush_edges(key)

    def require_complete(self, check: ArchiveCheck) -> None:
        """Every record of the archive became a node or an edge (the archive was checked whole,
        so a shortfall means the store refused something: the restore stops here)."""
        short = {k: (check.counts[k], self.counts[k]) for k in ("memory", "event", "node", "edge")}
        short = {k: v for k, v in short.items() if v[0] != v[1]}
        if short:
            raise RestoreIncomplete(
                "the restore stopped before changing the store: the graph took "
                + ", ".join(f"{got} of {want} {kind} records" for kind, (want, got) in short.items())
            )


def _warnings(svc: Services, header: dict[str, Any]) -> list[str]:
    label = (header.get("embedding") or {}).get("label")
    if label and label != svc.embedder.label:
        return [
            f"the archive was embedded with {label}; this service embeds with {svc.embedder.label}: "
            "memories not embedded by the client were queued for re-embedding"
        ]
    return []
