"""Statistics over the store for GET /analyze (a mixin of `GraphStore`; all its Cypher).

Every aggregate counts the tenant's active memories in full, in the database: AutoMem samples
100 to 500 memories in Python and reads entities from metadata lists, so its numbers drift with the
sample; these do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from automem.stores.graph_consolidation import PATTERN_EDGE

_ACTIVE = "m.state = 'active' AND m.tenant = $tenant"


class AnalyticsQueries:
    """Mixed into GraphStore, which provides `_ro`."""

    if TYPE_CHECKING:

        def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

    def type_stats(self, tenant: str) -> list[tuple[str, int, float | None, float | None]]:
        """(type, count, average confidence, average importance) of active memories."""
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE}
        RETURN m.type, count(m), avg(m.confidence), avg(m.importance)
        ORDER BY count(m) DESC, m.type
        """
        return [(str(t), int(n), c, i) for t, n, c, i in self._ro(cypher, {"tenant": tenant})]

    def confidence_buckets(self, tenant: str, low: float, high: float) -> dict[str, int]:
        """Active memories with confidence below `low`, below `high`, and at or above it."""
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE}
        RETURN sum(CASE WHEN coalesce(m.confidence, 0.0) < $low THEN 1 ELSE 0 END),
               sum(CASE WHEN coalesce(m.confidence, 0.0) >= $low AND m.confidence < $high
                        THEN 1 ELSE 0 END),
               sum(CASE WHEN coalesce(m.confidence, 0.0) >= $high THEN 1 ELSE 0 END)
        """
        rows = self._ro(cypher, {"tenant": tenant, "low": low, "high": high})
        lo, mid, hi = (int(v or 0) for v in rows[0]) if rows else (0, 0, 0)
        return {"low": lo, "medium": mid, "high": hi}

    def confident_memories_of_type(
        self, tenant: str, mtype: str, min_confidence: float, limit: int
    ) -> list[dict[str, Any]]:
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE} AND m.type = $type AND m.confidence > $min
        RETURN m.id, m.content, m.confidence, m.importance, m.tags
        ORDER BY m.confidence DESC, m.importance DESC, m.id LIMIT $limit
        """
        params = {"tenant": tenant, "type": mtype, "min": min_confidence, "limit": limit}
        return [
            {"id": i, "content": c, "confidence": conf, "importance": imp, "tags": list(tags or [])}
            for i, c, conf, imp, tags in self._ro(cypher, params)
        ]

    def pattern_clusters(self, tenant: str, limit: int) -> list[dict[str, Any]]:
        """Consolidation's `:Pattern` clusters with their number of active members, largest first."""
        cypher = f"""
        MATCH (p:Pattern) WHERE p.tenant = $tenant
        OPTIONAL MATCH (m:Memory)-[:{PATTERN_EDGE}]->(p) WHERE m.state = 'active'
        WITH p, count(m) AS members
        RETURN p.id, p.content, p.dominant_type, p.key_terms, p.cohesion, members
        ORDER BY members DESC, p.id LIMIT $limit
        """
        return [
            {"id": i, "content": c, "dominant_type": t, "key_terms": list(k or []), "cohesion": co, "size": n}
            for i, c, t, k, co, n in self._ro(cypher, {"tenant": tenant, "limit": limit})
        ]

    def preference_edges(self, tenant: str, limit: int) -> list[dict[str, Any]]:
        """PREFERS_OVER edges between active memories, strongest first."""
        cypher = """
        MATCH (a:Memory)-[r:PREFERS_OVER]->(b:Memory)
        WHERE a.tenant = $tenant AND a.state = 'active' AND b.state = 'active'
        RETURN a.id, a.content, b.id, b.content, r.strength, r.context, r.reason
        ORDER BY coalesce(r.strength, 0.0) DESC, a.id, b.id LIMIT $limit
        """
        return [
            {
                "preferred": {"id": ai, "content": ac},
                "over": {"id": bi, "content": bc},
                "strength": s,
                "context": ctx,
                "reason": why,
            }
            for ai, ac, bi, bc, s, ctx, why in self._ro(cypher, {"tenant": tenant, "limit": limit})
        ]

    def activity_by_day(self, tenant: str) -> list[tuple[str, int, float | None]]:
        """(UTC date, memories, average importance) by the memories' event time."""
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE} AND m.timestamp IS NOT NULL
        WITH substring(m.timestamp, 0, 10) AS day, m
        RETURN day, count(m), avg(m.importance) ORDER BY day
        """
        return [(str(d), int(n), i) for d, n, i in self._ro(cypher, {"tenant": tenant})]

    def activity_by_hour(self, tenant: str) -> list[tuple[int, int, float | None]]:
        """(UTC hour, memories, average importance) by the memories' event time."""
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE} AND m.timestamp IS NOT NULL
        WITH substring(m.timestamp, 11, 2) AS hour, m
        RETURN hour, count(m), avg(m.importance) ORDER BY hour
        """
        return [(int(h), int(n), i) for h, n, i in self._ro(cypher, {"tenant": tenant}) if str(h).isdigit()]

    def top_entities(self, tenant: str, limit: int) -> list[dict[str, Any]]:
        """Entities mentioned by the most active memories, with their tag (`entity:<kind>:<slug>`)."""
        cypher = f"""
        MATCH (e:Entity)<-[:MENTIONS]-(m:Memory) WHERE {_ACTIVE}
        WITH e, count(m) AS n
        RETURN e.kind, e.slug, e.name, n ORDER BY n DESC, e.kind, e.slug LIMIT $limit
        """
        return [
            {"tag": f"entity:{kind}:{slug}", "kind": kind, "slug": slug, "name": name, "count": int(n)}
            for kind, slug, name, n in self._ro(cypher, {"tenant": tenant, "limit": limit})
        ]

    def top_tags(self, tenant: str, limit: int) -> list[tuple[str, int]]:
        cypher = f"""
        MATCH (m:Memory) WHERE {_ACTIVE}
        UNWIND m.tags AS t
        WITH t, count(*) AS n
        RETURN t, n ORDER BY n DESC, t LIMIT $limit
        """
        return [(str(t), int(n)) for t, n in self._ro(cypher, {"tenant": tenant, "limit": limit})]

    def relationship_counts(self, tenant: str) -> dict[str, int]:
        """Edges between active memories, by type."""
        cypher = """
        MATCH (a:Memory)-[r]->(b:Memory)
        WHERE a.tenant = $tenant AND a.state = 'active' AND b.state = 'active'
        RETURN type(r), count(r) ORDER BY type(r)
        """
        return {str(t): int(n) for t, n in self._ro(cypher, {"tenant": tenant})}
