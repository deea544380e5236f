"""Restore a store from a backup archive (POST /admin/restore, `automem restore FILE`).

1. The archive is spooled to a temporary file while it is validated line by line (gzip integrity,
   record shapes and order, the end record's counts): a corrupt or truncated archive answers 400
   and the store is left exactly as it was. Nothing is held in memory but one batch.
2. The target must hold no memories, history or vector points (409 `store_not_empty`) unless
   `mode=replace`; its embedding dimension must match the archive's (409 `dimension_mismatch`).
3. The graph is deleted (indexes included) and re-created with its indexes, the vector collection
   is dropped and re-created, waiting queue work and stored idempotent responses are dropped.
4. Nodes (memories with their embeddings, history events, entities, patterns, consolidation
   runs) are written in batches, then edges (matched by their endpoints' keys; an edge whose
   endpoint is not in the archive is skipped and counted), then the archive's vector points.
5. Vectors: every point missing or older than its memory is rebuilt from the graph (the
   existing repair path); with `vectors=graph`, or an archive without points, that rebuilds all.
6. Reconcile queues embedding and enrichment for whatever still lacks it.

Only one restore runs at a time (a Redis lock). A failure while writing (a store going away)
leaves a partial store: repeat the restore with `mode=replace`.
"""

from __future__ import annotations

import secrets
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from automem.backlog import queue_missing_work
from automem.backup import CHUNK, ArchiveCheck, checked_records
from automem.errors import Conflict
from automem.stores.vectors import VectorPoint
from automem.vectorsync import keyword_text

if TYPE_CHECKING:
    from automem.services import Services

LOCK = "automem:restore:running"
LOCK_SECONDS = 6 * 3600
NODE_BATCH = 500
EDGE_BATCH = 1000


def restore_archive(
    svc: Services, chunks: Iterable[bytes], mode: str = "empty", vectors: str = "archive"
) -> dict[str, Any]:
    """Validate the archive in `chunks`, then rebuild the store from it (see the module doc)."""
    with _restore_lock(svc), tempfile.TemporaryFile(prefix="automem-restore-") as spool:
        if mode != "replace":
            _require_empty(svc)  # before reading the upload: fail fast
        check = ArchiveCheck()
        for _ in checked_records(_tee(chunks, spool), check):
            pass
        _require_compatible(svc, check)
        if mode != "replace":
            _require_empty(svc)
        dropped = _wipe(svc)
        spool.seek(0)
        writer = _Writer(svc, use_vectors=vectors == "archive")
        for record in checked_records(_read(spool)):
            writer.add(record)
        writer.flush_all()
    repaired = svc.sync.repair() if svc.vectors is not None else 0
    queued = queue_missing_work(svc)
    header = check.header or {}
    return {
        "status": "success",
        "mode": mode,
        "vectors_source": "archive" if writer.counts["vector"] else "graph",
        "restored": {
            "memories": writer.counts["memory"],
            "events": writer.counts["event"],
            "nodes": writer.counts["node"],
            "edges": writer.counts["edge"],
            "vectors": writer.counts["vector"],
        },
        "skipped_edges": writer.skipped_edges,
        "vectors_rebuilt_from_graph": repaired,
        "dropped_jobs": dropped,
        "queued": queued,
        "archive": {
            "created_at": header.get("created_at"),
            "service_version": header.get("service_version"),
            "embedding": header.get("embedding"),
            "counts": dict(check.counts),
        },
        "warnings": _warnings(svc, header),
    }


@contextmanager
def _restore_lock(svc: Services) -> Iterator[None]:
    token = secrets.token_hex(8)
    if not svc.queue_redis.set(LOCK, token, nx=True, ex=LOCK_SECONDS):
        raise Conflict("another restore is running", reason="restore_in_progress")
    try:
        yield
    finally:
        svc.queue_redis.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
            1,
            LOCK,
            token,
        )


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


def _require_compatible(svc: Services, check: ArchiveCheck) -> None:
    if (check.counts["vector"] or check.embeddings) and check.dimension != svc.embedder.dimension:
        raise Conflict(
            f"the archive holds {check.dimension}-dimensional vectors; this service embeds with "
            f"{svc.embedder.label} ({svc.embedder.dimension} dimensions). Configure the archive's "
            "embedding model (EMBEDDING_PROVIDER / EMBEDDING_MODEL / VECTOR_SIZE) to restore it",
            reason="dimension_mismatch",
            extra={"archive_dimension": check.dimension, "service_dimension": svc.embedder.dimension},
        )


