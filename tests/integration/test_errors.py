"""One error envelope on every error path."""

from __future__ import annotations

import uuid
from typing import Any

from automem.services import Services
from tests.conftest import Api
from tests.envelope import ENVELOPE_KEYS, envelope_problem


def assert_envelope(response, status: int, reason: str | None = None) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == status
    body = response.get_json()
    assert envelope_problem(status, body, reason) is None, body
    assert set(body) <= ENVELOPE_KEYS | {"current_version"}


def test_unknown_route_and_method(api: Api) -> None:
    assert_envelope(api.get("/nope"), 404, "not_found")
    assert_envelope(api.client.put("/memory", headers=api.headers), 405)


def test_validation_and_conflict_envelopes(api: Api) -> None:
    assert_envelope(api.post("/memory", json={"content": ""}), 400, "invalid_input")
    assert_envelope(api.get(f"/memory/{uuid.uuid4()}"), 404, "not_found")
    assert_envelope(api.client.get("/tags"), 401, "unauthorized")


def _raw(api: Api, method: str, path: str, body: str) -> Any:
    """A request with the body as written: JSON escapes like \\u0000 and \\ud800 reach the server."""
    return api._call(method, path, data=body, headers={"Content-Type": "application/json"})


def test_text_the_stores_cannot_hold_is_a_400_naming_the_field(api: Api, services: Services) -> None:
    """Found by the fuzzer: a NUL ends FalkorDB's parameter header (the query failed, a 500) and a
    lone surrogate has no UTF-8 form (a 500 in the client library). The JSON parser refuses a
    lone surrogate in a body outright (the body is not valid UTF-8 text)."""
    cases = [
        ("POST", "/memory", r'{"content": "a\u0000b"}', "content"),
        ("POST", "/memory", r'{"content": "ok", "tags": ["x", "\ud800"]}', "body"),
        ("POST", "/memory", r'{"content": "ok", "metadata": {"k\u0000": 1}}', "metadata.k\\u0000"),
        (
            "POST",
            "/memory/batch",
            r'{"memories": [{"content": "a"}, {"content": "\udfff"}]}',
            "body",
        ),
        ("POST", "/recall", r'{"query": "x", "exclude_tags": ["\ud83d"]}', "body"),
        (  # found by the fuzzer: an ignored field's huge number hid the NUL behind it (a 500)
            "POST",
            "/memory/batch",
            r'{"memories": [{"content": "a", "x": -70452184182900645691392}, {"content": "b\u0000"}]}',
            "memories[1].content",
        ),
        ("PATCH", f"/memory/{uuid.uuid4()}", r'{"content": "\u0000"}', "content"),
    ]
    for method, path, body, field in cases:
        response = _raw(api, method, path, body)
        assert_envelope(response, 400, "invalid_input")
        assert response.get_json()["field"] == field, (path, body, response.get_json())
    for path in ("/memory/by-tag?tags=a%00b", "/recall?query=a%00", "/tags?prefix=%00"):
        response = api.get(path)
        assert_envelope(response, 400, "invalid_input")
    assert services.graph.counts()["total"] == 0
    # A surrogate pair is one character (an emoji, as json.dumps writes it by default): fine.
    assert _raw(api, "POST", "/memory", r'{"content": "party \ud83c\udf89"}').status_code == 201


def test_recall_types_of_the_wrong_shape_are_a_400(api: Api) -> None:
    """Found by the model properties: `types: [null]` or `types: true` raised inside the parser."""
    for types in ([None], True, 3, [["Decision"]]):
        response = api.post("/recall", json={"query": "x", "types": types})
        assert_envelope(response, 400, "invalid_input")
        assert response.get_json()["field"] == "types"


def test_a_date_out_of_range_in_utc_is_a_400(api: Api) -> None:
    """Found by the fuzzer: year 1 at +04:00 is before year 1 in UTC (an OverflowError, a 500)."""
    cases = (("t_valid", "0001-01-01T00:00:00+04:00"), ("timestamp", "9999-12-31T23:59:00-05:00"))
    for field, value in cases:
        response = api.post("/memory", json={"content": "out of range", field: value})
        assert_envelope(response, 400, "invalid_input")
        assert response.get_json()["field"] == field
