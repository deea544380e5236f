"""Embeddings live on their own graph nodes (VECTOR_LABEL), not on the memories: every memory
with an embedding has exactly one, written only when the embedding changes, removed with the
memory; a store of the older layout is migrated when the schema is ensured."""

from __future__ import annotations

from typing import Any

from automem.services import Services
from automem.stores.graph import GraphStore
from automem.stores.graph_lifecycle import VECTOR_LABEL, VECTOR_LINK
from automem.stores.recall_filter import RecallFilter
from automem.timeutil import now_iso
from tests.conftest import ADMIN_TOKEN, Api


def _vector_nodes(services: Services) -> dict[str, Any]:
    rows = services.graph._ro(f"MATCH (v:{VECTOR_LABEL}) RETURN v.id, v.tenant, v.embedding")
    return {i: (tenant, embedding) for i, tenant, embedding in rows}


def _links(graph: GraphStore) -> list[tuple[str, str]]:
    """(memory id, vector node id) of every VECTOR_LINK edge."""
    rows = graph._ro(f"MATCH (m)-[:{VECTOR_LINK}]->(v) RETURN m.id, v.id, labels(m)[0], labels(v)[0]")
    assert all(a == "Memory" and b == VECTOR_LABEL for _, _, a, b in rows)
    return sorted((m, v) for m, v, _, _ in rows)


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _unit(dimension: int, at: int) -> list[float]:
    vector = [0.0] * dimension
    vector[at] = 1.0
    return vector


def test_each_embedded_memory_has_one_vector_node_and_none_on_itself(
    api: Api, services: Services, jobs: Any
) -> None:
    dimension = services.embedder.dimension
    given = _store(api, "A memory with the client's vector", embedding=_unit(dimension, 1))
    computed = _store(api, "A memory the worker embeds")
    jobs()
    nodes = _vector_nodes(services)
    assert set(nodes) == {given, computed}
    assert nodes[given][0] == "default" and nodes[given][1][1] == 1.0
    on_memories = services.graph._ro("MATCH (m:Memory) WHERE m.embedding IS NOT NULL RETURN count(m)")
    assert on_memories[0][0] == 0
    # A PATCH of the vector replaces it in place; a PATCH of anything else leaves it alone.
    assert api.patch(f"/memory/{given}", json={"embedding": _unit(dimension, 2)}).status_code == 200
    assert api.patch(f"/memory/{given}", json={"importance": 0.9}).status_code == 200
    nodes = _vector_nodes(services)
    assert len(nodes) == 2 and nodes[given][1][2] == 1.0 and nodes[given][1][1] == 0.0
    (record,) = services.graph.get_memories([given], with_embedding=True)
    assert record.embedding is not None and record.embedding[2] == 1.0
    # Each memory reaches its vector node along one edge, whichever way the vector came.
    assert _links(services.graph) == sorted((i, i) for i in (given, computed))


def test_the_vector_node_goes_with_its_memory(api: Api, services: Services, jobs: Any) -> None:
    kept = _store(api, "A memory that stays")
    purged = _store(api, "A memory purged for good")
    jobs()
    response = api.delete(f"/memory/{purged}?hard=true", headers={"X-Admin-Token": ADMIN_TOKEN})
    assert response.status_code == 200, response.get_json()
    assert set(_vector_nodes(services)) == {kept}


def test_nearest_and_similar_search_the_vector_nodes(api: Api, services: Services, jobs: Any) -> None:
    dimension = services.embedder.dimension
    near = _store(api, "Near the probe", embedding=_unit(dimension, 5))
    _store(api, "Far from the probe", embedding=_unit(dimension, 9))
    results = api.post("/recall", json={"embedding": _unit(dimension, 5), "limit": 1}).get_json()["results"]
    assert results[0]["id"] == near
    twin = _store(api, "Near the probe as well", embedding=_unit(dimension, 5))
    assert [i for i, _ in services.graph.similar_memories_of([twin], 5, 0.99)[twin]] == [near]


def test_a_store_of_the_older_layout_is_migrated(api: Api, services: Services, jobs: Any) -> None:
    """Memories written with the embedding on the node (and the index on :Memory) are moved to
    vector nodes when the schema is ensured, and recall by vector finds them after."""
    dimension = services.embedder.dimension
    ids = [_store(api, f"An older memory {n}", embedding=_unit(dimension, n)) for n in range(3)]
    graph = services.graph
    # Put the store back in the older layout: embeddings on the memories, their own index.
    graph._query(f"MATCH (v:{VECTOR_LABEL}), (m:Memory {{id: v.id}}) SET m.embedding = v.embedding DELETE v")
    graph._query(f"DROP VECTOR INDEX FOR (v:{VECTOR_LABEL}) ON (v.embedding)")
    graph._query(
        "CREATE VECTOR INDEX FOR (m:Memory) ON (m.embedding) "
        f"OPTIONS {{dimension: {dimension}, similarityFunction: 'cosine'}}"
    )
    assert _vector_nodes(services) == {}
    stale = graph._existing_indexes()  # what a second process read before the first migrated
    graph.ensure_schema(dimension)
    graph.ensure_schema(dimension)  # again: nothing left to move
    assert graph._move_embeddings_to_vector_nodes(stale) == 0  # the index is gone: no error
    nodes = _vector_nodes(services)
    assert set(nodes) == set(ids)
    assert all(nodes[i][1][n] == 1.0 for n, i in enumerate(ids))
    assert graph._ro("MATCH (m:Memory) WHERE m.embedding IS NOT NULL RETURN count(m)")[0][0] == 0
    assert ("Memory", "vector", "embedding") not in graph._existing_indexes()
    everything = RecallFilter(tenant="default", now=now_iso())
    assert graph.nearest(_unit(dimension, 2), 10, everything, 1)[0][0] == ids[2]


def test_a_store_without_links_to_its_vector_nodes_is_linked(api: Api, services: Services, jobs: Any) -> None:
    """A store written before VECTOR_LINK gets the edges when the schema is ensured, and the
    vector search, which follows them, finds its memories after."""
    dimension = services.embedder.dimension
    ids = [
        _store(api, f"A memory from before the links {n}", embedding=_unit(dimension, n)) for n in range(3)
    ]
    graph = services.graph
    graph._query(f"MATCH ()-[r:{VECTOR_LINK}]->() DELETE r")
    everything = RecallFilter(tenant="default", now=now_iso())
    assert graph.nearest(_unit(dimension, 2), 10, everything, 1) == []
    graph.ensure_schema(dimension)
    assert _links(graph) == sorted((i, i) for i in ids)
    assert graph._link_vector_nodes() == 0  # nothing left to link
    assert graph.nearest(_unit(dimension, 2), 10, everything, 1)[0][0] == ids[2]


def test_restored_memories_are_linked_and_backups_leave_the_links_out(
    api: Api, services: Services, jobs: Any
) -> None:
    dimension = services.embedder.dimension
    ids = [_store(api, f"A memory to back up {n}", embedding=_unit(dimension, n)) for n in range(2)]
    graph = services.graph
    edges = graph.edges_window(0, graph.node_id_bound())
    assert all(e["type"] != VECTOR_LINK for e in edges)
    assert graph.graph_counts()["edges"] == len(edges)
    staged = GraphStore(graph.db, f"{graph.graph_name}_restored")
    rows = [
        {"props": {"id": i, "tenant": "default", "content": "x"}, "embedding": _unit(dimension, 3)}
        for i in ids
    ]
    assert staged.restore_memories(rows) == 2
    assert _links(staged) == sorted((i, i) for i in ids)
    assert staged.graph_counts()["edges"] == 0
