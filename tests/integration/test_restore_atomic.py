"""Restore is all-or-nothing (issue 17): every archive the issue found restoring partly, or
wiping the store and then failing, is now refused before anything changes; a store that fails
while the new graph is being built keeps the old one; a failure after the swap is repaired from
the restored graph. Each case asserts the whole store afterwards and a drift of 0."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from automem.errors import StoreUnavailable
from automem.services import Services
from automem.stores.graph import GraphStore
from tests.archives import (
    archive_records,
    assert_same,
    gzip_records,
    populate,
    post_restore,
    snapshot,
    take_backup,
)
from tests.conftest import Api

Records = list[dict[str, Any]]


def _first(records: Records, kind: str) -> dict[str, Any]:
    return next(r for r in records if r["kind"] == kind)


def _memory_props(**changes: Any) -> Callable[[Records], None]:
    def mutate(records: Records) -> None:
        _first(records, "memory")["props"].update(changes)

    return mutate


def _embedding(value: float) -> Callable[[Records], None]:
    def mutate(records: Records) -> None:
        memory = next(r for r in records if r["kind"] == "memory" and r.get("embedding"))
        memory["embedding"] = [value] * len(memory["embedding"])

    return mutate


def _edge_key(records: Records) -> None:
    _first(records, "edge")["props"]["a`b"] = 1


def _vector_id(records: Records) -> None:
    _first(records, "vector")["id"] = "not-a-uuid"


def _duplicate_memory(records: Records) -> None:
    memory = _first(records, "memory")
    records.insert(records.index(memory), copy.deepcopy(memory))


def _memory_without_id(records: Records) -> None:
    del _first(records, "memory")["props"]["id"]


def _orphan_nan_vector(records: Records) -> None:
    point = copy.deepcopy(_first(records, "vector"))
    point["id"] = "4f1c2a8e-0000-4000-8000-000000000000"
    # The archive's dimension, not the first point's: a point may hold no vector yet.
    point["vector"] = [float("nan")] * int(records[0]["embedding"]["dimension"])
    records.insert(records.index(_first(records, "vector")), point)


def _dangling_edge(records: Records) -> None:
    edge = copy.deepcopy(_first(records, "edge"))
    edge["to"] = {"label": "Memory", "key": "4f1c2a8e-0000-4000-8000-000000000001"}
    records.insert(records.index(_first(records, "edge")), edge)


def _duplicate_entity(records: Records) -> None:
    entity = next(r for r in records if r["kind"] == "node" and r["labels"][0] == "Entity")
    records.insert(records.index(entity), copy.deepcopy(entity))


def _short_vector(records: Records) -> None:
    # A point may hold no vector yet (its embedding job still queued): shorten one that has.
    point = next(r for r in records if r["kind"] == "vector" and r.get("vector"))
    point["vector"] = point["vector"][:-1]


CORRUPTIONS: dict[str, Callable[[Records], None]] = {
    "embedding of 1e308 (float32 overflow)": _embedding(1e308),
    "embedding of Infinity": _embedding(float("inf")),
    "content with NUL": _memory_props(content="before\u0000after"),
    "content with a lone surrogate": _memory_props(content="broken \ud800 text"),
    "property key with a backtick": _edge_key,
    "memory id ../../etc/passwd": _memory_props(id="../../etc/passwd"),
    "vector id not a UUID": _vector_id,
    "duplicate memory id": _duplicate_memory,
    "memory without an id": _memory_without_id,
    "orphan vector with NaN": _orphan_nan_vector,
    "edge to a memory not in the archive": _dangling_edge,
    "duplicate entity key": _duplicate_entity,
    "vector one value short": _short_vector,
    "timestamp in year 9999": _memory_props(timestamp="9999-12-31T00:00:00Z"),
    "timestamp in year 0001": _memory_props(timestamp="0001-01-01T00:00:00Z"),
    "t_invalid before t_valid": _memory_props(
        t_valid="2025-02-01T00:00:00Z", t_invalid="2025-01-01T00:00:00Z"
    ),
    "tag with a comma": _memory_props(tags=["one, tag"]),
    "content of zero-width spaces": _memory_props(content="\u200b\u200b"),
    "metadata integer above 2^64": _memory_props(metadata=json.dumps({"n": 2**70})),
}


@pytest.fixture
def populated(api: Api, services: Services, jobs: Any) -> dict[str, str]:
    return populate(api, services, jobs)


def assert_no_drift(services: Services) -> None:
    audit = services.sync.audit()
    assert {k: v["count"] for k, v in audit.items()} == {"missing": 0, "stale": 0, "orphaned": 0}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_a_corrupt_archive_is_refused_and_the_store_is_unchanged(
    api: Api,
    services: Services,
    populated: dict[str, str],
    name: str,
) -> None:
    records = archive_records(take_backup(api))
    CORRUPTIONS[name](records)
    before = snapshot(services)
    refused = post_restore(api, gzip_records(records), "?mode=replace")
    assert refused.status_code == 400, refused.get_json()
    assert refused.get_json()["reason"] == "invalid_archive"
    assert_same(before, snapshot(services))
    assert_no_drift(services)


def _post_json(api: Api, path: str, body: Any) -> Any:
    """Sent as text: Flask's test client cannot encode integers beyond 64 bits."""
    return api.post(path, data=json.dumps(body), headers={"Content-Type": "application/json"})


