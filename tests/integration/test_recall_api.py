"""Recall, associations and related memories against the real embedded stack."""

from __future__ import annotations

import math
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from automem.services import Services
from automem.stores.vectors.qdrant_edge import CHECKED_POINT_WEIGHT, HALF_PRECISION
from tests.conftest import Api


def store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["memory_id"]  # type: ignore[no-any-return]


def recall(api: Api, **params: Any) -> dict[str, Any]:
    response = api.post("/recall", json=params)
    assert response.status_code == 200, response.get_json()
    return response.get_json()  # type: ignore[no-any-return]


def ids(body: dict[str, Any]) -> list[str]:
    return [r["id"] for r in body["results"]]


def contents(body: dict[str, Any]) -> list[str]:
    return [r["memory"]["content"] for r in body["results"]]


@pytest.fixture
def corpus(api: Api, jobs: Any) -> dict[str, str]:
    rows = {
        "pg": (
            "We chose PostgreSQL over MongoDB for ACID transactions",
            ["project:db"],
            "Decision",
            "2025-01-10T10:00:00Z",
            0.9,
        ),
        "tabs": (
            "Alice prefers tabs over spaces in Python code",
            ["people:alice", "style"],
            "Preference",
            "2025-02-10T10:00:00Z",
            0.6,
        ),
        "deploy": (
            "Deploys run through GitHub Actions every Friday",
            ["project:ci"],
            "Habit",
            "2025-03-10T10:00:00Z",
            0.5,
        ),
        "outage": (
            "The database outage was caused by a missing index",
            ["project:db", "incident"],
            "Insight",
            "2025-03-20T10:00:00Z",
            0.8,
        ),
    }
    ids = {
        key: store(api, c, tags=t, type=ty, timestamp=ts, importance=imp)
        for key, (c, t, ty, ts, imp) in rows.items()
    }
    jobs()
    return ids


def test_search_result_shape_and_timings(api: Api, corpus: dict[str, str]) -> None:
    body = api.get("/recall?query=PostgreSQL MongoDB&limit=3").get_json()
    assert body["status"] == "success" and body["count"] == len(body["results"]) <= 3
    top = body["results"][0]
    assert top["id"] == corpus["pg"]
    assert set(top) >= {"id", "memory", "score", "score_components", "channels", "relations", "match_type"}
    assert "keyword" in top["channels"] and 0 < top["score"] <= 1
    assert {"vector", "keyword", "fusion", "hydrate", "total"} <= set(body["timings_ms"])
    assert body["filters"]["tags"] == [] and body["state_mode"] == "current"


def test_get_and_post_agree(api: Api, corpus: dict[str, str]) -> None:
    via_get = api.get("/recall?query=tabs&tags=people&limit=2").get_json()
    via_post = recall(api, query="tabs", tags=["people"], limit=2)
    assert [r["id"] for r in via_get["results"]] == [r["id"] for r in via_post["results"]] == [corpus["tabs"]]


def test_tag_scope_is_identical_in_every_channel(api: Api, corpus: dict[str, str]) -> None:
    scoped = recall(api, query="database PostgreSQL tabs GitHub", tags=["project:db"], limit=10)
    assert {r["id"] for r in scoped["results"]} == {corpus["pg"], corpus["outage"]}
    every = recall(api, query="database", tags=["project:db", "incident"], tag_mode="all", limit=10)
    assert [r["id"] for r in every["results"]] == [corpus["outage"]]
    exact = recall(api, query="database", tags=["project"], tag_match="exact", limit=10)
    assert exact["results"] == []
    excluded = recall(api, query="database PostgreSQL", exclude_tags=["incident"], limit=10)
    assert corpus["outage"] not in {r["id"] for r in excluded["results"]}


def test_types_and_time_filters(api: Api, corpus: dict[str, str]) -> None:
    decisions = recall(api, query="database", types=["decision"], limit=10)
    assert [r["id"] for r in decisions["results"]] == [corpus["pg"]]
    march = recall(api, query="database outage deploys", start="2025-03-01", end="2025-03-31", limit=10)
    assert {r["id"] for r in march["results"]} == {corpus["deploy"], corpus["outage"]}
    phrase = api.get("/recall?query=database&time_query=in March 2025").get_json()
    assert {r["id"] for r in phrase["results"]} <= {corpus["deploy"], corpus["outage"]}
    assert phrase["time_window"]["start"].startswith("2025-03-01")


