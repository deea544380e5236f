"""Entity reads and the entity merge (GET /entities, /entity/<slug>, POST /entity/<slug>/merge):
a mixin of `GraphStore`, all its Cypher.

`:Entity {key: "<tenant>:<kind>:<slug>", tenant, kind, slug, name}` nodes are written by
enrichment with `(:Memory)-[:MENTIONS]->(:Entity)` edges. A merge adds to the surviving entity
`aliases` (slugs), `alias_keys` and `alias_names`, and marks the merged one with `merged_into`
(the survivor's key), `merged_at` and `merged_by`; the merged node stays, so enrichment can map
the old name to the survivor (`entity_redirects`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from automem.stores.scope_bounds import RAISE_FROM_MEMORY

_ENTITY_FIELDS = (
    "key",
    "tenant",
    "kind",
    "slug",
    "name",
    "aliases",
    "alias_keys",
    "alias_names",
    "created_at",
    "merged_into",
    "merged_at",
)
# indegree(e): its MENTIONS edges (the only edges entities have), read from the node in O(1);
# memories deleted but not yet purged still count.
_ENTITY_COLUMNS = ", ".join(f"e.{f}" for f in _ENTITY_FIELDS) + ", indegree(e)"


def _entity(row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(_ENTITY_FIELDS, row[:-1], strict=True))
    for name in ("aliases", "alias_keys", "alias_names"):
        out[name] = list(out[name] or [])
    out["references"] = int(row[-1] or 0)
    return out


class EntityQueries:
    """Mixed into GraphStore, which provides `_ro` and `_query`."""

    if TYPE_CHECKING:

        def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

        def _query(self, cypher: str, params: dict[str, Any] | None = None) -> Any: ...

    # --- reads ----------------------------------------------------------------------------------
    def list_entities(self, tenant: str, kind: str | None, limit: int) -> list[dict[str, Any]]:
        """The tenant's entities that were not merged away, most mentioned first."""
        cypher = f"""
        MATCH (e:Entity) WHERE e.tenant = $tenant AND e.merged_into IS NULL
          AND ($kind IS NULL OR e.kind = $kind)
        WITH e, indegree(e) AS refs
        ORDER BY refs DESC, e.kind, e.slug LIMIT $limit
        RETURN {_ENTITY_COLUMNS}
        """
        return [_entity(r) for r in self._ro(cypher, {"tenant": tenant, "kind": kind, "limit": limit})]

    def find_entities(self, tenant: str, slug: str, kind: str | None) -> list[dict[str, Any]]:
        """Entities (merged ones included) whose slug is `slug` or that hold it as an alias."""
        cypher = f"""
        MATCH (e:Entity) WHERE e.tenant = $tenant AND ($kind IS NULL OR e.kind = $kind)
          AND (e.slug = $slug OR $slug IN coalesce(e.aliases, []))
        RETURN {_ENTITY_COLUMNS}
        """
        return [_entity(r) for r in self._ro(cypher, {"tenant": tenant, "slug": slug, "kind": kind})]

    def entities_by_keys(self, tenant: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        cypher = f"MATCH (e:Entity) WHERE e.key IN $keys AND e.tenant = $tenant RETURN {_ENTITY_COLUMNS}"
        found = [_entity(r) for r in self._ro(cypher, {"tenant": tenant, "keys": list(keys)})]
        return {e["key"]: e for e in found}

    def entity_memories(self, tenant: str, key: str, limit: int) -> tuple[int, list[str]]:
        """(active memories mentioning the entity, the ids of the newest `limit` of them)."""
        cypher = """
        MATCH (e:Entity {key: $key})
        WITH e
        MATCH (e)<-[:MENTIONS]-(m:Memory) WHERE m.tenant = $tenant AND m.state = 'active'
        WITH m.timestamp AS ts, m.id AS id ORDER BY ts DESC, id
        RETURN count(id), collect(id)[0..$limit]
        """
        rows = self._ro(cypher, {"tenant": tenant, "key": key, "limit": limit})
        return (int(rows[0][0]), [str(i) for i in rows[0][1]]) if rows else (0, [])

    def entity_tag_counts(self, tenant: str) -> list[tuple[str, int]]:
        """Every `entity:*` tag on the tenant's active memories, with how many carry it (the tag
        prefix index finds the memories; only their tags are read)."""
        cypher = """
        MATCH (m:Memory) WHERE 'entity' IN m.tag_prefixes AND m.tenant = $tenant AND m.state = 'active'
        UNWIND m.tags AS t
        WITH t WHERE t STARTS WITH 'entity:'
        RETURN t, count(*) ORDER BY count(*) DESC, t
        """
        return [(str(t), int(n)) for t, n in self._ro(cypher, {"tenant": tenant})]

    def entity_redirects(self, tenant: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each of `keys` naming a merged entity: the entity it was merged into (one hop;
        merges keep chains flat, and `automem.entities.resolve_keys` follows any left)."""
        if not keys:
            return {}
        cypher = """
        MATCH (e:Entity) WHERE e.key IN $keys AND e.tenant = $tenant AND e.merged_into IS NOT NULL
        WITH e
        MATCH (t:Entity {key: e.merged_into})
        RETURN e.key, t.key, t.kind, t.slug, t.name
        """
        rows = self._ro(cypher, {"tenant": tenant, "keys": list(keys)})
        return {
            str(k): {"key": tk, "kind": kind, "slug": slug, "name": name} for k, tk, kind, slug, name in rows
        }

    # --- the merge ------------------------------------------------------------------------------
    def mark_entity_merged(
        self,
        tenant: str,
        source: str,
        target: str,
        target_was: str | None,
        aliases: dict[str, list[str]],
        now: str,
        actor: str,
    ) -> bool:
        """Record that `source` is merged into `target`, if neither changed since they were read
        (the source not merged, the target's `merged_into` still `target_was`: None, or the
        source itself when this merge reverses an earlier one, which makes the target whole
        again). The target takes `aliases` ({aliases, alias_keys, alias_names}); entities merged
        into the source earlier now point at the target, so chains stay one hop long."""
        cypher = """
        MATCH (s:Entity {key: $source}) WHERE s.tenant = $tenant AND s.merged_into IS NULL
        WITH s
        MATCH (t:Entity {key: $target})
        WHERE t.tenant = $tenant AND coalesce(t.merged_into, '') = coalesce($target_was, '')
        SET s.merged_into = $target, s.merged_at = $now, s.merged_by = $actor,
            t.merged_into = null, t.merged_at = null, t.merged_by = null, t.updated_at = $now,
            t.aliases = $aliases, t.alias_keys = $alias_keys, t.alias_names = $alias_names
        WITH s
        OPTIONAL MATCH (x:Entity) WHERE x.tenant = $tenant AND x.merged_into = $source
        WITH s, collect(x) AS xs
        FOREACH (x IN xs | SET x.merged_into = $target)
        RETURN s.key
        """
        params = {
            "tenant": tenant,
            "source": source,
            "target": target,
            "target_was": target_was,
            "aliases": aliases["aliases"],
            "alias_keys": aliases["alias_keys"],
            "alias_names": aliases["alias_names"],
            "now": now,
            "actor": actor,
        }
        return bool(self._query(cypher, params).result_set)

    def entity_merge_page(
        self, tenant: str, source: str, source_tag: str, skip: Sequence[str], limit: int
    ) -> list[str]:
        """Ids of up to `limit` memories of the tenant (any state) still linked to the merged
        entity: a MENTIONS edge to it, or its tag."""
        by_edge = """
        MATCH (e:Entity {key: $source})
        WITH e
        MATCH (e)<-[:MENTIONS]-(m:Memory) WHERE m.tenant = $tenant AND NOT m.id IN $skip
        RETURN m.id LIMIT $limit
        """
        by_tag = """
        MATCH (m:Memory) WHERE $tag IN m.tags AND m.tenant = $tenant AND NOT m.id IN $skip
        RETURN m.id LIMIT $limit
        """
        params = {"tenant": tenant, "source": source, "tag": source_tag, "skip": list(skip), "limit": limit}
        ids = [str(r[0]) for r in self._ro(by_edge, params)]
        ids += [str(r[0]) for r in self._ro(by_tag, params)]
        return list(dict.fromkeys(ids))[:limit]

    def apply_entity_merge(
        self, rows: Sequence[dict[str, Any]], source: str, target: str, now: str
    ) -> list[tuple[str, int]]:
        """Move memories from `source` to `target`: each row {id, version, props, event} is
        written if the memory is still at `version` (a change since it was read wins, and the
        caller re-reads it): its props set, `version` and `rev` bumped, its history event
        recorded after the SET (as every change statement does, so the event carries the new
        version and rev), and its MENTIONS edge to the source replaced by one to the target
        (`merged_from` names the source). Returns (id, edges moved) of the memories written."""
        cypher = """
        MATCH (t:Entity {key: $target})
        WITH t
        UNWIND $rows AS r
        MATCH (m:Memory {id: r.id})
        WHERE m.version = r.version
        SET m += r.props, m.version = m.version + 1, m.rev = m.rev + 1
        """
        # The props carry seq_scope again (entity tags never define it, so it should not change;
        # if it does, the memory's new scope's time range must cover it).
        cypher += RAISE_FROM_MEMORY
        cypher += """
        CREATE (ev:MemoryEvent {memory_id: m.id, tenant: m.tenant, version: m.version, rev: m.rev})
        SET ev += r.event
        WITH t, m
        OPTIONAL MATCH (m)-[old:MENTIONS]->(:Entity {key: $source})
        WITH t, m, collect(old) AS olds
        FOREACH (_ IN CASE WHEN size(olds) > 0 THEN [1] ELSE [] END |
            MERGE (m)-[n:MENTIONS]->(t)
            SET n.updated_at = $now, n.merged_from = $source)
        FOREACH (o IN olds | DELETE o)
        RETURN m.id, size(olds)
        """
        params = {"rows": list(rows), "source": source, "target": target, "now": now}
        return [(str(i), int(n)) for i, n in self._query(cypher, params).result_set]
