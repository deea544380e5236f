"""Read queries parse FalkorDB's compact replies themselves (`automem.stores.graph.read_rows`):
every value a real server returns must come back exactly as falkordb-py's own parser gives it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import redis.exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.embedded import EmbeddedFalkorDB
from automem.errors import StoreUnavailable
from automem.record import MemoryRecord
from automem.stores.graph import _RECALL_COLUMNS, _RECALL_PROJECTION, GraphStore, _edge, _edges_query
from automem.validation import check_tag

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    # Text as a client sends it (no lone surrogates) without NUL, which ends FalkorDB's query.
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40),
)
keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def graph(falkordb_server: EmbeddedFalkorDB) -> GraphStore:
    store = GraphStore.from_url(falkordb_server.url, "replies")
    store._query("CREATE (:Thing {name: 'a', n: 1, tags: ['x', 'y'], w: 0.5, ok: true})")
    store._query("MATCH (a:Thing) CREATE (a)-[:NEXT {at: 2}]->(:Thing {name: 'b'})")
    return store


def _library(graph: GraphStore, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
    """What falkordb-py's parser makes of the same query."""
    return graph.graph.ro_query(cypher, params).result_set


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=values, second=values)
def test_values_read_as_the_client_reads_them(graph: GraphStore, first: Any, second: Any) -> None:
    mine = graph._ro("RETURN $a, $b", {"a": first, "b": second})
    assert mine == _library(graph, "RETURN $a, $b", {"a": first, "b": second})


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (t:Thing) RETURN t.name, t.n, t.tags, t.w, t.ok, t.missing ORDER BY t.name",
        "MATCH (t:Thing) RETURN t ORDER BY t.name",  # nodes: falkordb-py's parser, with the schema
        "MATCH (:Thing)-[e:NEXT]->(b) RETURN e, b.name",
        "MATCH p = (:Thing)-[:NEXT]->(:Thing) RETURN p",
        "MATCH (t:Thing) RETURN {name: t.name, tags: t.tags} ORDER BY t.name",
        "RETURN vecf32([0.5, -1.25]), [1, 'two', null, [true]]",
        "MATCH (t:Thing {name: 'nobody'}) RETURN t.name",  # a header and no rows
    ],
)
def test_graph_values_read_as_the_client_reads_them(graph: GraphStore, cypher: str) -> None:
    assert graph._ro(cypher) == _library(graph, cypher)


def test_errors_are_raised(graph: GraphStore) -> None:
    with pytest.raises(redis.exceptions.ResponseError, match=r"[Dd]ivision by zero"):
        graph._ro("UNWIND [1, 0] AS x RETURN 1 / x")  # reported inside the reply, after a row
    with pytest.raises(redis.exceptions.ResponseError):
        graph._ro("RETURN nosuchfunction(1)")  # refused before it runs


def test_the_read_timeout_applies(graph: GraphStore, falkordb_server: EmbeddedFalkorDB) -> None:
    hasty = GraphStore.from_url(falkordb_server.url, "replies", timeout_seconds=0.001)
    with pytest.raises(StoreUnavailable):
        hasty._ro("UNWIND range(1, 20000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x)")


def _accepted_tag(tag: str) -> bool:
    try:
        check_tag(tag, 200)
    except ValueError:
        return False
    return True


# Finite: the service stores no other number (and a query parameter cannot carry one).
numbers = (
    st.none()
    | st.integers(min_value=-(2**62), max_value=2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
)
texts = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30)
stored_memories = st.fixed_dictionaries(
    {
        "tenant": texts,
        "content": texts,
        "type": st.none() | texts,
        "confidence": numbers,
        "importance": numbers,
        # Tags as validation lets them in (no commas); brackets and inner spaces included.
        "tags": st.none()
        | st.lists(
            st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
                _accepted_tag
            ),
            max_size=4,
        ),
        "metadata": st.none() | st.dictionaries(keys, scalars, max_size=3).map(json.dumps),
        "timestamp": st.none() | texts,
        "state": st.sampled_from(["active", "archived", "deleted"]),
        "version": numbers,
        "rev": numbers,
        "enriched": st.none() | st.booleans(),
        "content_hash": st.none() | st.sampled_from(["h1", "h2"]),
        "embedding_hash": st.none() | st.sampled_from(["h1", "h2"]),
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(props=stored_memories, superseding=st.booleans())
def test_the_recall_view_reads_bare_replies_as_compact_ones(
    graph: GraphStore, props: dict[str, Any], superseding: bool
) -> None:
    """recall_memories reads verbose replies by each column's kind (doubles, booleans and tag
    lists come as text): it must give what a compact read of the same projection gives."""
    memory_id = str(uuid.uuid4())
    graph._query("CREATE (m:Memory) SET m = $props", {"props": {**props, "id": memory_id}})
    if superseding:
        graph._query(
            "MATCH (m:Memory {id: $id}) CREATE (m)-[:SUPERSEDES]->(:Memory {id: 'old'})", {"id": memory_id}
        )
    compact = graph._ro(f"MATCH (m:Memory) WHERE m.id = $id RETURN {_RECALL_PROJECTION}", {"id": memory_id})
    expected = [MemoryRecord.from_values(_RECALL_COLUMNS, row) for row in compact]
    assert graph.recall_memories([memory_id]) == expected
    assert expected[0].tags == (props["tags"] or [])


others = st.fixed_dictionaries(
    {
        "type": st.none() | texts,
        "timestamp": st.none() | texts,
        "importance": numbers,
        "confidence": numbers,
        "tags": stored_memories.map(lambda m: m["tags"]),
        "content": st.none() | texts,
        "state": st.sampled_from(["active", "archived"]),
    }
)
edges = st.fixed_dictionaries(
    {"outgoing": st.booleans(), "strength": numbers, "score": numbers, "updated_at": st.none() | texts}
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(links=st.lists(st.tuples(others, edges), min_size=1, max_size=4), with_degree=st.booleans())
def test_edges_read_from_bare_replies_as_from_compact_ones(
    graph: GraphStore, links: list[tuple[dict[str, Any], dict[str, Any]]], with_degree: bool
) -> None:
    """edges_of reads a bare reply, a row an edge: the same rows as a compact read of its query."""
    memory_id = str(uuid.uuid4())
    graph._query("CREATE (:Memory {id: $id, state: 'active'})", {"id": memory_id})
    for props, edge in links:
        arrow = "(m)-[e:RELATES_TO]->(o)" if edge["outgoing"] else "(m)<-[e:RELATES_TO]-(o)"
        values = {k: v for k, v in edge.items() if k != "outgoing"}
        graph._query(
            f"MATCH (m:Memory {{id: $id}}) CREATE (o:Memory) SET o = $props CREATE {arrow} SET e = $edge",
            {"id": memory_id, "props": {**props, "id": str(uuid.uuid4())}, "edge": values},
        )
    params = {"ids": [memory_id], "types": ["RELATES_TO"], "n": 3}
    compact = graph._ro(_edges_query(with_degree), params)
    expected = {memory_id: [_edge(row[1:]) for row in compact]} if compact else {}
    assert graph.edges_of([memory_id], ["RELATES_TO"], 3, with_degree) == expected
    assert len(compact) == min(3, len(links))