def test_listing_without_query(api: Api, corpus: dict[str, str]) -> None:
    by_importance = recall(api, tags=["project"], limit=10)
    assert [r["id"] for r in by_importance["results"]] == [corpus["pg"], corpus["outage"], corpus["deploy"]]
    assert by_importance["mode"] == "listing" and by_importance["results"][0]["score"] == 0.9
    newest = recall(api, tags=["project"], sort="time_desc", limit=2)
    assert [r["id"] for r in newest["results"]] == [corpus["outage"], corpus["deploy"]]
    oldest = recall(api, time_query="since 2025-01-01", limit=1)  # time window alone lists newest first
    assert oldest["sort"] == "time_desc" and oldest["results"][0]["id"] == corpus["outage"]


def test_context_tags_boost_and_min_score(api: Api, corpus: dict[str, str]) -> None:
    plain = {r["id"]: r for r in recall(api, query="Python code spaces", limit=10)["results"]}
    boosted = {
        r["id"]: r
        for r in recall(api, query="Python code spaces", context_tags=["style"], limit=10)["results"]
    }
    assert boosted[corpus["tabs"]]["score_components"]["context"] == 1.0
    assert boosted[corpus["tabs"]]["score"] > plain[corpus["tabs"]]["score"]
    assert boosted[corpus["pg"]]["score"] == plain[corpus["pg"]]["score"]
    high = recall(api, query="PostgreSQL", min_score=0.5)["results"]
    assert high and all(r["score"] >= 0.5 for r in high)
    assert len(recall(api, query="PostgreSQL", min_score=0.5)["results"]) < len(plain)


def test_client_embedding_in_recall(api: Api, services: Services, corpus: dict[str, str]) -> None:
    vector = services.embedder.embed_one("We chose PostgreSQL over MongoDB for ACID transactions")
    body = recall(api, embedding=vector, limit=1)
    assert body["results"][0]["id"] == corpus["pg"] and body["results"][0]["channels"] == ["vector"]
    bad = api.post("/recall", json={"embedding": [0.1, 0.2]})
    assert bad.status_code == 400 and bad.get_json()["field"] == "embedding"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"state_mode": "all"}, "state_mode"),
        ({"types": ["Opinion"]}, "types"),
        ({"start": "not a date"}, "start"),
        ({"time_query": "next week"}, "time_query"),
        ({"start": "2025-02-01", "end": "2025-01-01"}, "time_query"),
        ({"reference_time": "last tuesday"}, "reference_time"),
    ],
)
def test_bad_recall_parameters(api: Api, params: dict[str, Any], field: str) -> None:
    response = api.post("/recall", json=params)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["field"] == field


@pytest.mark.parametrize(
    ("params", "echoed"),
    [
        ({"limit": 0}, {"limit": 1}),
        ({"limit": 101}, {"limit": 100}),
        ({"limit": "many"}, {"limit": 5}),
        ({"tag_mode": "some"}, {"tag_mode": "any"}),
        ({"tag_match": "fuzzy"}, {"tag_match": "prefix"}),
        ({"sort": "random"}, {"sort": "score"}),
        ({"min_score": 2}, {"min_score": 1.0}),
        ({"min_score": -1}, {"min_score": 0.0}),
        ({"relation_limit": -1}, {}),
    ],
)
def test_out_of_range_parameters_are_clamped_as_automem_does(
    api: Api, params: dict[str, Any], echoed: dict[str, Any]
) -> None:
    response = api.post("/recall", json={"query": "anything", **params})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert {key: body[key] for key in echoed} == echoed


def test_state_rules(api: Api, services: Services, jobs: Any) -> None:
    old = store(api, "The office is in Berlin", tags=["office"])
    new = store(api, "The office moved to Munich", tags=["office"])
    newest = store(api, "The office is now in Hamburg", tags=["office"])
    expired = store(api, "The office badge code is 1234", tags=["office"], t_invalid="2020-01-01T00:00:00Z")
    future = store(api, "The office opens a Paris branch", tags=["office"], t_valid="2999-01-01T00:00:00Z")
    deleted = store(api, "The office had a plant", tags=["office"])
    api.delete(f"/memory/{deleted}")
    for a, b in ((old, new), (new, newest)):
        assert (
            api.post(
                "/associate", json={"memory1_id": a, "memory2_id": b, "type": "EVOLVED_INTO"}
            ).status_code
            == 201
        )
    jobs()
    current = recall(api, query="office Berlin", tags=["office"], limit=10)
    ids = [r["id"] for r in current["results"]]
    assert (
        old not in ids and new not in ids and expired not in ids and future not in ids and deleted not in ids
    )
    head = next(r for r in current["results"] if r["id"] == newest)
    assert head["match_type"] in ("state_replacement", "hybrid", "vector", "keyword")
    history = recall(api, query="office", tags=["office"], state_mode="history", limit=10)
    assert {old, new, newest, expired, future} <= {r["id"] for r in history["results"]}
    assert deleted not in {r["id"] for r in history["results"]}


