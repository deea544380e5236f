"""Re-embedding with the configured model: only stale vectors or every one, with progress, old
vectors answering recall until replaced, client-supplied vectors left alone."""

from __future__ import annotations

from typing import Any

from automem.backlog import reembed_progress
from automem.services import Services
from enrichment.context import use_services
from enrichment.embedding import reembed
from enrichment.maintenance import reconcile
from tests.conftest import ADMIN_TOKEN, Api, run_jobs

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201
    return str(response.get_json()["memory_id"])


def _models(services: Services, ids: list[str]) -> dict[str, str]:
    return {d.id: str(d.embedding_model) for d in services.graph.get_memories(ids)}


def _pretend_an_older_model(services: Services, ids: list[str]) -> None:
    services.graph._query(
        "MATCH (m:Memory) WHERE m.id IN $ids AND m.embedding_model <> 'client' "
        "SET m.embedding_model = 'old/model'",
        {"ids": ids},
    )


def test_missing_mode_re_embeds_vectors_of_another_model(api: Api, services: Services) -> None:
    ids = [_store(api, f"Deploy note number {n}") for n in range(4)]
    client = _store(api, "Vector from the client", embedding=[0.5] * services.embedder.dimension)
    run_jobs(services)
    _pretend_an_older_model(services, ids)
    before = api.get("/admin/reembed", headers=ADMIN).get_json()
    assert before["remaining"] == 4 and before["memories"] == 4  # the client's vector is not counted
    # Old vectors keep answering while the re-embedding is queued.
    assert api.get("/recall?query=deploy%20note").get_json()["count"] >= 1
    response = api.post("/admin/reembed", json={"mode": "missing"}, headers=ADMIN)
    assert response.status_code == 202
    assert response.get_json()["job_status"] == "queued"
    run_jobs(services)
    label = services.embedder.label
    assert set(_models(services, ids).values()) == {label}
    assert _models(services, [client])[client] == "client"
    after = api.get("/admin/reembed", headers=ADMIN).get_json()
    assert after["remaining"] == 0 and after["mode"] == "missing" and after["queued"] == 4


def test_all_mode_re_embeds_every_memory_and_reports_progress(api: Api, services: Services) -> None:
    ids = [_store(api, f"Architecture decision {n}") for n in range(3)]
    run_jobs(services)
    use_services(services)
    started = reembed(every=True)
    assert started["queued"] == 3
    progress = reembed_progress(services)
    assert progress["mode"] == "all" and progress["done"] == 0 and progress["remaining"] == 3
    run_jobs(services)
    progress = reembed_progress(services)
    assert progress["done"] == 3 and progress["remaining"] == 0
    docs = services.graph.get_memories(ids)
    assert all(d.embedding_hash == d.content_hash for d in docs)


def test_reconcile_re_embeds_after_a_model_change(api: Api, services: Services) -> None:
    ids = [_store(api, f"Habit {n}: tests before merging") for n in range(2)]
    run_jobs(services)
    _pretend_an_older_model(services, ids)
    use_services(services)
    assert reconcile()["queued"] == 2
    run_jobs(services)
    assert set(_models(services, ids).values()) == {services.embedder.label}


def test_reembed_route_needs_admin_and_a_known_mode(api: Api) -> None:
    assert api.post("/admin/reembed", json={"mode": "all"}).status_code == 401
    assert api.get("/admin/reembed").status_code == 401
    bad = api.post("/admin/reembed", json={"mode": "everything"}, headers=ADMIN)
    assert bad.status_code == 400
    assert bad.get_json()["field"] == "mode"
    assert api.post("/admin/reembed", headers=ADMIN).status_code == 202  # empty body: missing
