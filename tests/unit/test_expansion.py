"""The graph channel: which neighbours join, with how much of their seed's relevance."""

from __future__ import annotations

import itertools
import math

import pytest

from automem.recall.expansion import (
    AUTHORED_WEIGHT,
    ENTITY_MAX_MENTIONS,
    ENTITY_WEIGHT,
    HUB_DEGREE,
    LINK_WEIGHTS,
    expand,
)
from automem.recall.fusion import CandidatePool
from tests.unit.recall_doubles import TinyGraph, memory, query, scope


def seeded(graph: TinyGraph, seeds: dict[str, float]) -> CandidatePool:
    pool = CandidatePool()
    for memory_id, value in seeds.items():
        candidate = pool.get(memory_id)
        candidate.components["relevance"] = value
        candidate.doc = graph.memories[memory_id]
    return pool


def run(graph: TinyGraph, pool: CandidatePool, **fields: object) -> int:
    return expand(graph, pool, scope(), query(**fields), graph.hydrate, {})


def test_a_neighbour_inherits_seed_relevance_times_link_weight_and_strength() -> None:
    graph = TinyGraph().add(memory("s"), memory("next"), memory("auth"), memory("sim"))
    graph.link("next", "s", "PRECEDED_BY").link("s", "auth", "LEADS_TO", 0.5)
    graph.link("s", "sim", "SIMILAR_TO", 0.9)
    pool = seeded(graph, {"s": 0.8})
    assert run(graph, pool) == 3
    assert pool.by_id["next"].expanded == pytest.approx(0.8 * LINK_WEIGHTS["PRECEDED_BY"])
    assert pool.by_id["auth"].expanded == pytest.approx(0.8 * AUTHORED_WEIGHT * 0.5)
    assert pool.by_id["sim"].expanded == pytest.approx(0.8 * LINK_WEIGHTS["SIMILAR_TO"] * 0.9)
    via = {"id": "s", "type": "PRECEDED_BY", "strength": 1.0, "score": 0.64}
    assert pool.by_id["next"].expanded_from[0] == via


def test_a_hub_is_damped_and_weak_links_are_not_followed() -> None:
    graph = TinyGraph().add(memory("s"), memory("hub"), memory("weak"))
    graph.link("s", "hub", "RELATES_TO").link("s", "weak", "RELATES_TO", 0.2)
    for n in range(4 * HUB_DEGREE):
        graph.add(memory(f"leaf{n}")).link("hub", f"leaf{n}", "RELATES_TO")
    pool = seeded(graph, {"s": 1.0})
    run(graph, pool, expand_min_strength=0.3, relation_limit=10)
    degree = 4 * HUB_DEGREE + 1
    assert pool.by_id["hub"].expanded == pytest.approx(AUTHORED_WEIGHT / (1 + math.log(degree / HUB_DEGREE)))
    assert "weak" not in pool.by_id


def test_neighbours_outside_the_filter_or_below_min_importance_stay_out() -> None:
    graph = TinyGraph().add(memory("s"), memory("gone", state="deleted"), memory("other", tenant="t2"))
    graph.add(memory("dull", importance=0.1), memory("fine", importance=0.9))
    for other in ("gone", "other", "dull", "fine"):
        graph.link("s", other, "RELATES_TO")
    pool = seeded(graph, {"s": 1.0})
    assert run(graph, pool, expand_min_importance=0.5) == 1
    assert set(pool.by_id) == {"s", "fine"}


def test_the_expansion_limit_admits_the_best_offers_first() -> None:
    graph = TinyGraph().add(memory("s"))
    for n, strength in enumerate((0.3, 0.9, 0.6)):
        graph.add(memory(f"n{n}")).link("s", f"n{n}", "RELATES_TO", strength)
    pool = seeded(graph, {"s": 1.0})
    assert run(graph, pool, expansion_limit=2) == 2
    assert set(pool.by_id) == {"s", "n1", "n2"}


def test_a_known_candidate_gains_graph_evidence_without_being_added() -> None:
    graph = TinyGraph().add(memory("s"), memory("t"))
    graph.link("s", "t", "PRECEDED_BY")
    pool = seeded(graph, {"s": 1.0, "t": 0.1})
    assert run(graph, pool) == 0
    assert pool.by_id["t"].expanded == pytest.approx(LINK_WEIGHTS["PRECEDED_BY"])


def test_offers_that_cannot_reach_the_top_are_not_read() -> None:
    graph = TinyGraph().add(memory("a"), memory("b"), memory("faint"))
    graph.link("b", "faint", "DISCOVERED", 0.1)
    pool = seeded(graph, {"a": 0.9, "b": 0.85})
    graph.reads.clear()
    assert run(graph, pool, limit=1) == 0
    assert "faint" not in pool.by_id


def test_shared_entities_link_memories_weighted_by_how_specific_the_entity_is() -> None:
    graph = TinyGraph().add(memory("s"), memory("m1"), memory("m2"))
    graph.mentions["default:person:rachel"] = ["s", "m1"]
    common = [f"c{n}" for n in range(ENTITY_MAX_MENTIONS + 1)]
    graph.add(*(memory(i) for i in common))
    graph.mentions["default:person:me"] = ["s", "m2", *common]
    pool = seeded(graph, {"s": 1.0})
    run(graph, pool)
    assert pool.by_id["m1"].expanded == pytest.approx(ENTITY_WEIGHT / (1 + math.log(2)))
    assert pool.by_id["m1"].expanded_from[0]["type"] == "MENTIONS"
    assert "m2" not in pool.by_id  # an entity everybody mentions is no evidence


def test_nothing_is_expanded_when_turned_off() -> None:
    graph = TinyGraph().add(memory("s"), memory("t"))
    graph.link("s", "t", "PRECEDED_BY")
    graph.mentions["default:tool:x"] = ["s", "t"]
    pool = seeded(graph, {"s": 1.0})
    assert run(graph, pool, expand_relations=False, expand_entities=False) == 0
    assert run(graph, pool, expansion_limit=0) == 0
    assert set(pool.by_id) == {"s"}


def _chain(scope_name: str, *ids: str) -> TinyGraph:
    graph = TinyGraph().add(*(memory(i, seq_scope=scope_name) for i in ids))
    for earlier, later in itertools.pairwise(ids):
        graph.link(later, earlier, "PRECEDED_BY")
    return graph


def test_the_episode_brings_turns_further_along_the_chain_at_0_8_per_turn() -> None:
    graph = _chain("chat:7", "t0", "t1", "t2", "t3", "t4", "t5")
    pool = seeded(graph, {"t2": 0.5})
    expand(graph, pool, scope(), query(), graph.hydrate, {}, None, None, 3)
    weight = LINK_WEIGHTS["PRECEDED_BY"]
    expected = {"t1": 1, "t3": 1, "t0": 2, "t4": 2, "t5": 3}
    for memory_id, turns in expected.items():
        assert pool.by_id[memory_id].expanded == pytest.approx(0.5 * weight**turns), memory_id
    assert pool.by_id["t0"].expanded_from[0]["type"] == "EPISODE"


def test_one_hop_and_the_untagged_stream_keep_to_the_direct_neighbours() -> None:
    for hops, scope_name in ((1, "chat:7"), (3, "")):
        graph = _chain(scope_name, "t0", "t1", "t2", "t3", "t4")
        pool = seeded(graph, {"t2": 0.5})
        expand(graph, pool, scope(), query(), graph.hydrate, {}, None, None, hops)
        assert set(pool.by_id) == {"t1", "t2", "t3"}
