"""AutoMem §2.2-2.6: POST /memory, POST /memory/batch, GET|PATCH|DELETE /memory/<id>, in
AutoMem's request forms, answered with AutoMem's fields and statuses."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api
from tests.contract.automem import BATCH, MEMORY, STORE, assert_error, assert_fields

AUTOMEM_BODY = {
    "content": "Chose PostgreSQL over MongoDB. Need ACID guarantees for transactions.",
    "type": "Decision",
    "tags": ["project-alpha", "database", "architecture"],
    "importance": 0.9,
    "metadata": {"files_modified": ["db/config.py"], "alternatives": ["MongoDB", "MySQL"]},
}


def test_store_answers_201_with_automems_fields(api: Api) -> None:
    response = api.post("/memory", json=AUTOMEM_BODY)
    assert response.status_code == 201
    body = response.get_json()
    assert_fields(body, STORE)
    assert (body["status"], body["type"], body["confidence"]) == ("success", "Decision", 0.9)
    assert body["enrichment"] == "queued" and body["embedding_status"] == "queued"
    assert body["qdrant"] == "queued" and body["metadata"] == AUTOMEM_BODY["metadata"]


def test_store_with_automems_optional_fields(api: Api, services: Any) -> None:
    vector = [0.0] * services.embedder.dimension
    vector[3] = 1.0
    body = {
        "content": "Login failing on special characters.",
        "tags": "auth",
        "timestamp": "2025-01-31T14:00:00Z",
        "updated_at": "2025-01-31T15:00:00Z",
        "last_accessed": "2025-01-31T16:00:00Z",
        "t_valid": "2025-01-31T14:00:00Z",
        "t_invalid": "2026-01-31T14:00:00Z",
        "embedding": ",".join(str(v) for v in vector),  # AutoMem also takes a comma string
        "confidence": 0.6,
        "type": "Insight",
    }
    response = api.post("/memory", json=body)
    assert response.status_code == 201
    stored = response.get_json()
    assert (stored["embedding_status"], stored["qdrant"]) == ("provided", "stored")
    assert stored["updated_at"].startswith("2025-01-31T15:00:00")
    memory = api.get(f"/memory/{stored['memory_id']}").get_json()["memory"]
    assert memory["t_invalid"].startswith("2026-01-31") and memory["confidence"] == 0.6


def test_identical_content_is_still_a_201(api: Api) -> None:
    first = api.post("/memory", json={"content": "Remember the milk"}).get_json()
    again = api.post("/memory", json={"content": "Remember the milk"})
    assert again.status_code == 201
    assert_fields(again.get_json(), {"status", "memory_id", "type", "confidence"})
    assert again.get_json()["memory_id"] == first["memory_id"]


def test_store_rejections_are_400_in_automems_envelope(api: Api, services: Any) -> None:
    assert_error(api.post("/memory", json={"content": "   "}), 400)
    assert_error(api.post("/memory", json={"content": "x" * 2001}), 400)
    assert_error(api.post("/memory", json={"content": "x", "importance": 2}), 400)
    assert_error(api.post("/memory", json={"content": "x", "metadata": "not an object"}), 400)
    assert_error(api.post("/memory", data="not json", headers={"Content-Type": "application/json"}), 400)
    wrong = assert_error(api.post("/memory", json={"content": "x", "embedding": [0.1, 0.2]}), 400)
    # AutoMem's clients read the expected size out of this sentence.
    assert f"exactly {services.embedder.dimension} values" in wrong["message"]


def test_batch(api: Api) -> None:
    response = api.post(
        "/memory/batch", json={"memories": [{"content": f"batch {n}", "tags": ["b"]} for n in range(3)]}
    )
    assert response.status_code == 201
    body = response.get_json()
    assert_fields(body, BATCH)
    assert body["stored"] == 3 and len(body["memory_ids"]) == 3 and body["qdrant"] == "queued"
    bad = assert_error(
        api.post("/memory/batch", json={"memories": [{"content": "ok"}, {"content": ""}]}), 400
    )
    assert "memories[1]" in bad["message"]  # AutoMem names the item's index
    assert_error(api.post("/memory/batch", json={"memories": []}), 400)


def test_read_update_delete(api: Api) -> None:
    memory_id = api.post("/memory", json=AUTOMEM_BODY).get_json()["memory_id"]
    read = api.get(f"/memory/{memory_id}")
    assert read.status_code == 200 and read.get_json()["status"] == "success"
    assert_fields(read.get_json()["memory"], MEMORY)
    patch = {"importance": 0.95, "tags": "reviewed, database", "metadata": {"reviewed_at": "2025-02-01"}}
    updated = api.patch(f"/memory/{memory_id}", json=patch)
    assert updated.status_code == 200
    memory = updated.get_json()["memory"]
    assert_fields(memory, MEMORY)
    assert memory["tags"] == ["reviewed", "database"]  # AutoMem splits a PATCH string on commas
    assert memory["metadata"]["reviewed_at"] == "2025-02-01" and memory["metadata"]["files_modified"]
    deleted = api.delete(f"/memory/{memory_id}")
    assert deleted.status_code == 200
    assert_fields(deleted.get_json(), {"status", "memory_id", "message"})
    assert_error(api.get(f"/memory/{memory_id}"), 404)


def test_id_errors_are_automems(api: Api) -> None:
    for method in ("get", "patch", "delete"):
        assert_error(getattr(api, method)("/memory/not-a-uuid", json={}), 400)
        assert_error(getattr(api, method)(f"/memory/{uuid.uuid4()}", json={"importance": 0.5}), 404)
    assert_error(api.patch(f"/memory/{uuid.uuid4()}", json=["not", "an", "object"]), 400)