def test_supersession_cycle_is_safe(api: Api, jobs: Any) -> None:
    a = store(api, "cycle alpha statement", tags=["cyc"])
    b = store(api, "cycle beta statement", tags=["cyc"])
    api.post(
        "/associate",
        json={
            "associations": [
                {"memory1_id": a, "memory2_id": b, "type": "INVALIDATED_BY"},
                {"memory1_id": b, "memory2_id": a, "type": "INVALIDATED_BY"},
            ]
        },
    )
    jobs()
    body = recall(api, query="cycle statement", tags=["cyc"], limit=5)
    assert len(body["results"]) <= 2


def test_expansion_ranks_neighbours_with_the_seeds(api: Api, jobs: Any) -> None:
    seed = store(api, "Kubernetes cluster autoscaling settings", tags=["exp"])
    linked = store(api, "Unrelated words about lunch", tags=["exp"])
    other = store(api, "Completely different text here", tags=["exp"])
    api.post(
        "/associate", json={"memory1_id": seed, "memory2_id": linked, "type": "RELATES_TO", "strength": 1.0}
    )
    jobs()
    body = recall(api, query="Kubernetes autoscaling", tags=["exp"], limit=3)
    ranked = [r["id"] for r in body["results"]]
    assert ranked[0] == seed
    assert other not in ranked or ranked.index(linked) < ranked.index(other)
    neighbour = next(r for r in body["results"] if r["id"] == linked)
    assert "graph" in neighbour["channels"] and neighbour["expanded_from"][0]["id"] == seed
    assert body["results"][0]["relations"][0]["memory"]["id"] == linked
    off = recall(api, query="Kubernetes autoscaling", tags=["exp"], limit=3, expand_relations=False)
    assert all("graph" not in r["channels"] for r in off["results"])


def test_edges_carry_the_other_end_s_degree_and_the_display_read_the_same_edges(
    api: Api, services: Services, jobs: Any
) -> None:
    """Expansion damps a hub by the memory links at the other end of an edge (the graph counts
    them); the relations shown with results read the same edges without counting (degree 0)."""
    hub = store(api, "hub memory", tags=["deg"])
    spokes = [store(api, f"spoke {n}", tags=["deg"]) for n in range(5)]
    for spoke in spokes:
        api.post("/associate", json={"memory1_id": spoke, "memory2_id": hub, "type": "RELATES_TO"})
    jobs()
    counted = services.graph.edges_of([spokes[0]], ["RELATES_TO", "LEADS_TO"], 5)[spokes[0]]
    assert [(e["id"], e["degree"]) for e in counted] == [(hub, 5)]
    shown = services.graph.edges_of([spokes[0]], ["RELATES_TO", "LEADS_TO"], 5, with_degree=False)
    assert [{**e, "degree": 5} for e in shown[spokes[0]]] == counted


# --- POST /associate ---------------------------------------------------------------------
def test_associate_single_and_errors(api: Api, corpus: dict[str, str]) -> None:
    ok = api.post(
        "/associate",
        json={
            "memory1_id": corpus["pg"],
            "memory2_id": corpus["outage"],
            "type": "leads_to",
            "strength": 0.7,
        },
    )
    assert ok.status_code == 201 and ok.get_json()["relation_type"] == "LEADS_TO"
    cases = [
        ({"memory2_id": corpus["pg"]}, 400, "memory1_id"),
        ({"memory1_id": "nope", "memory2_id": corpus["pg"]}, 400, "memory1_id"),
        ({"memory1_id": corpus["pg"], "memory2_id": corpus["pg"]}, 400, "memory2_id"),
        ({"memory1_id": corpus["pg"], "memory2_id": corpus["tabs"], "type": "SIMILAR_TO"}, 400, "type"),
        ({"memory1_id": corpus["pg"], "memory2_id": corpus["tabs"], "type": "LIKES"}, 400, "type"),
        ({"memory1_id": corpus["pg"], "memory2_id": corpus["tabs"], "strength": 1.5}, 400, "strength"),
        ({"memory1_id": corpus["pg"], "memory2_id": corpus["tabs"], "strength": "high"}, 400, "strength"),
        ({"memory1_id": corpus["pg"], "memory2_id": str(uuid.uuid4())}, 404, "memory1_id"),
    ]
    for body, status, field in cases:
        response = api.post("/associate", json=body)
        assert response.status_code == status, (body, response.get_json())
        assert response.get_json()["field"] == field


