"""AutoMem §2.8: POST /associate — one link (type upper-cased, strength default 0.5) → 201, or a
batch of up to 500 → 201, or 207 when some failed; AutoMem's error cases."""

from __future__ import annotations

import uuid

from tests.conftest import Api
from tests.contract.automem import ASSOCIATE, ASSOCIATE_BATCH, assert_error, assert_fields


def _two(api: Api) -> tuple[str, str]:
    a = api.post("/memory", json={"content": "We chose Postgres"}).get_json()["memory_id"]
    b = api.post("/memory", json={"content": "The outage was a lock"}).get_json()["memory_id"]
    return a, b


def test_one_link(api: Api) -> None:
    a, b = _two(api)
    response = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "leads_to"})
    assert response.status_code == 201
    body = response.get_json()
    assert_fields(body, ASSOCIATE)
    assert (body["relation_type"], body["strength"]) == ("LEADS_TO", 0.5)
    default = api.post("/associate", json={"memory1_id": b, "memory2_id": a}).get_json()
    assert default["relation_type"] == "RELATES_TO"
    typed = api.post(
        "/associate",
        json={"memory1_id": a, "memory2_id": b, "type": "PREFERS_OVER", "strength": 0.8, "context": "db"},
    ).get_json()
    assert typed["context"] == "db"  # AutoMem echoes the type's own properties


def test_link_errors(api: Api) -> None:
    a, b = _two(api)
    assert_error(api.post("/associate", json={"memory1_id": a}), 400)
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": "nope"}), 400)
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": a}), 400)
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "LIKES"}), 400)
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "SIMILAR_TO"}), 400)
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": b, "strength": 1.5}), 400)
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": str(uuid.uuid4())}), 404)


def test_batch_201_and_207(api: Api) -> None:
    a, b = _two(api)
    done = api.post("/associate", json={"associations": [{"memory1_id": a, "memory2_id": b}]})
    assert done.status_code == 201
    assert_fields(done.get_json(), ASSOCIATE_BATCH)
    partial = api.post(
        "/associate",
        json={
            "associations": [
                {"memory1_id": a, "memory2_id": b, "type": "REINFORCES"},
                {"memory1_id": a, "memory2_id": str(uuid.uuid4())},
            ]
        },
    )
    assert partial.status_code == 207
    body = partial.get_json()
    assert_fields(body, ASSOCIATE_BATCH)
    assert (body["status"], body["created_count"], body["failed_count"]) == ("partial_success", 1, 1)
    assert_fields(body["succeeded"][0], {"index", "memory1_id", "memory2_id", "relation_type", "strength"})
    assert_fields(body["failed"][0], {"index", "reason"})
    assert_error(api.post("/associate", json={"associations": []}), 400)
    too_many = [{"memory1_id": a, "memory2_id": b}] * 501
    assert_error(api.post("/associate", json={"associations": too_many}), 400)
