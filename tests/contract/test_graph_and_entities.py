"""AutoMem §2.16-2.19: the graph viewer API, entities, the stream's status and the viewer paths."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api
from tests.contract.automem import ADMIN, assert_error, assert_fields

SNAPSHOT_STATS = {"total_nodes", "total_edges", "returned_nodes", "returned_edges", "sampled", "sample_ratio"}
SNAPSHOT_META = {"type_colors", "relation_colors", "query_time_ms", "archive_threshold"}
SNAPSHOT_NODE = {
    "id", "content", "type", "importance", "confidence", "tags", "timestamp", "updated_at",
    "metadata", "color", "radius", "opacity",
}  # fmt: skip
SNAPSHOT_EDGE = {"id", "source", "target", "type", "strength", "color", "properties"}


def _linked_pair(api: Api, jobs: Any) -> tuple[str, str]:
    first = api.post("/memory", json={"content": "Chose PostgreSQL for the ledger", "importance": 0.9})
    second = api.post("/memory", json={"content": "Ledger migrations run nightly", "type": "Pattern"})
    a, b = first.get_json()["memory_id"], second.get_json()["memory_id"]
    assert api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "RELATES_TO"}).status_code
    jobs()
    return a, b


def test_snapshot(api: Api, jobs: Any) -> None:
    a, b = _linked_pair(api, jobs)
    body = api.get("/graph/snapshot?limit=0").get_json()
    assert_fields(body, {"nodes", "edges", "stats", "meta"})
    assert_fields(body["stats"], SNAPSHOT_STATS)
    assert_fields(body["meta"], SNAPSHOT_META)
    assert {n["id"] for n in body["nodes"]} == {a, b}
    for node in body["nodes"]:
        assert_fields(node, SNAPSHOT_NODE)
    [edge] = body["edges"]
    assert_fields(edge, SNAPSHOT_EDGE)
    assert (edge["source"], edge["target"], edge["type"]) == (a, b, "RELATES_TO")
    assert_error(api.get("/graph/snapshot?limit=-1"), 400)


def test_neighbors_stats_types_relations(api: Api, jobs: Any) -> None:
    a, b = _linked_pair(api, jobs)
    body = api.get(f"/graph/neighbors/{a}?depth=1").get_json()
    assert_fields(body, {"center", "graph_neighbors", "edges", "semantic_neighbors"})
    assert [n["id"] for n in body["graph_neighbors"]] == [b]
    assert_error(api.get("/graph/neighbors/00000000-0000-4000-8000-000000000000"), 404)
    stats = api.get("/graph/stats").get_json()
    assert_fields(
        stats, {"totals", "by_type", "by_relationship", "importance_distribution", "recent_activity"}
    )
    assert stats["totals"]["nodes"] == 2 and stats["by_relationship"]["RELATES_TO"] == 1
    assert_fields(api.get("/graph/types").get_json(), {"types"})
    relations = api.get("/graph/relations").get_json()
    assert_fields(relations, {"relations"})
    assert "DISCOVERED" not in relations["relations"] and "RELATES_TO" in relations["relations"]


def test_entities(api: Api) -> None:
    body = api.get("/entities").get_json()
    assert_fields(body, {"status", "entities", "count"})
    assert_error(api.get("/entities?limit=0"), 400)
    assert_error(api.get("/entities?limit=many"), 400)
    assert_error(api.get("/entity/nobody"), 404)
    assert_fields(api.get("/entities/merge-candidates").get_json(), {"status", "candidates"})
    assert_error(api.get("/entities/audit"), 401)  # admin only
    assert api.get("/entities/audit", headers=ADMIN).status_code == 200
    assert_error(api.post("/entity/rach/merge", json={}, headers=ADMIN), 400)


def test_stream_status_and_viewer(api: Api) -> None:
    assert_fields(api.get("/stream/status").get_json(), {"subscribers"})
    viewer = api.client.get("/viewer/")  # no key: AutoMem serves its viewer paths without one
    assert viewer.status_code == 302 and viewer.headers["Location"].endswith("/ui/")  # AutoMem redirects too
