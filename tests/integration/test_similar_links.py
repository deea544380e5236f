"""SIMILAR_TO links of an embedding job's vectors, searched and written for the whole job at once
(`GraphStore.similar_memories_of`, `GraphStore.link_similar_many`): the same neighbours as one
search a memory, the same edges as a model of the write, and one memory at a time again when the
batch fails."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.stores.graph import GraphStore
from automem.stores.graph_lifecycle import VECTOR_LABEL, VECTOR_LINK
from tests.conftest import Api

DIMENSION = 4
NOW = "2026-11-29T00:00:00+00:00"

components = st.integers(min_value=-4, max_value=4)
vectors = st.lists(components, min_size=DIMENSION, max_size=DIMENSION).filter(any)
memories = st.lists(
    st.tuples(vectors, st.sampled_from(["t1", "t2"]), st.sampled_from(["active", "active", "deleted"])),
    min_size=2,
    max_size=9,
)


@contextmanager
def _fresh(server: EmbeddedFalkorDB) -> Iterator[GraphStore]:
    graph = GraphStore.from_url(server.url, f"similar_{uuid.uuid4().hex[:12]}")
    graph.ensure_schema(DIMENSION)
    try:
        yield graph
    finally:
        graph.graph.delete()


def _add(graph: GraphStore, spec: list[tuple[list[int], str, str]]) -> list[str]:
    ids = [f"m{n}" for n in range(len(spec))]
    for memory_id, (vector, tenant, state) in zip(ids, spec, strict=True):
        graph._query(
            f"CREATE (:Memory {{id: $id, tenant: $tenant, state: $state}})-[:{VECTOR_LINK}]->"
            f"(:{VECTOR_LABEL} {{id: $id, tenant: $tenant, embedding: vecf32($v)}})",
            {"id": memory_id, "tenant": tenant, "state": state, "v": [float(x) for x in vector]},
        )
    return ids


def _edges(graph: GraphStore) -> dict[tuple[str, str], float]:
    rows = graph._ro("MATCH (a:Memory)-[r:SIMILAR_TO]->(b:Memory) RETURN a.id, b.id, r.score")
    return {(a, b): score for a, b, score in rows}


def _cosine(a: list[int], b: list[int]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=memories, threshold=st.sampled_from([-1.0, 0.0, 0.5, 0.9]), data=st.data())
def test_one_search_for_many_finds_what_a_search_each_finds(
    falkordb_server: EmbeddedFalkorDB, spec: list[tuple[list[int], str, str]], threshold: float, data: Any
) -> None:
    with _fresh(falkordb_server) as graph:
        ids = _add(graph, spec)
        asked = [*data.draw(st.lists(st.sampled_from(ids), unique=True, min_size=1)), "missing"]
        k = len(ids)  # no cut, so ties at the k-th place cannot pick differently
        many = graph.similar_memories_of(asked, k, threshold)
        assert set(many) == set(asked) and many["missing"] == []
        for memory_id in asked[:-1]:
            one = graph.similar_memories_of([memory_id], k, threshold)[memory_id]
            assert sorted(i for i, _ in many[memory_id]) == sorted(i for i, _ in one)
            vector, tenant, _ = spec[ids.index(memory_id)]
            for other, similarity in many[memory_id]:
                other_vector, other_tenant, other_state = spec[ids.index(other)]
                assert other_tenant == tenant and other_state == "active" and other != memory_id
                assert similarity == pytest.approx(_cosine(vector, other_vector), abs=1e-5)
            scores = [s for _, s in many[memory_id]]
            assert scores == sorted(scores, reverse=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=memories, data=st.data())
def test_linking_many_replaces_their_edges_with_the_pairs_they_chose(
    falkordb_server: EmbeddedFalkorDB, spec: list[tuple[list[int], str, str]], data: Any
) -> None:
    with _fresh(falkordb_server) as graph:
        ids = _add(graph, spec)
        tenant_of = {i: tenant for i, (_, tenant, _) in zip(ids, spec, strict=True)}
        pairs = st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1])
        for a, b in data.draw(st.lists(pairs, max_size=8)):  # edges from before
            graph._query(
                "MATCH (a:Memory {id: $a}), (b:Memory {id: $b}) MERGE (a)-[:SIMILAR_TO {score: 0.1}]->(b)",
                {"a": a, "b": b},
            )
        before = _edges(graph)
        batch = data.draw(st.lists(st.sampled_from(ids), unique=True, min_size=1))
        choice = st.tuples(st.sampled_from([*ids, "missing"]), st.floats(min_value=0.0, max_value=1.0))
        neighbours = {i: data.draw(st.lists(choice, max_size=4)) for i in batch}

        linked = graph.link_similar_many(neighbours, NOW)

        expected = {e: s for e, s in before.items() if e[0] not in batch and e[1] not in batch}
        chosen: dict[frozenset[str], float] = {}
        for memory_id, found in neighbours.items():
            for other, similarity in found:
                if other in tenant_of and other != memory_id and tenant_of[other] == tenant_of[memory_id]:
                    pair = frozenset((memory_id, other))
                    chosen[pair] = max(chosen.get(pair, -1.0), round(similarity, 4))
        for pair, score in chosen.items():
            a, b = sorted(pair)
            expected[(a, b)] = expected[(b, a)] = score
        after = _edges(graph)
        assert after.keys() == expected.keys()
        assert all(after[e] == pytest.approx(expected[e]) for e in after)
        assert linked == len(chosen)


def _store_batch(api: Api, contents: list[str]) -> list[str]:
    response = api.post("/memory/batch", json={"memories": [{"content": c} for c in contents]})
    assert response.status_code == 201, response.get_json()
    return [str(r["memory_id"]) for r in response.get_json()["results"]]


NOTES = [
    "The nightly backup job copies the Postgres data directory to S3.",
    "The nightly backup job copies the Postgres data directory to S3 at 2am.",
    "Nightly, the backup job copies Postgres data to S3.",
    "Completely unrelated: my cat likes tuna.",
]


def test_a_failed_batch_link_falls_back_to_one_memory_at_a_time(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> int:
        raise ValueError("a batch the graph refuses")

    monkeypatch.setattr(services.graph, "link_similar_many", broken)
    ids = _store_batch(api, NOTES)
    jobs()
    graph = services.graph
    expected = {
        (a, b)
        for a in ids
        for b, _ in services.similar.one(a, services.settings.enrichment_similarity_limit, 0.8)
    }
    assert expected, "the backup notes are each other's neighbours"
    linked = {(a, b) for a, b in _edges(graph)}
    assert expected <= linked and all((b, a) in linked for a, b in linked)
    assert not any(ids[3] in pair for pair in linked)


def test_an_embedding_job_links_its_vectors_with_one_search_and_one_write(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    graph = services.graph

    def recorded(name: str) -> Callable[..., Any]:
        real = getattr(graph, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real(*args, **kwargs)

        return call

    for name in ("similar_memories_of", "link_similar", "link_similar_many"):
        monkeypatch.setattr(graph, name, recorded(name))
    ids = _store_batch(api, NOTES)
    jobs()
    assert calls == ["similar_memories_of", "link_similar_many"]
    neighbours = {b for a, b in _edges(graph) if a == ids[0]}
    assert neighbours == {ids[1], ids[2]}