def test_associate_batch_201_and_207(api: Api, corpus: dict[str, str]) -> None:
    good = [
        {
            "memory1_id": corpus["pg"],
            "memory2_id": corpus["tabs"],
            "type": "PREFERS_OVER",
            "reason": "team habit",
        },
        {"memory1_id": corpus["deploy"], "memory2_id": corpus["outage"], "type": "PART_OF", "role": "x"},
    ]
    all_ok = api.post("/associate", json={"associations": good})
    assert all_ok.status_code == 201 and all_ok.get_json()["created_count"] == 2
    mixed = api.post(
        "/associate",
        json={
            "associations": [
                *good,
                {"memory1_id": corpus["pg"], "memory2_id": corpus["pg"]},
                {"memory1_id": corpus["pg"], "memory2_id": str(uuid.uuid4())},
            ]
        },
    )
    assert mixed.status_code == 207
    body = mixed.get_json()
    assert body["status"] == "partial_success" and body["created_count"] == 2
    assert [f["index"] for f in body["failed"]] == [2, 3]
    for bad in ({"associations": []}, {"associations": "x"}, {"associations": [good[0]] * 501}):
        assert api.post("/associate", json=bad).status_code == 400


# --- GET /memories/<id>/related ------------------------------------------------------------
def test_related(api: Api, corpus: dict[str, str]) -> None:
    api.post(
        "/associate",
        json={
            "associations": [
                {"memory1_id": corpus["pg"], "memory2_id": corpus["outage"], "type": "LEADS_TO"},
                {"memory1_id": corpus["outage"], "memory2_id": corpus["deploy"], "type": "RELATES_TO"},
            ]
        },
    )
    one = api.get(f"/memories/{corpus['pg']}/related").get_json()
    assert [m["id"] for m in one["related_memories"]] == [corpus["outage"]]
    two = api.get(f"/memories/{corpus['pg']}/related?max_depth=2").get_json()
    assert {m["id"] for m in two["related_memories"]} == {corpus["outage"], corpus["deploy"]}
    only = api.get(f"/memories/{corpus['pg']}/related?max_depth=2&relationship_types=LEADS_TO").get_json()
    assert [m["id"] for m in only["related_memories"]] == [corpus["outage"]]
    assert api.get(f"/memories/{uuid.uuid4()}/related").status_code == 404
    # As AutoMem: max_depth is clamped to 1..3, unknown type names are left out (none left: the
    # authorable types), its older names map to DISCOVERED.
    deep = api.get(f"/memories/{corpus['pg']}/related?max_depth=4&limit=0").get_json()
    assert (deep["max_depth"], deep["limit"]) == (3, 1)
    unknown = api.get(f"/memories/{corpus['pg']}/related?relationship_types=NOPE").get_json()
    assert [m["id"] for m in unknown["related_memories"]] == [corpus["outage"]]
    legacy = api.get(f"/memories/{corpus['pg']}/related?relationship_types=EXPLAINS,NOPE").get_json()
    assert legacy["relationship_types"] == ["DISCOVERED"] and legacy["count"] == 0


def test_access_bookkeeping_happens_off_the_request_path(api: Api, services: Services, jobs: Any) -> None:
    memory_id = store(api, "Grafana dashboards live in the ops folder", tags=["acc"])
    jobs()
    before = services.graph.get_memory(memory_id)
    assert before is not None
    for _ in range(2):
        assert recall(api, query="Grafana dashboards", tags=["acc"])["results"][0]["id"] == memory_id
    unchanged = services.graph.get_memory(memory_id)
    assert unchanged is not None and unchanged.last_accessed == before.last_accessed  # not yet
    jobs()
    counted = services.graph._ro(
        "MATCH (m:Memory {id: $id}) RETURN m.access_count, m.last_accessed, m.version", {"id": memory_id}
    )[0]
    assert counted[0] == 2 and counted[1] > str(before.last_accessed) and counted[2] == before.version


