"""The graph channel: memories linked to the best seeds join the ranking.

From the top seeds two kinds of links are followed, each bounded per seed and in total:

- typed edges between memories (authored relations, PRECEDED_BY sequence, SIMILAR_TO, ...): the
  neighbour inherits `seed relevance x link weight x edge strength x hub damping`;
- the seed's episode (RECALL_EPISODE_HOPS > 1): memories two or more turns away along its
  sequence chain, within its named sequence, inherit `seed relevance x 0.8 ^ turns`;
- shared entities (`expand_entities`): memories that mention an entity a seed mentions inherit
  `seed relevance x ENTITY_WEIGHT x specificity`, where an entity mentioned by many memories is
  weak evidence (specificity 1 / (1 + ln mentions)) and one mentioned by more than
  ENTITY_MAX_MENTIONS is not followed at all.

Link weights say how much of a seed's relevance a neighbour plausibly shares. A sequence
neighbour (the memory just before or after in the same conversation or project) shares the
seed's context and often completes it, as an answer completes a question, so it inherits most.
Authored links carry the client's intent, scaled by their strength. Similarity and discovered
links mostly repeat what the vector channel already found, so they inherit less.

Hub damping is 1 / (1 + ln(degree / HUB_DEGREE)) for memories with more than HUB_DEGREE links to
other memories, so a memory linked to everything cannot flood results while an ordinary memory
(a couple of sequence links and a few similar ones) is not penalised for being connected.
The neighbour is then ranked together with the seeds by the same final score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import Any, Protocol

from automem.recall.fusion import SEEDS, Candidate, CandidatePool, Days, reachable_floor
from automem.recall.query import RecallQuery
from automem.record import MemoryRecord
from automem.relations import DEFAULT_STRENGTH, MEMORY_LINKS
from automem.stores.recall_filter import RecallFilter

AUTHORED_WEIGHT = 0.7
LINK_WEIGHTS = {"PRECEDED_BY": 0.8, "SIMILAR_TO": 0.5, "DISCOVERED": 0.35}
HUB_DEGREE = 8
ENTITY_WEIGHT = 0.6
ENTITY_SEEDS = 5
ENTITY_MAX_MENTIONS = 50
ENTITY_FANOUT = 5
EPISODE_SEEDS = 5

Offers = dict[str, tuple[float, list[dict[str, Any]]]]  # neighbour -> (inherited relevance, paths)
Hydrate = Callable[[list[str]], dict[str, MemoryRecord]]  # ids -> memories read from the graph


class LinkReads(Protocol):
    """The graph reads expansion makes (`GraphStore` provides them)."""

    def edges_of(
        self, ids: Sequence[str], types: Sequence[str], limit_per: int
    ) -> dict[str, list[dict[str, Any]]]: ...

    def entities_of(self, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]: ...

    def memories_mentioning(
        self, keys: Sequence[str], flt: RecallFilter, limit_per: int
    ) -> dict[str, list[str]]: ...

    def chain_neighbours(
        self, ids: Sequence[str], min_hops: int, max_hops: int
    ) -> list[tuple[str, str, int]]: ...


def expand(
    graph: LinkReads,
    pool: CandidatePool,
    flt: RecallFilter,
    q: RecallQuery,
    hydrate: Hydrate,
    edge_cache: dict[str, list[dict[str, Any]]] | None = None,
    executor: Executor | None = None,
    entities: Mapping[str, float] | None = None,
    episode_hops: int = 1,
    when: Days | None = None,
    tags: frozenset[str] = frozenset(),
) -> int:
    """Admit the seeds' neighbours; the seeds' edges are left in `edge_cache` (the relations
    stage reuses them). With an `executor`, entity links and the episode chain are read while
    typed edges are. `episode_hops` > 1 follows the sequence chain that far (see _episode_offers)."""
    if q.expansion_limit == 0 or not len(pool):
        return 0
    seeds = sorted(pool.values(), key=lambda c: -c.components.get("relevance", 0.0))[:SEEDS]
    relevance_of = {s.id: s.components.get("relevance", 0.0) for s in seeds}
    floor = reachable_floor(pool, q.limit, bool(q.context_tags), q.sort, entities, when, tags)
    offers: Offers = {}
    entity_offers: Future[Offers] | None = None
    if q.expand_entities:
        entity_seeds = dict(list(relevance_of.items())[:ENTITY_SEEDS])
        entity_offers = _submit(executor, _entity_offers, graph, entity_seeds, flt)
    episode: Future[Offers] | None = None
    if q.expand_relations and episode_hops > 1:
        episode_seeds = dict(list(relevance_of.items())[:EPISODE_SEEDS])
        episode = _submit(executor, _episode_offers, graph, episode_seeds, episode_hops)
    if q.expand_relations and q.relation_limit > 0:
        edges = graph.edges_of(list(relevance_of), MEMORY_LINKS, q.relation_limit)
        if edge_cache is not None:
            edge_cache.update(edges)
            edge_cache.update({seed: [] for seed in relevance_of if seed not in edges})
        linked = _above(_edge_offers(relevance_of, edges, q.expand_min_strength), floor)
        _damp_hubs(linked, {e["id"]: e["degree"] for found in edges.values() for e in found})
        _merge(offers, linked)
    for found in (entity_offers, episode):
        if found is not None:
            _merge(offers, _above(found.result(), floor))
    return _admit(pool, _above(offers, floor), flt, q, hydrate)


def _submit(executor: Executor | None, fn: Callable[..., Offers], *args: Any) -> Future[Offers]:
    return executor.submit(fn, *args) if executor is not None else _done(fn(*args))


def _done(offers: Offers) -> Future[Offers]:
    future: Future[Offers] = Future()
    future.set_result(offers)
    return future


def _above(offers: Offers, floor: float) -> Offers:
    return {k: v for k, v in offers.items() if v[0] >= floor}


def _admit(
    pool: CandidatePool,
    offers: Offers,
    flt: RecallFilter,
    q: RecallQuery,
    hydrate: Hydrate,
) -> int:
    """Raise known candidates' graph evidence; add new ones that pass the filter, best first."""
    docs = hydrate([i for i in offers if i not in pool.by_id])
    added = 0
    for neighbour, (value, via) in sorted(offers.items(), key=lambda kv: -kv[1][0]):
        candidate: Candidate | None = pool.by_id.get(neighbour)
        if candidate is None:
            doc = docs.get(neighbour)
            if (
                doc is None
                or added >= q.expansion_limit
                or not flt.matches(doc)
                or float(doc.importance or 0.0) < q.expand_min_importance
            ):
                continue
            candidate = pool.get(neighbour)
            candidate.doc = doc
            added += 1
        if value > candidate.expanded:
            candidate.expanded = value
            candidate.expanded_from = sorted(via, key=lambda path: -float(path["score"]))
    return added


