"""A tenant's share of the memory graph as a whole: its usage (for limits) and its erasure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from automem.stores.graph_lifecycle import VECTOR_LABEL, VECTOR_LINK
from automem.stores.scope_bounds import SCOPE_LABEL


class TenantQueries:
    """Mixed into GraphStore, which provides `_ro` and `_query`."""

    if TYPE_CHECKING:

        def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

        def _walk(
            self, where: str, returns: str, params: dict[str, Any] | None, limit: int, then: str = ""
        ) -> Iterator[list[list[Any]]]: ...

        def _query(self, cypher: str, params: dict[str, Any] | None = None) -> Any: ...

    def tenant_usage(self, tenant: str) -> dict[str, int]:
        """What counts against the tenant's limits: its memories (deleted ones too, until purged:
        they can be recovered) and the characters of their content."""
        cypher = """
        MATCH (m:Memory) WHERE m.tenant = $tenant
        RETURN count(m), sum(size(m.content))
        """
        rows = self._ro(cypher, {"tenant": tenant})
        memories, chars = rows[0] if rows else (0, 0)
        return {"memories": int(memories or 0), "content_bytes": int(chars or 0)}

    def tenant_names(self) -> list[str]:
        """Every tenant that holds a memory."""
        return [str(r[0]) for r in self._ro("MATCH (m:Memory) RETURN DISTINCT m.tenant ORDER BY m.tenant")]

    def tenant_ids_page(self, tenant: str, limit: int) -> list[str]:
        cypher = "MATCH (m:Memory) WHERE m.tenant = $tenant RETURN m.id LIMIT $limit"
        return [str(r[0]) for r in self._ro(cypher, {"tenant": tenant, "limit": limit})]

    def erase_memories(self, tenant: str, ids: Sequence[str]) -> dict[str, int]:
        """Delete these memories of `tenant` with their edges and history events: nothing of
        them is left (unlike a purge, no tombstone)."""
        cypher = f"""
        MATCH (m:Memory) WHERE m.id IN $ids AND m.tenant = $tenant
        OPTIONAL MATCH (m)-[r]-() WHERE type(r) <> '{VECTOR_LINK}'
        WITH m, count(r) AS edges
        WITH collect(m) AS nodes, sum(edges) AS edges
        FOREACH (n IN nodes | DETACH DELETE n)
        RETURN size(nodes), edges
        """
        memories, edges = self._query(cypher, {"tenant": tenant, "ids": list(ids)}).result_set[0]
        self._erase_label(VECTOR_LABEL, tenant, "n.id IN $ids", {"ids": list(ids)})
        events = self._erase_label("MemoryEvent", tenant, "n.memory_id IN $ids", {"ids": list(ids)})
        return {"memories": int(memories), "edges": int(edges or 0), "history_events": events}

    def erase_tenant_rest(self, tenant: str) -> dict[str, int]:
        """After its memories: the tenant's entities (with their edges), tombstones of purged
        memories and any other history event of it."""
        self._erase_label(VECTOR_LABEL, tenant)  # none is left unless a memory was lost half-way
        self._erase_label(SCOPE_LABEL, tenant)
        entities = self._erase_label("Entity", tenant)
        events = self._erase_label("MemoryEvent", tenant)
        return {"entities": entities, "history_events": events}

    def _erase_label(
        self, label: str, tenant: str, where: str = "true", params: dict[str, Any] | None = None
    ) -> int:
        total = 0
        while True:
            cypher = f"""
            MATCH (n:{label}) WHERE n.tenant = $tenant AND {where}
            WITH n LIMIT 5000
            DETACH DELETE n
            RETURN count(n)
            """
            removed = int(self._query(cypher, {"tenant": tenant, **(params or {})}).result_set[0][0])
            total += removed
            if removed < 5000:
                return total

    def tenant_id_pages(self, tenant: str, limit: int) -> Iterator[list[str]]:
        """Every memory id of the tenant, a page at a time (a walk: see GraphStore._walk)."""
        for rows in self._walk("toString(m.tenant) = $tenant", "m.id", {"tenant": tenant}, limit):
            yield [str(r[0]) for r in rows]

    def commit_staged_tenant(self, staging: str, tenant: str, mark: str) -> int:
        """In one query (one transaction: all of it or none): delete every node of `tenant`,
        then make the nodes staged under `staging` the tenant's, removing the `mark` their keys
        carry. Returns the number of nodes replaced."""
        unmark = "CASE WHEN n.{0} STARTS WITH $mark THEN substring(n.{0}, size($mark)) ELSE n.{0} END"
        keys = ("id", "memory_id", "dedup_key", "key", "merged_into")
        sets = ", ".join(f"n.{k} = {unmark.format(k)}" for k in keys)
        cypher = f"""
        OPTIONAL MATCH (old) WHERE old.tenant = $tenant
        WITH collect(old) AS olds
        FOREACH (o IN olds | DETACH DELETE o)
        WITH size(olds) AS replaced
        OPTIONAL MATCH (n) WHERE n.tenant = $staging
        SET n.tenant = $tenant, {sets},
            n.alias_keys = CASE WHEN n.alias_keys IS NULL THEN null ELSE [k IN n.alias_keys |
                CASE WHEN k STARTS WITH $mark THEN substring(k, size($mark)) ELSE k END] END
        RETURN replaced, count(n)
        """
        rows = self._query(cypher, {"staging": staging, "tenant": tenant, "mark": mark}).result_set
        return int(rows[0][0]) if rows else 0
