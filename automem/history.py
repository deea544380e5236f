"""The audit trail of a memory: what changed, by whom, why and when.

Every change to a memory writes a `:MemoryEvent` node in the same graph statement as the change
itself (the writes in `automem.stores.graph`), so the trail can neither miss an acknowledged change
nor record one that did not happen. The creation is not a node of its own: it is read from the
memory's `created_at`, `created_by` and `created_reason`, which keeps ingest as fast as before.

Events: created, modified (field by field, old and new values; metadata key by key), deleted,
recovered, enriched (tags and metadata the enrichment job changed), classified (an LLM type),
archived (consolidation's forgetting), entity_merged (an admin merged an entity the memory
mentions into another: its tags and metadata, old and new), enrichment_failed and
embedding_failed (a job skipped the memory after an error of its own; the reason says which)
and purged (a tombstone without content, written when the memory and the rest of its trail are
removed for good). Each carries
the actor (`api-key:<digest>`, `admin`, `anonymous`, `job:<name>`; never a token), an optional
reason, the time, and the memory's `version` and `rev` after the change. `rev` orders a
memory's events (every recorded change bumps it) and is the pagination cursor.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from automem.errors import InvalidInput, NotFound
from automem.record import MemoryRecord, metadata_object

if TYPE_CHECKING:
    from automem.stores.graph import GraphStore

EVENTS = (
    "created",
    "modified",
    "deleted",
    "recovered",
    "enriched",
    "classified",
    "archived",
    "entity_merged",
    "enrichment_failed",
    "embedding_failed",
    "purged",
)

# Memory fields a history diff reports; the rest is bookkeeping derived from them (hashes, tag
# prefixes, sequence scope, counters) or the event's own time (`updated_at`, unless a client set it).
TRACKED = (
    "content",
    "type",
    "confidence",
    "tags",
    "importance",
    "timestamp",
    "t_valid",
    "t_invalid",
    "last_accessed",
    "updated_at",
    "state",
    "summary",
)


@dataclass(frozen=True)
class Change:
    """Who makes a change and why; turns into the event map the graph writes."""

    actor: str
    reason: str | None = None

    def event(self, kind: str, at: str, changes: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "event": kind,
            "actor": self.actor,
            "reason": self.reason,
            "at": at,
            "changes": json.dumps(changes, ensure_ascii=False, default=str) if changes else None,
        }


SYSTEM = Change("system")
JOB_ENRICH = Change("job:enrich")
JOB_EMBED = Change("job:embed")
JOB_CLASSIFY = Change("job:classify")
JOB_CONSOLIDATE = Change("job:consolidate")
JOB_PURGE = Change("job:purge", "retention: deleted more than RETENTION_DAYS ago")


def api_key_actor(token: str) -> str:
    """A short digest names the key without revealing it."""
    return "api-key:" + hashlib.sha256(token.encode()).hexdigest()[:12]


def checked_reason(reason: str | None, limit: int, field: str = "reason") -> str | None:
    if reason is None:
        return None
    text = reason.strip()
    if len(text) > limit:
        raise InvalidInput(f"{field} is {len(text)} characters; the limit is {limit}", field=field)
    return text or None


def diff(before: MemoryRecord, props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{field: {old, new}} for the tracked fields the property patch `props` changes, and
    `metadata.<key>` for each metadata key added, changed or removed (the patch holds metadata as
    the JSON text the graph stores)."""
    out: dict[str, dict[str, Any]] = {}
    for name in TRACKED:
        if name in props and props[name] != getattr(before, name):
            out[name] = {"old": getattr(before, name), "new": props[name]}
    if "metadata" in props:
        old, new = before.metadata, metadata_object(props["metadata"])
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                out[f"metadata.{key}"] = {"old": old.get(key), "new": new.get(key)}
    if props.get("embedding_model") == "client":
        out["embedding"] = {"old": before.embedding_model, "new": "client"}
    return out


def public_event(row: dict[str, Any]) -> dict[str, Any]:
    changes = row.get("changes")
    return {
        "event": row.get("event"),
        "at": row.get("at"),
        "actor": row.get("actor"),
        "reason": row.get("reason"),
        "version": row.get("version"),
        "rev": row.get("rev"),
        "changes": json.loads(changes) if changes else {},
    }


def created_event(head: dict[str, Any]) -> dict[str, Any]:
    """The creation, read from the memory itself (rev 1, version 1)."""
    return {
        "event": "created",
        "at": head.get("created_at"),
        "actor": head.get("created_by"),
        "reason": head.get("created_reason"),
        "version": 1,
        "rev": 1,
        "changes": {},
    }


def memory_history(
    graph: GraphStore, memory_id: str, limit: int, before: int | None, tenant: str
) -> dict[str, Any]:
    """A memory's events, newest first; `before` (a rev) continues a page. Deleted memories keep
    their trail until purged; a purged memory shows its tombstone until retention prunes it."""
    head, rows = graph.memory_history(memory_id, before, limit + 1, tenant)
    if head is None and not rows:
        raise NotFound(f"memory {memory_id} not found", field="id")
    events = [public_event(r) for r in rows]
    if head is not None and (before is None or before > 1):
        events.append(created_event(head))
    page, more = events[:limit], len(events) > limit
    state = head.get("state") if head else "purged"
    return {
        "status": "success",
        "memory_id": memory_id,
        "state": state,
        "order": "newest_first",
        "count": len(page),
        "has_more": more,
        "next_before": page[-1]["rev"] if more and page else None,
        "events": page,
    }
