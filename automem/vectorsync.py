"""Keeps the vector store a faithful copy of the graph.

`apply(ids)` reads each memory's current state (payload fields and embedding) from the graph and
writes it to the vector store; the point's `rev` stops an older snapshot from replacing a newer
one. A process that does not own the vector store (an RQ worker in embedded mode, where one
process owns the Qdrant Edge shard) calls `request(ids)` instead, which appends the ids to a Redis
stream that the owner drains. Stream entries are acknowledged only after they were applied, so
a crash of either side loses nothing: the owner re-reads its pending entries at start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis

from automem.listing import WAITING_LIMIT, Order, listed_docs, rank_of
from automem.record import MemoryRecord, enrichment_categories, enrichment_dates
from automem.stores.graph import GraphStore
from automem.stores.vectors import VectorPoint, VectorStore
from automem.stores.vectors.base import Filter, IsNull
from automem.timeutil import parse_iso

log = logging.getLogger(__name__)

STREAM = "automem:vector-sync"
# Set while a restore replaces the graph and refills the vectors; found at the owner's start, it
# means a restore was interrupted between the two, so every point is rebuilt from the graph.
REBUILD_KEY = "automem:vector-sync:rebuild"
GROUP = "vector-owner"
CONSUMER = "owner"

# Graph fields copied into the vector payload: what recall and the listings filter and order on,
# and `rev` (the rev guard). Memories themselves are always read from the graph. A fuller copy
# (content, metadata, ...) made every point write cost ~0.1 ms more in the API process
# (qdrant-edge-py converts each payload key to Rust) and saved no read: the graph answers a
# 40-memory read as fast as the payloads plus a graph revision check did.
PAYLOAD_FIELDS = (
    "tags",
    "tag_prefixes",
    "type",
    "importance",
    "timestamp",
    "t_valid",
    "t_invalid",
    "state",
    "tenant",
)


def payload_for(doc: MemoryRecord) -> dict[str, Any]:
    payload = {key: getattr(doc, key) for key in PAYLOAD_FIELDS}
    payload["rank"] = rank_of(doc.importance, doc.timestamp)
    payload["rev"] = doc.rev
    return payload


# Points that should carry a `rank` and do not (written before it existed); none left means
# the listings may walk it (automem.listing).
UNRANKED = Filter(must=(IsNull("rank"),), must_not=(IsNull("importance"),))
# While some remain, how often a listing asks again.
RANK_CHECK_SECONDS = 30.0


class VectorSync:
    def __init__(
        self,
        graph: GraphStore,
        vectors: VectorStore | None,
        queue_redis: redis.Redis | None,
        batch: int = 256,
        context_chars: int = 0,
    ) -> None:
        self.graph = graph
        self.vectors = vectors
        self.redis = queue_redis
        self.batch = batch
        self.context_chars = context_chars
        self._group_ready = False
        # Whether this consumer may hold unacknowledged entries (at start, after a failed step):
        # only then is the pending list read before new entries.
        self._may_hold_pending = True
        # Whether every point carries its rank (once true it stays so: every write adds it).
        self._ranked = False
        self._rank_checked_at = -RANK_CHECK_SECONDS

    @property
    def owns_vectors(self) -> bool:
        return self.vectors is not None

    def request(self, ids: Sequence[str], payload_only: bool = False) -> None:
        """Bring these memories' points up to date, here or through the owner. `payload_only`:
        the caller changed neither content, timestamp nor embedding (enrichment, classification,
        consolidation), so the payloads and keyword vectors are rewritten and the dense vector
        is kept: no embedding is read back from the graph (parsing 384 floats a memory was most
        of the owner's work while enrichment ran)."""
        if not ids:
            return
        if self.vectors is not None:
            self.apply(ids, payload_only)
            return
        if self.redis is None:
            raise RuntimeError("no vector store and no Redis: cannot hand vector writes to the owner")
        fields = {"ids": ",".join(ids)}
        if payload_only:
            fields["payload_only"] = "1"
        self.redis.xadd(STREAM, fields)  # type: ignore[arg-type]

    def apply(self, ids: Sequence[str], payload_only: bool = False, rewrite: bool = False) -> int:
        """Copy the graph's current state of `ids` into the vector store; returns points written
        (`rewrite`: points of the graph's rev too, see `VectorStore.upsert`)."""
        assert self.vectors is not None
        unique = list(dict.fromkeys(ids))
        docs = self.graph.get_memories(unique, with_embedding=not payload_only)
        found = {d.id for d in docs}
        purged = [i for i in unique if i not in found]
        if purged:
            self.vectors.delete(purged)
        if payload_only:
            self.vectors.overwrite_payloads(self._points(docs))
            return len(docs)
        return self._upsert(docs, rewrite)

    def write_snapshots(self, docs: Sequence[MemoryRecord]) -> int:
        """Write memories whose graph state the caller holds (just written, `embedding` if any).

        Saves reading the vectors back from the graph on the ingest path; the rev guard keeps
        a newer state that another writer may already have synced."""
        if self.vectors is None:
            self.request([d.id for d in docs])
            return 0
        return self._upsert(docs)

    def _upsert(self, docs: Sequence[MemoryRecord], rewrite: bool = False) -> int:
        assert self.vectors is not None
        points = self._points(docs)
        if points:
            self.vectors.upsert(points, rewrite=rewrite)
        return len(points)

    def _points(self, docs: Sequence[MemoryRecord]) -> list[VectorPoint]:
        fields = self.keyword_fields(docs)
        return [
            VectorPoint(
                id=doc.id,
                vector=list(doc.embedding) if doc.embedding else None,
                payload=payload_for(doc),
                text=fields[doc.id][0],
                context=fields[doc.id][1],
            )
            for doc in docs
        ]

    def keyword_fields(self, docs: Sequence[MemoryRecord]) -> dict[str, tuple[str, str]]:
        """Each memory's keyword text and its lower-weight second field: the retrieval context
        (RETRIEVAL_CONTEXT_KEYWORDS: the start of the memory it was embedded with) and the
        category words enrichment found (`metadata.enrichment.categories`); one graph read at
        most."""
        follows = {d.id: d.embedding_context for d in docs if d.embedding_context}
        contexts: dict[str, str] = {}
        if self.context_chars > 0 and follows:
            wanted = list(set(follows.values()))
            found = {d.id: d.content[: self.context_chars] for d in self.graph.get_memories(wanted)}
            contexts = {i: found[source] for i, source in follows.items() if source in found}
        return {
            d.id: (
                keyword_text(d.content, d.timestamp, d.metadata),
                second_field(contexts.get(d.id, ""), d.metadata),
            )
            for d in docs
        }

    def audit(self, page: int = 1000, sample: int = 10) -> dict[str, Any]:
        """What repair would do: memories without a point (`missing`), points older than their
        memory (`stale`), points without a memory (`orphaned`); counts and a sample of each."""
        assert self.vectors is not None
        found: dict[str, list[str]] = {"missing": [], "stale": [], "orphaned": []}
        for rows in self.graph.revs_pages(page):
            stored = self._stored_revs([i for i, _ in rows])
            found["missing"] += [i for i, _ in rows if i not in stored]
            found["stale"] += [i for i, rev in rows if i in stored and stored[i] < rev]
        found["orphaned"] = self.orphans(page)
        return {key: {"count": len(ids), "sample": ids[:sample]} for key, ids in found.items()}

    def orphans(self, page: int = 1000) -> list[str]:
        """Ids of points whose memory is not in the graph (a purge or a restore the vector store
        missed)."""
        assert self.vectors is not None
        orphaned: list[str] = []
        batch: list[str] = []
        for record in self.vectors.iter_records(page=page):
            batch.append(record.id)
            if len(batch) >= page:
                orphaned += self._absent(batch)
                batch = []
        return orphaned + self._absent(batch)

    def _stored_revs(self, ids: list[str]) -> dict[str, int]:
        """Each stored point's rev, read alone (a whole payload copies the memory's filter fields)."""
        assert self.vectors is not None
        return {r.id: int(r.payload.get("rev", 0)) for r in self.vectors.retrieve(ids, fields=("rev",))}

    def _absent(self, ids: list[str]) -> list[str]:
        known = self.graph.existing_ids(ids) if ids else set()
        return [i for i in ids if i not in known]

    def repair(self, page: int = 1000, force: bool = False) -> int:
        """Re-apply every memory whose point is missing or older than the graph (with `force`,
        every memory: payloads are rewritten in the current shape); returns how many.

        Covers writes lost between the graph commit and the vector write (a crash there, a lost
        stream entry). Orphan points of purged memories are left to the purge/rebuild tools."""
        assert self.vectors is not None
        repaired = 0
        for rows in self.graph.revs_pages(page):
            stored = self._stored_revs([i for i, _ in rows])
            stale = [memory_id for memory_id, rev in rows if force or stored.get(memory_id, -1) < rev]
            if stale:
                self.apply(stale, rewrite=force)
                repaired += len(stale)
        if repaired:
            log.warning("vector repair re-applied %d memories from the graph", repaired)
        return repaired

    def rebuild(self, dimension: int) -> int:
        """Drop every point and rewrite each memory's from the graph; returns how many."""
        assert self.vectors is not None
        self.vectors.drop()
        self.vectors.ensure_collection(dimension)
        return self.repair(force=True)

    def mark_rebuild(self, dimension: int) -> None:
        if self.redis is not None:
            self.redis.set(REBUILD_KEY, str(dimension))

    def clear_rebuild(self) -> None:
        if self.redis is not None:
            self.redis.delete(REBUILD_KEY)

    def rebuild_if_marked(self) -> int | None:
        """The rebuild an interrupted restore left to do (see REBUILD_KEY), if any."""
        marked = self.redis.get(REBUILD_KEY) if self.vectors is not None and self.redis is not None else None
        if marked is None:
            return None
        log.warning("a restore was interrupted before its vectors were written: rebuilding them")
        rebuilt = self.rebuild(int(marked))
        self.clear_rebuild()
        return rebuilt

    # --- the owner's side of the hand-off -----------------------------------------------------
    def _ensure_group(self) -> None:
        if self._group_ready or self.redis is None:
            return
        try:
            self.redis.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def drain_once(self, block_ms: int = 0) -> int:
        """Apply one batch of handed-off ids (own unacknowledged entries first); returns entries done."""
        assert self.redis is not None and self.vectors is not None
        self._ensure_group()
        pending = self._read(pending=True) if self._may_hold_pending else []
        entries = pending or self._read(pending=False, block_ms=block_ms)
        self._may_hold_pending = bool(entries)  # until this batch is acknowledged
        if not entries:
            return 0
        full = [i for _, fields in entries if not _payload_only(fields) for i in _ids_of(fields) if i]
        payloads = [i for _, fields in entries if _payload_only(fields) for i in _ids_of(fields) if i]
        if full:
            self.apply(full)
        if payloads:
            self.apply([i for i in payloads if i not in set(full)], payload_only=True)
        entry_ids = [entry_id for entry_id, _ in entries]
        self.redis.xack(STREAM, GROUP, *entry_ids)
        self.redis.xdel(STREAM, *entry_ids)
        self._may_hold_pending = bool(pending)  # a batch of them may have left more behind
        return len(entries)

    def _read(self, pending: bool, block_ms: int = 0) -> list[tuple[Any, dict[Any, Any]]]:
        assert self.redis is not None
        start = "0" if pending else ">"
        block = None if pending or block_ms <= 0 else block_ms
        reply: Any = self.redis.xreadgroup(GROUP, CONSUMER, {STREAM: start}, count=self.batch, block=block)
        if not reply:
            return []
        _, entries = reply[0]
        return [(entry_id, fields) for entry_id, fields in entries if fields]

    def drain_all(self) -> int:
        done = 0
        while (n := self.drain_once()) > 0:
            done += n
        return done

    def run_forever(self, stop: threading.Event, block_ms: int = 1000, linger_seconds: float = 0.0) -> None:
        """The owner's loop: repair once, then drain; errors are logged and retried, never fatal.
        An error once `stop` is set belongs to the shutdown (the stores closing under a step that
        outlived stop_app's wait) and ends the loop quietly. After a step that found less than a
        batch the loop waits `linger_seconds`, so a trickle of hand-offs (enrichment syncs one
        memory at a time) is applied a batch at a time, not each with its own reads and writes."""
        while not stop.is_set():
            try:
                if self.rebuild_if_marked() is None:
                    self.repair()
                self.fill_ranks()
                break
            except Exception:
                if stop.is_set():
                    log.debug("vector repair interrupted by the shutdown", exc_info=True)
                    return
                log.exception("vector repair failed; retrying")
                stop.wait(5.0)
        while not stop.is_set():
            try:
                done = self.drain_once(block_ms=block_ms)
                self._checkpoint()
                if 0 < done < self.batch and linger_seconds > 0:
                    stop.wait(linger_seconds)
            except Exception as exc:
                if stop.is_set():
                    log.debug("vector sync drain interrupted by the shutdown", exc_info=True)
                    return
                if isinstance(exc, redis.exceptions.TimeoutError):
                    # A server busy past the socket timeout (a 1M import's writes did it): nothing
                    # is lost, the entries wait in the stream for the next read.
                    log.warning("vector sync drain: Redis did not answer in time; retrying")
                else:
                    log.exception("vector sync drain failed; retrying")
                stop.wait(2.0)

    def _checkpoint(self) -> None:
        """A due checkpoint of the vector store, between hand-offs: on the owner's thread, never
        a request's, since a flush of the Edge shard holds the GIL (AUTOMEM_EDGE_CHECKPOINT_WRITES)."""
        if self.vectors is not None:
            self.vectors.checkpoint_if_due()

    def backlog(self) -> int:
        if self.redis is None:
            return 0
        try:
            return int(self.redis.xlen(STREAM))
        except redis.exceptions.RedisError:
            return -1

    def listed(self, flt: Filter, order: Order, count: int) -> list[MemoryRecord] | None:
        """The first `count` memories of `flt` in `order`, walked in the vector store's payload
        indexes (automem.listing); None when it cannot say (no store here, more than
        WAITING_LIMIT hand-offs waiting, a lagging payload): the caller asks the graph."""
        if self.vectors is None or (waiting := self.waiting_ids(WAITING_LIMIT)) is None:
            return None
        return listed_docs(
            self.graph,
            self.vectors,
            flt,
            order,
            count,
            waiting=waiting,
            payload_of=payload_for,
            ranked=order == "importance" and self.ranked(),  # only that order walks ranks
        )

    def ranked(self) -> bool:
        """Whether every point carries its `rank` (asked of the store at most every
        RANK_CHECK_SECONDS until it does)."""
        if self._ranked or self.vectors is None:
            return self._ranked
        if time.monotonic() - self._rank_checked_at >= RANK_CHECK_SECONDS:
            self._check_ranked()
        return self._ranked

    def _check_ranked(self) -> None:
        assert self.vectors is not None
        self._rank_checked_at = time.monotonic()
        self._ranked = self.vectors.count(UNRANKED) == 0

    def fill_ranks(self, page: int = 1000) -> int:
        """Give each point written before ranks existed its `rank`, from its own payload (a point
        rewritten meanwhile keeps its newer payload, which has one); returns how many."""
        assert self.vectors is not None
        filled, offset = 0, None
        while True:
            records, offset = self.vectors.scroll(UNRANKED, limit=page, offset=offset)
            values = [
                (r.id, int(rev), {"rank": rank})
                for r in records
                if (rev := r.payload.get("rev")) is not None
                and (rank := rank_of(r.payload["importance"], r.payload.get("timestamp"))) is not None
            ]
            self.vectors.set_payload_values(values)
            filled += len(values)
            if offset is None:
                break
        if filled:
            log.info("ranked %d points written before ranks existed", filled)
        self._check_ranked()  # settled here, off the request path, not by the next listing
        return filled

    def waiting_ids(self, limit: int) -> list[str] | None:
        """The memories whose points have hand-offs still waiting for the owner (their vector
        store state may lag the graph's); None when more than `limit` wait or Redis cannot say.
        While the worker enriches, a few always wait (the owner applies them a batch at a time).
        The stream's length is read first: nothing waiting costs one XLEN, and a long backlog (a
        restore, a bulk import) is refused without reading its entries."""
        waiting = self.backlog()
        if waiting == 0:
            return []
        if waiting < 0 or waiting > limit or self.redis is None:
            return None
        try:
            entries: Any = self.redis.xrange(STREAM, count=limit)
        except redis.exceptions.RedisError:
            return None
        ids = list(dict.fromkeys(i for _, fields in entries if fields for i in _ids_of(fields) if i))
        return None if len(ids) > limit else ids


def keyword_text(content: str | None, timestamp: str | None, metadata: Any = None) -> str:
    """What the keyword index holds of a memory's own (its retrieval context is a field beside
    it): the content, the relative dates enrichment resolved (`metadata.enrichment.dates` labels:
    "weekend of 6 May 2023") and the event date in words ("8 May 2023"), so a query naming a
    day, month or year matches memories of that time."""
    text = str(content or "")
    labels = date_labels(metadata)
    if labels:
        text = f"{text}\n{'; '.join(labels)}"
    try:
        moment = parse_iso(str(timestamp))
    except ValueError:
        return text
    return f"{text} {moment.day} {moment.strftime('%B')} {moment.year}"


def second_field(context: str, metadata: Any) -> str:
    """The keyword document's second field: the retrieval context, then the category words."""
    categories = "; ".join(enrichment_categories(metadata))
    return "\n".join(part for part in (context, categories) if part)


def date_labels(metadata: Any) -> list[str]:
    """The labels of the relative dates enrichment resolved (`metadata` as a dict or its JSON)."""
    return [str(d["label"]) for d in enrichment_dates(metadata) if d.get("label")]


def _payload_only(fields: dict[Any, Any]) -> bool:
    return (fields.get(b"payload_only") or fields.get("payload_only")) in (b"1", "1")


def _ids_of(fields: dict[Any, Any]) -> list[str]:
    raw = fields.get(b"ids") or fields.get("ids") or b""
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return text.split(",")
