"""Current-state resolution: a superseded memory gives way to the newest head of its chain.

`(old)-[:INVALIDATED_BY|EVOLVED_INTO]->(new)` means old is replaced by new. Chains are followed
to their head (A→B→C surfaces C), newest edge first at forks, with a visited set so a cycle
ends the walk instead of looping. The head takes the superseded memory's place and score if it
passes the request's filter; otherwise the superseded memory simply disappears.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from automem.recall.fusion import Candidate, CandidatePool
from automem.record import MemoryRecord
from automem.relations import SUPERSEDING
from automem.stores.recall_filter import RecallFilter

MAX_HOPS = 10


class SupersessionReads(Protocol):
    """The graph read state resolution makes (`GraphStore` provides it)."""

    def supersession_edges(self, ids: Sequence[str], types: Sequence[str]) -> list[tuple[str, str, str]]: ...


def successor_map(graph: SupersessionReads, ids: list[str]) -> dict[str, list[str]]:
    """old id -> new ids (newest edge first), for every chain reachable from `ids`."""
    successors: dict[str, list[str]] = {}
    frontier, seen = list(ids), set(ids)
    for _ in range(MAX_HOPS):
        if not frontier:
            break
        edges = graph.supersession_edges(frontier, SUPERSEDING)
        frontier = []
        for old, new, _type in edges:
            successors.setdefault(old, []).append(new)
            if new not in seen:
                seen.add(new)
                frontier.append(new)
    return successors


def head_of(memory_id: str, successors: dict[str, list[str]]) -> str:
    current, visited = memory_id, {memory_id}
    for _ in range(MAX_HOPS):
        following = next((n for n in successors.get(current, []) if n not in visited), None)
        if following is None:
            break
        visited.add(following)
        current = following
    return current


def resolve_current(
    graph: SupersessionReads,
    pool: CandidatePool,
    flt: RecallFilter,
    hydrate: Callable[[list[str]], dict[str, MemoryRecord]],
) -> tuple[int, int]:
    """Replace superseded candidates by their heads; (heads that took a place, superseded
    candidates dropped without one: the head was already a candidate, or outside the filter)."""
    # A memory read with its supersession degree and none outgoing is no one's predecessor
    # (recall's view reads the degree): only the rest are looked up, usually none at all.
    maybe = [c.id for c in pool.values() if c.doc is None or c.doc.superseded_out != 0]
    successors = successor_map(graph, maybe)
    heads = {mid: head_of(mid, successors) for mid in list(pool.by_id) if mid in successors}
    replaced = {mid: head for mid, head in heads.items() if head != mid}
    if not replaced:
        return 0, 0
    docs = hydrate([h for h in set(replaced.values()) if h not in pool.by_id])
    taken = dropped = 0
    for old_id, head_id in replaced.items():
        old = pool.by_id.pop(old_id)
        existing = pool.by_id.get(head_id)
        if existing is not None:
            existing.expanded = max(existing.expanded, old.components.get("relevance", 0.0), old.expanded)
            dropped += 1
            continue
        doc = docs.get(head_id)
        if doc is None or not flt.matches(doc):
            dropped += 1
            continue
        taken += 1
        pool.by_id[head_id] = Candidate(
            head_id,
            raw=dict(old.raw),
            rank=dict(old.rank),
            expanded=old.expanded,
            doc=doc,
            components=dict(old.components),
            replaces=old_id,
        )
    return taken, dropped
