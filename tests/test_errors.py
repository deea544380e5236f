"""One error envelope on every error path."""

from __future__ import annotations

import uuid

from automem.api.pending import NOT_IMPLEMENTED
from tests.conftest import Api


def assert_envelope(response, status: int, code: str | None = None) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == status
    body = response.get_json()
    assert body["status"] == "error" and isinstance(body["error"], str) and body["error"]
    assert isinstance(body["code"], str)
    assert set(body) <= {"status", "error", "code", "field", "current_version"}
    if code:
        assert body["code"] == code


def test_unknown_route_and_method(api: Api) -> None:
    assert_envelope(api.get("/nope"), 404, "not_found")
    assert_envelope(api.client.put("/memory", headers=api.headers), 405)


def test_not_implemented_routes_answer_501(api: Api) -> None:
    for method, path in NOT_IMPLEMENTED:
        url = path.replace("<memory_id>", str(uuid.uuid4()))
        assert_envelope(api._call(method, url), 501, "not_implemented")


def test_validation_and_conflict_envelopes(api: Api) -> None:
    assert_envelope(api.post("/memory", json={"content": ""}), 400, "invalid_input")
    assert_envelope(api.get(f"/memory/{uuid.uuid4()}"), 404, "not_found")
    assert_envelope(api.client.get("/tags"), 401, "unauthorized")
