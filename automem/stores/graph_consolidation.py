"""Consolidation's Cypher (a mixin of `GraphStore`): paging, relevance and archive writes,
discovered edges, `:Pattern` nodes and the `:ConsolidationRun` history.

Writes to memories are conditional on the `version` the job read, so a client edit made while a
run is under way is never overwritten (the next run picks the memory up again). Writing the
relevance score bumps neither `version` (client-visible) nor `rev` (the vector payload does not
carry the score); archiving bumps `rev` because `state` is in the payload.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import redis.exceptions

from automem.record import MemoryRecord
from automem.stores.graph_lifecycle import VECTOR_LABEL

# What a scoring pass reads of a memory (no content, no embedding).
_SCORE_FIELDS = (
    "id",
    "tenant",
    "type",
    "tags",
    "importance",
    "confidence",
    "timestamp",
    "created_at",
    "last_accessed",
    "access_count",
    "metadata",
    "version",
    "relevance_score",
)
# What the similarity passes (creative, cluster) read of a memory.
_VECTOR_FIELDS = ("id", "tenant", "type", "tags", "timestamp", "relevance_score", "embedding")

PATTERN_EDGE = "EXEMPLIFIES"  # (:Memory)-[:EXEMPLIFIES]->(:Pattern)


def _cols(fields: Sequence[str], alias: str = "m") -> str:
    return ", ".join(f"{alias}.{f}" for f in fields)


class ConsolidationQueries:
    """Mixed into GraphStore, which provides `_ro`, `_query` and `_walk`."""

    if TYPE_CHECKING:

        def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]: ...

        def _query(self, cypher: str, params: dict[str, Any] | None = None) -> Any: ...

        def _walk(
            self, where: str, returns: str, params: dict[str, Any] | None, limit: int, then: str = ""
        ) -> Iterator[list[list[Any]]]: ...

    # --- schema -------------------------------------------------------------------------------
    def ensure_consolidation_schema(self) -> None:
        for cypher in (
            "CREATE INDEX FOR (p:Pattern) ON (p.id)",
            "CREATE INDEX FOR (r:ConsolidationRun) ON (r.started_at)",
        ):
            try:
                self._query(cypher)
            except redis.exceptions.ResponseError as exc:
                if "already indexed" not in str(exc).lower():
                    raise

    # --- reads for the passes -----------------------------------------------------------------
    def scoring_pages(self, limit: int) -> Iterator[list[tuple[MemoryRecord, int]]]:
        """(memory, links) of every active memory, a page at a time (a walk: see
        GraphStore._walk), where `links` counts the distinct other memories (not deleted) it
        shares an edge with. Fills the decay pass's fields (_SCORE_FIELDS)."""
        then = """
        OPTIONAL MATCH (m)-[]-(o:Memory) WHERE o.id <> m.id AND o.state <> 'deleted'
        WITH m, count(DISTINCT o) AS links
        """
        returns = f"{_cols(_SCORE_FIELDS)}, links"
        for rows in self._walk("toString(m.state) = 'active'", returns, None, limit, then):
            yield [(MemoryRecord.from_values(_SCORE_FIELDS, row[:-1]), int(row[-1] or 0)) for row in rows]

    def vector_page(self, after: str, limit: int, min_relevance: float | None = None) -> list[MemoryRecord]:
        """Active memories with an embedding after `after` in id order (unscored ones included),
        with the similarity passes' fields (_VECTOR_FIELDS)."""
        cypher = f"""
        MATCH (m:Memory) WHERE m.id > $after AND m.state = 'active'
          AND ($min IS NULL OR m.relevance_score IS NULL OR m.relevance_score >= $min)
        WITH m
        MATCH (v:{VECTOR_LABEL} {{id: m.id}})
        RETURN {_cols(_VECTOR_FIELDS[:-1])}, v.embedding
        ORDER BY m.id LIMIT $limit
        """
        rows = self._ro(cypher, {"after": after, "limit": limit, "min": min_relevance})
        return [MemoryRecord.from_values(_VECTOR_FIELDS, row) for row in rows]

    def vector_pages(
        self, limit: int, min_relevance: float | None = None, keep: float = 1.0
    ) -> Iterator[list[MemoryRecord]]:
        """Active memories with an embedding (unscored ones included), with the similarity
        passes' fields (_VECTOR_FIELDS), a page at a time (a walk: see GraphStore._walk); with
        `keep` < 1 each is taken with that probability, so one pass reads a uniform sample."""
        where = """
        toString(m.state) = 'active' AND ($keep >= 1.0 OR rand() < $keep)
          AND ($min IS NULL OR m.relevance_score IS NULL OR m.relevance_score >= $min)
        """
        # OPTIONAL: one row per memory of the page (the walk counts a page's rows).
        then = f"OPTIONAL MATCH (v:{VECTOR_LABEL} {{id: m.id}})"
        returns = f"{_cols(_VECTOR_FIELDS[:-1])}, v.embedding"
        for rows in self._walk(where, returns, {"min": min_relevance, "keep": keep}, limit, then):
            docs = [MemoryRecord.from_values(_VECTOR_FIELDS, row) for row in rows if row[-1]]
            if docs:
                yield docs

    def active_memory_count(self) -> int:
        rows = self._ro("MATCH (m:Memory) WHERE m.state = 'active' RETURN count(m)")
        return int(rows[0][0]) if rows else 0

    def links_among(self, ids: Sequence[str]) -> list[tuple[str, str, str, str | None]]:
        """Every edge between two of these memories: (start id, end id, type, origin)."""
        cypher = """
        MATCH (a:Memory) WHERE a.id IN $ids
        WITH a
        MATCH (a)-[r]->(b:Memory) WHERE b.id IN $ids
        RETURN a.id, b.id, type(r), r.origin
        """
        return [(a, b, t, o) for a, b, t, o in self._ro(cypher, {"ids": list(ids)})]

    # --- memory writes ------------------------------------------------------------------------
    def write_relevance(self, rows: Sequence[dict[str, Any]], at: str) -> list[str]:
        """Rows {id, version, score}: set `relevance_score`/`relevance_at` where the memory is
        still active at that version. No `version` or `rev` bump. Returns the ids written."""
        if not rows:
            return []
        cypher = """
        UNWIND $rows AS r
        MATCH (m:Memory {id: r.id})
        WHERE m.state = 'active' AND m.version = r.version
        SET m.relevance_score = r.score, m.relevance_at = $at
        RETURN m.id
        """
        return [row[0] for row in self._query(cypher, {"rows": list(rows), "at": at}).result_set]

    def archive_memories(self, rows: Sequence[dict[str, Any]], at: str) -> list[str]:
        """Rows {id, version, score, event}: archive memories still active at that version. Bumps
        `rev` (state is in the vector payload) but not `version`; releases the dedup key so storing
        the same content again creates a new active memory; records the row's history event.
        Returns the ids archived."""
        if not rows:
            return []
        cypher = """
        UNWIND $rows AS r
        MATCH (m:Memory {id: r.id})
        WHERE m.state = 'active' AND m.version = r.version
        SET m.state = 'archived', m.archived_at = $at, m.dedup_key = null, m.rev = m.rev + 1,
            m.relevance_score = r.score, m.relevance_at = $at
        CREATE (ev:MemoryEvent {memory_id: m.id, tenant: m.tenant, version: m.version, rev: m.rev})
        SET ev += r.event
        RETURN m.id
        """
        return [row[0] for row in self._query(cypher, {"rows": list(rows), "at": at}).result_set]

    def merge_discovered(self, rows: Sequence[dict[str, Any]], at: str) -> int:
        """Rows {a, b, props}: MERGE (a)-[:DISCOVERED]->(b) and set its props; returns how many
        edges were new (re-runs refresh `updated_at` instead of duplicating)."""
        if not rows:
            return 0
        cypher = """
        UNWIND $rows AS r
        MATCH (a:Memory {id: r.a}), (b:Memory {id: r.b})
        WHERE a.state = 'active' AND b.state = 'active'
        MERGE (a)-[e:DISCOVERED]->(b)
        ON CREATE SET e.created_at = $at
        SET e += r.props, e.origin = 'consolidation', e.updated_at = $at
        RETURN count(e)
        """
        result = self._query(cypher, {"rows": list(rows), "at": at})
        return int(result.relationships_created)

    # --- patterns -----------------------------------------------------------------------------
    def patterns_of(self, member_ids: Sequence[str]) -> dict[str, list[str]]:
        """Existing patterns any of these memories exemplify: pattern id -> its member ids."""
        if not member_ids:
            return {}
        cypher = f"""
        MATCH (m:Memory) WHERE m.id IN $ids
        WITH m
        MATCH (m)-[:{PATTERN_EDGE}]->(p:Pattern)
        WITH DISTINCT p
        MATCH (x:Memory)-[:{PATTERN_EDGE}]->(p)
        RETURN p.id, collect(x.id)
        """
        return {pid: list(members) for pid, members in self._ro(cypher, {"ids": list(member_ids)})}

    def upsert_pattern(self, props: dict[str, Any], member_ids: Sequence[str], at: str) -> bool:
        """Create or update one pattern and make its EXEMPLIFIES edges match `member_ids`.
        Returns True when the pattern node is new."""
        created = self._query(
            """
            MERGE (p:Pattern {id: $id})
            ON CREATE SET p.created_at = $at
            SET p += $props, p.updated_at = $at
            """,
            {"id": props["id"], "props": props, "at": at},
        )
        self._query(
            f"""
            MATCH (x:Memory)-[e:{PATTERN_EDGE}]->(p:Pattern {{id: $id}})
            WHERE NOT x.id IN $ids
            DELETE e
            """,
            {"id": props["id"], "ids": list(member_ids)},
        )
        self._query(
            f"""
            MATCH (p:Pattern {{id: $id}})
            MATCH (m:Memory) WHERE m.id IN $ids
            MERGE (m)-[e:{PATTERN_EDGE}]->(p)
            ON CREATE SET e.created_at = $at
            SET e.origin = 'consolidation', e.updated_at = $at
            """,
            {"id": props["id"], "ids": list(member_ids), "at": at},
        )
        return int(created.nodes_created) > 0

    def patterns(self, limit: int = 100) -> list[dict[str, Any]]:
        """Patterns, largest first, with their member ids."""
        cypher = f"""
        MATCH (p:Pattern)
        OPTIONAL MATCH (m:Memory)-[:{PATTERN_EDGE}]->(p)
        WITH p, collect(m.id) AS members
        RETURN properties(p), members
        ORDER BY p.size DESC, p.id LIMIT $limit
        """
        return [
            {**dict(props), "members": list(members)} for props, members in self._ro(cypher, {"limit": limit})
        ]

    # --- inspection ---------------------------------------------------------------------------
    def consolidation_state(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Consolidation-owned properties of these memories (not part of the public memory)."""
        cypher = """
        MATCH (m:Memory) WHERE m.id IN $ids
        RETURN m.id, m.relevance_score, m.relevance_at, m.state, m.archived_at, m.version, m.rev
        """
        keys = ("relevance_score", "relevance_at", "state", "archived_at", "version", "rev")
        return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in self._ro(cypher, {"ids": list(ids)})}

    def discovered_edges(self) -> list[dict[str, Any]]:
        cypher = """
        MATCH (a:Memory)-[e:DISCOVERED]->(b:Memory)
        RETURN a.id, b.id, properties(e)
        ORDER BY a.id, b.id
        """
        return [{"a": a, "b": b, **dict(props)} for a, b, props in self._ro(cypher)]

    # --- run history --------------------------------------------------------------------------
    def record_consolidation_run(self, run: dict[str, Any], keep: int, tasks: Sequence[str]) -> None:
        """Store one finished run, advance the per-task last-run times when it succeeded, and
        keep only the newest `keep` runs (the last-run times outlive pruning)."""
        props = {**run, "result": json.dumps(run.get("result") or {}, default=str)}
        self._query("CREATE (r:ConsolidationRun) SET r = $props", {"props": props})
        if run.get("success") and not run.get("dry_run"):
            last = {f"last_{task}": run["started_at"] for task in tasks}
            self._query(
                "MERGE (c:ConsolidationControl {id: 'schedule'}) SET c += $last",
                {"last": last},
            )
        self._query(
            """
            MATCH (r:ConsolidationRun)
            WITH r ORDER BY r.started_at DESC, r.id DESC
            SKIP $keep
            DELETE r
            """,
            {"keep": max(0, int(keep))},
        )

    def consolidation_runs(self, limit: int) -> list[dict[str, Any]]:
        cypher = """
        MATCH (r:ConsolidationRun)
        RETURN properties(r)
        ORDER BY r.started_at DESC, r.id DESC LIMIT $limit
        """
        runs = []
        for (props,) in self._ro(cypher, {"limit": limit}):
            run = dict(props)
            with contextlib.suppress(ValueError):
                run["result"] = json.loads(run.get("result") or "{}")
            runs.append(run)
        return runs

    def consolidation_last_runs(self) -> dict[str, str]:
        """Task -> start time of its last successful real run (a `full` run counts for all)."""
        try:
            rows = self._ro("MATCH (c:ConsolidationControl {id: 'schedule'}) RETURN properties(c)")
        except redis.exceptions.ResponseError as exc:
            if "empty key" in str(exc).lower():
                return {}  # the graph does not exist yet (a fresh store)
            raise
        if not rows:
            return {}
        props = dict(rows[0][0])
        return {k.removeprefix("last_"): str(v) for k, v in props.items() if k.startswith("last_") and v}
