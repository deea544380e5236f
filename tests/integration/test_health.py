"""GET /health, and 503 on every route when the graph store is down."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from tests.conftest import Api, make_settings


def test_health_reports_counts_drift_and_queues(api: Api, services: Services, jobs: Any) -> None:
    for n in range(3):
        api.post("/memory", json={"content": f"health {n}"})
    before = api.client.get("/health").get_json()
    assert (
        before["status"] == "healthy"
        and before["falkordb"] == "connected"
        and before["qdrant"] == "connected"
    )
    assert before["memory_count"] == 3 and before["counts"]["embedding_pending"] == 3
    # One dispatch job waits; the three memories wait in the intake for it.
    assert before["queues"]["depths"]["embed"] == 1 and before["queues"]["depths"]["intake_embed"] == 3
    assert before["embedding"] == {"provider": "hash", "model": "feature-hash-v1", "dimension": 384}
    jobs()
    after = api.client.get("/health").get_json()
    assert after["vector_count"] == 3 and after["drift"]["difference"] == 0
    assert after["queues"]["depths"]["embed"] == 0 and after["queues"]["depths"]["intake_embed"] == 0


def test_health_degrades_on_drift(api: Api, services: Services, jobs: Any) -> None:
    memory_id = api.post("/memory", json={"content": "will drift"}).get_json()["memory_id"]
    jobs()
    assert services.vectors is not None
    services.vectors.delete([memory_id])
    body = api.client.get("/health").get_json()
    assert body["status"] == "degraded" and body["drift"]["difference"] == 1


def test_every_route_answers_503_when_the_graph_is_down(redis_conn: object, tmp_path: Path) -> None:
    doomed = EmbeddedFalkorDB(tmp_path / "doomed")
    doomed.start()
    app = create_app(make_settings(doomed.url, tmp_path / "data"), start_vector_drain=False)
    try:
        doomed.stop()
        api = Api(app.test_client())
        memory_id = str(uuid.uuid4())
        calls = [
            api.post("/memory", json={"content": "lost?"}),
            api.post("/memory/batch", json={"memories": [{"content": "lost?"}]}),
            api.get(f"/memory/{memory_id}"),
            api.patch(f"/memory/{memory_id}", json={"importance": 0.2}),
            api.delete(f"/memory/{memory_id}"),
            api.get("/memory/by-tag?tags=a"),
            api.get("/tags"),
            api.client.get("/health"),
        ]
        for response in calls:
            assert response.status_code == 503, response.get_json()
            assert response.get_json()["status"] in ("error", "degraded")
        assert calls[0].get_json()["reason"] == "graph_unavailable"
    finally:
        stop_app(app)


def test_counts_are_reused_for_a_share_of_the_time_they_took(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AUTOMEM_COUNTS_MAX_SHARE: a scan that took t is reused for t x (1/share - 1), then redone."""
    scans: list[float] = []
    clock = [100.0]

    def counting() -> dict[str, int]:
        scans.append(clock[0])
        clock[0] += 0.2  # the scan takes 200 ms
        return {"total": len(scans)}

    monkeypatch.setattr(services.graph, "counts", counting)
    monkeypatch.setattr("automem.services.time.monotonic", lambda: clock[0])
    monkeypatch.setattr(services, "settings", services.settings.model_copy(update={"counts_max_share": 0.05}))
    assert services.graph_counts() == {"total": 1}
    clock[0] += 3.7  # within 19 x 0.2 s = 3.8 s of the scan's end
    assert services.graph_counts() == {"total": 1}
    clock[0] += 0.2
    assert services.graph_counts() == {"total": 2} and len(scans) == 2
