"""The graph visualisation API (GET /graph/snapshot, /graph/neighbors/<id>, /graph/stats,
/graph/types, /graph/relations), in AutoMem's wire shapes plus fields of ours.

Bounded at any store size. A snapshot returns at most `GRAPH_SNAPSHOT_MAX_NODES` memories
(`limit=0`, AutoMem's "everything", and larger limits are capped to it): the most important
matching memories, then the newest, then by id (AutoMem's order, so an AutoMem viewer sees the
same graph whenever the store fits), and the edges among them, at most
`GRAPH_SNAPSHOT_MAX_EDGES`. The response says so in `stats.sampled` and `meta.sampling`.
Neighbourhoods read at most 100 paths (AutoMem's cap), nearest first. Semantic neighbours come
from `automem.similarity`: the graph's HNSW vector index where the graph keeps one (it answers
in every process), else the vector store (server mode, which every process reaches).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from automem.classify import MEMORY_TYPES, canonical_type
from automem.errors import NotFound
from automem.models import IsoTime
from automem.record import MemoryRecord, memory_wire
from automem.relations import ALL_TYPES, MEMORY_LINKS, PUBLIC
from automem.settings import Settings
from automem.similarity import SimilarMemories
from automem.stores.graph import GraphStore
from automem.stores.graph_views import SnapshotFilter
from automem.tags import normalize_tags, split_tag_input
from automem.timeutil import format_utc, utc_now

# Colours a viewer draws memory types and relations in (distinguishable on dark and light).
DEFAULT_TYPE_COLOR = "#94A3B8"
TYPE_COLORS: dict[str, str] = {
    "Decision": "#4F7FE8",
    "Pattern": "#16A673",
    "Preference": "#9061F0",
    "Style": "#E0508F",
    "Habit": "#E3A21A",
    "Insight": "#F0742E",
    "Context": "#7A8496",
    "Memory": DEFAULT_TYPE_COLOR,
}
DEFAULT_RELATION_COLOR = "#A0AEC0"
RELATION_COLORS: dict[str, str] = {
    "RELATES_TO": "#8FA3BF",
    "LEADS_TO": "#3FA7D6",
    "OCCURRED_BEFORE": "#6C8EAD",
    "PREFERS_OVER": "#A86ADB",
    "EXEMPLIFIES": "#2BB58A",
    "CONTRADICTS": "#E5484D",
    "REINFORCES": "#46B950",
    "INVALIDATED_BY": "#D9633B",
    "EVOLVED_INTO": "#1FB5B0",
    "DERIVED_FROM": "#C9A227",
    "PART_OF": "#5B6BD9",
    "SIMILAR_TO": "#D68FD6",
    "PRECEDED_BY": "#9AA5B1",
    "DISCOVERED": "#F2B134",
    "MENTIONS": "#B0B7C3",
}
assert set(RELATION_COLORS) == set(ALL_TYPES), "every relation type needs a colour"

NEIGHBOUR_ROWS = 100  # paths a neighbourhood reads at most (AutoMem's LIMIT 100)
MAX_DEPTH = 3
MAX_SEMANTIC = 20
# /graph/stats importance bands (AutoMem's): high >= 0.8 > medium >= 0.5 > low.
HIGH_IMPORTANCE, MEDIUM_IMPORTANCE = 0.8, 0.5
ACTIVITY_DAYS = 7


class SnapshotQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    limit: int = Field(
        500,
        ge=0,
        description="nodes to return; 0 (AutoMem's 'all') and values above GRAPH_SNAPSHOT_MAX_NODES "
        "return that many at most",
    )
    min_importance: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    types: list[str] = Field([], description="memory types: a comma list, or the parameter repeated")
    since: IsoTime = Field(None, description="only memories whose timestamp is at or after this")

    @field_validator("types", mode="before")
    @classmethod
    def _types(cls, value: Any) -> list[str]:
        return memory_types(value)


class NeighborsQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    depth: int = Field(1, description="hops, 1 to 3 (other values are clamped, as AutoMem)")
    include_semantic: bool = True
    semantic_limit: int = Field(5, description="0 to 20 (other values are clamped, as AutoMem)")

    @field_validator("depth")
    @classmethod
    def _depth(cls, value: int) -> int:
        return min(max(value, 1), MAX_DEPTH)

    @field_validator("semantic_limit")
    @classmethod
    def _semantic(cls, value: int) -> int:
        return min(max(value, 0), MAX_SEMANTIC)


def memory_types(value: Any) -> list[str]:
    """Canonical memory types from a comma list or an array; an unknown name is an error."""
    if value is None or value == "":
        return []
    if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise ValueError("types must be a comma-separated string or an array of strings")
    out = []
    for name in normalize_tags(split_tag_input(value if isinstance(value, str) else ",".join(value))):
        canonical = canonical_type(name)
        if canonical is None:
            raise ValueError(f"unknown type {name!r}; use one of {', '.join(MEMORY_TYPES)}")
        out.append(canonical)
    return out


# --- nodes and edges as a viewer draws them ---------------------------------------------------
def visual(importance: float | None, confidence: float | None, mtype: str | None) -> dict[str, Any]:
    """Colour by type, radius 0.5 + 1.5 x importance, opacity 0.4 + 0.6 x confidence (AutoMem's,
    with its defaults for a missing importance, 0.5, and confidence, 0.8)."""
    i = 0.5 if importance is None else float(importance)
    c = 0.8 if confidence is None else float(confidence)
    return {
        "color": TYPE_COLORS.get(mtype or "", DEFAULT_TYPE_COLOR),
        "radius": round(0.5 + 1.5 * i, 4),
        "opacity": round(0.4 + 0.6 * c, 4),
    }


def graph_node(doc: MemoryRecord) -> dict[str, Any]:
    """A memory as a snapshot node: AutoMem's fields and the visual ones."""
    return {
        "id": doc.id,
        "content": doc.content,
        "type": doc.type,
        "importance": doc.importance,
        "confidence": doc.confidence,
        "tags": doc.tags,
        "timestamp": doc.timestamp,
        "updated_at": doc.updated_at,
        "metadata": doc.metadata,
        **visual(doc.importance, doc.confidence, doc.type),
    }


