"""The graph visualisation API (GET /graph/*) on the real embedded stack: AutoMem's field lists,
a snapshot bounded by GRAPH_SNAPSHOT_MAX_NODES on a store larger than it, neighbourhoods by depth
with semantic neighbours from the graph's vector index, and statistics equal to what was stored."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from automem.embedded import EmbeddedFalkorDB
from automem.graphview import RELATION_COLORS, TYPE_COLORS
from automem.schemas import GraphNeighbors, GraphRelations, GraphSnapshot, GraphStats, GraphTypes
from automem.services import Services
from automem.settings import Settings
from automem.timeutil import format_utc, utc_now
from tests.conftest import Api, make_settings
from tests.envelope import envelope_problem

CAP = 100
NODE_FIELDS = {
    "id",
    "content",
    "type",
    "importance",
    "confidence",
    "tags",
    "timestamp",
    "updated_at",
    "metadata",
}
VISUAL_FIELDS = {"color", "radius", "opacity"}
EDGE_FIELDS = {"id", "source", "target", "type", "strength", "color", "properties"}
STATS_FIELDS = {"total_nodes", "total_edges", "returned_nodes", "returned_edges", "sampled", "sample_ratio"}
META_FIELDS = {"type_colors", "relation_colors", "query_time_ms", "archive_threshold"}


@pytest.fixture
def settings(falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path) -> Settings:
    """A snapshot cap small enough to exceed with a few hundred memories."""
    return make_settings(falkordb_server.url, tmp_path / "data", graph_snapshot_max_nodes=CAP)


def _store(api: Api, content: str | None = None, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content or f"memory {uuid.uuid4()}", **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _link(api: Api, a: str, b: str, kind: str = "RELATES_TO", strength: float | None = None) -> None:
    body: dict[str, Any] = {"memory1_id": a, "memory2_id": b, "type": kind}
    if strength is not None:
        body["strength"] = strength
    response = api.post("/associate", json=body)
    assert response.status_code == 201, response.get_json()


def _ok(api: Api, path: str) -> dict[str, Any]:
    response = api.get(path)
    assert response.status_code == 200, response.get_json()
    body: dict[str, Any] = response.get_json()
    assert body["status"] == "success"
    return body


def _error(api: Api, path: str, status: int, reason: str | None = None) -> dict[str, Any]:
    response = api.get(path)
    body: dict[str, Any] = response.get_json()
    assert response.status_code == status, body
    assert envelope_problem(status, body, reason) is None
    return body


# --- GET /graph/snapshot ----------------------------------------------------------------------
def test_snapshot_has_automems_fields_and_edges_among_returned_nodes(api: Api) -> None:
    high = _store(api, "We decided to ship on Fridays.", type="Decision", importance=0.9, confidence=0.7)
    mid = _store(api, "The team prefers tabs.", type="Preference", importance=0.6, confidence=0.5)
    low = _store(api, "A passing remark.", importance=0.1)
    _link(api, high, mid, "LEADS_TO", 0.8)
    _link(api, mid, low)
    body = _ok(api, "/graph/snapshot?limit=2")
    assert [n["id"] for n in body["nodes"]] == [high, mid]  # most important first
    node = body["nodes"][0]
    assert set(node) >= NODE_FIELDS | VISUAL_FIELDS
    assert node["color"] == TYPE_COLORS["Decision"]
    assert node["radius"] == pytest.approx(0.5 + 1.5 * 0.9)
    assert node["opacity"] == pytest.approx(0.4 + 0.6 * 0.7)
    assert len(body["edges"]) == 1  # mid -> low is left out: low was not returned
    edge = body["edges"][0]
    assert set(edge) >= EDGE_FIELDS
    assert (edge["source"], edge["target"], edge["type"]) == (high, mid, "LEADS_TO")
    assert edge["id"] == f"{high}-LEADS_TO-{mid}"
    assert edge["strength"] == pytest.approx(0.8)
    assert edge["color"] == RELATION_COLORS["LEADS_TO"]
    assert edge["properties"]["strength"] == pytest.approx(0.8)
    stats = body["stats"]
    assert set(stats) >= STATS_FIELDS
    assert (stats["total_nodes"], stats["matching_nodes"], stats["returned_nodes"]) == (3, 3, 2)
    assert (stats["total_edges"], stats["returned_edges"]) == (2, 1)
    assert stats["sampled"] is True and stats["sample_ratio"] == pytest.approx(2 / 3, abs=1e-3)
    assert set(body["meta"]) >= META_FIELDS and body["meta"]["sampling"]["method"] == "importance"
    GraphSnapshot.model_validate(body)  # the documented response model


def test_snapshot_default_strength_and_filters(api: Api) -> None:
    old = _store(api, "Old context.", type="Context", importance=0.3, timestamp="2020-01-01T00:00:00Z")
    new = _store(api, "New insight.", type="Insight", importance=0.8)
    habit = _store(api, "Morning run habit.", type="Habit", importance=0.7)
    _link(api, new, habit, "REINFORCES")
    everything = _ok(api, "/graph/snapshot")
    assert everything["stats"]["sampled"] is False and everything["stats"]["sample_ratio"] == 1.0
    assert {e["strength"] for e in everything["edges"]} == {0.5}  # AutoMem's default
    assert {n["id"] for n in _ok(api, "/graph/snapshot?min_importance=0.5")["nodes"]} == {new, habit}
    typed = _ok(api, "/graph/snapshot?types=insight,Context")
    assert {n["id"] for n in typed["nodes"]} == {new, old}
    assert typed["stats"]["matching_nodes"] == 2 and typed["stats"]["total_nodes"] == 3
    assert typed["meta"]["filters"]["types"] == ["Insight", "Context"]
    repeated = _ok(api, "/graph/snapshot?types=insight&types=context")
    assert {n["id"] for n in repeated["nodes"]} == {new, old}
    recent = _ok(api, "/graph/snapshot?since=2024-01-01")
    assert old not in {n["id"] for n in recent["nodes"]} and len(recent["nodes"]) == 2


def test_snapshot_shows_only_active_memories(api: Api) -> None:
    kept = _store(api, "Still here.")
    gone = _store(api, "Deleted soon.")
    _link(api, kept, gone)
    assert api.delete(f"/memory/{gone}").status_code == 200
    body = _ok(api, "/graph/snapshot")
    assert [n["id"] for n in body["nodes"]] == [kept]
    assert body["edges"] == [] and body["stats"]["total_nodes"] == 1


def test_snapshot_is_bounded_by_the_cap_on_a_larger_store(api: Api) -> None:
    memories = [{"content": f"bulk memory {n}", "importance": round(n / 300, 4)} for n in range(300)]
    response = api.post("/memory/batch", json={"memories": memories})
    assert response.status_code == 201, response.get_json()
    # The last is beyond 64 bits: capped like the others, and echoed as sent (the fuzz pass
    # found it answered 500, the JSON encoder refusing the echo).
    for limit in (0, 500, CAP, 2**100):
        body = _ok(api, f"/graph/snapshot?limit={limit}")
        stats = body["stats"]
        assert stats["returned_nodes"] == CAP, limit
        assert (stats["total_nodes"], stats["matching_nodes"]) == (300, 300)
        assert stats["sampled"] is True and stats["sample_ratio"] == pytest.approx(CAP / 300, abs=1e-3)
        sampling = body["meta"]["sampling"]
        assert (sampling["cap"], sampling["limit"], sampling["requested_limit"]) == (CAP, CAP, limit)
        importances = [n["importance"] for n in body["nodes"]]
        assert importances == sorted(importances, reverse=True)
        assert min(importances) >= 200 / 300 - 1e-9  # the most important 100 of 300
    assert _ok(api, "/graph/snapshot?limit=7")["stats"]["returned_nodes"] == 7


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("min_importance=2", "min_importance"),
        ("min_importance=nan", "min_importance"),
        ("types=Bogus", "types"),
        ("since=not-a-date", "since"),
    ],
)
def test_snapshot_rejects_bad_parameters(api: Api, query: str, field: str) -> None:
    assert _error(api, f"/graph/snapshot?{query}", 400, "invalid_input")["field"] == field


# --- GET /graph/neighbors/<id> ----------------------------------------------------------------
def _chain(api: Api) -> list[str]:
    """a - b - c - d, with e (deleted) hanging off a."""
    ids = [_store(api, f"chain link {n}", importance=0.5) for n in "abcd"]
    for left, right in itertools.pairwise(ids):
        _link(api, left, right)
    deleted = _store(api, "a deleted neighbour")
    _link(api, ids[0], deleted)
    assert api.delete(f"/memory/{deleted}").status_code == 200
    return ids


def test_neighbors_at_depth_one_and_two(api: Api) -> None:
    a, b, c, d = _chain(api)
    one = _ok(api, f"/graph/neighbors/{a}?include_semantic=false")
    assert one["center"]["id"] == a and set(one["center"]) >= VISUAL_FIELDS
    assert [(n["id"], n["hops"]) for n in one["graph_neighbors"]] == [(b, 1)]
    assert {"id", "content", "type", "importance", "confidence", "tags"} | VISUAL_FIELDS <= set(
        one["graph_neighbors"][0]
    )
    assert [(e["source"], e["target"], e["type"]) for e in one["edges"]] == [(a, b, "RELATES_TO")]
    assert one["semantic_neighbors"] == [] and one["meta"]["depth"] == 1
    two = _ok(api, f"/graph/neighbors/{a}?depth=2&include_semantic=false")
    assert sorted((n["id"], n["hops"]) for n in two["graph_neighbors"]) == sorted([(b, 1), (c, 2)])
    assert {(e["source"], e["target"]) for e in two["edges"]} == {(a, b), (b, c)}
    clamped = _ok(api, f"/graph/neighbors/{a}?depth=9&include_semantic=false")
    assert clamped["meta"]["depth"] == 3 and {n["id"] for n in clamped["graph_neighbors"]} == {b, c, d}


def test_semantic_neighbors_come_with_their_similarity(api: Api, services: Services) -> None:
    dim = services.embedder.dimension
    center = [1.0] + [0.0] * (dim - 1)
    close = [0.9, 0.1] + [0.0] * (dim - 2)
    farther = [0.5, 0.5] + [0.0] * (dim - 2)
    opposite = [0.0, 1.0] + [0.0] * (dim - 2)
    a = _store(api, "semantic centre", embedding=center)
    b = _store(api, "semantic close", embedding=close)
    c = _store(api, "semantic farther", embedding=farther)
    linked = _store(api, "linked and similar", embedding=close)
    _store(api, "semantic opposite", embedding=opposite)
    _link(api, a, linked)
    body = _ok(api, f"/graph/neighbors/{a}?semantic_limit=2")
    semantic = body["semantic_neighbors"]
    assert [s["id"] for s in semantic] == [b, c]  # graph neighbours are left out, best first
    assert semantic[0]["similarity"] == pytest.approx(0.9 / (0.81 + 0.01) ** 0.5, abs=1e-3)
    assert semantic[0]["similarity"] > semantic[1]["similarity"]
    assert body["meta"]["semantic_source"] == "graph_vector_index"
    GraphNeighbors.model_validate(body)
    assert [n["id"] for n in body["graph_neighbors"]] == [linked]
    assert _ok(api, f"/graph/neighbors/{a}?semantic_limit=50")["meta"]["semantic_limit"] == 20


def test_neighbors_errors_are_the_envelope(api: Api) -> None:
    assert _error(api, f"/graph/neighbors/{uuid.uuid4()}", 404, "not_found")["field"] == "id"
    assert _error(api, "/graph/neighbors/not-a-uuid", 400, "invalid_input")["field"] == "id"
    memory = _store(api, "x")
    assert _error(api, f"/graph/neighbors/{memory}?depth=two", 400)["field"] == "depth"
    assert (
        _error(api, f"/graph/neighbors/{memory}?include_semantic=maybe", 400)["field"] == "include_semantic"
    )


# --- GET /graph/stats, /graph/types, /graph/relations -----------------------------------------
def test_stats_equal_what_was_stored(api: Api) -> None:
    now = utc_now()
    today = format_utc(now)
    three_days_ago = format_utc(now - timedelta(days=3))
    ids = [
        _store(api, "Decision one.", type="Decision", importance=0.9, timestamp=today),
        _store(api, "Decision two.", type="Decision", importance=0.8, timestamp=three_days_ago),
        _store(api, "An insight.", type="Insight", importance=0.6, timestamp=three_days_ago),
        _store(api, "Some context.", type="Context", importance=0.2, timestamp="2020-05-05T00:00:00Z"),
    ]
    _link(api, ids[0], ids[1], "LEADS_TO")
    _link(api, ids[1], ids[2], "LEADS_TO")
    _link(api, ids[2], ids[3], "CONTRADICTS")
    body = _ok(api, "/graph/stats")
    assert body["totals"] == {"nodes": 4, "edges": 3}
    assert body["by_type"] == {"Decision": 2, "Insight": 1, "Context": 1}
    assert body["by_relationship"] == {"LEADS_TO": 2, "CONTRADICTS": 1}
    assert body["importance_distribution"] == {"high": 2, "medium": 1, "low": 1}
    activity = body["recent_activity"]
    assert len(activity) == 7 and activity[0]["date"] == now.date().isoformat()
    counts = {day["date"]: day["count"] for day in activity}
    assert counts[now.date().isoformat()] == 1
    assert counts[(now - timedelta(days=3)).date().isoformat()] == 2
    assert sum(counts.values()) == 3  # the 2020 memory is not recent
    assert set(body["meta"]) >= META_FIELDS
    GraphStats.model_validate(body)


def test_types_and_relations_with_colours(api: Api) -> None:
    types = _ok(api, "/graph/types")
    assert types["types"] == ["Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context"]
    assert set(types["types"]) <= set(types["colors"])
    relations = _ok(api, "/graph/relations")
    assert "DISCOVERED" not in relations["relations"] and "MENTIONS" not in relations["relations"]
    assert {"RELATES_TO", "SIMILAR_TO", "PRECEDED_BY", "PART_OF"} <= set(relations["relations"])
    assert set(relations["colors"]) == set(relations["relations"])
    GraphTypes.model_validate(types)
    GraphRelations.model_validate(relations)
