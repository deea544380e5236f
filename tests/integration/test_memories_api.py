"""The memory routes against the real embedded FalkorDB, Redis and a Qdrant Edge shard."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from automem.embedded import EmbeddedFalkorDB
from automem.record import MemoryRecord
from automem.services import Services
from automem.settings import Settings
from automem.stores.vectors.qdrant_edge import HALF_PRECISION
from tests.conftest import ADMIN_TOKEN, Api, make_settings


@pytest.fixture(params=["edge", "qdrant"])
def settings(
    request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> Settings:
    """Every route test runs on both vector backends: Qdrant Edge (embedded mode) and
    qdrant-client's local mode standing in for a Qdrant server (server mode)."""
    if request.param == "edge":
        return make_settings(falkordb_server.url, tmp_path / "data")
    return make_settings(
        falkordb_server.url,
        tmp_path / "data",
        vector_backend="qdrant",
        qdrant_path=str(tmp_path / "qdrant-local"),
    )


def store(api: Api, **fields: Any) -> dict[str, Any]:
    fields.setdefault("content", f"memory {uuid.uuid4()}")
    response = api.post("/memory", json=fields)
    assert response.status_code == 201, response.get_json()
    return response.get_json()  # type: ignore[no-any-return]


def graph_doc(services: Services, memory_id: str) -> MemoryRecord:
    doc = services.graph.get_memory(memory_id, include_deleted=True)
    assert doc is not None
    return doc


# --- POST /memory --------------------------------------------------------------------------
def test_create_returns_201_and_stores_everything(api: Api, services: Services) -> None:
    body = store(
        api,
        content="  Chose PostgreSQL over MongoDB for ACID.  ",
        type="decision",
        tags=["Project-Alpha", "slack:channel:General", "project-alpha", " db "],
        importance=0.9,
        metadata={"files": ["db.py"]},
        timestamp="2025-01-02T03:04:05Z",
    )
    assert body["status"] == "success"
    assert body["type"] == "Decision" and body["confidence"] == 0.9
    assert body["embedding"] == "queued"
    doc = graph_doc(services, body["memory_id"])
    assert doc.content == "Chose PostgreSQL over MongoDB for ACID."
    assert doc.tags == ["project-alpha", "slack:channel:general", "db"]
    assert doc.tag_prefixes == ["project-alpha", "slack", "slack:channel", "slack:channel:general", "db"]
    assert doc.timestamp == "2025-01-02T03:04:05.000000+00:00"
    assert doc.metadata == {"files": ["db.py"]}
    assert doc.version == 1 and doc.state == "active"


def test_create_classifies_when_no_type(api: Api) -> None:
    assert store(api, content="I prefer tabs instead of spaces")["type"] == "Preference"
    plain = store(api, content="The sky was grey")
    assert (plain["type"], plain["confidence"]) == ("Context", 0.3)


def test_tags_as_comma_string_and_slash_prefixes(api: Api, services: Services) -> None:
    body = store(api, content="tags as a string", tags="Project/AutoMem:API, other")
    doc = graph_doc(services, body["memory_id"])
    assert doc.tags == ["project/automem:api", "other"]
    assert doc.tag_prefixes == ["project", "project:automem", "project:automem:api", "other"]


def test_client_id_and_timestamp_offset_normalised(api: Api, services: Services) -> None:
    memory_id = str(uuid.uuid4())
    body = store(api, content="client id", id=memory_id, timestamp="2025-06-01T12:00:00+02:00")
    assert body["memory_id"] == memory_id
    assert graph_doc(services, memory_id).timestamp == "2025-06-01T10:00:00.000000+00:00"


def test_duplicate_content_returns_existing_id(api: Api) -> None:
    first = store(api, content="Remember  the milk")
    again = api.post("/memory", json={"content": "Remember the milk "})
    assert again.status_code == 201  # AutoMem answers every store with 201
    assert again.get_json()["deduplicated"] is True
    assert again.get_json()["memory_id"] == first["memory_id"]


def test_duplicate_client_id_is_409(api: Api) -> None:
    memory_id = str(uuid.uuid4())
    store(api, content="one", id=memory_id)
    response = api.post("/memory", json={"content": "two", "id": memory_id})
    assert response.status_code == 409
    assert response.get_json()["reason"] == "duplicate_id"


