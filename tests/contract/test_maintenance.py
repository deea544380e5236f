"""AutoMem §2.13-2.15: enrichment status and reprocess, the admin routes (reembed, sync, backup)
and consolidation, in AutoMem's request forms."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api
from tests.contract.automem import ADMIN, ENRICHMENT_STATUS, assert_error, assert_fields


def test_enrichment_status(api: Api) -> None:
    body = api.get("/enrichment/status").get_json()
    assert_fields(body, ENRICHMENT_STATUS)
    assert body["status"] in ("running", "stopped")
    assert_fields(
        body["stats"], {"processed_total", "successes", "failures", "last_success_id", "last_error"}
    )
    assert_fields(body["classification"], {"llm_attempts", "llm_successes", "fallbacks"})


def test_reprocess_takes_ids_as_automem_sends_them(api: Api) -> None:
    memory_id = api.post("/memory", json={"content": "Dan joined Acme Corp."}).get_json()["memory_id"]
    for request in (
        {"json": {"ids": [memory_id]}},
        {"json": {"ids": memory_id}},
        {"query_string": {"ids": memory_id}},
    ):
        response = api.post("/enrichment/reprocess", headers=ADMIN, **request)
        assert response.status_code == 202
        body = response.get_json()
        assert (body["status"], body["count"], body["ids"]) == ("queued", 1, [memory_id])
    assert_error(api.post("/enrichment/reprocess", json={}, headers=ADMIN), 400)
    assert_error(api.post("/enrichment/reprocess", json={"ids": [memory_id]}), 401)


def test_reembed_takes_automems_body(api: Api) -> None:
    api.post("/memory", json={"content": "Embed me again"})
    response = api.post("/admin/reembed", json={"batch_size": 500, "limit": 10, "force": True}, headers=ADMIN)
    assert response.status_code == 202  # queued for a worker; AutoMem re-embeds in the request
    body = response.get_json()
    assert (body["batch_size"], body["limit"], body["mode"]) == (100, 10, "all")
    assert_error(api.post("/admin/reembed", json={}), 401)
    huge = api.post(  # beyond 64 bits (found by the fuzzer): every memory, not a 500
        "/admin/reembed",
        data='{"limit": 123456789012345678901234567890}',
        headers={**ADMIN, "Content-Type": "application/json"},
    )
    assert huge.status_code == 202 and huge.get_json()["limit"] == 1_000_000_000


def test_sync_takes_automems_body(api: Api, services: Any, jobs: Any) -> None:
    api.post("/memory", json={"content": "Keep me in sync"})
    jobs()
    assert services.vectors is not None
    services.vectors.delete([next(services.graph.revs_pages(10))[0][0]])
    dry = api.post("/admin/sync", json={"dry_run": True, "batch_size": 32}, headers=ADMIN).get_json()
    assert_fields(dry, {"status", "falkordb_count", "qdrant_count", "missing_count", "orphaned_count"})
    assert (dry["missing_count"], dry["qdrant_count"]) == (1, 0)
    done = api.post("/admin/sync", json={"batch_size": 32}, headers=ADMIN).get_json()
    assert_fields(done, {"status", "falkordb_count", "qdrant_count", "synced", "failed", "orphaned_count"})
    assert (done["status"], done["synced"], done["qdrant_count"]) == ("complete", 1, 1)
    again = api.post("/admin/sync", headers=ADMIN).get_json()
    assert again["status"] == "already_synced"


def test_backup_needs_only_the_admin_token(client: Any) -> None:
    from tests.conftest import ADMIN_TOKEN

    assert client.get("/backup", headers={"X-Admin-Token": ADMIN_TOKEN}).status_code == 200
    assert client.get("/backup", headers={"X-Admin-Api-Key": ADMIN_TOKEN}).status_code == 200
    assert_error(client.get("/backup", headers={"X-Admin-Token": "wrong"}), 401)


def test_consolidate(api: Api) -> None:
    api.post("/memory", json={"content": "Deploys run on Fridays"})
    body = api.post("/consolidate", json={"mode": "decay"}).get_json()  # dry_run defaults to true
    assert_fields(body, {"status", "consolidation"})
    assert_fields(body["consolidation"], {"mode", "dry_run", "started_at", "steps", "success"})
    identity = api.post("/consolidate", json={"mode": "identity"}).get_json()["consolidation"]
    assert identity["steps"]["identity"]["skipped"]
    status = api.get("/consolidate/status").get_json()
    assert_fields(status, {"status", "next_runs", "history", "thread_alive", "tick_seconds"})
    assert set(status["next_runs"]) >= {"decay", "creative", "cluster", "forget"}


def test_admin_token_is_401_when_wrong_and_403_when_unset(api: Api, app: Any) -> None:
    assert_error(api.post("/admin/sync", headers={"X-Admin-Token": "wrong"}), 401)
    assert api.post("/admin/sync", headers={"X-Admin-Api-Key": ADMIN["X-Admin-Token"]}).status_code == 200
    svc = app.extensions["automem"]
    original = svc.settings
    svc.settings = original.model_copy(update={"admin_token": None})
    try:
        assert_error(api.post("/admin/sync", headers=ADMIN), 403)
    finally:
        svc.settings = original
    assert uuid.UUID(api.post("/memory", json={"content": "still works"}).get_json()["memory_id"])
