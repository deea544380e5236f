"""Walks over every memory (GraphStore._walk: the vector repair and audit, the reconcile's
backlog, a tenant's ids, the decay pass, the time-key migration) visit each matching memory
exactly once, whatever the node ids between them and the page and window sizes; and each walk's
query seeks its window of node ids instead of scanning an index (what keeps a walk linear)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from automem.services import Services
from automem.stores import graph as graph_module
from automem.stores.graph_lifecycle import VECTOR_LABEL
from automem.stores.time_key import TIME_KEY
from enrichment import consolidation
from tests.graph_reads import recorded_reads

# One node of the graph before the walk: a memory (state, tenant, enriched: also whether it has
# a vector node) or another node (an entity), so memories' internal ids have gaps of every size.
_memory = st.tuples(
    st.just("memory"),
    st.sampled_from(["active", "active", "deleted", "archived"]),
    st.sampled_from(["a", "b"]),
    st.booleans(),
)
_other = st.tuples(st.just("entity"), st.just(""), st.just(""), st.just(False))
VECTOR = [0.5] * 384
_nodes = st.lists(st.one_of(_memory, _other), max_size=40)


def _build(services: Services, nodes: list[tuple[str, str, str, bool]], dropped: set[int]) -> None:
    graph = services.graph
    graph._query(f"MATCH (n) WHERE n:Memory OR n:Entity OR n:{VECTOR_LABEL} DETACH DELETE n")
    for n, (kind, state, tenant, enriched) in enumerate(nodes):
        if kind == "entity":
            graph._query("CREATE (:Entity {key: $key})", {"key": f"topic:{uuid.uuid4()}"})
            continue
        props = {"id": str(uuid.uuid4()), "state": state, "tenant": tenant, "enriched": enriched}
        graph._query("CREATE (m:Memory) SET m = $p, m.rev = $n, m.version = 1", {"p": props, "n": n})
        if enriched:  # a vector node too (any flag serves: the walks read them apart)
            cypher = f"CREATE (:{VECTOR_LABEL} {{id: $id, embedding: vecf32($v)}})"
            graph._query(cypher, {"id": props["id"], "v": VECTOR})
    # Deleting some leaves holes that FalkorDB reuses for the next nodes it creates.
    for n in sorted(dropped):
        graph._query("MATCH (m:Memory) WHERE m.rev = $n DETACH DELETE m", {"n": n})


def _ids(services: Services, where: str = "true", params: dict[str, Any] | None = None) -> list[str]:
    return sorted(r[0] for r in services.graph._ro(f"MATCH (m:Memory) WHERE {where} RETURN m.id", params))


def _flat(pages: Iterator[list[Any]], limit: int) -> list[Any]:
    out = []
    for page in pages:
        assert 0 < len(page) <= limit
        out += page
    return out


_ACTIVE = ("memory", "active", "a", False)
_ENTITY = ("entity", "", "", False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Windows holding more memories than a page: the walk must go on inside the window.
@example(nodes=[_ACTIVE] * 6, dropped=set(), limit=2, span=9)
@example(nodes=[_ACTIVE, _ENTITY, _ACTIVE, _ACTIVE, _ENTITY, _ACTIVE], dropped={2}, limit=1, span=4)
@given(
    nodes=_nodes,
    dropped=st.sets(st.integers(0, 39), max_size=6),
    limit=st.integers(1, 5),
    span=st.integers(1, 9),
)
def test_every_walk_visits_each_matching_memory_once(
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    nodes: list[tuple[str, str, str, bool]],
    dropped: set[int],
    limit: int,
    span: int,
) -> None:
    monkeypatch.setattr(graph_module, "WALK_SPAN", span)
    _build(services, nodes, dropped)
    graph = services.graph
    revs = _flat(graph.revs_pages(limit), limit)
    assert sorted(i for i, _ in revs) == _ids(services)
    assert len(revs) == len({i for i, _ in revs})
    assert sorted(_flat(graph.tenant_id_pages("a", limit), limit)) == _ids(services, "m.tenant = 'a'")
    unenriched = "m.state = 'active' AND m.enriched = false"
    backlog = _flat(graph.enrichment_pages(limit, version=0), limit)
    assert sorted(i for i, _, _ in backlog) == _ids(services, unenriched)
    tenants = dict(services.graph._ro("MATCH (m:Memory) RETURN m.id, m.tenant"))
    assert all(tenants[i] == owner and version == 1 for i, owner, version in backlog)
    of_b = _flat(graph.enrichment_pages(limit, version=0, tenant="b"), limit)
    assert sorted(i for i, _, _ in of_b) == _ids(services, unenriched + " AND m.tenant = 'b'")
    scored = [doc.id for doc, _ in _flat(graph.scoring_pages(limit), limit)]
    assert sorted(scored) == _ids(services, "m.state = 'active'") and len(scored) == len(set(scored))
    with_vectors = [doc.id for doc in _flat(graph.vector_pages(limit), limit)]
    assert sorted(with_vectors) == _ids(services, "m.state = 'active' AND m.enriched")
    assert all(len(doc.embedding or []) == 384 for doc in _flat(graph.vector_pages(limit), limit))
    assert _flat(graph.vector_pages(limit, keep=0.0), limit) == []


def test_a_walk_reads_pages_in_id_order_and_the_decay_pass_counts_links(services: Services) -> None:
    _build(services, [("memory", "active", "a", False)] * 3, set())
    ids = [r[0] for r in services.graph._ro("MATCH (m:Memory) RETURN m.id ORDER BY id(m)")]
    link = "MATCH (a:Memory {id: $a}), (b:Memory {id: $b}) CREATE (a)-[:RELATES_TO]->(b)"
    services.graph._query(link, {"a": ids[0], "b": ids[2]})
    pages = list(services.graph.scoring_pages(2))
    assert [[(doc.id, links) for doc, links in page] for page in pages] == [
        [(ids[0], 1), (ids[1], 0)],
        [(ids[2], 1)],
    ]


def _plans(services: Services) -> list[str]:
    """Run every walk once and return FalkorDB's plan of each window query it sent."""
    graph = services.graph
    with recorded_reads(graph) as sent:
        for pages in (
            graph.revs_pages(10),
            graph.reembed_pages("model", True, 10),
            graph.enrichment_pages(10, version=1, tenant="a"),
            graph.tenant_id_pages("a", 10),
            graph.scoring_pages(10),
            graph.vector_pages(10, 0.1, 0.5),
        ):
            list(pages)
        graph._query(f"MATCH (m:Memory) SET m.{TIME_KEY} = null, m.timestamp = '2025-01-01T00:00:00Z'")
        graph._add_time_keys()
    plans = []
    for cypher, params in [(c, p) for c, p in sent if "walk_after" in c]:
        command = ["GRAPH.EXPLAIN", graph.graph_name, graph_module.cypher_params(params) + cypher]
        reply = graph.db.connection.execute_command(*command)
        plans.append(" / ".join((x.decode() if isinstance(x, bytes) else x).strip() for x in reply))
    return plans