def test_idempotency_key_replays_first_response(api: Api, services: Services) -> None:
    headers = {"Idempotency-Key": "k-1"}
    first = api.post("/memory", json={"content": "idempotent write"}, headers=headers)
    second = api.post("/memory", json={"content": "idempotent write"}, headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.get_json() == first.get_json()
    assert second.headers.get("Idempotent-Replayed") == "true"
    other = api.post("/memory", json={"content": "another body"}, headers=headers)
    assert other.status_code == 409 and other.get_json()["reason"] == "idempotency_key_reused"
    assert services.graph.counts()["total"] == 1


def test_client_embedding_stored_at_once(api: Api, services: Services) -> None:
    vector = [0.0] * services.embedder.dimension
    vector[3] = 1.0
    body = store(api, content="with a vector", embedding=vector, tags=["t"])
    assert body["embedding"] == "stored"
    assert services.vectors is not None
    [record] = services.vectors.retrieve([body["memory_id"]], with_vectors=True)
    assert record.payload["tags"] == ["t"] and record.payload["state"] == "active"
    assert record.vector is not None and abs(record.vector[3] - 1.0) < 1e-6


BAD_CREATES = [
    ({}, "content"),
    ({"content": "   "}, "content"),
    ({"content": 42}, "content"),
    ({"content": "x" * 2001}, "content"),
    ({"content": "ok", "type": "Opinion"}, "type"),
    ({"content": "ok", "importance": 1.5}, "importance"),
    ({"content": "ok", "importance": "high"}, "importance"),
    ({"content": "ok", "importance": True}, "importance"),
    ({"content": "ok", "confidence": -0.1}, "confidence"),
    ({"content": "ok", "tags": [1, 2]}, "tags"),
    ({"content": "ok", "tags": {"a": 1}}, "tags"),
    ({"content": "ok", "tags": [f"t{i}" for i in range(51)]}, "tags"),
    ({"content": "ok", "tags": ["x" * 101]}, "tags"),
    ({"content": "ok", "metadata": "nope"}, "metadata"),
    ({"content": "ok", "metadata": {"blob": "x" * 17000}}, "metadata"),
    (
        {
            "content": "ok",
            "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {"k": 1}}}}}}}}}}},
        },
        "metadata",
    ),
    ({"content": "ok", "timestamp": "yesterday-ish"}, "timestamp"),
    ({"content": "ok", "t_invalid": 12}, "t_invalid"),
    ({"content": "ok", "embedding": [0.1, 0.2]}, "embedding"),
    ({"content": "ok", "embedding": ["a"]}, "embedding"),
    ({"content": "ok", "id": "not-a-uuid"}, "id"),
]


@pytest.mark.parametrize(("payload", "field"), BAD_CREATES)
def test_bad_create_is_400_with_field_and_writes_nothing(
    api: Api, services: Services, payload: dict[str, Any], field: str
) -> None:
    response = api.post("/memory", json=payload)
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["status"] == "error" and body["reason"] == "invalid_input"
    assert body["field"] == field and body["error"]
    assert services.graph.counts()["total"] == 0


def test_malformed_json_and_non_object(api: Api, services: Services) -> None:
    bad = api.post("/memory", data="{not json", content_type="application/json")
    assert bad.status_code == 400 and bad.get_json()["field"] == "body"
    array = api.post("/memory", json=[{"content": "x"}])
    assert array.status_code == 400
    empty = api.post("/memory")
    assert empty.status_code == 400
    assert services.graph.counts()["total"] == 0


def test_body_over_limit_is_413(api: Api, services: Services) -> None:
    huge = json.dumps({"content": "x", "metadata": {"pad": "y" * (1_100_000)}})
    response = api.post("/memory", data=huge, content_type="application/json")
    assert response.status_code == 413
    assert response.get_json()["reason"] == "payload_too_large"
    assert services.graph.counts()["total"] == 0


# --- POST /memory/batch --------------------------------------------------------------------
def test_batch_creates_and_reports_duplicates(api: Api, services: Services) -> None:
    existing = store(api, content="already here")
    items = [
        {"content": "b1", "tags": ["batch"]},
        {"content": "b2"},
        {"content": "b1"},
        {"content": "already here"},
    ]
    response = api.post("/memory/batch", json={"memories": items})
    assert response.status_code == 201
    results = response.get_json()["results"]
    assert [r["status"] for r in results] == ["created", "created", "duplicate", "duplicate"]
    assert results[2]["id"] == results[0]["id"]
    assert results[3]["id"] == existing["memory_id"]
    assert services.graph.counts()["total"] == 3


@pytest.mark.parametrize(
    "payload",
    [
        {"memories": []},
        {"memories": "nope"},
        {"memories": [{"content": "fine"}, {"content": ""}]},
        {"memories": [{"content": "fine"}, {"content": "ok", "importance": 7}]},
        {"memories": [{"content": f"m{i}"} for i in range(1001)]},
    ],
)
def test_bad_batch_is_400_and_writes_nothing(api: Api, services: Services, payload: dict[str, Any]) -> None:
    response = api.post("/memory/batch", json=payload)
    assert response.status_code == 400
    assert response.get_json()["field"].startswith("memories")
    assert services.graph.counts()["total"] == 0


def test_batch_with_existing_id_is_409_and_writes_nothing(api: Api, services: Services) -> None:
    taken = store(api, content="taken")["memory_id"]
    response = api.post(
        "/memory/batch", json={"memories": [{"content": "new"}, {"content": "x", "id": taken}]}
    )
    assert response.status_code == 409
    assert response.get_json()["field"] == "memories[1].id"
    assert services.graph.counts()["total"] == 1


# --- GET /memory/<id> ----------------------------------------------------------------------
def test_get_memory(api: Api) -> None:
    created = store(api, content="fetch me", tags=["a:b"], metadata={"k": 1})
    response = api.get(f"/memory/{created['memory_id']}")
    assert response.status_code == 200
    memory = response.get_json()["memory"]
    assert memory["content"] == "fetch me" and memory["metadata"] == {"k": 1}
    assert memory["tag_prefixes"] == ["a", "a:b"]


def test_get_unknown_and_invalid_id(api: Api) -> None:
    assert api.get(f"/memory/{uuid.uuid4()}").status_code == 404
    bad = api.get("/memory/nope")
    assert bad.status_code == 400 and bad.get_json()["field"] == "id"


# --- PATCH /memory/<id> --------------------------------------------------------------------
def test_patch_merges_metadata_and_recomputes_prefixes(api: Api, services: Services) -> None:
    created = store(api, content="patch me", metadata={"keep": 1, "drop": 2}, tags=["old"])
    memory_id = created["memory_id"]
    response = api.patch(
        f"/memory/{memory_id}",
        json={
            "metadata": {"drop": None, "new": "v"},
            "tags": ["slack/channel"],
            "importance": 0.8,
            "type": "Insight",
            "t_invalid": "2030-01-01T00:00:00Z",
        },
    )
    assert response.status_code == 200, response.get_json()
    memory = response.get_json()["memory"]
    assert memory["metadata"] == {"keep": 1, "new": "v"}
    assert memory["tags"] == ["slack/channel"] and memory["tag_prefixes"] == ["slack", "slack:channel"]
    assert memory["importance"] == 0.8 and memory["type"] == "Insight"
    assert memory["version"] == 2
    cleared = api.patch(f"/memory/{memory_id}", json={"t_invalid": None}).get_json()["memory"]
    assert cleared["t_invalid"] is None and cleared["version"] == 3


def test_patch_content_requeues_embedding_and_syncs_payload(api: Api, services: Services, jobs: Any) -> None:
    memory_id = store(api, content="first text", tags=["x"])["memory_id"]
    jobs()
    assert services.vectors is not None
    before = services.vectors.retrieve([memory_id], with_vectors=True)[0]
    api.patch(f"/memory/{memory_id}", json={"content": "completely different words", "tags": ["y"]})
    after_patch = services.vectors.retrieve([memory_id])[0]
    assert after_patch.payload["tags"] == ["y"]  # payload synced at once
    jobs()
    after_jobs = services.vectors.retrieve([memory_id], with_vectors=True)[0]
    assert after_jobs.vector != before.vector
    # Within the Edge shard's half precision; a different text's vector is ~0.05 away per component.
    assert after_jobs.vector == pytest.approx(
        services.embedder.embed_one("completely different words"), abs=HALF_PRECISION
    )
    assert after_jobs.payload["rev"] == graph_doc(services, memory_id).rev
    assert graph_doc(services, memory_id).embedding_hash == graph_doc(services, memory_id).content_hash


def test_patch_if_version_conflict(api: Api) -> None:
    memory_id = store(api, content="versioned")["memory_id"]
    assert api.patch(f"/memory/{memory_id}", json={"importance": 0.1, "if_version": 1}).status_code == 200
    stale = api.patch(f"/memory/{memory_id}", json={"importance": 0.2, "if_version": 1})
    assert stale.status_code == 409
    assert stale.get_json()["reason"] == "version_conflict" and stale.get_json()["current_version"] == 2


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"importance": 2}, "importance"),
        ({"type": "Nope"}, "type"),
        ({"content": ""}, "content"),
        ({"metadata": []}, "metadata"),
        ({"tags": [None]}, "tags"),
        ({"timestamp": "13/13/2025"}, "timestamp"),
        ({"if_version": "one"}, "if_version"),
    ],
)
def test_bad_patch_is_400_and_changes_nothing(
    api: Api, services: Services, payload: dict[str, Any], field: str
) -> None:
    memory_id = store(api, content="unchanged")["memory_id"]
    response = api.patch(f"/memory/{memory_id}", json=payload)
    assert response.status_code == 400 and response.get_json()["field"] == field
    assert graph_doc(services, memory_id).version == 1


