"""The recall answer: stage timings, what each stage did, and the response in AutoMem's shape.

AutoMem's always-present fields (`status`, `query`, `results`, `count`, `dedup_removed`, `sort`,
`state_mode`, `vector_search`, `tag_mode`, `tag_match`, `query_time_ms`) and the sections its
clients read when they apply (`expansion`, `entity_expansion`, `state_filter`, `score_filter`,
`time_window`, `queries`); each result carries AutoMem's `id`, `memory`, `score`, `final_score`,
`original_score`, `match_type`, `source`, `relations` and `score_components`, plus ours.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from automem.recall.fusion import Candidate, match_type
from automem.recall.query import RecallQuery
from automem.record import memory_wire
from automem.relations import SYSTEM
from automem.stores.recall_filter import RecallFilter

Relations = dict[str, list[dict[str, Any]]]  # memory id -> its edges (GraphStore.edges_of)


class Timer:
    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.started = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = round(self.ms.get(name, 0.0) + (time.perf_counter() - start) * 1000, 3)

    def total(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)


@dataclass
class Tally:
    """What the stages did, for the answer's AutoMem sections."""

    vector_matched: int = 0
    expanded: int = 0
    replaced: int = 0
    suppressed: int = 0
    dedup_removed: int = 0
    below_min_score: int = 0
    linked: list[dict[str, Any]] = field(default_factory=list)  # entities the query names
    named_time: dict[str, str] | None = None  # the time the query names (recall.reldates)
    named_tags: list[str] = field(default_factory=list)  # tags the query names (entity_link)


def response(
    q: RecallQuery,
    flt: RecallFilter,
    results: list[Candidate],
    relations: Relations,
    timer: Timer,
    degraded: list[str],
    listing: bool,
    tally: Tally,
    searched: bool,
) -> dict[str, Any]:
    items = [item(c, relations.get(c.id, [])) for c in results]
    timings = {**timer.ms, "total": timer.total()}
    echo = flt.echo()
    return {
        "status": "success",
        "query": q.query,
        "results": items,
        "count": len(items),
        "limit": q.limit,
        "offset": q.offset,
        "sort": q.sort,
        "mode": "listing" if listing else "search",
        "filters": echo,
        **echo,
        "min_score": q.min_score,
        "dedup_removed": tally.dedup_removed,
        "vector_search": {"enabled": searched, "matched": tally.vector_matched},
        **_sections(q, results, tally, listing),
        "degraded": degraded,
        "timings_ms": timings,
        "query_time_ms": timings["total"],
    }


def _sections(q: RecallQuery, results: list[Candidate], tally: Tally, listing: bool) -> dict[str, Any]:
    via_entity = sum(1 for c in results if any(p.get("type") == "MENTIONS" for p in c.expanded_from))
    return {
        "expansion": {
            "enabled": q.expand_relations and not listing,
            "seed_count": sum(1 for c in results if c.raw),
            "expanded_count": tally.expanded,
            "relation_limit": q.relation_limit,
            "expansion_limit": q.expansion_limit,
            "respect_tags": True,  # expanded memories obey the request's filter, always
        },
        "entity_expansion": {"enabled": q.expand_entities and not listing, "expanded_count": via_entity},
        "query_entities": tally.linked,
        "named_time": tally.named_time,
        "named_tags": tally.named_tags,
        "state_filter": {
            "current_only": q.state_mode == "current",
            "suppressed_count": tally.suppressed,
            "replacement_count": tally.replaced,
        },
        "score_filter": {
            "min_score": q.min_score,
            "adaptive_floor": False,
            "filtered_count": tally.below_min_score,
        },
    }


def item(candidate: Candidate, relations: list[dict[str, Any]]) -> dict[str, Any]:
    assert candidate.doc is not None
    out = {
        "id": candidate.id,
        "memory": memory_wire(candidate.doc),
        "score": candidate.score,
        "final_score": candidate.score,
        "original_score": max(candidate.raw.values(), default=candidate.expanded),
        "score_components": candidate.components,
        "channels": candidate.channels,
        "source": "qdrant" if candidate.raw else "graph",
        "relations": [relation(edge) for edge in relations],
        "match_type": match_type(candidate),
    }
    if candidate.replaces:
        out["replaces"] = candidate.replaces
        out["state_replaces"] = candidate.replaces  # AutoMem's name
    if candidate.expanded_from:
        out["expanded_from"] = candidate.expanded_from
    return out


def relation(edge: dict[str, Any]) -> dict[str, Any]:
    """An edge of a result and a summary of the memory at its other end."""
    return {
        "type": edge["type"],
        "direction": "outgoing" if edge["outgoing"] else "incoming",
        "strength": edge.get("strength"),
        "system": edge["type"] in SYSTEM,
        "memory": edge["other"],
    }


def merged(q: RecallQuery, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """AutoMem's multi-query answer: every query run alone, each memory once at its best score
    (`_query` says which query found it), cut to `limit`."""
    best: dict[str, dict[str, Any]] = {}
    for text, answer in zip(q.queries, answers, strict=True):
        for found in answer["results"]:
            if found["id"] not in best or found["score"] > best[found["id"]]["score"]:
                best[found["id"]] = {**found, "_query": text}
    results = sorted(best.values(), key=lambda r: -r["score"])[q.offset : q.offset + q.limit]
    total = sum(len(a["results"]) for a in answers)
    timings = {"total": round(sum(a["timings_ms"]["total"] for a in answers), 3)}
    first = answers[0]
    return {
        **first,
        "query": q.query,
        "queries": q.queries,
        "results": results,
        "count": len(results),
        "limit": q.limit,
        "offset": q.offset,
        "dedup_removed": sum(a["dedup_removed"] for a in answers) + total - len(best),
        "degraded": sorted({d for a in answers for d in a["degraded"]}),
        "timings_ms": timings,
        "query_time_ms": timings["total"],
    }