def _edge_offers(
    seeds_relevance: dict[str, float], edges: dict[str, list[dict[str, Any]]], min_strength: float
) -> Offers:
    offers: Offers = {}
    for seed_id, seed_edges in edges.items():
        for edge in seed_edges:
            raw_strength = edge.get("strength")
            strength = DEFAULT_STRENGTH if raw_strength is None else float(raw_strength)
            if strength < min_strength:
                continue
            weight = LINK_WEIGHTS.get(edge["type"], AUTHORED_WEIGHT)
            value = seeds_relevance.get(seed_id, 0.0) * weight * strength
            _offer(offers, edge["id"], value, {"id": seed_id, "type": edge["type"], "strength": strength})
    return offers


def _damp_hubs(offers: Offers, degrees: dict[str, int]) -> None:
    for neighbour, (value, via) in list(offers.items()):
        excess = max(1.0, degrees.get(neighbour, 1) / HUB_DEGREE)
        offers[neighbour] = (value / (1.0 + math.log(excess)), via)


def _entity_offers(graph: LinkReads, seeds_relevance: dict[str, float], flt: RecallFilter) -> Offers:
    entities = graph.entities_of(list(seeds_relevance))
    followed: dict[str, tuple[float, str, dict[str, Any]]] = {}  # key -> (value, seed, entity)
    for seed_id, mentioned in entities.items():
        for entity in mentioned:
            mentions = int(entity.get("mentions") or 0)
            if mentions < 2 or mentions > ENTITY_MAX_MENTIONS:
                continue  # nothing to reach, or too common to be evidence
            value = seeds_relevance[seed_id] * ENTITY_WEIGHT / (1.0 + math.log(mentions))
            if value > followed.get(entity["key"], (0.0,))[0]:
                followed[entity["key"]] = (value, seed_id, entity)
    if not followed:
        return {}
    offers: Offers = {}
    reached = graph.memories_mentioning(list(followed), flt, ENTITY_FANOUT)
    for key, memory_ids in reached.items():
        value, seed_id, entity = followed[key]
        via = {"id": seed_id, "type": "MENTIONS", "entity": entity.get("name"), "entity_key": key}
        for memory_id in memory_ids:
            _offer(offers, memory_id, value, via)
    return offers


def _episode_offers(graph: LinkReads, seeds_relevance: dict[str, float], hops: int) -> Offers:
    """Memories of a seed's episode two to `hops` turns away along its sequence chain (the
    direct neighbours come with the seed's other links). Each turn further from the seed is one
    more PRECEDED_BY step, so the inherited share is that link's weight once per step (0.8,
    0.64, 0.51): the same belief as for the next turn, applied again for every turn between."""
    offers: Offers = {}
    for seed_id, other, distance in graph.chain_neighbours(list(seeds_relevance), 2, hops):
        value = seeds_relevance.get(seed_id, 0.0) * LINK_WEIGHTS["PRECEDED_BY"] ** distance
        _offer(offers, other, value, {"id": seed_id, "type": "EPISODE", "hops": distance})
    return offers


def _offer(offers: Offers, neighbour: str, value: float, via: dict[str, Any]) -> None:
    best, paths = offers.get(neighbour, (0.0, []))
    offers[neighbour] = (max(best, value), [*paths, {**via, "score": round(value, 4)}])


def _merge(into: Offers, other: Offers) -> None:
    for neighbour, (value, paths) in other.items():
        best, known = into.get(neighbour, (0.0, []))
        into[neighbour] = (max(best, value), [*known, *paths])
