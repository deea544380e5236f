"""The graph store writes query parameters itself (a fast path for embeddings): the header must
be exactly what the falkordb client would write, and FalkorDB must read it back unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from falkordb.helpers import stringify_param_value
from hypothesis import given, settings
from hypothesis import strategies as st

from automem.embedded import EmbeddedFalkorDB
from automem.stores.graph import GraphStore, Vector32, cypher_literal, cypher_params

VALUES: list[Any] = [
    "plain",
    "",
    'quote " and back\\slash',
    "line\nbreak and tab\t and ünïcode ✓",
    None,
    True,
    False,
    0,
    -17,
    3.5,
    1e-05,
    -2.5e20,
    [0.1, -0.25, 1e-07, 123456.789],
    [1, 2.5, "x", None],
    [],
    {"a": 1, "b-c": [0.5, 0.25], "nested": {"id": "9f1c", "tags": ["x:y", "z"]}},
    [{"props": {"id": "a", "n": 1}, "embedding": [0.5] * 8}, {"props": {"id": "b"}, "embedding": None}],
]


@pytest.mark.parametrize("value", VALUES)
def test_literal_matches_the_client(value: Any) -> None:
    assert cypher_literal(value) == stringify_param_value(value)


def _keeps_every_bit(graph: GraphStore, values: list[float]) -> None:
    expected = np.array(values, dtype=np.float32)
    literal = cypher_literal(Vector32(values))
    parsed = np.array([float(x) for x in literal.strip("[]").split(",")], dtype=np.float32)
    assert np.array_equal(parsed, expected), literal
    stored = graph._query("RETURN vecf32($v)", {"v": Vector32(values)}).result_set[0][0]
    assert np.array_equal(np.array(stored, dtype=np.float32), expected)


@pytest.fixture(scope="module")
def vectors_graph(falkordb_server: EmbeddedFalkorDB) -> GraphStore:
    """One store for the vector tests and every example of the property, not a connection each."""
    return GraphStore.from_url(falkordb_server.url, "params_vectors")


def test_embeddings_keep_every_float32_bit(vectors_graph: GraphStore) -> None:
    rng = np.random.default_rng(3)
    values = [*rng.normal(scale=0.2, size=384).astype(np.float32).tolist(), 1e-30, -3.4e38, 0.1]
    _keeps_every_bit(vectors_graph, values)


# Any float32 (subnormals and the extremes included), and doubles as a client sends them: what
# FalkorDB stores is the float32 nearest to each.
_FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
_CLIENT_DOUBLE = st.floats(min_value=-3.4e38, max_value=3.4e38, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(_FLOAT32, _CLIENT_DOUBLE), min_size=1, max_size=64))
def test_any_vector_is_stored_as_its_float32_values(vectors_graph: GraphStore, values: list[float]) -> None:
    _keeps_every_bit(vectors_graph, values)


def test_bad_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        cypher_literal({"a`b": 1})
    with pytest.raises(ValueError):
        cypher_params({"": 1})


def test_values_round_trip_through_falkordb(falkordb_server: EmbeddedFalkorDB) -> None:
    graph = GraphStore.from_url(falkordb_server.url, "params_round_trip")
    params = {"s": VALUES[3], "q": VALUES[2], "v": VALUES[12], "m": VALUES[15]}
    row = graph._query("RETURN $s, $q, $v, $m", params).result_set[0]
    assert row[0] == params["s"] and row[1] == params["q"]
    assert row[2] == pytest.approx(params["v"])
    assert row[3] == params["m"]
