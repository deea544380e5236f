"""Similar memories from the vector store where the graph keeps no vector index (server mode,
`automem.similarity`): the same neighbours the graph's index finds, the same links and semantic
neighbours through the service, and the index dropped and built again as GRAPH_VECTOR_INDEX
says."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.settings import Settings
from automem.similarity import GraphSimilar, VectorStoreSimilar
from automem.stores.graph import VECTOR_INDEX, GraphStore
from automem.stores.graph_lifecycle import VECTOR_LABEL, VECTOR_LINK
from automem.stores.vectors import VectorPoint, VectorStore
from automem.stores.vectors.qdrant_edge import EdgeVectorStore
from automem.stores.vectors.qdrant_server import QdrantVectorStore
from tests.conftest import Api, make_settings
from tests.integration.test_similar_links import DIMENSION, NOTES, _cosine, memories

THRESHOLDS = [-1.0, 0.0, 0.3, 0.8]


@contextmanager
def _stores(server: EmbeddedFalkorDB, root: Path, backend: str) -> Iterator[tuple[GraphStore, VectorStore]]:
    graph = GraphStore.from_url(server.url, f"similarity_{uuid.uuid4().hex[:12]}")
    graph.ensure_schema(DIMENSION)
    place = root / uuid.uuid4().hex[:8]
    store: VectorStore = (
        EdgeVectorStore(str(place))
        if backend == "edge"
        else QdrantVectorStore.from_settings(None, None, str(place), "memories", 5.0)
    )
    store.ensure_collection(DIMENSION)
    try:
        yield graph, store
    finally:
        store.close()
        graph.graph.delete()


def _add(graph: GraphStore, store: VectorStore, spec: list[tuple[list[int], str, str]]) -> list[str]:
    """The same memories in both: a memory and its vector node in the graph, a point with the
    payload fields the service writes in the vector store."""
    ids = [str(uuid.uuid4()) for _ in spec]
    for memory_id, (vector, tenant, state) in zip(ids, spec, strict=True):
        floats = [float(x) for x in vector]
        graph._query(
            f"CREATE (:Memory {{id: $id, tenant: $tenant, state: $state}})-[:{VECTOR_LINK}]->"
            f"(:{VECTOR_LABEL} {{id: $id, tenant: $tenant, embedding: vecf32($v)}})",
            {"id": memory_id, "tenant": tenant, "state": state, "v": floats},
        )
        store.upsert([VectorPoint(memory_id, floats, {"tenant": tenant, "state": state, "rev": 1})])
    return ids


@pytest.mark.parametrize("backend", ["edge", "qdrant"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=memories, threshold=st.sampled_from(THRESHOLDS), data=st.data())
def test_the_vector_store_finds_what_the_graphs_index_finds(
    falkordb_server: EmbeddedFalkorDB,
    tmp_path: Path,
    backend: str,
    spec: list[tuple[list[int], str, str]],
    threshold: float,
    data: Any,
) -> None:
    with _stores(falkordb_server, tmp_path, backend) as (graph, store):
        ids = _add(graph, store, spec)
        asked = [*data.draw(st.lists(st.sampled_from(ids), unique=True, min_size=1)), str(uuid.uuid4())]
        k = len(ids)  # no cut, so ties at the k-th place cannot pick differently
        from_graph = GraphSimilar(graph).of(asked, k, threshold)
        from_store = VectorStoreSimilar(store).of(asked, k, threshold)
        assert set(from_store) == set(asked) and from_store[asked[-1]] == []
        for memory_id in asked[:-1]:
            vector = spec[ids.index(memory_id)][0]

            def clear(other: str, vector: list[int] = vector) -> bool:
                # Two engines may round a cosine that lies on the threshold to either side.
                return abs(_cosine(vector, spec[ids.index(other)][0]) - threshold) > 1e-3

            found = from_store[memory_id]
            assert {i for i, _ in found if clear(i)} == {i for i, _ in from_graph[memory_id] if clear(i)}
            for other, similarity in found:
                assert similarity == pytest.approx(_cosine(vector, spec[ids.index(other)][0]), abs=1e-3)
            scores = [s for _, s in found]
            assert scores == sorted(scores, reverse=True)


@pytest.fixture
def settings_server_mode(falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path) -> Settings:
    """qdrant-client's local mode standing in for a Qdrant server (server mode)."""
    return make_settings(
        falkordb_server.url, tmp_path / "data", vector_backend="qdrant", qdrant_path=str(tmp_path / "qdrant")
    )


