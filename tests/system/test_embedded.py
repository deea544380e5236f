"""`automem serve` end to end: real subprocesses, kill -9 of the API, clean stop, restart on the same data."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rq import Worker

from tests.stack import Service, kill9, wait_until

pytestmark = pytest.mark.slow


def test_data_survives_kill9_of_the_api_and_a_restart(service: Service) -> None:
    ids = []
    for n in range(20):
        response = service.http.post("/memory", json={"content": f"durable memory {n}", "tags": ["e2e"]})
        assert response.status_code == 201
        ids.append(response.json()["memory_id"])
    assert service.http.get("/memory/by-tag?tags=e2e").status_code == 200
    api = service.api_pids()
    assert api, "no gunicorn process found"
    kill9(api)
    service.wait_healthy()
    for memory_id in ids:
        assert service.http.get(f"/memory/{memory_id}").status_code == 200
    service.wait_drained(expected_vectors=20)
    assert service.http.get("/memory/nope", headers={"X-API-Key": ""}).status_code == 401

    assert service.stop() == 0
    service.start()  # same data dir: a second start finds everything
    for memory_id in ids:
        body = service.http.get(f"/memory/{memory_id}").json()
        assert body["memory"]["embedding_status"] == "stored"
    health = service.wait_drained(expected_vectors=20)
    assert health["memory_count"] == 20
    assert service.stop() == 0


def test_worker_crash_mid_queue_loses_no_embedding(service: Service) -> None:
    kill9(service.worker_pids())
    for n in range(30):
        assert (
            service.http.post("/memory", json={"content": f"queued while the worker is down {n}"}).status_code
            == 201
        )
    health = service.wait_drained(expected_vectors=30)  # the supervisor restarted the worker
    assert health["queues"]["failed"]["embed"] == 0


@pytest.mark.parametrize(
    ("enrichers", "queues"),
    [("1", [["embed", "maintenance"], ["enrich"]]), ("0", [["embed", "enrich", "maintenance"]])],
    ids=["own-enrichment-worker", "one-worker-for-all"],
)
def test_enrichment_runs_on_its_own_worker(
    stack: Callable[..., Service], enrichers: str, queues: list[list[str]]
) -> None:
    """AUTOMEM_ENRICHMENT_WORKERS=1: a worker of the enrich queue alone beside one of the other
    queues, and every memory still embedded and enriched; 0 (the default): one worker of all."""
    svc = stack(env={"AUTOMEM_ENRICHMENT_WORKERS": enrichers})

    def registered() -> list[list[str]]:
        return sorted(sorted(w.queue_names()) for w in Worker.all(connection=svc.redis()))

    wait_until(lambda: registered() == queues, 30, f"workers of {queues}")
    ids = [
        svc.http.post(
            "/memory", json={"content": f"Alice moved to Lisbon, note {n}", "tags": ["e2e"]}
        ).json()["memory_id"]
        for n in range(6)
    ]
    svc.wait_drained(expected_vectors=6)

    def enriched() -> bool:
        memories = [svc.http.get(f"/memory/{i}").json()["memory"] for i in ids]
        return all("entity:place:lisbon" in m["tags"] for m in memories)

    wait_until(enriched, 60, "every memory enriched")