def graph_edge(
    source: str, target: str, rel: str, strength: float | None, props: dict[str, Any] | None = None
) -> dict[str, Any]:
    edge = {
        "id": f"{source}-{rel}-{target}",
        "source": source,
        "target": target,
        "type": rel,
        "strength": 0.5 if strength is None else float(strength),
        "color": RELATION_COLORS.get(rel, DEFAULT_RELATION_COLOR),
    }
    if props is not None:
        edge["properties"] = props
    return edge


def _meta(settings: Settings, started: float, **extra: Any) -> dict[str, Any]:
    return {
        "type_colors": TYPE_COLORS,
        "relation_colors": RELATION_COLORS,
        "query_time_ms": round((time.perf_counter() - started) * 1000, 2),
        "archive_threshold": settings.consolidation_archive_threshold,
        **extra,
    }


def _ordered(graph: GraphStore, ids: Sequence[str]) -> list[MemoryRecord]:
    """The memories of `ids`, in that order (the graph returns them in none)."""
    docs = {d.id: d for d in graph.get_memories(list(ids))}
    return [docs[i] for i in ids if i in docs]


# --- GET /graph/snapshot ----------------------------------------------------------------------
def snapshot(graph: GraphStore, settings: Settings, tenant: str, query: SnapshotQuery) -> dict[str, Any]:
    started = time.perf_counter()
    cap = settings.graph_snapshot_max_nodes
    limit = cap if query.limit == 0 else min(query.limit, cap)
    flt = SnapshotFilter(tenant, query.min_importance, tuple(query.types), query.since)
    total, matching, total_edges = graph.snapshot_totals(flt)
    nodes = [graph_node(d) for d in _ordered(graph, graph.snapshot_ids(flt, limit))]
    max_edges = settings.graph_snapshot_max_edges
    rows = graph.edges_among([n["id"] for n in nodes], MEMORY_LINKS, max_edges + 1)
    edges = [graph_edge(a, b, t, _strength(p), p) for a, b, t, p in rows[:max_edges]]
    sampling = {
        "method": "importance",
        "order": ["importance desc", "timestamp desc", "id asc"],
        "description": "the most important matching memories (then the newest), at most the cap",
        "requested_limit": query.limit,
        "limit": limit,
        "cap": cap,
        "max_edges": max_edges,
        "edges_truncated": len(rows) > max_edges,
    }
    return {
        "status": "success",
        "nodes": nodes,
        "edges": edges,
        "stats": {
            "total_nodes": total,
            "total_edges": total_edges,
            "matching_nodes": matching,
            "returned_nodes": len(nodes),
            "returned_edges": len(edges),
            "sampled": len(nodes) < matching,
            "sample_ratio": round(len(nodes) / max(matching, 1), 4),
        },
        "meta": _meta(settings, started, sampling=sampling, filters=_echo(query)),
    }


def _strength(props: dict[str, Any]) -> float | None:
    """An edge's weight: `strength`, else a similarity link's `score` (AutoMem: strength or 0.5)."""
    for name in ("strength", "score"):
        value = props.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _echo(query: SnapshotQuery) -> dict[str, Any]:
    return {"min_importance": query.min_importance, "types": query.types, "since": query.since}