@pytest.fixture(params=["edge", "server"])
def settings(request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, tmp_path: Path) -> Settings:
    if request.param == "edge":
        return make_settings(falkordb_server.url, tmp_path / "data")
    return request.getfixturevalue("settings_server_mode")


def _vector_index(graph: GraphStore) -> bool:
    return VECTOR_INDEX in graph._existing_indexes()


def test_links_and_semantic_neighbours_from_either_source(api: Api, services: Services, jobs: Any) -> None:
    server_mode = services.settings.resolved_vector_backend() == "qdrant"
    assert _vector_index(services.graph) is not server_mode
    assert isinstance(services.similar, VectorStoreSimilar if server_mode else GraphSimilar)
    response = api.post("/memory/batch", json={"memories": [{"content": c} for c in NOTES]})
    ids = [str(r["memory_id"]) for r in response.get_json()["results"]]
    jobs()
    rows = services.graph._ro("MATCH (a:Memory)-[:SIMILAR_TO]->(b:Memory) RETURN a.id, b.id")
    assert {b for a, b in rows if a == ids[0]} == {ids[1], ids[2]}
    assert not any(ids[3] in (a, b) for a, b in rows)
    body = api.get(f"/graph/neighbors/{ids[3]}?depth=1&semantic_limit=3").get_json()
    assert body["meta"]["semantic_source"] == ("vector_store" if server_mode else "graph_vector_index")
    semantic = body["semantic_neighbors"]
    assert len(semantic) == 3 and ids[3] not in {n["id"] for n in semantic}
    assert [n["similarity"] for n in semantic] == sorted((n["similarity"] for n in semantic), reverse=True)


def test_the_index_is_dropped_and_built_again_as_the_setting_says(
    services: Services, api: Api, jobs: Any
) -> None:
    graph, dimension = services.graph, services.embedder.dimension
    response = api.post("/memory/batch", json={"memories": [{"content": c} for c in NOTES]})
    ids = [str(r["memory_id"]) for r in response.get_json()["results"]]
    jobs()
    graph.ensure_schema(dimension, vector_index=False)
    assert not _vector_index(graph)
    graph.ensure_schema(dimension, vector_index=False)  # idempotent: nothing left to drop
    graph.ensure_schema(dimension)
    assert _vector_index(graph)
    # Built again over the vectors already in the graph.
    assert {i for i, _ in GraphSimilar(graph).one(ids[0], 3, 0.8)} == {ids[1], ids[2]}


def test_off_needs_a_vector_store_every_process_reaches(
    falkordb_server: EmbeddedFalkorDB, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match="GRAPH_VECTOR_INDEX=off needs the qdrant vector backend"):
        make_settings(falkordb_server.url, tmp_path, graph_vector_index="off")
    edge = make_settings(falkordb_server.url, tmp_path)
    server = make_settings(falkordb_server.url, tmp_path, vector_backend="qdrant", qdrant_url="http://q:6333")
    assert edge.graph_vector_index_wanted() and not server.graph_vector_index_wanted()
    kept = make_settings(
        falkordb_server.url,
        tmp_path,
        vector_backend="qdrant",
        qdrant_url="http://q:6333",
        graph_vector_index="on",
    )
    assert kept.graph_vector_index_wanted()


def test_processes_starting_together_drop_the_index_once(falkordb_server: EmbeddedFalkorDB) -> None:
    """The API and the worker start together: both find the index and drop it; neither fails."""
    name = f"similarity_{uuid.uuid4().hex[:12]}"
    GraphStore.from_url(falkordb_server.url, name).ensure_schema(DIMENSION)
    stores = [GraphStore.from_url(falkordb_server.url, name) for _ in range(4)]
    existing = stores[0]._existing_indexes()
    assert VECTOR_INDEX in existing
    barrier = threading.Barrier(len(stores))
    failures: list[BaseException] = []

    def drop(store: GraphStore) -> None:
        barrier.wait()
        try:
            store._drop_vector_index(existing)  # each saw the index before any dropped it
        except BaseException as exc:  # the assertion below reports it
            failures.append(exc)

    threads = [threading.Thread(target=drop, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        assert failures == [] and not _vector_index(stores[0])
    finally:
        stores[0].graph.delete()