def _wipe(svc: Services) -> int:
    """Empty graph (schema re-created), vector collection and queued work; returns jobs dropped."""
    svc.graph.wipe()
    svc.graph.ensure_schema(svc.embedder.dimension)
    svc.graph.ensure_consolidation_schema()
    if svc.vectors is not None:
        svc.vectors.drop()
        svc.vectors.ensure_collection(svc.embedder.dimension)
    dropped = svc.jobs.clear()
    svc.idempotency.clear()
    return dropped


def _tee(chunks: Iterable[bytes], spool: IO[bytes]) -> Iterator[bytes]:
    for chunk in chunks:
        spool.write(chunk)
        yield chunk


def _read(spool: IO[bytes]) -> Iterator[bytes]:
    while chunk := spool.read(CHUNK):
        yield chunk


class _Writer:
    """Buffers records by kind and writes them in batches, nodes before edges before vectors."""

    def __init__(self, svc: Services, use_vectors: bool) -> None:
        self.svc = svc
        self.use_vectors = use_vectors
        self.memories: list[dict[str, Any]] = []
        self.nodes: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
        self.edges: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
        self.points: list[VectorPoint] = []
        # The keyword index's text of each memory: vector payloads carry filter fields only.
        self.texts: dict[str, str] = {}
        self.counts: dict[str, int] = defaultdict(int)
        self.skipped_edges = 0

    def add(self, record: dict[str, Any]) -> None:
        kind = record["kind"]
        if kind == "memory":
            self.memories.append({"props": record["props"], "embedding": record.get("embedding")})
            if self.use_vectors:
                props = record["props"]
                self.texts[str(props.get("id"))] = keyword_text(props.get("content"), props.get("timestamp"))
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
            row = {"a": record["from"]["key"], "b": record["to"]["key"], "props": record["props"]}
            self.edges[key].append(row)
            if len(self.edges[key]) >= EDGE_BATCH:
                self._flush_edges(key)
        elif kind == "vector" and self.use_vectors:
            self.flush_edges()
            payload = record["payload"]
            # Older archives carried content in fat payloads.
            text = self.texts.get(record["id"]) or keyword_text(
                payload.get("content"), payload.get("timestamp")
            )
            self.points.append(VectorPoint(record["id"], record.get("vector"), payload, text))
            if len(self.points) >= NODE_BATCH:
                self._flush_points()

    def _flush_memories(self) -> None:
        if self.memories:
            self.counts["memory"] += self.svc.graph.restore_memories(self.memories)
            self.memories = []

    def _flush_nodes(self, labels: tuple[str, ...], kind: str) -> None:
        rows = self.nodes.pop(labels, [])
        if rows:
            self.counts[kind] += self.svc.graph.restore_nodes(labels, rows)

    def _flush_all_nodes(self) -> None:
        self._flush_memories()
        for labels in list(self.nodes):
            self._flush_nodes(labels, "event" if labels == ("MemoryEvent",) else "node")

    def _flush_edges(self, key: tuple[str, str, str]) -> None:
        rows = self.edges.pop(key, [])
        if rows:
            created = self.svc.graph.restore_edges(*key, rows)
            self.counts["edge"] += created
            self.skipped_edges += len(rows) - created

    def flush_edges(self) -> None:
        self._flush_all_nodes()
        for key in list(self.edges):
            self._flush_edges(key)

    def _flush_points(self) -> None:
        if self.points and self.svc.vectors is not None:
            self.svc.vectors.upsert(self.points)
            self.counts["vector"] += len(self.points)
        self.points = []

    def flush_all(self) -> None:
        self.flush_edges()
        self._flush_points()


def _warnings(svc: Services, header: dict[str, Any]) -> list[str]:
    label = (header.get("embedding") or {}).get("label")
    if label and label != svc.embedder.label:
        return [
            f"the archive was embedded with {label}; this service embeds with {svc.embedder.label}: "
            "memories not embedded by the client were queued for re-embedding"
        ]
    return []