def test_access_bookkeeping_waits_to_batch_many_recalls(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rq import Queue

    memory_id = store(api, "Alerts page the on-call engineer", tags=["acc"])
    jobs()
    delayed = services.settings.model_copy(update={"access_flush_delay_seconds": 5.0})
    monkeypatch.setattr(services.jobs, "settings", delayed)
    for _ in range(3):
        assert recall(api, query="on-call alerts", tags=["acc"])["results"][0]["id"] == memory_id
    maintenance = Queue("maintenance", connection=services.queue_redis)
    # One flush for the three recalls, waiting in RQ's scheduled registry, none queued yet.
    assert maintenance.count == 0 and maintenance.scheduled_job_registry.count == 1


# --- payload copies stand in for the graph only when current ----------------------------------
def test_a_lagging_payload_never_answers(api: Api, services: Services, jobs: Any) -> None:
    memory_id = store(api, "The staging cluster runs on spot instances", tags=["infra"])
    jobs()
    fresh = recall(api, query="staging cluster spot instances")
    assert fresh["results"][0]["memory"]["content"] == "The staging cluster runs on spot instances"
    # Change the graph behind the vector store's back: its payload now lags by one rev.
    doc = services.graph.get_memory(memory_id)
    assert doc is not None
    services.graph.update_memory(memory_id, {"importance": 0.95, "tags": ["infra", "moved"]}, doc.version)
    lagging = recall(api, query="staging cluster spot instances")
    memory = lagging["results"][0]["memory"]
    assert memory["importance"] == 0.95
    assert memory["tags"] == ["infra", "moved"]


def test_recalled_memories_keep_the_public_shape(api: Api, jobs: Any) -> None:
    memory_id = store(api, "Prefer tabs over spaces in Go code", metadata={"source": "review"})
    jobs()
    via_recall = recall(api, query="tabs spaces Go")["results"][0]["memory"]
    via_get = api.get(f"/memory/{memory_id}").get_json()["memory"]
    assert via_recall == via_get


def test_time_sorted_search_picks_the_newest_matches_not_the_best(api: Api, jobs: Any) -> None:
    ids = []
    for day in range(1, 16):
        # The oldest memories match the query best; time order must still win.
        text = f"kafka consumer lag alert on host-{day}" + (
            " kafka consumer lag" * (16 - day) if day < 4 else ""
        )
        ids.append(store(api, text, tags=["ops"], timestamp=f"2025-03-{day:02d}T09:00:00Z"))
    jobs()
    body = recall(api, query="kafka consumer lag", tags=["ops"], sort="time_desc", limit=3)
    assert [r["id"] for r in body["results"]] == [ids[14], ids[13], ids[12]]


def test_beyond_the_exact_search_limit_the_graph_index_answers_alike(
    api: Api, services: Services, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above RECALL_EXACT_SEARCH_LIMIT the vector channel asks the graph's HNSW index (on four
    memories it is exact), with the same scores; a filter that selects no more than the limit
    goes to the exact search without asking the index."""
    from automem.stores.recall_filter import RecallFilter
    from automem.timeutil import now_iso

    assert services.vectors is not None
    query = services.embedder.embed_one("database transactions")
    flt = RecallFilter.build(
        tenant="default",
        now=now_iso(),
        tags=[],
        tag_mode="any",
        tag_match="prefix",
        exclude_tags=["style"],
        types=[],
        window=None,
        state_mode="current",
    )
    exact = services.vectors.search(list(query), 10, flt.vector_filter(), with_payload=False)
    graph = services.graph.nearest(list(query), 40, flt, 10)
    assert [i for i, _ in graph] == [h.id for h in exact] and corpus["tabs"] not in dict(graph)
    # The graph holds float32 vectors, the Edge shard float16 ones (AUTOMEM_EDGE_VECTOR_DATATYPE):
    # the same cosine to within HALF_PRECISION.
    assert [s for _, s in graph] == pytest.approx([h.score for h in exact], abs=HALF_PRECISION)

    params = {"query": "database transactions", "limit": 3, "expand_relations": False}
    before = recall(api, **params)
    engine = api.client.application.extensions["automem.recall"]
    # On four memories the index's candidates never cost less than the exact search: cost 0.
    beyond = {"recall_exact_search_limit": 1, "recall_index_candidate_cost": 0.0}
    monkeypatch.setattr(services, "settings", services.settings.model_copy(update=beyond))
    asked: list[int] = []
    original = services.graph.nearest
    monkeypatch.setattr(services.graph, "nearest", lambda *a: asked.append(1) or original(*a))
    engine._points_read_at = -1e9  # re-read the point count now
    after = recall(api, **params)
    assert asked and contents(after) == contents(before)
    assert [r["score"] for r in after["results"]] == pytest.approx(
        [r["score"] for r in before["results"]], abs=HALF_PRECISION
    )
    asked.clear()
    # One memory carries the tag: the payload index says so, and the exact search answers alone.
    narrow = recall(api, query="database", tags=["incident"], limit=3)
    assert [r["id"] for r in narrow["results"]] == [corpus["outage"]] and not asked


def test_a_filter_s_share_of_the_store_sets_the_index_over_fetch_or_the_exact_search(
    api: Api, services: Services, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond RECALL_EXACT_SEARCH_LIMIT the index is asked for enough candidates that twice the
    wanted pass the filter: more as the filter's share of the store shrinks. When that many
    candidates, at RECALL_INDEX_CANDIDATE_COST points each, cost more than the exact search of
    the filter's points, the exact search answers without asking the index. Every path answers
    the same memories."""
    assert services.vectors is not None
    scopes: dict[str, dict[str, Any]] = {"plain": {}, "db": {"tags": ["project:db"]}}
    params = {"query": "database transactions outage", "limit": 3, "expand_relations": False}

    def found(scope: dict[str, Any]) -> list[str]:
        return [r["id"] for r in recall(api, **params, **scope)["results"]]

    exact = {name: found(scope) for name, scope in scopes.items()}
    assert set(exact["db"]) == {corpus["pg"], corpus["outage"]}
    engine = api.client.application.extensions["automem.recall"]
    asked: list[int] = []
    original = services.graph.nearest
    monkeypatch.setattr(services.graph, "nearest", lambda *a: asked.append(a[1]) or original(*a))
    points, fetch = services.vectors.count(), services.settings.recall_candidates

    def answers(cost: float) -> dict[str, tuple[list[str], list[int]]]:
        update = {"recall_exact_search_limit": 1, "recall_index_candidate_cost": cost}
        monkeypatch.setattr(services, "settings", services.settings.model_copy(update=update))
        engine._points_read_at = -1e9
        out = {}
        for name, scope in scopes.items():
            asked.clear()
            out[name] = (found(scope), list(asked))
        return out

    # Cost 0: the index always; the two of the store's points in project:db need its share's over-fetch.
    always = answers(0.0)
    assert always["plain"] == (exact["plain"], [2 * fetch])
    assert always["db"] == (exact["db"], [math.ceil(2 * fetch * points / 2)])
    # Between the two: the whole store pays for its candidates, the narrow scope does not.
    cost = points / (2 * fetch) / 2
    chosen = answers(cost)
    assert chosen["plain"] == (exact["plain"], [2 * fetch])
    assert chosen["db"] == (exact["db"], [])
    # That holds for a filter the shard's payload index answers alone (one tenant, every memory
    # active: only the tag is left). A filter checked point by point weighs each point more
    # (CHECKED_POINT_WEIGHT), and the same cost asks the index.
    weighed: list[Any] = []
    real_weight = services.vectors.exact_point_weight
    monkeypatch.setattr(
        services.vectors,
        "exact_point_weight",
        lambda f: weighed.append(real_weight(f)) or CHECKED_POINT_WEIGHT,
    )
    checked = answers(cost)
    assert checked["db"] == (exact["db"], [math.ceil(2 * fetch * points / 2)])
    assert weighed and set(weighed) == {1.0}


def test_recalls_in_flight_weigh_the_exact_search_once_each(
    api: Api, services: Services, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact search holds this process's GIL and the shard, so each recall in flight pays
    for it: a cost that leaves a narrow scope to the exact search when its recall is alone asks
    the index while another recall is under way, and both answer what they answer alone."""
    assert services.vectors is not None
    db = {"query": "database transactions outage", "limit": 3, "tags": ["project:db"]}
    plain = {"query": "release train schedule", "limit": 3}
    alone = {name: ids(recall(api, **params)) for name, params in (("db", db), ("plain", plain))}
    engine = api.client.application.extensions["automem.recall"]
    points, fetch = services.vectors.count(), services.settings.recall_candidates
    db_candidates = math.ceil(2 * fetch * points / 2)
    assert db_candidates != 2 * fetch  # the plain recall's request tells them apart below
    # The db scope's two points weigh 2 a recall: its candidates cost 3, more than one recall's
    # exact search and less than two recalls'.
    update = {"recall_exact_search_limit": 1, "recall_index_candidate_cost": 3 / db_candidates}
    monkeypatch.setattr(services, "settings", services.settings.model_copy(update=update))
    engine._points_read_at = -1e9
    asked: list[int] = []
    entered, release = threading.Event(), threading.Event()
    original = services.graph.nearest

    def nearest(*a: Any) -> Any:
        asked.append(a[1])
        if a[1] == 2 * fetch:  # the plain recall (the whole store) waits, in flight
            entered.set()
            assert release.wait(30)
        return original(*a)

    monkeypatch.setattr(services.graph, "nearest", nearest)
    assert ids(recall(api, **db)) == alone["db"]
    assert asked == []  # alone: the exact search
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(recall, api, **plain)
        assert entered.wait(30)
        assert ids(recall(api, **db)) == alone["db"]
        release.set()
        assert ids(other.result(30)) == alone["plain"]
    assert asked == [2 * fetch, db_candidates]
    assert engine._in_flight == 0


def test_a_scope_s_point_estimate_is_kept_and_a_stale_one_still_answers_right(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact-or-graph choice reads Edge's estimate of a scope once per POINT_COUNT_TTL.
    Whatever the kept estimate says after the scope grew or shrank, the answer holds every
    matching memory: the exact search is exact, and the graph's search falls back to it."""
    assert services.vectors is not None
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"recall_exact_search_limit": 2})
    )
    engine = api.client.application.extensions["automem.recall"]
    engine._points_read_at = -1e9
    counted: list[int] = []
    original_count = services.vectors.count
    monkeypatch.setattr(
        services.vectors, "count", lambda *a, **k: counted.append(1) or original_count(*a, **k)
    )
    for n in range(3):  # the store beyond the limit, so the scope decides the path
        store(api, f"unrelated note number {n} about gardening")
    first = store(api, "kettle descaling with citric acid", tags=["kitchen"])
    jobs()
    assert [r["id"] for r in recall(api, query="kettle descaling", tags=["kitchen"])["results"]] == [first]
    asked = len(counted)
    recall(api, query="kettle descaling", tags=["kitchen"])
    assert len(counted) == asked  # the scope's estimate was kept (the store's total too)

    grown = [store(api, f"kettle descaling method {n}", tags=["kitchen"]) for n in range(3)]
    jobs()  # the kept estimate (1: narrow) is stale now: 4 memories in the scope, limit 2
    found = {r["id"] for r in recall(api, query="kettle descaling", tags=["kitchen"])["results"]}
    assert found == {first, *grown}

    engine._scope_counts.clear()  # estimate the grown scope (wide), then shrink it to one
    recall(api, query="kettle descaling", tags=["kitchen"])
    for memory_id in grown:
        assert api.delete(f"/memory/{memory_id}").status_code == 200
    jobs()
    assert [r["id"] for r in recall(api, query="kettle descaling", tags=["kitchen"])["results"]] == [first]