# --- GET /graph/neighbors/<id> ----------------------------------------------------------------
def neighbors(
    graph: GraphStore,
    similar: SimilarMemories,
    settings: Settings,
    tenant: str,
    memory_id: str,
    query: NeighborsQuery,
) -> dict[str, Any]:
    started = time.perf_counter()
    center = graph.get_memory(memory_id)
    if center is None or center.tenant != tenant:
        raise NotFound(f"memory {memory_id} not found", field="id")
    hops, edges, truncated = _walk(graph, tenant, memory_id, query.depth)
    ids = list(hops)
    graph_neighbours = [{**_neighbour(d), "hops": hops[d.id]} for d in _ordered(graph, ids)]
    semantic = _semantic(graph, similar, center, set(ids), query) if query.include_semantic else []
    meta = {
        "depth": query.depth,
        "include_semantic": query.include_semantic,
        "semantic_limit": query.semantic_limit,
        "semantic_source": similar.source,
        "center_embedded": center.embedded,
        "row_limit": NEIGHBOUR_ROWS,
        "truncated": truncated,
    }
    return {
        "status": "success",
        "center": {**memory_wire(center), **visual(center.importance, center.confidence, center.type)},
        "graph_neighbors": graph_neighbours,
        "semantic_neighbors": semantic,
        "edges": list(edges.values()),
        "meta": _meta(settings, started, **meta),
    }


def _walk(
    graph: GraphStore, tenant: str, memory_id: str, depth: int
) -> tuple[dict[str, int], dict[str, dict[str, Any]], bool]:
    """(neighbour id -> hops, edges by id, whether the row cap cut the walk): paths of one
    length at a time, nearest first, at most NEIGHBOUR_ROWS paths in all."""
    hops: dict[str, int] = {}
    edges: dict[str, dict[str, Any]] = {}
    budget = NEIGHBOUR_ROWS
    for length in range(1, depth + 1):
        paths = graph.neighbour_paths(memory_id, tenant, MEMORY_LINKS, length, budget)
        budget -= len(paths)
        for far, links in paths:
            hops.setdefault(far, length)
            for source, target, rel, strength in links:
                edge = graph_edge(source, target, rel, strength)
                edges.setdefault(edge["id"], edge)
        if budget <= 0:
            return hops, edges, True  # the cap was reached: there may be more
    return hops, edges, False


def _neighbour(doc: MemoryRecord) -> dict[str, Any]:
    """A neighbour as AutoMem lists it: a snapshot node without `updated_at` and `metadata`."""
    node = graph_node(doc)
    del node["updated_at"], node["metadata"]
    return node


def _semantic(
    graph: GraphStore, similar: SimilarMemories, center: MemoryRecord, seen: set[str], query: NeighborsQuery
) -> list[dict[str, Any]]:
    """The nearest memories by embedding, graph neighbours left out (AutoMem's rule), best first."""
    if query.semantic_limit == 0:
        return []
    hits = similar.one(center.id, query.semantic_limit + len(seen), -1.0)
    hits = [(i, s) for i, s in hits if i not in seen][: query.semantic_limit]
    docs = {d.id: d for d in graph.get_memories([i for i, _ in hits])}
    return [{**_neighbour(docs[i]), "similarity": round(s, 4)} for i, s in hits if i in docs]


# --- GET /graph/stats, /graph/types, /graph/relations -----------------------------------------
def stats(graph: GraphStore, settings: Settings, tenant: str) -> dict[str, Any]:
    started = time.perf_counter()
    by_type = {t: n for t, n, _, _ in graph.type_stats(tenant)}
    by_relationship = graph.relationship_counts(tenant)
    return {
        "status": "success",
        "totals": {"nodes": sum(by_type.values()), "edges": sum(by_relationship.values())},
        "by_type": by_type,
        "by_relationship": by_relationship,
        "importance_distribution": graph.importance_distribution(tenant, HIGH_IMPORTANCE, MEDIUM_IMPORTANCE),
        "recent_activity": _recent_activity(graph, tenant),
        "meta": _meta(settings, started, activity_days=ACTIVITY_DAYS, timezone="UTC"),
    }


def _recent_activity(graph: GraphStore, tenant: str) -> list[dict[str, Any]]:
    """Memories per UTC day of event time for today and the 6 days before, newest first, days
    without memories included."""
    today = utc_now().date()
    days = [today - timedelta(days=n) for n in range(ACTIVITY_DAYS)]
    start = format_utc(datetime.combine(days[-1], datetime.min.time(), UTC))
    counts = graph.daily_counts(tenant, start)
    return [{"date": d.isoformat(), "count": counts.get(d.isoformat(), 0)} for d in days]


def types() -> dict[str, Any]:
    return {"status": "success", "types": list(MEMORY_TYPES), "colors": TYPE_COLORS}


def relations() -> dict[str, Any]:
    colors = {t: RELATION_COLORS[t] for t in PUBLIC}
    return {"status": "success", "relations": sorted(PUBLIC), "colors": colors}
