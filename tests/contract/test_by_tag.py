"""AutoMem §2.7: GET and DELETE /memory/by-tag — repeated or comma-separated `tags`, a clamped
`limit` and `offset`, flat memory objects, and the bulk delete with the API key."""

from __future__ import annotations

from tests.conftest import Api
from tests.contract.automem import BY_TAG, MEMORY, assert_error, assert_fields


def _seed(api: Api) -> list[str]:
    return [
        api.post(
            "/memory", json={"content": f"note {n}", "tags": ["team", f"n{n}"], "importance": n / 10}
        ).get_json()["memory_id"]
        for n in range(5)
    ]


def test_by_tag_answers_flat_memories_most_important_first(api: Api) -> None:
    ids = _seed(api)
    body = api.get("/memory/by-tag?tags=team&limit=2").get_json()
    assert_fields(body, BY_TAG)
    assert (body["count"], body["limit"], body["offset"], body["has_more"]) == (2, 2, 0, True)
    first = body["memories"][0]
    assert_fields(first, MEMORY)
    assert first["id"] == ids[4] and first["tags"] == ["team", "n4"]  # flat: tags at the top level


def test_tags_repeat_or_comma_separate(api: Api) -> None:
    _seed(api)
    repeated = api.get("/memory/by-tag?tags=n1&tags=n2").get_json()
    commas = api.get("/memory/by-tag?tags=n1,n2").get_json()
    assert repeated["count"] == commas["count"] == 2


def test_limit_and_offset_are_clamped_not_refused(api: Api) -> None:
    _seed(api)
    assert api.get("/memory/by-tag?tags=team&limit=0").get_json()["limit"] == 1
    assert api.get("/memory/by-tag?tags=team&limit=5000").get_json()["limit"] == 200
    assert api.get("/memory/by-tag?tags=team&limit=lots").get_json()["count"] == 5
    assert api.get("/memory/by-tag?tags=team&offset=-3").get_json()["offset"] == 0


def test_no_tags_is_a_400(api: Api) -> None:
    assert_error(api.get("/memory/by-tag"), 400)
    assert_error(api.delete("/memory/by-tag"), 400)


def test_delete_by_tag_with_the_api_key(api: Api) -> None:
    _seed(api)
    response = api.delete("/memory/by-tag?tags=team")
    assert response.status_code == 200
    body = response.get_json()
    assert_fields(body, {"status", "tags", "deleted_count"})
    assert body["deleted_count"] == 5 and body["tags"] == ["team"]
    assert api.get("/memory/by-tag?tags=team").get_json()["count"] == 0
