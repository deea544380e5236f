"""AutoMem §1 and §2.1: the error envelope on every kind of error, the API key's forms, and
GET /health's fields."""

from __future__ import annotations

from typing import Any

from tests.conftest import API_TOKEN, Api
from tests.contract.automem import HEALTH, assert_error, assert_fields


def test_health_without_a_key(client: Any) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    body = response.get_json()
    assert_fields(body, HEALTH)
    assert body["status"] in ("healthy", "degraded") and body["falkordb"] == "connected"
    assert body["sync_status"] in ("synced", "drift_detected", "orphaned_vectors", "unknown")
    assert_fields(body["vector_dimensions"], {"configured", "effective", "collection", "mismatch"})
    assert_fields(body["enrichment"], {"status", "queue_depth", "pending", "inflight", "processed", "failed"})
    assert isinstance(body["graph"], str)


def test_every_form_of_the_api_key(client: Any) -> None:
    for headers, query in (
        ({"Authorization": f"Bearer {API_TOKEN}"}, ""),
        ({"Authorization": f"bearer {API_TOKEN}"}, ""),
        ({"X-API-Key": API_TOKEN}, ""),
        ({}, f"?api_key={API_TOKEN}"),
    ):
        assert client.get(f"/tags{query}", headers=headers).status_code == 200


def test_the_envelope_on_every_kind_of_error(api: Api, client: Any) -> None:
    assert_error(client.get("/tags"), 401)
    assert_error(client.get("/tags", headers={"X-API-Key": "wrong"}), 401)
    assert_error(api.get("/no-such-route"), 404)
    assert_error(api.client.put("/memory", headers=api.headers), 405)
    assert_error(api.post("/memory", json={}), 400)
    assert_error(api.post("/memory", data=b"x" * (2 * 1024 * 1024)), 413)
    body = assert_error(api.post("/memory", json={"content": "x", "importance": "high"}), 400)
    assert (
        body["error"] == body["message"]
        and body["reason"] == "invalid_input"
        and body["field"] == "importance"
    )
