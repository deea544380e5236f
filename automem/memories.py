"""The memory write path and direct reads: what POST/PATCH/DELETE/GET of a memory mean.

The graph write is the commit point: a 201 is returned only after FalkorDB confirmed the node.
The vector store and the queues are updated after it; if they fail, the reconcile pass at start
(and `automem reconcile`) finds memories whose embedding or vector is missing and redoes them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import unicodedata
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import redis

from automem.classify import EXPLICIT_TYPE_CONFIDENCE, classify
from automem.embedding import EmbeddingProvider
from automem.errors import Conflict, InvalidInput, NotFound, StoreUnavailable
from automem.events import EventPublisher, EventType, listed
from automem.history import SYSTEM, Change, diff
from automem.listing import tag_filter
from automem.llm import LlmClient, LlmError
from automem.models import ByTagQuery, ExistingQuery, MemoryCreate, MemoryUpdate, check_dimension
from automem.record import DEFAULT_TENANT, MemoryRecord, memory_wire
from automem.settings import Settings
from automem.stores.graph import CreateOutcome, GraphStore
from automem.stores.queue import JobQueue
from automem.tags import SESSION_KEYS, canonical_prefix, sequence_scope, tag_prefixes
from automem.timeutil import format_utc, now_iso, utc_now
from automem.validation import check_validity
from automem.vectorsync import VectorSync

log = logging.getLogger(__name__)

_PATCH_ATTEMPTS = 5


def normalized_content(content: str) -> str:
    return " ".join(unicodedata.normalize("NFC", content).split())


def content_hash(content: str) -> str:
    return hashlib.sha256(normalized_content(content).encode()).hexdigest()


def dedup_key(tenant: str, chash: str) -> str:
    return f"{tenant}:{chash}"


@dataclass(frozen=True)
class Prepared:
    """A validated memory ready for the graph."""

    props: dict[str, Any]
    embedding: list[float] | None
    classification_method: str

    @property
    def id(self) -> str:
        return str(self.props["id"])

    def row(self) -> dict[str, Any]:
        return {"props": self.props, "embedding": self.embedding}


class MemoryService:
    def __init__(
        self,
        settings: Settings,
        graph: GraphStore,
        embedder: EmbeddingProvider,
        jobs: JobQueue | None,
        sync: VectorSync,
        llm: LlmClient | None = None,
        events: EventPublisher | None = None,
    ) -> None:
        self.settings = settings
        self.graph = graph
        self.embedder = embedder
        self.jobs = jobs
        self.sync = sync
        self.llm = llm
        self.events = events

    def _publish(self, event_type: EventType, tenant: str, data: dict[str, Any]) -> None:
        """A live event about a committed change (never fails the change: automem.events)."""
        if self.events is not None:
            self.events.publish(event_type, data, tenant)

    # --- create -------------------------------------------------------------------------------
    def prepare(
        self, body: MemoryCreate, tenant: str, field_prefix: str = "", change: Change = SYSTEM
    ) -> Prepared:
        content = str(body.content)
        chash = content_hash(content)
        now = now_iso()
        if body.type:
            mtype, confidence, method = body.type, body.confidence, "explicit"
            confidence = EXPLICIT_TYPE_CONFIDENCE if confidence is None else confidence
        else:
            found = classify(content)
            mtype, confidence, method = found.type, found.confidence, found.method
        tags = body.tags or []
        timestamp = body.timestamp or now
        embedding = self._checked_embedding(body.embedding, field_prefix)
        props: dict[str, Any] = {
            "id": body.id or str(uuid.uuid4()),
            "tenant": tenant,
            "content": content,
            "content_hash": chash,
            "dedup_key": dedup_key(tenant, chash),
            "type": mtype,
            "confidence": float(confidence),
            "classification": method,
            "tags": tags,
            "tag_prefixes": tag_prefixes(tags),
            "importance": float(0.5 if body.importance is None else body.importance),
            "metadata": json.dumps(body.metadata or {}, ensure_ascii=False),
            "timestamp": timestamp,
            "created_at": now,
            "updated_at": body.updated_at or now,
            "last_accessed": body.last_accessed or now,
            "t_valid": _default_start(body, timestamp),
            "t_invalid": body.t_invalid,
            "state": "active",
            "version": 1,
            "rev": 1,
            "enriched": False,
            "seq_scope": sequence_scope(tags, body.metadata or {}),
            # The history's `created` event is read from these (no event node on the ingest path).
            "created_by": change.actor,
        }
        _check_interval(props["t_valid"], props["t_invalid"], field_prefix)
        if change.reason:
            props["created_reason"] = change.reason
        if embedding is not None:
            props["embedding_hash"] = chash
            props["embedding_model"] = "client"
        return Prepared(props, embedding, method)

    def _checked_embedding(self, embedding: list[float] | None, field_prefix: str) -> list[float] | None:
        check_dimension(embedding, self.embedder.dimension, f"{field_prefix}embedding")
        return embedding

    def create(
        self, body: MemoryCreate, tenant: str = DEFAULT_TENANT, change: Change = SYSTEM
    ) -> tuple[int, dict[str, Any]]:
        body, summarized = self._summarized(body)
        prepared = self.prepare(body, tenant, change=change)
        outcome = self.graph.create_memories([prepared.row()])[0]
        if outcome.status == "conflict":
            message = f"a memory with id {prepared.id} already exists"
            raise Conflict(message, field="id", reason="duplicate_id")
        if outcome.status == "duplicate":
            return 201, self._deduplicated(str(outcome.existing_id))
        statuses = self._after_create([prepared])[prepared.id]
        record = MemoryRecord.from_props(prepared.props)
        self._publish(
            EventType.MEMORY_STORED,
            tenant,
            {**listed([prepared.id]), **_stored_facts(prepared.props), **statuses},
        )
        return 201, {
            **_stored_fields(record),
            "classification": prepared.classification_method,
            "deduplicated": False,
            "embedding": statuses["embedding"],
            "enrichment": statuses["enrichment"],
            # AutoMem's names for where the vector stands.
            "qdrant": "stored" if prepared.embedding is not None else "queued",
            "embedding_status": "provided" if prepared.embedding is not None else statuses["embedding"],
            **summarized,
        }

    def _deduplicated(self, existing_id: str) -> dict[str, Any]:
        """Identical content is already stored in this scope: its id, with 201 as AutoMem answers
        every store (AutoMem stores a second copy; this service points at the first)."""
        existing = self.graph.get_memory(existing_id)
        if existing is None:  # deleted between the write and this read
            return {"status": "success", "deduplicated": True, "memory_id": existing_id, "memory": None}
        return {
            **_stored_fields(existing),
            "deduplicated": True,
            "embedding_status": "skipped",
            "qdrant": "stored" if existing.embedded else "queued",
            "memory": memory_wire(existing),
        }

    def _summarized(self, body: MemoryCreate) -> tuple[MemoryCreate, dict[str, Any]]:
        """Content over the soft limit, summarised by the LLM when one is configured; the original
        stays in metadata. Any LLM trouble stores the content as it came (never a failed write)."""
        content = str(body.content)
        s = self.settings
        if len(content) <= s.content_soft_limit or not (s.memory_auto_summarize and self.llm):
            return body, {}
        try:
            summary = self.llm.summarize(content, s.memory_summary_target_length)
        except LlmError as exc:
            log.warning(
                "summarising a %d-char memory failed (%s); stored as is", len(content), type(exc).__name__
            )
            return body, {"summarized": False}
        if not summary:
            return body, {"summarized": False}
        metadata = {
            **(body.metadata or {}),
            "original_content": content,
            "was_summarized": True,
            "original_length": len(content),
        }
        updated = body.model_copy(update={"content": summary, "metadata": metadata})
        return updated, {
            "summarized": True,
            "original_length": len(content),
            "summarized_length": len(summary),
        }

    def create_batch(
        self,
        bodies: Sequence[MemoryCreate],
        tenant: str = DEFAULT_TENANT,
        change: Change = SYSTEM,
    ) -> list[dict[str, Any]]:
        prepared = [self.prepare(b, tenant, f"memories[{n}].", change) for n, b in enumerate(bodies)]
        self._reject_repeated_ids(prepared)
        self._reject_existing_ids(prepared)
        unique, repeats = self._split_in_batch_duplicates(prepared)
        outcomes = {o.id: o for o in self.graph.create_memories([p.row() for p in unique])}
        created = [p for p in unique if outcomes[p.id].status == "created"]
        statuses = self._after_create(created)
        if created:
            # One event per batch (AutoMem's choice too): a 1000-memory import must not flood streams.
            duplicates = len(prepared) - len(created)
            self._publish(
                EventType.MEMORY_STORED,
                tenant,
                {**listed([p.id for p in created]), "batch": True, "duplicates": duplicates},
            )
        results = []
        for item in prepared:
            outcome = outcomes.get(item.id) or repeats[item.id]
            results.append(_batch_item(outcome, statuses.get(item.id, {})))
        return results

    @staticmethod
    def _reject_repeated_ids(prepared: Sequence[Prepared]) -> None:
        seen: set[str] = set()
        for n, item in enumerate(prepared):
            if item.id in seen:
                raise InvalidInput(f"memories[{n}].id repeats an id of this batch", field=f"memories[{n}].id")
            seen.add(item.id)

    def _reject_existing_ids(self, prepared: Sequence[Prepared]) -> None:
        """All-or-nothing: a batch naming an id that already exists writes nothing (409)."""
        index = {p.id: n for n, p in enumerate(prepared)}
        existing = self.graph.get_memories(list(index))
        if existing:
            n = min(index[doc.id] for doc in existing)
            raise Conflict(
                f"memories[{n}].id: a memory with id {prepared[n].id} already exists",
                field=f"memories[{n}].id",
                reason="duplicate_id",
            )

    @staticmethod
    def _split_in_batch_duplicates(
        prepared: Sequence[Prepared],
    ) -> tuple[list[Prepared], dict[str, CreateOutcome]]:
        first_by_key: dict[str, str] = {}
        unique: list[Prepared] = []
        repeats: dict[str, CreateOutcome] = {}
        for item in prepared:
            key = str(item.props["dedup_key"])
            if key in first_by_key:
                repeats[item.id] = CreateOutcome(item.id, "duplicate", first_by_key[key])
            else:
                first_by_key[key] = item.id
                unique.append(item)
        return unique, repeats

    def _after_create(self, created: Sequence[Prepared]) -> dict[str, dict[str, str]]:
        """Sync supplied vectors now, hand embedding of the rest and enrichment of all to the
        intake; returns each id's {"embedding": status, "enrichment": status}."""
        # Every memory is searchable by keyword at once; the dense vector joins it when embedded.
        snapshots = [MemoryRecord.from_props(p.props, p.embedding) for p in created]
        self._quietly(self.sync.write_snapshots, snapshots)
        to_embed = [(p.id, str(p.props["content_hash"])) for p in created if p.embedding is None]
        to_enrich = [(p.id, 1) for p in created]
        queued = self._submit(to_embed, to_enrich)
        enrichment = self._enrichment_status(queued)
        return {
            p.id: {
                "embedding": "stored" if p.embedding is not None else ("queued" if queued else "pending"),
                "enrichment": enrichment,
            }
            for p in created
        }

    def _submit(self, embed: list[tuple[str, str]], enrich: list[tuple[str, int]]) -> bool:
        """Queue background work; False when Redis refused (the queue retries it in the background,
        and reconcile finds the memories should this process die first)."""
        if not self.settings.enrichment_enabled:
            enrich = []
        if self.jobs is None:
            return False
        if not embed and not enrich:
            return True
        try:
            self.jobs.submit(embed, enrich)
            return True
        except redis.exceptions.RedisError:
            memories = {memory_id for memory_id, _ in embed} | {memory_id for memory_id, _ in enrich}
            log.warning("could not queue work for %d memories yet; retrying in the background", len(memories))
            return False

    def _enrichment_status(self, queued: bool) -> str:
        """What the client is told of enrichment: "queued", "pending" or "disabled"."""
        if not self.settings.enrichment_enabled:
            return "disabled"
        return "queued" if queued else "pending"

    def _sync_quietly(self, ids: list[str]) -> None:
        self._quietly(self.sync.request, ids)

    @staticmethod
    def _quietly(sync: Callable[[list[Any]], object], items: list[Any]) -> None:
        """Vector sync after a committed graph write: a failure is repaired later, never a 5xx."""
        try:
            sync(items)
        except StoreUnavailable:
            raise
        except Exception:
            log.exception("vector sync of %d memories failed; reconcile will repair it", len(items))

    # --- read ---------------------------------------------------------------------------------
    def get(self, memory_id: str, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        return memory_wire(self._owned(memory_id, tenant))

    def _owned(self, memory_id: str, tenant: str, include_deleted: bool = False) -> MemoryRecord:
        """The memory of `tenant`; 404 when absent or another tenant's (the two look the same)."""
        doc = self.graph.get_memory(memory_id, include_deleted=include_deleted, tenant=tenant)
        if doc is None:
            raise NotFound(f"memory {memory_id} not found", field="id")
        return doc

    def existing(self, query: ExistingQuery, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        """Which of the given ids and edges exist in `tenant` (deleted memories count: their ids
        stay taken until purged), in the order asked."""
        found_ids = set(self.graph.tenant_memory_ids(query.ids, tenant)) if query.ids else set()
        rows = [{"a": r.memory1_id, "b": r.memory2_id, "type": r.type} for r in query.relations]
        found_edges = set(self.graph.existing_edges(rows, tenant)) if rows else set()
        return {
            "ids": [i for i in dict.fromkeys(query.ids) if i in found_ids],
            "relations": [
                r.model_dump() for r in query.relations if (r.memory1_id, r.memory2_id, r.type) in found_edges
            ],
        }

    def related(
        self, memory_id: str, types: Sequence[str], depth: int, limit: int, tenant: str = DEFAULT_TENANT
    ) -> list[dict[str, Any]]:
        """The memories within `depth` hops over these edge types, each with its `hops`."""
        self._owned(memory_id, tenant)
        found = self.graph.related(memory_id, types, depth, limit, tenant)
        return [{**memory_wire(doc), "hops": hops} for doc, hops in found]

    def by_tag(self, query: ByTagQuery, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        tags = self._selection_tags(query)
        docs = self._by_tag_from_index(query, tags, tenant)
        if docs is None:
            docs = self.graph.by_tag(
                tags,
                tenant=tenant,
                mode=query.tag_mode,
                match=query.tag_match,
                limit=query.limit + 1,
                offset=query.offset,
            )
        has_more = len(docs) > query.limit
        items = [_listing_item(doc) for doc in docs[: query.limit]]
        return {
            "status": "success",
            "tags": query.tags,
            "tag_mode": query.tag_mode,
            "tag_match": query.tag_match,
            "limit": query.limit,
            "offset": query.offset,
            "count": len(items),
            "has_more": has_more,
            "memories": items,
        }

    def _by_tag_from_index(
        self, query: ByTagQuery, tags: list[str], tenant: str
    ) -> list[MemoryRecord] | None:
        """The page from the vector store's importance index (see `automem.listing`); None
        sends the caller to the graph."""
        flt = tag_filter(tenant, tags, query.tag_mode, query.tag_match)
        docs = self.sync.listed(flt, "importance", query.offset + query.limit + 1)
        return None if docs is None else docs[query.offset :]

    def tag_tree(self, prefix: str | None, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        canonical = canonical_prefix(prefix) if prefix else None
        rows = self.graph.tag_counts(canonical, tenant)
        return {
            "status": "success",
            "prefix": canonical,
            "tags": _tree(rows),
            "flat": [{"tag": tag, "count": count} for tag, count in rows],
        }

    # --- update -------------------------------------------------------------------------------
    def update(
        self, memory_id: str, body: MemoryUpdate, change: Change = SYSTEM, tenant: str = DEFAULT_TENANT
    ) -> dict[str, Any]:
        given = body.model_fields_set
        embedding = self._checked_embedding(body.embedding, "")
        if body.reason is not None:
            change = Change(change.actor, body.reason)
        for _ in range(_PATCH_ATTEMPTS):
            current = self._owned(memory_id, tenant)
            if body.if_version is not None and body.if_version != current.version:
                raise _version_conflict(memory_id, current.version, body.if_version)
            props, new_hash = self._changes(current, body, given, embedding)
            changes = diff(current, props)
            if "updated_at" not in given:
                changes.pop("updated_at", None)  # the event's own time says it
            # Guarded by rev too: a job's change since the read (enrichment's tags and metadata)
            # would otherwise be overwritten by the merge and missing from the recorded old values.
            updated = self.graph.update_memory(
                memory_id,
                props,
                expected_version=current.version,
                dedup_key=dedup_key(current.tenant, new_hash) if new_hash else None,
                embedding=embedding,
                expected_rev=current.rev,
                event=change.event("modified", now_iso(), changes),  # not a client-set updated_at
            )
            if updated is not None:
                self._after_update(
                    updated, content_changed=bool(new_hash), embedding_given=embedding is not None
                )
                fields = sorted(changes)[:_MAX_LISTED_FIELDS]
                data = {**listed([memory_id]), "version": updated.version, "fields": fields}
                self._publish(EventType.MEMORY_UPDATED, updated.tenant, data)
                return {"status": "success", "memory_id": memory_id, "memory": memory_wire(updated)}
            latest = self._owned(memory_id, tenant)
            if body.if_version is not None and latest.version != body.if_version:
                raise _version_conflict(memory_id, latest.version, body.if_version)
        raise Conflict("the memory kept changing during the update; retry", reason="version_conflict")

    def _changes(
        self, current: MemoryRecord, body: MemoryUpdate, given: set[str], embedding: list[float] | None
    ) -> tuple[dict[str, Any], str | None]:
        props: dict[str, Any] = {"updated_at": body.updated_at or now_iso()}
        new_hash = None
        if body.content is not None and body.content != current.content:
            new_hash = content_hash(body.content)
            props["content"] = body.content
            props["content_hash"] = new_hash
        if embedding is not None:
            props["embedding_hash"] = new_hash or current.content_hash
            props["embedding_model"] = "client"
        if body.tags is not None:
            props["tags"] = body.tags
            props["tag_prefixes"] = tag_prefixes(body.tags)
        if body.type is not None:
            props["type"] = body.type
            props["classification"] = "explicit"
            props["confidence"] = float(
                body.confidence if body.confidence is not None else EXPLICIT_TYPE_CONFIDENCE
            )
        elif body.confidence is not None:
            props["confidence"] = float(body.confidence)
        if body.importance is not None:
            props["importance"] = float(body.importance)
        if body.metadata is not None:
            merged = _merge_metadata(current.metadata, body.metadata)
            props["metadata"] = json.dumps(merged, ensure_ascii=False)
        for field in ("timestamp", "last_accessed"):
            if getattr(body, field) is not None:
                props[field] = getattr(body, field)
        if body.last_accessed is not None:
            # Accesses recalled before this change must not move the client's value (see touch).
            props["last_accessed_version"] = current.version + 1
        if _changes_enrichment_input(current, props, body):
            # Entities, summary and the sequence position follow content, tags, time and session.
            props["enriched"] = False
            metadata = json.loads(props["metadata"]) if "metadata" in props else current.metadata
            props["seq_scope"] = sequence_scope(props.get("tags", current.tags), metadata)
        if "t_invalid" in given:
            props["t_invalid"] = body.t_invalid  # an explicit null clears the end of validity
        if "t_valid" in given:
            props["t_valid"] = body.t_valid or props.get("timestamp") or current.timestamp
        _check_interval(props.get("t_valid", current.t_valid), props.get("t_invalid", current.t_invalid))
        return props, new_hash

    def _after_update(self, doc: MemoryRecord, content_changed: bool, embedding_given: bool) -> None:
        embed = [(doc.id, str(doc.content_hash))] if content_changed and not embedding_given else []
        enrich = [] if doc.enriched else [(doc.id, doc.version)]
        self._submit(embed, enrich)
        self._sync_quietly([doc.id])

    # --- delete -------------------------------------------------------------------------------
    def delete(
        self,
        memory_id: str,
        if_version: int | None = None,
        change: Change = SYSTEM,
        tenant: str = DEFAULT_TENANT,
    ) -> dict[str, Any]:
        self._owned(memory_id, tenant)  # a memory never changes tenant: checking first is enough
        now = now_iso()
        doc = self.graph.soft_delete(memory_id, now, if_version, change.event("deleted", now))
        if doc is None:
            current = self.graph.get_memory(memory_id)
            if current is None:
                raise NotFound(f"memory {memory_id} not found", field="id")
            raise _version_conflict(memory_id, current.version, if_version)
        self._sync_quietly([memory_id])
        data = {**listed([memory_id]), "version": doc.version, "hard": False}
        self._publish(EventType.MEMORY_DELETED, doc.tenant, data)
        return {
            "status": "success",
            "memory_id": memory_id,
            "deleted": "soft",
            "message": f"Memory {memory_id} deleted",
            "recoverable_days": self.settings.retention_days,
        }

    def delete_by_tag(
        self,
        query: ByTagQuery,
        *,
        preview: bool = False,
        hard: bool = False,
        tenant: str = DEFAULT_TENANT,
        change: Change = SYSTEM,
    ) -> dict[str, Any]:
        """AutoMem's bulk delete of every memory under the tags, as a soft delete (each one
        recoverable for RETENTION_DAYS, like DELETE /memory/<id>); `hard` (the route asks for the
        admin token) purges them at once. `preview` only counts and samples the selection."""
        tags = self._selection_tags(query)

        def selection(limit: int) -> tuple[int, list[str]]:
            return self.graph.ids_by_tag(
                tags, tenant=tenant, mode=query.tag_mode, match=query.tag_match, limit=limit
            )

        if preview:
            count, sample = selection(10)
            return {"status": "success", "preview": True, "tags": tags, "count": count, "sample_ids": sample}
        deleted: list[str] = []
        while True:
            _, ids = selection(500)
            now = now_iso()
            done = self.graph.soft_delete_many(ids, now, change.event("deleted", now)) if ids else []
            if hard and done:
                self.graph.purge_many(done, change.event("purged", now))
            self._sync_quietly(done)
            deleted += done
            if done:
                data = {**listed(done), "hard": hard, "bulk": True, "tags": tags}
                self._publish(EventType.MEMORY_DELETED, tenant, data)
            if not done:
                break
        return {
            "status": "success",
            "tags": tags,
            "deleted_count": len(deleted),
            "deleted": "hard" if hard else "soft",
            "recoverable_days": 0 if hard else self.settings.retention_days,
        }

    def _selection_tags(self, query: ByTagQuery) -> list[str]:
        tags = [canonical_prefix(t) for t in query.tags] if query.tag_match == "prefix" else query.tags
        tags = [t for t in tags if t]
        if not tags:
            raise InvalidInput("tags: at least one tag is required", field="tags")
        return tags

    def recover(
        self, memory_id: str, change: Change = SYSTEM, tenant: str = DEFAULT_TENANT
    ) -> dict[str, Any]:
        """Bring back a memory deleted within RETENTION_DAYS."""
        self._owned(memory_id, tenant, include_deleted=True)
        since = format_utc(utc_now() - timedelta(days=self.settings.retention_days))
        doc = self.graph.recover(memory_id, since, change.event("recovered", now_iso()))
        if doc is None:
            current = self.graph.get_memory(memory_id, include_deleted=True)
            if current is None:
                raise NotFound(f"memory {memory_id} not found", field="id")
            if current.state != "deleted":
                raise Conflict(f"memory {memory_id} is not deleted", field="id", reason="not_deleted")
            raise NotFound(
                f"memory {memory_id} was deleted more than {self.settings.retention_days} days ago",
                field="id",
                reason="not_recoverable",
            )
        self._sync_quietly([memory_id])
        data = {**listed([memory_id]), "version": doc.version}
        self._publish(EventType.MEMORY_RECOVERED, doc.tenant, data)
        return {"status": "success", "memory_id": memory_id, "recovered": True, "memory": memory_wire(doc)}

    def purge(self, memory_id: str, change: Change = SYSTEM, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        doc = self._owned(memory_id, tenant, include_deleted=True)
        if not self.graph.purge(memory_id, change.event("purged", now_iso())):
            raise NotFound(f"memory {memory_id} not found", field="id")
        self._sync_quietly([memory_id])
        self._publish(EventType.MEMORY_DELETED, doc.tenant, {**listed([memory_id]), "hard": True})
        return {
            "status": "success",
            "memory_id": memory_id,
            "deleted": "hard",
            "message": f"Memory {memory_id} purged",
        }


# Changed field names listed in a memory.updated event (metadata keys count one each).
_MAX_LISTED_FIELDS = 50


def _stored_facts(props: dict[str, Any]) -> dict[str, Any]:
    """The small facts of a memory.stored event: never the content itself."""
    return {
        "type": props["type"],
        "importance": props["importance"],
        "tags": props["tags"],
        "content_length": len(props["content"]),
    }


def _version_conflict(memory_id: str, current: Any, expected: Any) -> Conflict:
    return Conflict(
        f"memory {memory_id} is at version {current}, not {expected}",
        field="if_version",
        reason="version_conflict",
        extra={"current_version": current},
    )


def _default_start(body: MemoryCreate, timestamp: str) -> str | None:
    """t_valid, when not given, is the event time, unless the memory records a fact that had
    already ended before it was stored (t_invalid before now, no event time): its start is unknown."""
    if body.t_valid:
        return body.t_valid
    if body.timestamp is None and body.t_invalid is not None and body.t_invalid <= timestamp:
        return None
    return timestamp


def _check_interval(t_valid: str | None, t_invalid: str | None, field_prefix: str = "") -> None:
    """The interval the memory will hold (defaults and stored values included) must end after it
    starts."""
    try:
        check_validity(t_valid, t_invalid)
    except ValueError as exc:
        raise InvalidInput(f"{field_prefix}t_invalid: {exc}", field=f"{field_prefix}t_invalid") from exc


def _merge_metadata(stored: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(stored)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _changes_enrichment_input(current: MemoryRecord, props: dict[str, Any], body: MemoryUpdate) -> bool:
    if any(f in props and props[f] != getattr(current, f) for f in ("content", "tags", "timestamp")):
        return True
    metadata = body.metadata or {}
    return any(key in metadata for key in SESSION_KEYS)


def _batch_item(outcome: CreateOutcome, statuses: dict[str, str]) -> dict[str, Any]:
    if outcome.status == "created":
        return {"id": outcome.id, "memory_id": outcome.id, "status": "created", **statuses}
    if outcome.status == "duplicate":
        return {
            "id": outcome.existing_id,
            "memory_id": outcome.existing_id,
            "status": "duplicate",
            "requested_id": outcome.id,
        }
    return {
        "id": outcome.id,
        "memory_id": outcome.id,
        "status": "conflict",
        "error": f"a memory with id {outcome.id} already exists",
    }


def _stored_fields(record: MemoryRecord) -> dict[str, Any]:
    """What a store answers about the memory now stored: AutoMem's fields (memory_id, stored_at,
    type, confidence, metadata, timestamp, updated_at, last_accessed) and ours."""
    return {
        "status": "success",
        "memory_id": record.id,
        "stored_at": record.created_at,
        "type": record.type,
        "confidence": record.confidence,
        "tags": record.tags,
        "tag_prefixes": record.tag_prefixes,
        "importance": record.importance,
        "metadata": record.metadata,
        "timestamp": record.timestamp,
        "updated_at": record.updated_at,
        "last_accessed": record.last_accessed,
        "version": record.version,
    }


def _listing_item(doc: MemoryRecord) -> dict[str, Any]:
    """A listed memory: AutoMem's flat memory object, scored by its importance."""
    return {**memory_wire(doc), "score": doc.importance, "match_type": "tag"}


def _tree(rows: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """Nest `a`, `a:b`, `a:b:c` prefix counts into a tree of {name, tag, count, children}."""
    roots: list[dict[str, Any]] = []
    nodes: dict[str, dict[str, Any]] = {}
    for tag, count in sorted(rows):
        node = {"name": tag.rsplit(":", 1)[-1], "tag": tag, "count": count, "children": []}
        nodes[tag] = node
        parent = nodes.get(tag.rsplit(":", 1)[0]) if ":" in tag else None
        (parent["children"] if parent else roots).append(node)
    return roots
