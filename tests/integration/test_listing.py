"""Ordered listings read from the vector store's payload indexes (automem.listing) must equal the
graph's own ordering exactly — ties on importance and on timestamp included — on both vector
backends, and must give way to the graph whenever a payload lags it."""

from __future__ import annotations

import itertools
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from automem.embedded import EmbeddedFalkorDB
from automem.listing import RANK_SPAN, WAITING_LIMIT, listed_docs, tag_filter
from automem.services import Services
from automem.settings import Settings
from automem.stores.recall_filter import RecallFilter
from automem.tags import tag_prefixes
from automem.timeutil import now_iso
from automem.vectorsync import RANK_CHECK_SECONDS, UNRANKED, VectorSync, payload_for
from tests.conftest import ADMIN_TOKEN, Api, make_settings

TAGS = ["alpha", "alpha:one", "alpha:two", "beta", "gamma:x"]
ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


@pytest.fixture(params=["edge", "qdrant"])
def settings(
    request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> Settings:
    if request.param == "edge":
        return make_settings(falkordb_server.url, tmp_path / "data")
    return make_settings(
        falkordb_server.url, tmp_path / "data", vector_backend="qdrant", qdrant_path=str(tmp_path / "q")
    )


@pytest.fixture
def corpus(api: Api) -> list[str]:
    """120 memories with few distinct importances and timestamps: ties everywhere."""
    rng = random.Random(5)
    memories = [
        {
            "content": f"listing memory {n}",
            "tags": rng.sample(TAGS, rng.randint(1, 3)),
            "importance": rng.choice([0.2, 0.5, 0.5, 0.9]),
            "timestamp": f"2025-0{rng.randint(1, 3)}-0{rng.randint(1, 2)}T00:00:00Z",
        }
        for n in range(120)
    ]
    response = api.post("/memory/batch", json={"memories": memories})
    assert response.status_code == 201
    return [r["id"] for r in response.get_json()["results"]]


def _graph_page(services: Services, tags: list[str], mode: Any, match: Any, limit: int, offset: int) -> list:
    docs = services.graph.by_tag(tags, tenant="default", mode=mode, match=match, limit=limit, offset=offset)
    return [d.id for d in docs]


@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize(
    ("tags", "mode", "match"),
    [
        (["alpha"], "any", "prefix"),
        (["alpha:one", "beta"], "any", "exact"),
        (["alpha", "beta"], "all", "prefix"),
        (["gamma:x"], "any", "exact"),
    ],
)
def test_by_tag_pages_equal_the_graph_order(
    services: Services, corpus: list[str], tags: list[str], mode: Any, match: Any, ranked: bool
) -> None:
    assert services.vectors is not None
    for limit, offset in itertools.product((1, 7, 50), (0, 3, 40)):
        flt = tag_filter("default", tags, mode, match)
        listed = listed_docs(
            services.graph,
            services.vectors,
            flt,
            "importance",
            offset + limit,
            waiting=[],
            payload_of=payload_for,
            ranked=ranked,
        )
        assert listed is not None
        assert [d.id for d in listed[offset:]] == _graph_page(services, tags, mode, match, limit, offset)


@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize("order", ["importance", "time_desc", "time_asc"])
def test_recall_listing_orders_equal_the_graph(
    services: Services, corpus: list[str], order: Any, ranked: bool
) -> None:
    assert services.vectors is not None
    flt = RecallFilter.build(
        tenant="default",
        now=now_iso(),
        tags=["alpha"],
        tag_mode="any",
        tag_match="prefix",
        exclude_tags=["alpha:two"],
        types=[],
        window=None,
        state_mode="current",
    )
    for count in (1, 10, 33, 200):
        listed = listed_docs(
            services.graph,
            services.vectors,
            flt.vector_filter(),
            order,
            count,
            waiting=[],
            payload_of=payload_for,
            ranked=ranked,
        )
        assert listed is not None
        assert [d.id for d in listed] == [d.id for d in services.graph.list_memories(flt, order, count)]


def test_the_route_answers_from_the_index_and_from_the_graph_alike(
    api: Api, services: Services, corpus: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    query = {"tags": "alpha", "limit": 20, "offset": 5}
    from_index = api.get("/memory/by-tag", query_string=query).get_json()
    monkeypatch.setattr(services.sync, "waiting_ids", lambda limit: None)  # too many waiting: graph
    from_graph = api.get("/memory/by-tag", query_string=query).get_json()
    assert from_index == from_graph and from_index["count"] == 20


def test_a_lagging_payload_sends_the_listing_to_the_graph(
    api: Api, services: Services, corpus: list[str]
) -> None:
    assert services.vectors is not None
    first = api.get("/memory/by-tag", query_string={"tags": "alpha", "limit": 1}).get_json()["memories"][0]
    # The graph moves on without the payload (a worker's change the owner has not applied yet).
    services.graph._query(
        "MATCH (m:Memory {id: $id}) SET m.rev = m.rev + 1, m.importance = 0.01", {"id": first["id"]}
    )
    flt = tag_filter("default", ["alpha"], "any", "prefix")
    assert (
        listed_docs(
            services.graph, services.vectors, flt, "importance", 5, waiting=[], payload_of=payload_for
        )
        is None
    )
    page = api.get("/memory/by-tag", query_string={"tags": "alpha", "limit": 200}).get_json()["memories"]
    assert page[-1]["id"] == first["id"] and page[-1]["importance"] == 0.01


@pytest.mark.parametrize("sort", ["importance", "time_desc", "time_asc"])
def test_recall_pages_join_into_the_long_page(api: Api, corpus: list[str], sort: str) -> None:
    """Recall's `offset` pages a listing: pages of 7 laid end to end are the first 35."""
    base = {"sort": sort, "tags": ["alpha"], "expand_relations": False}
    whole = api.post("/recall", json={**base, "limit": 35}).get_json()
    pages = [api.post("/recall", json={**base, "limit": 7, "offset": o}).get_json() for o in range(0, 35, 7)]
    assert [p["offset"] for p in pages] == [0, 7, 14, 21, 28]
    joined = [r["id"] for p in pages for r in p["results"]]
    assert joined == [r["id"] for r in whole["results"]] and len(joined) == 35


def test_recall_min_importance_keeps_only_the_important(api: Api, corpus: list[str]) -> None:
    scope = {"limit": 100, "sort": "time_desc", "tags": ["gamma"]}  # ~50 of the 120
    every = api.post("/recall", json=scope).get_json()["results"]
    kept = api.post("/recall", json={**scope, "min_importance": 0.5}).get_json()
    assert len(every) < 100
    expected = [r["id"] for r in every if r["memory"]["importance"] >= 0.5]
    assert [r["id"] for r in kept["results"]] == expected and 0 < len(expected) < len(every)
    assert kept["filters"]["min_importance"] == 0.5
    searched = api.post("/recall", json={"query": "listing memory", "limit": 50, "min_importance": 0.9})
    assert searched.status_code == 200
    assert all(r["memory"]["importance"] >= 0.9 for r in searched.get_json()["results"])


# A worker's change to a memory, made in the graph and handed to the owner, not applied yet.
Change = tuple[int, str, int]
changes_strategy = st.lists(
    st.tuples(st.integers(0, 119), st.sampled_from(["tags", "importance", "delete", "purge"]), st.integers()),
    min_size=1,
    max_size=8,
)
queries_strategy = st.tuples(
    st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True),
    st.sampled_from(["any", "all"]),
    st.sampled_from(["prefix", "exact"]),
    st.sampled_from([1, 5, 20, 60]),
)


def _change_in_the_graph(services: Services, memory_id: str, kind: str, seed: int) -> None:
    rng = random.Random(seed)
    if kind == "purge":
        services.graph._query("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory_id})
        return
    if kind == "tags":
        tags = rng.sample(TAGS, rng.randint(1, 3))
        change = "m.tags = $tags, m.tag_prefixes = $prefixes"
        params: dict[str, Any] = {"tags": tags, "prefixes": tag_prefixes(tags)}
    elif kind == "importance":
        change, params = "m.importance = $importance", {"importance": rng.choice([0.1, 0.5, 0.9, 1.0])}
    else:
        change, params = "m.state = 'deleted'", {}
    services.graph._query(
        f"MATCH (m:Memory {{id: $id}}) SET {change}, m.rev = m.rev + 1", {"id": memory_id, **params}
    )


@hypothesis_settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=changes_strategy, query=queries_strategy)
def test_listings_place_the_memories_whose_hand_offs_wait(
    services: Services, corpus: list[str], changes: list[Change], query: tuple[list[str], Any, Any, int]
) -> None:
    """While a worker's changes wait for the owner (a few always do while enrichment runs), the
    index still answers, and its page is the graph's: the waiting memories are read from the
    graph and placed by their new tags, importance and state, or left out when purged."""
    worker = VectorSync(services.graph, None, services.queue_redis)  # a worker holds no store
    for index, kind, seed in changes:
        _change_in_the_graph(services, corpus[index], kind, seed)
        worker.request([corpus[index]], payload_only=kind != "purge")
    tags, mode, match, limit = query
    listed = services.sync.listed(tag_filter("default", tags, mode, match), "importance", limit)
    services.sync.drain_all()
    assert listed is not None
    assert [d.id for d in listed] == _graph_page(services, tags, mode, match, limit, 0)


def test_with_too_many_hand_offs_waiting_the_graph_sorts(services: Services, corpus: list[str]) -> None:
    worker = VectorSync(services.graph, None, services.queue_redis)
    for memory_id in corpus[: WAITING_LIMIT // 100 + 1]:
        worker.request([memory_id] * 100, payload_only=True)
    assert services.sync.waiting_ids(WAITING_LIMIT) is not None  # ids counted once
    for n in range(WAITING_LIMIT + 1):
        worker.request([corpus[n % len(corpus)]], payload_only=True)
    assert services.sync.waiting_ids(WAITING_LIMIT) is None
    assert services.sync.listed(tag_filter("default", ["alpha"], "any", "prefix"), "importance", 5) is None


# Importances closer than RANK_SPAN (the ranked walk's time part) and timestamps from far apart to
# the same second: a rank cannot order these alone, so the walk must see it and stay exact.
close_importances = st.sampled_from(
    [0.5, 0.5 + 3e-7, 0.5 + RANK_SPAN, 0.5 - 5e-7, 0.5 - RANK_SPAN / 2, 0.7, 1.0, 0.0]
)
moments = st.sampled_from(
    [
        "1969-07-20T20:17:00Z",
        "2001-01-01T00:00:00Z",
        "2025-03-01T10:00:00Z",
        "2025-03-01T10:00:00.500000Z",
        "2025-03-01T10:00:01Z",
        "2025-03-01T10:00:03Z",
        "2199-12-31T00:00:00Z",
    ]
)


@hypothesis_settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    memories=st.lists(st.tuples(close_importances, moments), min_size=1, max_size=40),
    limit=st.sampled_from([1, 2, 5, 17]),
)
# The crossing itself: the higher importance is older by more than its lead is worth in rank.
@example(memories=[(0.5, "2199-12-31T00:00:00Z"), (0.5 + 3e-7, "1969-07-20T20:17:00Z")], limit=1)
@example(
    memories=[
        (0.7, "2025-03-01T10:00:00Z"),
        (0.5, "2199-12-31T00:00:00Z"),
        (0.5 + 3e-7, "2001-01-01T00:00:00Z"),
    ],
    limit=2,
)
def test_ranked_pages_equal_the_graph_order_however_close_the_keys(
    api: Api, services: Services, memories: list[tuple[float, str]], limit: int
) -> None:
    assert services.vectors is not None and services.sync.ranked()
    tag = f"close-{random.getrandbits(40):x}"  # each example lists only its own memories
    batch = [
        {"content": f"close {n}", "tags": [tag], "importance": importance, "timestamp": moment}
        for n, (importance, moment) in enumerate(memories)
    ]
    assert api.post("/memory/batch", json={"memories": batch}).status_code == 201
    flt = tag_filter("default", [tag], "any", "exact")
    for count in (limit, len(memories)):
        listed = listed_docs(
            services.graph,
            services.vectors,
            flt,
            "importance",
            count,
            waiting=[],
            payload_of=payload_for,
            ranked=True,
        )
        assert listed is not None
        assert [d.id for d in listed] == _graph_page(services, [tag], "any", "exact", count, 0)


def _forget_ranks(services: Services, ids: list[str]) -> None:
    """Points as a version before ranks wrote them (the backend's own call: no adapter drops a
    payload key)."""
    store: Any = services.vectors
    if store.backend == "edge":
        store._open_existing().update(
            qe.UpdateOperation.delete_payload([uuid.UUID(i) for i in ids], ["rank"])
        )
    else:
        store.client.delete_payload(store.collection, keys=["rank"], points=ids)


def test_points_written_before_ranks_get_them(api: Api, services: Services, corpus: list[str]) -> None:
    assert services.vectors is not None
    sync = services.sync
    _forget_ranks(services, corpus[:70])
    sync._ranked, sync._rank_checked_at = False, -RANK_CHECK_SECONDS
    assert not sync.ranked() and services.vectors.count(UNRANKED) == 70
    before = api.get("/memory/by-tag", query_string={"tags": "alpha", "limit": 30}).get_json()
    # A point rewritten meanwhile (its rev moved on) keeps its newer payload.
    changed = corpus[0]
    api.patch(f"/memory/{changed}", json={"importance": 0.33})
    sync.drain_all()
    assert sync.fill_ranks(page=16) == 69
    assert sync.ranked() and services.vectors.count(UNRANKED) == 0
    point = services.vectors.retrieve([changed], fields=("rank", "importance"))[0]
    assert point.payload["importance"] == 0.33 and point.payload["rank"] == pytest.approx(0.33, abs=RANK_SPAN)
    after = api.get("/memory/by-tag", query_string={"tags": "alpha", "limit": 30}).get_json()
    assert [m["id"] for m in after["memories"]] == _graph_page(services, ["alpha"], "any", "prefix", 30, 0)
    assert before["count"] == after["count"] == 30


def test_admin_sync_ranks_what_lacks_a_rank(api: Api, services: Services, corpus: list[str]) -> None:
    """Server mode has no shard owner to start: POST /admin/sync gives old points their ranks."""
    _forget_ranks(services, corpus[:5])
    body = api.post("/admin/sync", headers=ADMIN).get_json()
    assert (body["status"], body["ranked"]) == ("already_synced", 5)
    assert services.vectors is not None and services.vectors.count(UNRANKED) == 0
    assert api.post("/admin/sync", json={"all": True}, headers=ADMIN).get_json()["ranked"] == 0
