"""DELETE /memory/by-tag: AutoMem's bulk delete with the API key (`{status, tags, deleted_count}`),
as a soft delete recoverable like DELETE /memory/<id>; `?preview=true` only counts; `?hard=true`
purges at once and needs the admin token."""

from __future__ import annotations

from typing import Any

from automem.services import Services
from tests.conftest import ADMIN_TOKEN, Api

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def _store(api: Api, content: str, tags: list[str]) -> str:
    response = api.post("/memory", json={"content": content, "tags": tags})
    assert response.status_code == 201
    return str(response.get_json()["memory_id"])


def test_the_api_key_deletes_only_the_selection_softly(api: Api, services: Services, jobs: Any) -> None:
    doomed = [_store(api, f"scratch note {n}", ["scratch:session-1"]) for n in range(3)]
    kept = _store(api, "keep me", ["project-x"])
    jobs()
    done = api.delete("/memory/by-tag?tags=scratch")
    assert done.status_code == 200
    body = done.get_json()
    assert (body["status"], body["tags"], body["deleted_count"]) == ("success", ["scratch"], 3)
    assert body["deleted"] == "soft" and body["recoverable_days"] == services.settings.retention_days
    assert all(api.get(f"/memory/{i}").status_code == 404 for i in doomed)
    assert api.get(f"/memory/{kept}").status_code == 200
    assert api.get("/memory/by-tag?tags=scratch").get_json()["count"] == 0
    recalled = {r["id"] for r in api.get("/recall?query=scratch%20note").get_json()["results"]}
    assert not recalled & set(doomed)
    assert services.vectors is not None
    states = {r.payload["state"] for r in services.vectors.retrieve(doomed)}
    assert states == {"deleted"}
    assert api.post(f"/memory/{doomed[0]}/recover").status_code == 200  # soft: it comes back
    events = api.get(f"/memory/{doomed[1]}/history").get_json()["events"]
    assert events[0]["event"] == "deleted"


def test_a_preview_counts_and_deletes_nothing(api: Api) -> None:
    ids = [_store(api, f"team note {n}", ["team:a"]) for n in range(2)]
    preview = api.delete("/memory/by-tag?tags=team&preview=true").get_json()
    assert preview["preview"] is True and preview["count"] == 2 and set(preview["sample_ids"]) == set(ids)
    assert api.get("/memory/by-tag?tags=team").get_json()["count"] == 2


def test_a_hard_delete_needs_the_admin_token_and_purges(api: Api, services: Services) -> None:
    memory_id = _store(api, "purge me", ["old"])
    refused = api.delete("/memory/by-tag?tags=old&hard=true")
    assert refused.status_code == 401
    assert api.get(f"/memory/{memory_id}").status_code == 200  # a refusal writes nothing
    purged = api.delete("/memory/by-tag?tags=old&hard=true", headers=ADMIN).get_json()
    assert purged["deleted_count"] == 1 and purged["deleted"] == "hard"
    assert services.graph.get_memory(memory_id, include_deleted=True) is None


def test_tags_are_required(api: Api) -> None:
    missing = api.delete("/memory/by-tag")
    assert missing.status_code == 400
    assert missing.get_json()["field"] == "tags"
    nothing = api.delete("/memory/by-tag?tags=no-such-tag").get_json()
    assert nothing["deleted_count"] == 0
