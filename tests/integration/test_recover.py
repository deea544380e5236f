"""POST /memory/<id>/recover: a soft-deleted memory comes back within RETENTION_DAYS, everywhere."""

from __future__ import annotations

import uuid
from typing import Any

from automem.services import Services
from tests.conftest import Api


def _store(api: Api, content: str) -> str:
    response = api.post("/memory", json={"content": content, "tags": ["notes"]})
    assert response.status_code == 201
    return str(response.get_json()["memory_id"])


def test_recover_brings_a_deleted_memory_back(api: Api, services: Services, jobs: Any) -> None:
    memory_id = _store(api, "The retro is on Thursdays")
    jobs()
    assert api.delete(f"/memory/{memory_id}").status_code == 200
    assert api.get(f"/memory/{memory_id}").status_code == 404
    response = api.post(f"/memory/{memory_id}/recover")
    assert response.status_code == 200
    memory = response.get_json()["memory"]
    assert memory["state"] == "active" and memory["version"] == 3
    assert api.get(f"/memory/{memory_id}").status_code == 200
    assert api.get("/memory/by-tag?tags=notes").get_json()["count"] == 1
    assert memory_id in {r["id"] for r in api.get("/recall?query=retro%20Thursdays").get_json()["results"]}
    # It is a dedup target again.
    again = api.post("/memory", json={"content": "The retro is on Thursdays"})
    assert again.status_code == 201 and again.get_json()["deduplicated"]
    assert again.get_json()["memory_id"] == memory_id


def test_recover_errors(api: Api, services: Services) -> None:
    memory_id = _store(api, "Still here")
    not_deleted = api.post(f"/memory/{memory_id}/recover")
    assert not_deleted.status_code == 409 and not_deleted.get_json()["reason"] == "not_deleted"
    assert api.post(f"/memory/{uuid.uuid4()}/recover").status_code == 404
    assert api.post("/memory/nope/recover").status_code == 400
    api.delete(f"/memory/{memory_id}")
    services.graph._query(
        "MATCH (m:Memory {id: $id}) SET m.deleted_at = '2000-01-01T00:00:00.000000+00:00'", {"id": memory_id}
    )
    expired = api.post(f"/memory/{memory_id}/recover")
    assert expired.status_code == 404 and expired.get_json()["reason"] == "not_recoverable"


def test_recover_after_the_content_was_stored_again(api: Api) -> None:
    memory_id = _store(api, "Duplicate-prone content")
    api.delete(f"/memory/{memory_id}")
    newer = _store(api, "Duplicate-prone content")  # the deleted one released its dedup key
    assert newer != memory_id
    assert api.post(f"/memory/{memory_id}/recover").status_code == 200
    # The newer memory keeps the dedup role; both are readable.
    assert api.post("/memory", json={"content": "Duplicate-prone content"}).get_json()["memory_id"] == newer


def test_the_purge_job_removes_memories_past_retention(api: Api, services: Services, jobs: Any) -> None:
    from enrichment.context import use_services
    from enrichment.maintenance import purge_deleted

    old = _store(api, "Deleted long ago")
    recent = _store(api, "Deleted yesterday")
    linked = _store(api, "Still alive")
    api.post("/associate", json={"memory1_id": old, "memory2_id": linked, "type": "RELATES_TO"})
    jobs()
    api.delete(f"/memory/{old}")
    api.delete(f"/memory/{recent}")
    services.graph._query(
        "MATCH (m:Memory {id: $id}) SET m.deleted_at = '2000-01-01T00:00:00.000000+00:00'", {"id": old}
    )
    use_services(services)
    result = purge_deleted()
    assert result["purged"] == 1
    assert services.graph.get_memory(old, include_deleted=True) is None
    assert services.graph.get_memory(recent, include_deleted=True) is not None
    assert services.vectors is not None
    assert {r.id for r in services.vectors.retrieve([old, recent])} == {recent}
    assert services.graph.edges_of([linked], ["RELATES_TO"], 5) == {}
    assert api.post(f"/memory/{recent}/recover").status_code == 200