def test_patch_unknown_is_404(api: Api) -> None:
    assert api.patch(f"/memory/{uuid.uuid4()}", json={"importance": 0.3}).status_code == 404


# --- DELETE /memory/<id> -------------------------------------------------------------------
def test_delete_hides_memory_everywhere(api: Api, services: Services, jobs: Any) -> None:
    memory_id = store(api, content="to delete", tags=["gone"])["memory_id"]
    jobs()
    response = api.delete(f"/memory/{memory_id}")
    assert response.status_code == 200 and response.get_json()["deleted"] == "soft"
    assert api.get(f"/memory/{memory_id}").status_code == 404
    assert api.get("/memory/by-tag?tags=gone").get_json()["count"] == 0
    assert api.patch(f"/memory/{memory_id}", json={"importance": 1}).status_code == 404
    assert api.delete(f"/memory/{memory_id}").status_code == 404
    assert services.vectors is not None
    assert services.vectors.retrieve([memory_id])[0].payload["state"] == "deleted"
    again = api.post("/memory", json={"content": "to delete"})
    assert again.status_code == 201  # a deleted memory is no dedup target


def test_hard_delete_needs_admin(api: Api, services: Services, jobs: Any) -> None:
    memory_id = store(api, content="purge me")["memory_id"]
    jobs()
    refused = api.delete(f"/memory/{memory_id}?hard=true")
    assert refused.status_code == 401 and refused.get_json()["reason"] == "admin_required"
    purged = api.delete(f"/memory/{memory_id}?hard=true", headers={"X-Admin-Token": ADMIN_TOKEN})
    assert purged.status_code == 200
    assert services.graph.get_memory(memory_id, include_deleted=True) is None
    assert services.vectors is not None and services.vectors.retrieve([memory_id]) == []


def test_delete_if_version_and_bad_ids(api: Api) -> None:
    memory_id = store(api, content="delete versioned")["memory_id"]
    assert api.delete(f"/memory/{memory_id}?if_version=9").status_code == 409
    assert api.delete(f"/memory/{memory_id}?if_version=x").status_code == 400
    assert api.delete("/memory/not-a-uuid").status_code == 400
    assert api.delete(f"/memory/{uuid.uuid4()}").status_code == 404


# --- vector repair -------------------------------------------------------------------------
def test_repair_restores_vectors_the_graph_outran(api: Api, services: Services, jobs: Any) -> None:
    ids = [store(api, content=f"repair me {n}", tags=["r"])["memory_id"] for n in range(3)]
    jobs()
    assert services.vectors is not None
    services.vectors.delete([ids[0]])  # lost point
    doc = graph_doc(services, ids[1])  # a graph change whose vector write was lost
    services.graph.update_memory(ids[1], {"tags": ["changed"]}, expected_version=doc.version)
    assert services.sync.repair() == 2
    points = {r.id: r for r in services.vectors.retrieve(ids)}
    assert set(points) == set(ids)
    assert points[ids[1]].payload["tags"] == ["changed"]
    assert services.sync.repair() == 0
