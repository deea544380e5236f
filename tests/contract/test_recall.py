"""AutoMem §2.9-2.10: GET /recall with AutoMem's parameters, aliases and leniency, answered with
its fields; GET /memories/<id>/related."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api
from tests.contract.automem import RECALL, RECALL_ITEM, RELATED, assert_error, assert_fields


@pytest.fixture
def seeded(api: Api, jobs: Any) -> dict[str, str]:
    ids = {}
    for key, content, tags in (
        ("pg", "Chose PostgreSQL for ACID transactions", ["project:alpha", "db"]),
        ("mongo", "MongoDB was considered and rejected", ["project:alpha"]),
        ("deploy", "Deploys run on Fridays after the review", ["ops"]),
    ):
        body = {"content": content, "tags": tags, "timestamp": "2025-01-10T10:00:00Z"}
        ids[key] = api.post("/memory", json=body).get_json()["memory_id"]
    jobs()
    return ids


def test_recall_answers_automems_fields(api: Api, seeded: dict[str, str]) -> None:
    body = api.get("/recall?query=PostgreSQL%20transactions&limit=2").get_json()
    assert_fields(body, RECALL)
    assert body["vector_search"]["enabled"] is True and body["results"]
    first = body["results"][0]
    assert_fields(first, RECALL_ITEM)
    assert first["id"] == seeded["pg"] and first["final_score"] == first["score"]
    assert first["source"] == "qdrant" and "score_components" in first


def test_aliases(api: Api, seeded: dict[str, str]) -> None:
    listed = api.get("/recall?tags=project&order_by=time_asc&expand=false&entity_expansion=false").get_json()
    assert listed["sort"] == "time_asc" and {r["id"] for r in listed["results"]} == {
        seeded["pg"],
        seeded["mongo"],
    }
    timed = api.get("/recall?time=last%20year&limit=10").get_json()
    assert timed["count"] == 0 or timed["time_window"]  # `time` is `time_query`
    assert api.get("/recall?query=deploys&current_only=false").get_json()["state_mode"] == "history"


def test_leniency(api: Api, seeded: dict[str, str]) -> None:
    body = api.get("/recall?query=postgres&limit=500&tag_mode=some&tag_match=fuzzy&sort=best").get_json()
    assert (body["limit"], body["tag_mode"], body["tag_match"], body["sort"]) == (
        100,
        "any",
        "prefix",
        "score",
    )
    assert api.get("/recall?query=postgres&min_score=7").get_json()["score_filter"]["min_score"] == 1.0
    # AutoMem options this service does not have are accepted.
    assert (
        api.get("/recall?query=postgres&recency_bias=on&adaptive_floor=true&lang=python").status_code == 200
    )


def test_errors_automem_also_gives(api: Api) -> None:
    assert_error(api.get("/recall?query=x&state_mode=everything"), 400)
    assert_error(api.get("/recall?query=x&start=yesterday-ish"), 400)
    assert_error(api.get("/recall?embedding=0.1,0.2"), 400)


def test_several_queries_are_merged(api: Api, seeded: dict[str, str]) -> None:
    body = api.get("/recall?queries=PostgreSQL%20ACID&queries=Fridays%20deploys&limit=5").get_json()
    assert body["queries"] == ["PostgreSQL ACID", "Fridays deploys"]
    found = {r["id"]: r["_query"] for r in body["results"]}
    assert found[seeded["pg"]] == "PostgreSQL ACID" and found[seeded["deploy"]] == "Fridays deploys"
    assert len(found) == body["count"]


def test_related(api: Api, seeded: dict[str, str]) -> None:
    api.post(
        "/associate", json={"memory1_id": seeded["pg"], "memory2_id": seeded["mongo"], "type": "PREFERS_OVER"}
    )
    body = api.get(f"/memories/{seeded['pg']}/related?relationship_types=PREFERS_OVER,explains").get_json()
    assert_fields(body, RELATED)
    assert [m["id"] for m in body["related_memories"]] == [seeded["mongo"]]
    assert body["relationship_types"] == ["PREFERS_OVER", "DISCOVERED"]
    clamped = api.get(f"/memories/{seeded['pg']}/related?max_depth=9&limit=999").get_json()
    assert (clamped["max_depth"], clamped["limit"]) == (3, 200)
