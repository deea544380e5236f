"""The memory record: one type for a stored memory, from the graph store to the wire.

The graph store returns `MemoryRecord`s; the memory service, recall and its fusion candidates,
the vector sync, the jobs and consolidation all pass them around, and `memory_wire` is the one
serializer of the client-facing shape (`automem.schemas.Memory` documents it; a test validates
what it produces against the OpenAPI schema of every route that returns memories).

A record mirrors the node's properties under their stored names, with two conversions made once,
on read: `metadata` is the parsed object (the graph keeps JSON text), and `tag_prefixes` is
derived from `tags` (FalkorDB returns array properties slowly, so it is not read). Reads that
project fewer properties (recall's view, consolidation's pages) leave the rest at their
defaults; each such read says which fields it fills.

Writes are not records: a write is a property patch (`dict` of stored names to values), which
the graph store applies with `SET m += $props`; `MemoryRecord.with_props` applies a patch to a
record in memory, as the graph would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from functools import lru_cache
from typing import Any

from automem.jsontext import loads_exact
from automem.tags import tag_prefixes

DEFAULT_TENANT = "default"

# The stored properties a full read returns, in projection order. The embedding is left out
# (large) unless asked for; `tag_prefixes` is derived from `tags`.
MEMORY_FIELDS = (
    "id",
    "tenant",
    "content",
    "content_hash",
    "type",
    "confidence",
    "tags",
    "importance",
    "metadata",
    "timestamp",
    "created_at",
    "updated_at",
    "last_accessed",
    "t_valid",
    "t_invalid",
    "state",
    "deleted_at",
    "version",
    "rev",
    "embedding_hash",
    "embedding_model",
    "embedding_context",
    "enriched",
    "enriched_at",
    "enrichment_version",
    "summary",
    "classification",
    "seq_scope",
)


@dataclass(slots=True)
class MemoryRecord:
    """A memory as the graph holds it (see the module doc for partial reads)."""

    id: str
    tenant: str = DEFAULT_TENANT
    content: str = ""
    content_hash: str | None = None
    type: str | None = None
    confidence: float | None = None
    tags: list[str] = field(default_factory=list)
    importance: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    timestamp: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    last_accessed: str | None = None
    t_valid: str | None = None
    t_invalid: str | None = None
    state: str = "active"
    deleted_at: str | None = None
    version: int = 1
    rev: int = 1
    embedding_hash: str | None = None
    embedding_model: str | None = None
    # The memory whose words were embedded after this one's (retrieval context); "" for none.
    embedding_context: str | None = None
    enriched: bool = False
    enriched_at: str | None = None
    enrichment_version: int = 0
    summary: str | None = None
    classification: str | None = None
    seq_scope: str | None = None
    # Read by the passes that need them (consolidation, access bookkeeping).
    access_count: int = 0
    relevance_score: float | None = None
    # Only when a read asks for it (the vector sync, consolidation's similarity passes).
    embedding: list[float] | None = None
    # Whether the stored embedding is of the current content (derived; recall's view reads it).
    embedded: bool = False
    # Outgoing supersession edges (derived; recall's view reads it, None where not read): a
    # memory with none is nobody's predecessor, so state resolution need not look.
    superseded_out: int | None = None
    tag_prefixes: list[str] = field(default_factory=list)

    @classmethod
    def from_values(cls, names: Sequence[str], values: Sequence[Any]) -> MemoryRecord:
        """A record from a projection: `names` are stored property names, `values` a result row.
        Absent (null) properties keep the field's default. (Recall reads dozens per request, so
        this is kept to two passes over the row.)"""
        given = {name: value for name, value in zip(names, values, strict=False) if value is not None}
        if "metadata" in given:
            given["metadata"] = metadata_object(given["metadata"])
        tags = given.get("tags")
        if tags:
            given["tag_prefixes"] = prefixes_of(tags)
        if "embedded" not in given and "embedding_hash" in given:
            given["embedded"] = given["embedding_hash"] == given.get("content_hash")
        return cls(**given)

    @classmethod
    def from_props(cls, props: Mapping[str, Any], embedding: Sequence[float] | None = None) -> MemoryRecord:
        """A record from stored properties (a node just written, an archive's memory)."""
        values = {k: v for k, v in props.items() if k in _FIELD_NAMES and v is not None}
        values["metadata"] = metadata_object(props.get("metadata"))
        values["tags"] = list(props.get("tags") or [])
        values["tag_prefixes"] = prefixes_of(values["tags"])
        if "embedded" not in values:
            hashed = values.get("embedding_hash")
            values["embedded"] = hashed is not None and hashed == values.get("content_hash")
        if embedding is not None:
            values["embedding"] = list(embedding)
        return cls(**values)

    def with_props(self, props: Mapping[str, Any]) -> MemoryRecord:
        """This record with a property patch applied, as the graph applies it (`SET m += props`:
        a None value removes the property, which reads back as the field's default)."""
        changes: dict[str, Any] = {}
        for name, value in props.items():
            if name not in _FIELD_NAMES:
                continue
            if name == "metadata":
                changes[name] = metadata_object(value)
            elif value is None:
                changes[name] = _DEFAULTS[name]()
            else:
                changes[name] = value
        if "tags" in changes:
            changes["tag_prefixes"] = prefixes_of(changes["tags"])
        return replace(self, **changes)


@lru_cache(maxsize=4096)
def _prefixes(tags: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(tag_prefixes(tags))


def prefixes_of(tags: Sequence[str]) -> list[str]:
    """`tag_prefixes(tags)`, remembered per tag list: a store repeats a few tag lists often."""
    return list(_prefixes(tuple(tags)))


def metadata_object(raw: Any) -> dict[str, Any]:
    """Metadata as an object: JSON text in the graph, an object anywhere else."""
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        value = loads_exact(raw)  # a third of json's time; a recall parses dozens
    except (TypeError, ValueError):
        value = _json_loads_lenient(raw)  # what orjson refuses (NaN, Infinity, 1e400)
    return value if isinstance(value, dict) else {}


def _json_loads_lenient(raw: Any) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return None


def enrichment_dates(metadata: Any) -> list[dict[str, Any]]:
    """The relative dates enrichment resolved in a memory's words (`metadata.enrichment.dates`,
    `{text, start, end, label}`; `metadata` as an object or its JSON)."""
    run = metadata_object(metadata).get("enrichment")
    dates = run.get("dates") if isinstance(run, dict) else None
    return [d for d in dates if isinstance(d, dict)] if isinstance(dates, list) else []


def enrichment_categories(metadata: Any) -> list[str]:
    """The category words enrichment found for a memory's nouns (`metadata.enrichment.categories`:
    "stringed instrument" for a violin; `metadata` as an object or its JSON)."""
    run = metadata_object(metadata).get("enrichment")
    words = run.get("categories") if isinstance(run, dict) else None
    return [w for w in words if isinstance(w, str)] if isinstance(words, list) else []


def memory_wire(record: MemoryRecord) -> dict[str, Any]:
    """The client-facing shape of a stored memory (`automem.schemas.Memory`): AutoMem's fields
    (`id`, `memory_id`, `content`, `tags`, `importance`, `metadata`, `timestamp`, ...) at the
    top level, plus ours (`version`, `state`, `embedding_status`, `enriched`)."""
    return {
        "id": record.id,
        "memory_id": record.id,
        "content": record.content,
        "type": record.type,
        "confidence": record.confidence,
        "tags": record.tags,
        "tag_prefixes": record.tag_prefixes,
        "importance": record.importance,
        "metadata": record.metadata,
        "timestamp": record.timestamp,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "last_accessed": record.last_accessed,
        "t_valid": record.t_valid,
        "t_invalid": record.t_invalid,
        "version": record.version,
        "state": record.state,
        "embedding_status": "stored" if record.embedded else "pending",
        "enriched": record.enriched,
    }


def _default_factory(spec: Field[Any]) -> Callable[[], Any]:
    if spec.default_factory is not MISSING:
        return spec.default_factory
    return lambda: spec.default


_FIELD_NAMES = frozenset(f.name for f in fields(MemoryRecord))
_DEFAULTS = {f.name: _default_factory(f) for f in fields(MemoryRecord)}
