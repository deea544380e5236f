"""Current-state resolution: superseded memories give way to the newest head of their chain."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from automem.recall.fusion import CandidatePool
from automem.recall.state import MAX_HOPS, head_of, resolve_current, successor_map
from tests.unit.recall_doubles import TinyGraph, memory, scope


def candidates(graph: TinyGraph, scores: dict[str, float]) -> CandidatePool:
    pool = CandidatePool()
    for memory_id, value in scores.items():
        candidate = pool.get(memory_id)
        candidate.components["relevance"] = value
        candidate.raw = {"vector": value}
        candidate.doc = graph.memories[memory_id]
    return pool


def test_a_chain_resolves_to_its_newest_head() -> None:
    successors = {"a": ["b"], "b": ["c"]}
    assert head_of("a", successors) == "c" and head_of("c", successors) == "c"


def test_a_fork_follows_the_newest_edge_and_a_cycle_ends_the_walk() -> None:
    assert head_of("a", {"a": ["new", "old"]}) == "new"
    assert head_of("a", {"a": ["b"], "b": ["a"]}) == "b"


@given(st.dictionaries(st.sampled_from("abcdef"), st.lists(st.sampled_from("abcdef"), max_size=3)))
def test_any_successor_graph_resolves_to_a_reachable_memory(successors: dict[str, list[str]]) -> None:
    for start in "abcdef":
        head = head_of(start, successors)
        reachable, frontier = {start}, [start]
        while frontier:
            for nxt in successors.get(frontier.pop(), []):
                if nxt not in reachable:
                    reachable.add(nxt)
                    frontier.append(nxt)
        assert head in reachable


def test_successor_map_walks_chains_in_hops() -> None:
    graph = TinyGraph().add(*(memory(i) for i in "abcd"))
    graph.link("a", "b", "EVOLVED_INTO", at="1").link("b", "c", "INVALIDATED_BY", at="2")
    graph.link("d", "a", "RELATES_TO")  # not a supersession
    assert successor_map(graph, ["a"]) == {"a": ["b"], "b": ["c"]}
    long = TinyGraph().add(*(memory(f"m{n}") for n in range(MAX_HOPS + 5)))
    for n in range(MAX_HOPS + 4):
        long.link(f"m{n}", f"m{n + 1}", "EVOLVED_INTO")
    assert len(successor_map(long, ["m0"])) == MAX_HOPS


def test_the_head_takes_the_superseded_memorys_place_and_score() -> None:
    graph = TinyGraph().add(memory("old"), memory("new"), memory("other"))
    graph.link("old", "new", "EVOLVED_INTO")
    pool = candidates(graph, {"old": 0.9, "other": 0.5})
    resolve_current(graph, pool, scope(), graph.hydrate)
    assert set(pool.by_id) == {"new", "other"}
    head = pool.by_id["new"]
    assert head.replaces == "old" and head.components["relevance"] == 0.9 and head.raw == {"vector": 0.9}


def test_a_head_already_found_keeps_its_place_and_gains_the_evidence() -> None:
    graph = TinyGraph().add(memory("old"), memory("new"))
    graph.link("old", "new", "INVALIDATED_BY")
    pool = candidates(graph, {"old": 0.9, "new": 0.2})
    resolve_current(graph, pool, scope(), graph.hydrate)
    assert set(pool.by_id) == {"new"} and pool.by_id["new"].expanded == 0.9


def test_a_head_outside_the_filter_leaves_nothing_behind() -> None:
    graph = TinyGraph().add(memory("old", tags=["p"]), memory("new", tags=["q"]))
    graph.link("old", "new", "EVOLVED_INTO")
    pool = candidates(graph, {"old": 0.9})
    resolve_current(graph, pool, scope(tags=("p",)), graph.hydrate)
    assert len(pool) == 0


def test_deleted_successors_are_not_followed() -> None:
    graph = TinyGraph().add(memory("old"), memory("gone", state="deleted"))
    graph.link("old", "gone", "EVOLVED_INTO")
    pool = candidates(graph, {"old": 0.9})
    resolve_current(graph, pool, scope(), graph.hydrate)
    assert set(pool.by_id) == {"old"}