def test_an_association_answers_its_strength_as_the_graph_keeps_it(api: Api, corpus: dict[str, str]) -> None:
    """FalkorDB returns doubles with 15 significant digits: what a write answers is what every
    read (and a backup) gives afterwards, not the 17 digits sent."""
    sent = 0.30000000000000004
    pair = {"memory1_id": corpus["pg"], "memory2_id": corpus["outage"], "type": "LEADS_TO"}
    single = api.post("/associate", json={**pair, "strength": sent}).get_json()
    batch = api.post(
        "/associate", json={"associations": [{**pair, "type": "RELATES_TO", "strength": sent}]}
    ).get_json()
    found = recall(api, query="PostgreSQL MongoDB transactions", limit=5, relation_limit=10)
    edges = next(r["relations"] for r in found["results"] if r["id"] == corpus["pg"])
    read = {e["type"]: e["strength"] for e in edges}
    assert single["strength"] == read["LEADS_TO"] == 0.3
    assert batch["succeeded"][0]["strength"] == read["RELATES_TO"] == 0.3


def test_a_time_the_query_names_lifts_the_memories_of_that_time(api: Api, jobs: Any) -> None:
    """Two memories about as relevant to the words; the question names "the past weekend", asked
    on a Tuesday (reference_time): the one written that weekend ranks first, and the answer says
    which time it read. Without a time, or with a window of the request's own (which filters
    instead), no time prior applies."""
    weekend = store(api, "I serviced the bike and replaced its chain", timestamp="2023-03-19T07:00:00Z")
    earlier = store(api, "I serviced the bike and replaced its brakes", timestamp="2023-03-08T07:00:00Z")
    jobs()
    asked = {"reference_time": "2023-03-21T21:43:00Z", "limit": 2}
    body = recall(api, query="Which bike did I service the past weekend?", **asked)
    assert [r["id"] for r in body["results"]] == [weekend, earlier]
    assert body["named_time"] == {
        "text": "the past weekend",
        "label": "weekend of 18 March 2023",
        "start": "2023-03-18",
        "end": "2023-03-20",
    }
    first, second = body["results"]
    assert first["score_components"]["time"] == 1.0 and second["score_components"]["time"] == 0.0
    assert first["score"] > second["score"]
    plain = recall(api, query="Which bike did I service?", **asked)
    assert plain["named_time"] is None and "time" not in plain["results"][0]["score_components"]
    windowed = recall(api, query="Which bike did I service the past weekend?", time_query="2023-03", **asked)
    assert windowed["named_time"] is None and len(windowed["results"]) == 2