def test_the_api_refuses_what_the_archive_would(api: Api) -> None:
    """The reproductions' first step, at the door: nothing is stored, so no backup can carry it."""
    dim = len(api.post("/memory", json={"content": "probe"}).get_json().get("embedding") or []) or 384
    bodies = {
        "embedding": {"content": "x", "embedding": [1e308] * dim},
        "content": {"content": "nul \u0000 inside"},
        "timestamp": {"content": "x", "timestamp": "9999-12-31T00:00:00Z"},
        "tags": {"content": "x", "tags": ["one, tag"]},
        "metadata.n": {"content": "x", "metadata": {"n": 2**70}},
        "t_invalid": {"content": "x", "t_valid": "2025-02-01T00:00:00Z", "t_invalid": "2025-01-01T00:00:00Z"},
    }
    for field, body in bodies.items():
        response = _post_json(api, "/memory", body)
        assert response.status_code == 400, (field, response.get_json())
        assert response.get_json()["field"].startswith(field.split(".")[0]), response.get_json()
        batch = _post_json(api, "/memory/batch", {"memories": [{"content": "fine"}, body]})
        assert batch.status_code == 400, (field, batch.get_json())


def test_a_store_failing_while_the_new_graph_is_built_keeps_the_old_one(
    api: Api,
    services: Services,
    populated: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    archive = take_backup(api)
    extra = api.post("/memory", json={"content": "Stored after the backup"}).get_json()["memory_id"]
    before = snapshot(services)
    calls = {"n": 0}
    original = GraphStore.restore_edges

    def failing(self: GraphStore, *args: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 2:
            raise StoreUnavailable("graph store unavailable: ConnectionError")
        return original(self, *args)

    monkeypatch.setattr(GraphStore, "restore_edges", failing)
    response = post_restore(api, archive, "?mode=replace")
    assert response.status_code == 503, response.get_json()
    assert_same(before, snapshot(services))
    assert api.get(f"/memory/{extra}").status_code == 200
    monkeypatch.undo()
    # The staging graph was removed; the next restore goes through.
    assert post_restore(api, archive, "?mode=replace").status_code == 200
    assert api.get(f"/memory/{extra}").status_code == 404
    assert_no_drift(services)


def test_a_vector_store_failing_after_the_swap_is_repaired_from_the_graph(
    api: Api,
    services: Services,
    populated: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    archive = take_backup(api)
    before = snapshot(services)
    assert services.vectors is not None
    vectors = services.vectors
    original = type(vectors).upsert
    calls = {"n": 0}

    def failing_once(self: Any, points: Any, **options: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("the vector store went away for a moment")
        return original(self, points, **options)

    monkeypatch.setattr(type(vectors), "upsert", failing_once)
    response = post_restore(api, archive, "?mode=replace")
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["vectors_source"] == "graph"
    assert_same(before, snapshot(services))
    assert_no_drift(services)
