"""Read-only access to an AutoMem FalkorDB graph, the source of `automem import-automem`.

AutoMem's schema (reference §3.1): one `:Memory` node per memory (`id`, `content`, `type`,
`tags` in their original case, `metadata` as a JSON string, ISO timestamps, ...), cluster
summaries as `:Memory:MetaMemory`, one `:Pattern` node per type, `:Entity` nodes, and typed
edges between them. AutoMem creates no indexes, so nodes are read in windows of internal node
ids (an id-range seek: each page costs its own size, never a scan and sort of the whole label).
Nothing here writes: every query is a read-only query, so a running AutoMem is never disturbed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis.exceptions
from falkordb import FalkorDB

from automem.errors import ConfigurationError, StoreUnavailable

# The `:Memory` properties the importer maps (the legacy `embeddings` list is left behind:
# vectors come from Qdrant or are recomputed).
MEMORY_PROPERTIES = (
    "id",
    "content",
    "type",
    "confidence",
    "importance",
    "tags",
    "metadata",
    "timestamp",
    "updated_at",
    "last_accessed",
    "t_valid",
    "t_invalid",
    "archived",
    "protected",
    "protected_reason",
)
_PROJECTION = ", ".join(f"m.{name}" for name in MEMORY_PROPERTIES)
# A plain memory: AutoMem's cluster summaries carry the Memory label too.
_PLAIN = "NOT {alias}:MetaMemory"


@dataclass(frozen=True)
class SourceEdge:
    """An edge between two plain memories: (source id)-[type {props}]->(target id)."""

    source: str
    type: str
    target: str
    props: dict[str, Any]


class AutoMemGraph:
    """One AutoMem graph on a FalkorDB server, read with read-only queries."""

    def __init__(self, db: FalkorDB, graph_name: str) -> None:
        self.db = db
        self.graph_name = graph_name
        self.graph = db.select_graph(graph_name)

    @classmethod
    def from_url(cls, url: str, graph_name: str, timeout_seconds: float = 60.0) -> AutoMemGraph:
        """`url`: redis://[:password@]host:port (AutoMem's FALKORDB_HOST/PORT/PASSWORD)."""
        return cls(FalkorDB.from_url(url, socket_timeout=timeout_seconds), graph_name)

    def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        try:
            return list(self.graph.ro_query(cypher, params).result_set)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreUnavailable(f"AutoMem's FalkorDB is unreachable: {exc.__class__.__name__}") from exc

    def check(self) -> None:
        """Fail with a message naming the graphs that exist when the graph is not there."""
        try:
            graphs = [g.decode() if isinstance(g, bytes) else str(g) for g in self.db.list_graphs()]
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise ConfigurationError(
                f"cannot reach AutoMem's FalkorDB ({exc.__class__.__name__}); check --falkordb-url"
            ) from exc
        except redis.exceptions.AuthenticationError as exc:
            raise ConfigurationError("AutoMem's FalkorDB refused the password in --falkordb-url") from exc
        if self.graph_name not in graphs:
            found = ", ".join(sorted(graphs)) or "none"
            raise ConfigurationError(f"no graph {self.graph_name!r} in AutoMem's FalkorDB (graphs: {found})")

    def close(self) -> None:
        self.db.close()

    # --- counts ---------------------------------------------------------------------------------
    def label_counts(self) -> dict[str, int]:
        """Nodes by kind: memories (plain), meta_memories, entities, patterns, other."""
        cypher = """
        MATCH (n)
        RETURN CASE
            WHEN n:MetaMemory THEN 'meta_memories'
            WHEN n:Memory THEN 'memories'
            WHEN n:Entity THEN 'entities'
            WHEN n:Pattern THEN 'patterns'
            ELSE 'other' END AS kind, count(n)
        """
        counts = {"memories": 0, "meta_memories": 0, "entities": 0, "patterns": 0, "other": 0}
        counts.update({str(kind): int(n) for kind, n in self._ro(cypher)})
        return counts

    def node_id_bound(self) -> int:
        """One past the highest internal node id (0 for an empty graph)."""
        rows = self._ro("MATCH (n) RETURN max(ID(n))")
        return int(rows[0][0]) + 1 if rows and rows[0][0] is not None else 0

    # --- memories and their edges ---------------------------------------------------------------
    def memories_window(self, low: int, high: int) -> list[dict[str, Any]]:
        """The plain memories with internal ids in [low, high), as {property: value}."""
        cypher = f"""
        MATCH (m:Memory) WHERE ID(m) >= $low AND ID(m) < $high AND {_PLAIN.format(alias="m")}
        RETURN {_PROJECTION}
        ORDER BY ID(m)
        """
        rows = self._ro(cypher, {"low": low, "high": high})
        return [dict(zip(MEMORY_PROPERTIES, row, strict=True)) for row in rows]

    def memory_edges_window(self, low: int, high: int) -> list[SourceEdge]:
        """Edges between two plain memories whose start node has an internal id in [low, high)."""
        cypher = f"""
        MATCH (a:Memory)-[r]->(b:Memory)
        WHERE ID(a) >= $low AND ID(a) < $high AND {_PLAIN.format(alias="a")} AND {_PLAIN.format(alias="b")}
        RETURN a.id, type(r), b.id, properties(r)
        """
        return [
            SourceEdge(str(a), str(rel), str(b), dict(props or {}))
            for a, rel, b, props in self._ro(cypher, {"low": low, "high": high})
            if a is not None and b is not None
        ]

    def other_edge_counts(self) -> Counter[str]:
        """Edges by type that touch anything but two plain memories (entities, patterns, cluster
        summaries): AutoMem's derived structure, which this service recomputes."""
        cypher = """
        MATCH (a)-[r]->(b)
        WHERE NOT (a:Memory AND b:Memory) OR a:MetaMemory OR b:MetaMemory
        RETURN type(r), count(r)
        """
        return Counter({str(rel): int(n) for rel, n in self._ro(cypher)})
