"""The graph channel: memories linked to the best seeds join the ranking.

From the top seeds, edges to other memories are followed (bounded per seed and in total). A
neighbour's relevance is the seed's relevance times the edge strength, a per-type weight and a
hub damping of 1 / (1 + ln(degree)), so a memory linked to everything cannot flood results.
The neighbour is then ranked together with the seeds by the same final score.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from automem.recall.filters import RecallFilter
from automem.recall.fusion import CandidatePool
from automem.recall.query import RecallQuery
from automem.relations import DEFAULT_STRENGTH, MEMORY_LINKS
from automem.stores.graph import GraphStore

SEEDS = 10
DECAY = 0.7
# Authored edges carry intent; system edges (similarity, sequence) are weaker evidence.
TYPE_WEIGHTS = {"SIMILAR_TO": 0.6, "PRECEDED_BY": 0.6, "DISCOVERED": 0.5}


def expand(
    graph: GraphStore,
    pool: CandidatePool,
    flt: RecallFilter,
    q: RecallQuery,
    hydrate: Callable[[list[str]], dict[str, dict[str, Any]]],
) -> int:
    if not q.expand_relations or q.relation_limit == 0 or q.expansion_limit == 0 or not len(pool):
        return 0
    seeds = sorted(pool.values(), key=lambda c: -c.components.get("relevance", 0.0))[:SEEDS]
    edges = graph.edges_of([s.id for s in seeds], MEMORY_LINKS, q.relation_limit)
    offers = _offers(
        seeds_relevance={s.id: s.components.get("relevance", 0.0) for s in seeds},
        edges=edges,
        min_strength=q.expand_min_strength,
    )
    if not offers:
        return 0
    degrees = graph.degrees(list(offers))
    new_ids = [i for i in offers if i not in pool.by_id]
    docs = hydrate(new_ids)
    added = 0
    for neighbour, (value, via) in sorted(offers.items(), key=lambda kv: -kv[1][0]):
        damped = value / (1.0 + math.log(max(1, degrees.get(neighbour, 1))))
        if neighbour in pool.by_id:
            candidate = pool.by_id[neighbour]
        else:
            doc = docs.get(neighbour)
            if (
                doc is None
                or not flt.matches(doc)
                or added >= q.expansion_limit
                or float(doc.get("importance") or 0.0) < q.expand_min_importance
            ):
                continue
            candidate = pool.get(neighbour)
            candidate.doc = doc
            added += 1
        if damped > candidate.expanded:
            candidate.expanded = damped
            candidate.expanded_from = via
    return added


def _offers(
    seeds_relevance: dict[str, float], edges: dict[str, list[dict[str, Any]]], min_strength: float
) -> dict[str, tuple[float, list[dict[str, Any]]]]:
    """neighbour id -> (best inherited relevance, the edges that reached it)."""
    offers: dict[str, tuple[float, list[dict[str, Any]]]] = {}
    for seed_id, seed_edges in edges.items():
        for edge in seed_edges:
            raw_strength = edge.get("strength")
            strength = DEFAULT_STRENGTH if raw_strength is None else float(raw_strength)
            if strength < min_strength:
                continue
            value = seeds_relevance.get(seed_id, 0.0) * DECAY * strength * TYPE_WEIGHTS.get(edge["type"], 1.0)
            via = {"id": seed_id, "type": edge["type"], "strength": strength}
            best, paths = offers.get(edge["id"], (0.0, []))
            offers[edge["id"]] = (max(best, value), [*paths, via])
    return offers