def test_each_walk_seeks_its_window_of_node_ids(services: Services) -> None:
    _build(services, [("memory", "active", "a", False), ("memory", "archived", "b", True)], set())
    plans = _plans(services)
    assert len(plans) == 7
    for plan in plans:
        # An index scan of (m:Memory) would read every memory the indexed condition matches
        # for each window: a walk would grow with the square of the store again.
        assert "Node By Label and ID Scan | (m:Memory)" in plan, plan
        assert "Node By Index Scan | (m:Memory)" not in plan, plan


def test_a_cluster_pool_beyond_its_budget_is_a_uniform_sample(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond CLUSTER_VECTOR_BUDGET the clustering pass reads a sample in one walk: drawn from
    the whole store, not the first memories the walk meets (the first twenty here)."""
    _build(services, [("memory", "active", "a", True)] * 80, set())
    monkeypatch.setattr(consolidation, "CLUSTER_EXACT_LIMIT", 20)
    monkeypatch.setattr(consolidation, "CLUSTER_VECTOR_BUDGET", 0)
    in_order = [r[0] for r in services.graph._ro("MATCH (m:Memory) RETURN m.id ORDER BY id(m)")]
    docs, unit, sampled = consolidation.Consolidator(services)._cluster_pool()
    assert sampled and 0 < len(docs) <= 20 and unit.shape == (len(docs), 384)
    assert len({d.id for d in docs}) == len(docs)
    # Each memory is kept with probability 1/4: all from the first twenty has odds 0.75^60.
    assert {d.id for d in docs} - set(in_order[:20])
    monkeypatch.setattr(consolidation, "CLUSTER_EXACT_LIMIT", 100)
    docs, unit, sampled = consolidation.Consolidator(services)._cluster_pool()
    assert not sampled and sorted(d.id for d in docs) == sorted(in_order)