def test_a_tag_the_query_names_lifts_the_memories_carrying_it(api: Api, jobs: Any) -> None:
    """Two memories about as relevant to the words, one per speaker: the question that names a
    speaker ranks that speaker's first, and the answer says which tags it read as named."""
    ann = store(api, "I like hiking in the mountains", tags=["speaker:ann"])
    bob = store(api, "I like hiking in the hills", tags=["speaker:bob"])
    jobs()
    for name, first, second in (("Ann", ann, bob), ("Bob", bob, ann)):
        body = recall(api, query=f"What does {name} like?", limit=2)
        assert body["named_tags"] == [f"speaker:{name.lower()}"]
        assert [r["id"] for r in body["results"]] == [first, second]
        assert [r["score_components"]["tag"] for r in body["results"]] == [1.0, 0.0]
    plain = recall(api, query="What do they like?", limit=2)
    assert plain["named_tags"] == [] and "tag" not in plain["results"][0]["score_components"]
    listed = recall(api, tags=["speaker"], limit=2)
    assert listed["named_tags"] == []


def test_a_date_resolved_in_the_words_places_a_memory_in_the_named_time(api: Api, jobs: Any) -> None:
    """Written on Monday about "last weekend": enrichment resolved that to 18-19 March, so a
    question about the past weekend counts it as a memory of that time."""
    told = store(api, "We went sailing on the lake last weekend", timestamp="2023-03-20T09:00:00Z")
    other = store(api, "We went sailing on the lake in the autumn", timestamp="2023-03-01T09:00:00Z")
    jobs()
    body = recall(
        api, query="Where did we go sailing the past weekend?", reference_time="2023-03-21T10:00:00Z"
    )
    components = {r["id"]: r["score_components"] for r in body["results"]}
    assert components[told]["time"] == 1.0 and components[other]["time"] == 0.0


def test_time_query_resolves_against_the_reference_time(api: Api, jobs: Any) -> None:
    """`time_query=yesterday` asked "on" 21 March 2023 is 20 March 2023, not the day before now."""
    that_day = store(api, "The release went out after the freeze", timestamp="2023-03-20T15:00:00Z")
    store(api, "The release went out after the review", timestamp="2023-03-19T15:00:00Z")
    jobs()
    body = recall(api, query="release", time_query="yesterday", reference_time="2023-03-21T09:00:00Z")
    assert [r["id"] for r in body["results"]] == [that_day]
    assert body["time_window"] == {
        "start": "2023-03-20T00:00:00.000000+00:00",
        "end": "2023-03-21T00:00:00.000000+00:00",
    }
    assert recall(api, query="release", time_query="yesterday")["results"] == []
