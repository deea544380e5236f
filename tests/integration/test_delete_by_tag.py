"""DELETE /memory/by-tag (admin): a preview with a count and a single-use confirm token bound to
the selection, then the soft delete of everything the selection holds."""

from __future__ import annotations

from typing import Any

from automem.services import Services
from tests.conftest import ADMIN_TOKEN, Api

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def _store(api: Api, content: str, tags: list[str]) -> str:
    response = api.post("/memory", json={"content": content, "tags": tags})
    assert response.status_code == 201
    return str(response.get_json()["memory_id"])


def test_preview_then_confirm_deletes_only_the_selection(api: Api, services: Services, jobs: Any) -> None:
    doomed = [_store(api, f"scratch note {n}", ["scratch:session-1"]) for n in range(3)]
    kept = _store(api, "keep me", ["project-x"])
    jobs()
    preview = api.delete("/memory/by-tag?tags=scratch", headers=ADMIN)
    assert preview.status_code == 200
    body = preview.get_json()
    assert body["preview"] is True and body["count"] == 3
    assert set(body["sample_ids"]) == set(doomed)
    assert all(api.get(f"/memory/{i}").status_code == 200 for i in doomed)  # a preview deletes nothing
    done = api.delete(f"/memory/by-tag?tags=scratch&confirm={body['confirm_token']}", headers=ADMIN)
    assert done.status_code == 200
    assert done.get_json()["deleted"] == 3
    assert all(api.get(f"/memory/{i}").status_code == 404 for i in doomed)
    assert api.get(f"/memory/{kept}").status_code == 200
    assert api.get("/memory/by-tag?tags=scratch").get_json()["count"] == 0
    recalled = {r["id"] for r in api.get("/recall?query=scratch%20note").get_json()["results"]}
    assert not recalled & set(doomed)
    assert services.vectors is not None
    states = {r.payload["state"] for r in services.vectors.retrieve(doomed)}
    assert states == {"deleted"}


def test_a_token_is_single_use_and_bound_to_its_selection(api: Api) -> None:
    _store(api, "alpha", ["team:a"])
    _store(api, "beta", ["team:b"])
    token = api.delete("/memory/by-tag?tags=team:a", headers=ADMIN).get_json()["confirm_token"]
    other = api.delete(f"/memory/by-tag?tags=team&confirm={token}", headers=ADMIN)
    assert other.status_code == 400
    assert other.get_json()["field"] == "confirm"
    assert api.get("/memory/by-tag?tags=team").get_json()["count"] == 2  # nothing deleted
    fresh = api.delete("/memory/by-tag?tags=team:a", headers=ADMIN).get_json()["confirm_token"]
    assert api.delete(f"/memory/by-tag?tags=team:a&confirm={fresh}", headers=ADMIN).get_json()["deleted"] == 1
    again = api.delete(f"/memory/by-tag?tags=team:a&confirm={fresh}", headers=ADMIN)
    assert again.status_code == 400


def test_delete_by_tag_needs_admin_and_tags(api: Api) -> None:
    assert api.delete("/memory/by-tag?tags=x").status_code == 403
    missing = api.delete("/memory/by-tag", headers=ADMIN)
    assert missing.status_code == 400
    assert missing.get_json()["field"] == "tags"
