"""Read queries parse FalkorDB's compact replies themselves (`automem.stores.graph.read_rows`):
every value a real server returns must come back exactly as falkordb-py's own parser gives it."""

from __future__ import annotations

from typing import Any

import pytest
import redis.exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.embedded import EmbeddedFalkorDB
from automem.errors import StoreUnavailable
from automem.stores.graph import GraphStore

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
