"""POST /admin/existing: which memory ids and edges exist (importers skip them on a re-run)."""

from __future__ import annotations

import uuid

from tests.conftest import ADMIN_TOKEN, Api


def test_existing_answers_which_ids_and_edges_exist(api: Api) -> None:
    admin = {"X-Admin-Token": ADMIN_TOKEN}
    a = api.post("/memory", json={"content": "first memory to look up"}).get_json()["memory_id"]
    b = api.post("/memory", json={"content": "second memory to look up"}).get_json()["memory_id"]
    api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "RELATES_TO"})
    assert api.delete(f"/memory/{b}").status_code == 200  # soft: its id stays taken
    absent = str(uuid.uuid4())
    relations = [
        {"memory1_id": a, "memory2_id": b, "type": "relates_to"},
        {"memory1_id": b, "memory2_id": a, "type": "RELATES_TO"},
        {"memory1_id": a, "memory2_id": b, "type": "LEADS_TO"},
    ]
    body = {"ids": [absent, b.upper(), a], "relations": relations}
    answer = api.post("/admin/existing", json=body, headers=admin)
    assert answer.status_code == 200
    assert answer.get_json() == {
        "status": "success",
        "ids": [b, a],
        "relations": [{"memory1_id": a, "memory2_id": b, "type": "RELATES_TO"}],
    }
    assert api.post("/admin/existing", json=body).status_code == 401  # no admin token (AutoMem: 401)
    for bad, field_name in (
        ({"ids": ["not-a-uuid"]}, "ids"),
        ({"ids": [absent] * 1001}, "ids"),
        ({"relations": [{**relations[0], "type": "NOPE"}]}, "relations"),
        ({"ids": [], "extra": 1}, "extra"),
    ):
        refused = api.post("/admin/existing", json=bad, headers=admin)
        assert refused.status_code == 400 and refused.get_json()["field"] == field_name, bad
