"""Small in-memory graphs for the recall unit tests: they answer the reads expansion and state
resolution make (`LinkReads`, `SupersessionReads`) from plain lists, the way FalkorDB would."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from automem.recall.fusion import CandidatePool
from automem.recall.query import RecallQuery
from automem.record import MemoryRecord
from automem.settings import Settings
from automem.stores.recall_filter import RecallFilter

NOW = "2025-06-01T00:00:00.000000+00:00"


def memory(memory_id: str, **fields: Any) -> MemoryRecord:
    values = {"timestamp": "2025-01-01T00:00:00.000000+00:00", "importance": 0.5, **fields}
    return MemoryRecord.from_props({"id": memory_id, **values})


def assert_below_the_floor_stays_out(pool: CandidatePool, floor: float, limit: int) -> None:
    """The reachable floor's promise, over final scores already computed: a candidate whose
    relevance is below it scores no higher than the limit-th best, whatever its priors."""
    top = sorted((c.score for c in pool.values()), reverse=True)[:limit]
    for candidate in pool.values():
        if candidate.components["relevance"] < floor:
            assert candidate.score <= top[-1] + 1e-9


def query(**fields: Any) -> RecallQuery:
    return RecallQuery.model_validate({"query": "q", **fields}, context={"settings": Settings()})


def scope(**fields: Any) -> RecallFilter:
    return RecallFilter(tenant="default", now=NOW, **fields)


@dataclass
class Edge:
    a: str
    b: str
    type: str
    strength: float | None = 1.0
    at: str = ""


@dataclass
class TinyGraph:
    """Memories, typed edges between them and entity mentions."""

    memories: dict[str, MemoryRecord] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    mentions: dict[str, list[str]] = field(default_factory=dict)  # entity key -> memory ids
    reads: list[str] = field(default_factory=list)

    def add(self, *records: MemoryRecord) -> TinyGraph:
        for record in records:
            self.memories[record.id] = record
        return self

    def link(self, a: str, b: str, rel: str, strength: float | None = 1.0, at: str = "") -> TinyGraph:
        self.edges.append(Edge(a, b, rel, strength, at))
        return self

    def hydrate(self, ids: list[str]) -> dict[str, MemoryRecord]:
        self.reads.append("hydrate")
        return {i: self.memories[i] for i in ids if i in self.memories}

    # --- LinkReads ------------------------------------------------------------------------------
    def _degree(self, memory_id: str, types: Sequence[str]) -> int:
        return sum(1 for e in self.edges if e.type in types and memory_id in (e.a, e.b))

    def edges_of(
        self, ids: Sequence[str], types: Sequence[str], limit_per: int
    ) -> dict[str, list[dict[str, Any]]]:
        self.reads.append("edges_of")
        out: dict[str, list[dict[str, Any]]] = {}
        for memory_id in ids:
            found = []
            for e in self.edges:
                if e.type not in types or memory_id not in (e.a, e.b):
                    continue
                other = e.b if e.a == memory_id else e.a
                if self.memories[other].state == "deleted":
                    continue
                found.append(
                    {
                        "type": e.type,
                        "outgoing": e.a == memory_id,
                        "strength": e.strength,
                        "id": other,
                        "degree": self._degree(other, types),
                    }
                )
            found.sort(key=lambda d: -(d["strength"] or 0.0))
            if found:
                out[memory_id] = found[:limit_per]
        return out

    def entities_of(self, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for key, members in self.mentions.items():
            for memory_id in ids:
                if memory_id in members:
                    entity = {"key": key, "name": key.rsplit(":", 1)[-1], "mentions": len(members)}
                    out.setdefault(memory_id, []).append(entity)
        return out

    def memories_mentioning(
        self, keys: Sequence[str], flt: RecallFilter, limit_per: int
    ) -> dict[str, list[str]]:
        out = {}
        for key in keys:
            matching = [i for i in self.mentions.get(key, []) if flt.matches(self.memories[i])]
            out[key] = sorted(matching, key=lambda i: str(self.memories[i].timestamp), reverse=True)[
                :limit_per
            ]
        return out

    def chain_neighbours(
        self, ids: Sequence[str], min_hops: int, max_hops: int
    ) -> list[tuple[str, str, int]]:
        """Breadth-first along PRECEDED_BY, either way, within the seed's named sequence."""
        self.reads.append("chain_neighbours")
        links = [(e.a, e.b) for e in self.edges if e.type == "PRECEDED_BY"]
        found = []
        for start in ids:
            scope = self.memories[start].seq_scope
            if not scope:
                continue
            seen, frontier = {start}, [start]
            for hops in range(1, max_hops + 1):
                frontier = [b if a == node else a for node in frontier for a, b in links if node in (a, b)]
                frontier = [n for n in frontier if n not in seen]
                seen.update(frontier)
                for other in frontier:
                    record = self.memories[other]
                    if hops >= min_hops and record.state != "deleted" and record.seq_scope == scope:
                        found.append((start, other, hops))
        return found

    # --- SupersessionReads ------------------------------------------------------------------------
    def supersession_edges(self, ids: Sequence[str], types: Sequence[str]) -> list[tuple[str, str, str]]:
        found = [
            e for e in self.edges if e.a in ids and e.type in types and self.memories[e.b].state != "deleted"
        ]
        found.sort(key=lambda e: e.at, reverse=True)
        return [(e.a, e.b, e.type) for e in found]


# Candidates as (relevance, importance, whether a prior applies to it), and a limit: what the
# reachable-floor properties draw.
flagged_rows = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.booleans()), min_size=1, max_size=20)
limits = st.integers(1, 10)
