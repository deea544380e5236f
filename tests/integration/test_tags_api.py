"""GET /memory/by-tag and GET /tags."""

from __future__ import annotations

from typing import Any

import pytest

from automem.listing import INDEX_PAGE_LIMIT
from automem.models import MAX_OFFSET
from automem.tags import canonical_prefix, normalize_tags, tag_prefixes
from tests.conftest import Api


def seed(api: Api) -> dict[str, str]:
    rows = [
        ("general chat", ["slack:channel:general"], 0.5, "2025-01-01T00:00:00Z"),
        ("random chat", ["slack:channel:random"], 0.9, "2025-01-02T00:00:00Z"),
        ("dm", ["slack:user:u1", "urgent"], 0.5, "2025-01-03T00:00:00Z"),
        ("project note", ["project-x", "urgent"], 0.7, "2025-01-04T00:00:00Z"),
        ("slacker", ["slacker"], 1.0, "2025-01-05T00:00:00Z"),
    ]
    ids = {}
    for content, tags, importance, ts in rows:
        response = api.post(
            "/memory", json={"content": content, "tags": tags, "importance": importance, "timestamp": ts}
        )
        assert response.status_code == 201
        ids[content] = response.get_json()["memory_id"]
    return ids


def contents(response: Any) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [item["content"] for item in response.get_json()["memories"]]


def test_prefix_matching_whole_segments_and_order(api: Api) -> None:
    seed(api)
    # importance desc, then timestamp desc; `slack` never matches `slacker`
    assert contents(api.get("/memory/by-tag?tags=slack")) == ["random chat", "dm", "general chat"]
    assert contents(api.get("/memory/by-tag?tags=slack:channel")) == ["random chat", "general chat"]
    assert contents(api.get("/memory/by-tag?tags=slack/channel")) == ["random chat", "general chat"]
    assert contents(api.get("/memory/by-tag?tags=SLACK:channel:general")) == ["general chat"]


def test_any_all_and_exact(api: Api) -> None:
    seed(api)
    assert contents(api.get("/memory/by-tag?tags=project-x&tags=slack:user")) == ["project note", "dm"]
    assert contents(api.get("/memory/by-tag?tags=urgent,slack&tag_mode=all")) == ["dm"]
    assert contents(api.get("/memory/by-tag?tags=slack&tag_match=exact")) == []
    assert contents(api.get("/memory/by-tag?tags=slack:user:u1&tag_match=exact")) == ["dm"]


def test_result_shape_and_paging(api: Api) -> None:
    seed(api)
    first = api.get("/memory/by-tag?tags=slack&limit=2").get_json()
    assert first["count"] == 2 and first["has_more"] is True
    item = first["memories"][0]  # AutoMem's flat memory object, scored by its importance
    assert set(item) >= {"id", "content", "tags", "importance", "metadata", "timestamp", "type", "score"}
    assert item["score"] == item["importance"] == 0.9
    rest = api.get("/memory/by-tag?tags=slack&limit=2&offset=2").get_json()
    assert rest["count"] == 1 and rest["has_more"] is False


def test_a_page_deeper_than_the_index_walk_is_read_from_the_graph(api: Api) -> None:
    seed(api)
    deep = api.get(f"/memory/by-tag?tags=slack&offset={MAX_OFFSET}")
    assert deep.status_code == 200
    assert deep.get_json()["count"] == 0 and deep.get_json()["has_more"] is False
    just_past = api.get(f"/memory/by-tag?tags=slack&limit=1&offset={INDEX_PAGE_LIMIT}").get_json()
    assert just_past["count"] == 0


@pytest.mark.parametrize("query", ["", "tags=", "tags=a&tag_mode=some", "tags=a&tag_match=fuzzy"])
def test_bad_by_tag_queries(api: Api, query: str) -> None:
    response = api.get(f"/memory/by-tag?{query}")
    assert response.status_code == 400
    assert response.get_json()["status"] == "error" and response.get_json()["field"]


@pytest.mark.parametrize(
    ("query", "limit", "offset"),
    [
        ("tags=a&limit=0", 1, 0),
        ("tags=a&limit=201", 200, 0),
        ("tags=a&limit=ten", 50, 0),
        ("tags=a&offset=-1", 50, 0),
        (f"tags=a&offset={MAX_OFFSET + 1}", 50, MAX_OFFSET),
        ("tags=a&offset=696551067635111515115585111486103552", 50, MAX_OFFSET),
    ],
)
def test_limit_and_offset_are_clamped_as_automem_does(api: Api, query: str, limit: int, offset: int) -> None:
    body = api.get(f"/memory/by-tag?{query}").get_json()
    assert (body["limit"], body["offset"]) == (limit, offset)


def test_tag_tree_counts(api: Api) -> None:
    seed(api)
    body = api.get("/tags?prefix=slack").get_json()
    flat = {row["tag"]: row["count"] for row in body["flat"]}
    assert flat == {
        "slack": 3,
        "slack:channel": 2,
        "slack:channel:general": 1,
        "slack:channel:random": 1,
        "slack:user": 1,
        "slack:user:u1": 1,
    }
    [root] = body["tags"]
    assert root["tag"] == "slack" and [c["name"] for c in root["children"]] == ["channel", "user"]
    everything = api.get("/tags").get_json()
    assert {row["tag"] for row in everything["flat"]} >= {"urgent", "project-x", "slacker"}


def test_tag_helpers() -> None:
    assert normalize_tags([" A ", "a", "", "B:c"]) == ["a", "b:c"]
    assert tag_prefixes(["x/y:z", "x"]) == ["x", "x:y", "x:y:z"]
    assert tag_prefixes(["a::b//c"]) == ["a", "a:b", "a:b:c"]
    assert canonical_prefix(" Slack/Channel ") == "slack:channel"
