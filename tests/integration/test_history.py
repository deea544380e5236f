"""GET /memory/<id>/history: every create, change, delete, recover, enrichment, classification,
archive and purge of a memory, with actor, reason, time and version, written in the same graph
statement as the change itself."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from automem.history import JOB_CONSOLIDATE
from automem.services import Services
from automem.timeutil import now_iso
from enrichment.consolidation import Consolidator
from enrichment.context import use_services
from enrichment.maintenance import purge_deleted
from tests.conftest import ADMIN_TOKEN, API_TOKEN, Api

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}
KEY_ACTOR = "api-key:" + hashlib.sha256(API_TOKEN.encode()).hexdigest()[:12]


def _store(api: Api, content: str, headers: dict[str, str] | None = None, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields}, headers=headers)
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _history(api: Api, memory_id: str, query: str = "") -> dict[str, Any]:
    response = api.get(f"/memory/{memory_id}/history{query}")
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def _events(api: Api, memory_id: str) -> list[dict[str, Any]]:
    return list(_history(api, memory_id, "?limit=200")["events"])


def test_create_modify_delete_recover_with_actor_reason_and_values(api: Api) -> None:
    memory_id = _store(
        api,
        "We deploy on Fridays",
        headers={"X-Change-Reason": "imported from the wiki"},
        tags=["ops"],
        importance=0.4,
        metadata={"source": "wiki", "stale": True},
    )
    patched = api.patch(
        f"/memory/{memory_id}",
        json={
            "content": "We deploy on Thursdays",
            "tags": ["ops", "release"],
            "importance": 0.8,
            "metadata": {"stale": None, "reviewed": True},
            "reason": "the release day moved",
        },
        headers={"X-Change-Reason": "ignored: the body's reason wins"},
    )
    assert patched.status_code == 200
    assert api.delete(f"/memory/{memory_id}?reason=superseded%20by%20the%20runbook").status_code == 200
    deleted_history = _history(api, memory_id)
    assert deleted_history["state"] == "deleted"  # a deleted memory's trail stays readable
    assert api.post(f"/memory/{memory_id}/recover", headers={"X-Change-Reason": "oops"}).status_code == 200

    body = _history(api, memory_id)
    assert body["order"] == "newest_first" and body["state"] == "active" and body["has_more"] is False
    events = body["events"]
    assert [e["event"] for e in events] == ["recovered", "deleted", "modified", "created"]
    assert [e["version"] for e in events] == [4, 3, 2, 1]
    assert [e["rev"] for e in events] == sorted((e["rev"] for e in events), reverse=True)
    assert all(e["actor"] == KEY_ACTOR for e in events)  # a digest of the key, never the key
    assert API_TOKEN not in str(body)
    recovered, deleted, modified, created = events
    assert created["reason"] == "imported from the wiki" and created["changes"] == {}
    assert modified["reason"] == "the release day moved"
    assert modified["changes"] == {
        "content": {"old": "We deploy on Fridays", "new": "We deploy on Thursdays"},
        "tags": {"old": ["ops"], "new": ["ops", "release"]},
        "importance": {"old": 0.4, "new": 0.8},
        "metadata.reviewed": {"old": None, "new": True},
        "metadata.stale": {"old": True, "new": None},
    }
    assert deleted["reason"] == "superseded by the runbook"
    assert deleted["changes"] == {"state": {"old": "active", "new": "deleted"}}
    assert recovered["reason"] == "oops"
    assert recovered["changes"] == {"state": {"old": "deleted", "new": "active"}}
    assert created["at"] <= modified["at"] <= deleted["at"] <= recovered["at"]


def test_a_rejected_change_records_nothing(api: Api) -> None:
    memory_id = _store(api, "Versioned note")
    conflict = api.patch(f"/memory/{memory_id}", json={"importance": 0.9, "if_version": 7})
    assert conflict.status_code == 409 and conflict.get_json()["reason"] == "version_conflict"
    assert api.delete(f"/memory/{memory_id}?if_version=5").status_code == 409
    too_long = api.patch(f"/memory/{memory_id}", json={"importance": 0.9, "reason": "x" * 501})
    assert too_long.status_code == 400 and too_long.get_json()["field"] == "reason"
    header = api.delete(f"/memory/{memory_id}", headers={"X-Change-Reason": "y" * 501})
    assert header.status_code == 400 and header.get_json()["field"] == "X-Change-Reason"
    assert [e["event"] for e in _events(api, memory_id)] == ["created"]
    assert api.get(f"/memory/{memory_id}").get_json()["memory"]["version"] == 1


def test_enrichment_and_archiving_are_recorded_as_jobs(api: Api, services: Services, jobs: Any) -> None:
    memory_id = _store(
        api,
        "Alice moved the billing service to Kubernetes.",
        tags=["infra"],
        importance=0.1,
        timestamp="2019-01-01T00:00:00Z",
        last_accessed="2019-01-01T00:00:00Z",
    )
    jobs()
    enriched = _events(api, memory_id)[0]
    assert enriched["event"] == "enriched" and enriched["actor"] == "job:enrich"
    assert enriched["version"] == 1  # a job never bumps the client's version
    new_tags = enriched["changes"]["tags"]["new"]
    assert enriched["changes"]["tags"]["old"] == ["infra"] and "entity:tool:kubernetes" in new_tags
    assert "metadata.entities" in enriched["changes"]

    use_services(services)
    services.settings = services.settings.model_copy(update={"consolidation_grace_period_days": 0})
    Consolidator(services).run("forget", dry_run=False)
    archived = _events(api, memory_id)[0]
    assert archived["event"] == "archived" and archived["actor"] == JOB_CONSOLIDATE.actor
    assert archived["changes"] == {"state": {"old": "active", "new": "archived"}}
    assert archived["reason"].startswith("relevance ")
    # Decay's daily score refresh is not a history event (it would swamp the trail).
    Consolidator(services).run("decay", dry_run=False)
    assert _events(api, memory_id)[0]["event"] == "archived"


def test_pagination_walks_every_event_once(api: Api) -> None:
    memory_id = _store(api, "Counter 0")
    for n in range(1, 8):
        assert api.patch(f"/memory/{memory_id}", json={"content": f"Counter {n}"}).status_code == 200
    seen: list[int] = []
    cursor = ""
    while True:
        page = _history(api, memory_id, f"?limit=3{cursor}")
        seen += [e["version"] for e in page["events"]]
        if not page["has_more"]:
            assert page["next_before"] is None
            break
        assert page["count"] == 3
        cursor = f"&before={page['next_before']}"
    assert seen == list(range(8, 0, -1))


def test_purge_removes_the_trail_and_leaves_a_tombstone(api: Api, services: Services) -> None:
    memory_id = _store(api, "Secret plan: move to Lisbon")
    api.patch(f"/memory/{memory_id}", json={"content": "Secret plan: move to Porto"})
    assert api.delete(f"/memory/{memory_id}?hard=true").status_code == 401
    purged = api.delete(f"/memory/{memory_id}?hard=true&reason=GDPR%20request", headers=ADMIN)
    assert purged.status_code == 200
    body = _history(api, memory_id)
    assert body["state"] == "purged"
    [tombstone] = body["events"]
    assert tombstone["event"] == "purged" and tombstone["actor"] == "admin"
    assert tombstone["reason"] == "GDPR request" and tombstone["changes"] == {}
    assert "Lisbon" not in str(body) and "Porto" not in str(body)
    rows = services.graph._ro("MATCH (e:MemoryEvent {memory_id: $id}) RETURN count(e)", {"id": memory_id})
    assert rows[0][0] == 1


def test_purge_job_and_history_retention(api: Api, services: Services) -> None:
    old = _store(api, "Deleted long ago")
    kept = _store(api, "Edited long ago, still here")
    api.patch(f"/memory/{kept}", json={"importance": 0.9})
    api.patch(f"/memory/{kept}", json={"importance": 0.7})
    api.delete(f"/memory/{old}")
    services.graph._query(
        "MATCH (m:Memory {id: $id}) SET m.deleted_at = '2000-01-01T00:00:00.000000+00:00'", {"id": old}
    )
    # The first change to `kept` is older than HISTORY_RETENTION_DAYS.
    services.graph._query(
        "MATCH (e:MemoryEvent {memory_id: $id, version: 2}) SET e.at = '2001-01-01T00:00:00.000000+00:00'",
        {"id": kept},
    )
    use_services(services)
    result = purge_deleted()
    assert result["purged"] == 1 and result["events_pruned"] == 1
    assert [e["event"] for e in _events(api, old)] == ["purged"]
    assert _events(api, old)[0]["actor"] == "job:purge"
    assert [e["version"] for e in _events(api, kept)] == [3, 1]  # the creation lives on the memory
    services.settings = services.settings.model_copy(update={"history_retention_days": 0})
    services.graph._query("MATCH (e:MemoryEvent) SET e.at = '2001-01-01T00:00:00.000000+00:00'")
    assert purge_deleted()["events_pruned"] == 0  # 0 keeps history forever


def test_history_errors(api: Api, client: Any) -> None:
    assert api.get(f"/memory/{uuid.uuid4()}/history").status_code == 404
    assert api.get("/memory/not-a-uuid/history").status_code == 400
    memory_id = _store(api, "History errors")
    assert api.get(f"/memory/{memory_id}/history?limit=0").status_code == 400
    assert api.get(f"/memory/{memory_id}/history?limit=201").status_code == 400
    assert api.get(f"/memory/{memory_id}/history?before=x").status_code == 400
    assert client.get(f"/memory/{memory_id}/history").status_code == 401


def test_batch_creates_record_the_actor(api: Api) -> None:
    response = api.post(
        "/memory/batch",
        json={"memories": [{"content": "batch one"}, {"content": "batch two"}]},
        headers={"X-Change-Reason": "import"},
    )
    assert response.status_code == 201
    for item in response.get_json()["results"]:
        [created] = _events(api, item["id"])
        assert created == {
            "event": "created",
            "at": created["at"],
            "actor": KEY_ACTOR,
            "reason": "import",
            "version": 1,
            "rev": 1,
            "changes": {},
        }
        assert created["at"] <= now_iso()


def test_a_client_updated_at_is_a_change_not_the_event_time(api: Api) -> None:
    memory_id = _store(api, "Imported with its own times")
    assert api.patch(f"/memory/{memory_id}", json={"updated_at": "2019-05-01T00:00:00Z"}).status_code == 200
    modified = _events(api, memory_id)[0]
    assert modified["changes"]["updated_at"]["new"].startswith("2019-05-01")
    assert modified["at"] > "2020"  # the event happened now
