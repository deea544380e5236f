"""The entity routes on the real embedded stack: enrichment creates the entities (the jobs run
in-process), the routes list and find them, and a merge moves tags, edges, history and vector
payloads to the survivor, after which enrichment maps the merged name to it."""

from __future__ import annotations

from typing import Any

import pytest

from automem.schemas import (
    EntitiesResponse,
    EntityAuditResponse,
    EntityMergeResult,
    EntityResponse,
    MergeCandidatesResponse,
)
from automem.services import Services
from tests.conftest import ADMIN_TOKEN, Api
from tests.envelope import envelope_problem
from tests.integration.test_scope_ranges import assert_ranges_cover

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}
ENTITY_FIELDS = {"id", "slug", "name", "category", "aliases", "reference_count", "created_at", "merged_into"}
RACHEL, RACH = "entity:person:rachel", "entity:person:rach"


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _ok(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.get_json()
    assert response.status_code == 200, body
    assert body["status"] == "success"
    return body


def _error(response: Any, status: int, reason: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = response.get_json()
    assert response.status_code == status, body
    assert envelope_problem(status, body, reason) is None
    return body


def _memory(api: Api, memory_id: str) -> dict[str, Any]:
    return dict(_ok(api.get(f"/memory/{memory_id}"))["memory"])


@pytest.fixture
def people(api: Api, jobs: Any) -> dict[str, list[str]]:
    """Two memories naming Rachel, one naming Rach (enriched: entities, tags, MENTIONS)."""
    ids = {
        "rachel": [
            _store(api, "Rachel started a new job at a hospital."),
            _store(api, "Talked to Rachel about her trip to Paris."),
        ],
        "rach": [_store(api, "I had lunch with Rach yesterday.", tags=["lunch"])],
    }
    jobs()
    assert RACH in _memory(api, ids["rach"][0])["tags"]
    return ids


# --- reads ------------------------------------------------------------------------------------
def test_entities_listed_by_mentions_with_automems_fields(api: Api, people: dict[str, list[str]]) -> None:
    body = _ok(api.get("/entities?category=person"))
    listed = {e["id"]: e for e in body["entities"]}
    assert set(listed[RACHEL]) >= ENTITY_FIELDS
    assert listed[RACHEL]["reference_count"] == 2 and listed[RACH]["reference_count"] == 1
    assert listed[RACHEL]["category"] == "person" and listed[RACHEL]["name"] == "Rachel"
    assert [e["id"] for e in body["entities"]].index(RACHEL) < [e["id"] for e in body["entities"]].index(RACH)
    assert body["count"] == len(body["entities"])
    EntitiesResponse.model_validate(body)  # the documented response model
    places = _ok(api.get("/entities?category=place"))["entities"]
    assert [e["id"] for e in places] == ["entity:place:paris"]
    assert _ok(api.get("/entities?limit=1"))["count"] == 1
    assert _ok(api.get("/entities?limit=5000"))["limit"] == 500  # AutoMem clamps


@pytest.mark.parametrize("limit", ["0", "-3", "abc", "1.5"])
def test_entities_limit_below_one_or_not_an_integer_is_400(api: Api, limit: str) -> None:
    assert _error(api.get(f"/entities?limit={limit}"), 400, "invalid_input")["field"] == "limit"


def test_entity_by_slug_with_its_memories(api: Api, people: dict[str, list[str]]) -> None:
    body = _ok(api.get("/entity/rachel"))
    assert body["entity"]["id"] == RACHEL and body["matched_by"] == "slug"
    assert body["memory_count"] == 2 and {m["id"] for m in body["memories"]} == set(people["rachel"])
    EntityResponse.model_validate(body)
    assert _ok(api.get("/entity/rachel?memory_limit=1"))["memories"].__len__() == 1
    assert _ok(api.get("/entity/RACHEL?category=person"))["entity"]["id"] == RACHEL
    _error(api.get("/entity/rachel?category=tool"), 404, "not_found")
    _error(api.get("/entity/nobody"), 404, "not_found")
    assert _error(api.get("/entity/not%20a%20slug!"), 400, "invalid_input")["field"] == "slug"


def test_merge_candidates_pair_a_short_form_with_its_name(api: Api, people: dict[str, list[str]]) -> None:
    body = _ok(api.get("/entities/merge-candidates"))
    pair = next(c for c in body["candidates"] if {c["entity_a"], c["entity_b"]} == {RACHEL, RACH})
    assert (pair["canonical"], pair["alias"], pair["reason"]) == (RACHEL, RACH, "short_form")
    assert pair["confidence"] == 0.6 and pair["auto_merge"] is False
    assert pair["merge"] == {
        "path": "/entity/rach/merge",
        "body": {"merge_into": "rachel", "category": "person", "merge_into_category": "person"},
    }
    assert body["count"] == len(body["candidates"])
    MergeCandidatesResponse.model_validate(body)


def test_audit_is_an_admin_dry_run(api: Api, services: Services, people: dict[str, list[str]]) -> None:
    odd = _store(api, "Tagged by hand.", tags=["entity:person:x", "entity:gadget:widget"])
    _error(api.get("/entities/audit"), 401, "admin_required")
    before = services.graph.counts()
    body = _ok(api.get("/entities/audit", headers=ADMIN))
    assert body["dry_run"] is True and services.graph.counts() == before
    entries = {e["tag"]: e for e in body["entries"]}
    assert entries[RACHEL]["accepted"] is True and entries[RACHEL]["memory_count"] == 2
    assert set(entries["entity:person:x"]["reasons"]) == {"too_short", "no_entity"}
    assert set(entries["entity:gadget:widget"]["reasons"]) == {"unknown_category", "no_entity"}
    assert body["summary"]["by_reason"]["no_entity"] == 2
    assert body["summary"]["rejected"] == 2 and body["summary"]["tags"] == len(entries)
    only = _ok(api.get("/entities/audit?reason=unknown_category&summary=false", headers=ADMIN))
    assert [e["tag"] for e in only["entries"]] == ["entity:gadget:widget"]
    summary = _ok(api.get("/entities/audit?summary=true&include_merge_candidates=true", headers=ADMIN))
    assert summary["entries"] == [] and summary["merge_candidates"]
    EntityAuditResponse.model_validate(body)
    EntityAuditResponse.model_validate(summary)
    assert _memory(api, odd)["version"] == 1


# --- the merge --------------------------------------------------------------------------------
def _merge(api: Api, slug: str, body: Any, admin: bool = True) -> Any:
    return api.post(f"/entity/{slug}/merge", json=body, headers=ADMIN if admin else {})


def test_merge_refusals(api: Api, people: dict[str, list[str]]) -> None:
    _error(_merge(api, "rach", {"merge_into": "rachel"}, admin=False), 401, "admin_required")
    assert _error(_merge(api, "rach", {}), 400, "invalid_input")["field"] == "merge_into"
    assert _error(_merge(api, "rach", {"merge_into": 7}), 400)["field"] == "merge_into"
    assert _error(_merge(api, "rach", {"merge_into": "Not a slug!"}), 400)["field"] == "merge_into"
    assert _error(_merge(api, "bad%20slug", {"merge_into": "rachel"}), 400)["field"] == "slug"
    _error(_merge(api, "nobody", {"merge_into": "rachel"}), 404, "not_found")
    assert _error(_merge(api, "rach", {"merge_into": "nobody"}), 404)["field"] == "merge_into"
    _error(_merge(api, "rach", {"merge_into": "rach"}), 400, "invalid_input")
    assert _memory(api, people["rach"][0])["tags"] == ["lunch", RACH]  # nothing changed


def test_merge_moves_tags_edges_history_and_payloads(
    api: Api, services: Services, jobs: Any, people: dict[str, list[str]]
) -> None:
    rach_memory = people["rach"][0]
    before = _memory(api, rach_memory)
    body = _ok(_merge(api, "rach", {"merge_into": "rachel", "reason": "same person"}))
    merge = body["merge"]
    assert (merge["canonical"], merge["alias"], merge["alias_slug"]) == (RACHEL, RACH, "rach")
    assert (merge["memories_updated"], merge["edges_moved"], merge["tags_rewritten"]) == (1, 1, 1)
    assert body["entity"]["aliases"] == ["rach"] and body["merged"]["merged_into"] == RACHEL
    EntityMergeResult.model_validate(body)
    after = _memory(api, rach_memory)
    assert after["tags"] == ["lunch", RACHEL]
    assert after["version"] == before["version"] + 1
    assert after["metadata"]["enrichment"]["tags"] == [RACHEL]
    assert after["metadata"]["entities"]["person"] == ["Rachel"]
    keys = {e["key"] for e in services.graph.entities_of([rach_memory])[rach_memory]}
    assert keys == {"default:person:rachel"}
    event = _ok(api.get(f"/memory/{rach_memory}/history"))["events"][0]
    assert (event["event"], event["actor"], event["reason"]) == ("entity_merged", "admin", "same person")
    assert event["changes"]["tags"] == {"old": ["lunch", RACH], "new": ["lunch", RACHEL]}
    assert event["changes"]["entity"] == {"old": RACH, "new": RACHEL}
    assert services.vectors is not None
    (point,) = services.vectors.retrieve([rach_memory])
    assert RACHEL in point.payload["tags"] and RACH not in point.payload["tags"]
    assert point.payload["rev"] == services.graph.get_memory(rach_memory).rev  # type: ignore[union-attr]
    assert RACH not in {e["id"] for e in _ok(api.get("/entities"))["entities"]}
    alias = _ok(api.get("/entity/rach"))
    assert (alias["entity"]["id"], alias["matched_by"], alias["memory_count"]) == (RACHEL, "alias", 3)
    recall = _ok(api.get("/memory/by-tag?tags=entity:person:rach"))
    assert recall["count"] == 0
    assert_ranges_cover(services.graph)  # the merge wrote seq_scope again


def test_enrichment_resolves_a_merged_name_to_the_survivor(
    api: Api, services: Services, jobs: Any, people: dict[str, list[str]]
) -> None:
    _ok(_merge(api, "rach", {"merge_into": "rachel"}))
    fresh = _store(api, "Rach said the new job is great.")
    jobs()
    memory = _memory(api, fresh)
    assert RACHEL in memory["tags"] and RACH not in memory["tags"]
    assert memory["metadata"]["entities"]["person"] == ["Rachel"]
    assert {e["key"] for e in services.graph.entities_of([fresh])[fresh]} == {"default:person:rachel"}
    assert _ok(api.get("/entity/rachel"))["memory_count"] == 4
    # Re-enriching an old memory (forced) keeps it on the survivor too.
    response = api.post("/enrichment/reprocess", json={"ids": [people["rach"][0]]}, headers=ADMIN)
    assert response.status_code == 202
    jobs()
    assert RACH not in _memory(api, people["rach"][0])["tags"]


def test_an_enrichment_racing_a_merge_is_retried(
    api: Api, services: Services, people: dict[str, list[str]]
) -> None:
    """An enrichment that resolved its names before the merge must not write the merged entity."""
    memory_id = people["rach"][0]
    _ok(_merge(api, "rach", {"merge_into": "rachel"}))
    doc = services.graph.get_memory(memory_id)
    assert doc is not None
    stale = [
        {"key": "default:person:rach", "tenant": "default", "kind": "person", "slug": "rach", "name": "Rach"}
    ]
    written = services.graph.apply_enrichment(memory_id, doc.version, {"enriched_at": "2030-01-01"}, stale)
    assert written is False
    assert {e["key"] for e in services.graph.entities_of([memory_id])[memory_id]} == {"default:person:rachel"}


def test_merge_again_is_a_no_op_and_merging_back_reverses_it(
    api: Api, jobs: Any, people: dict[str, list[str]]
) -> None:
    _ok(_merge(api, "rach", {"merge_into": "rachel"}))
    again = _ok(_merge(api, "rach", {"merge_into": "rachel"}))["merge"]
    assert again["already_merged"] is True and again["memories_updated"] == 0
    back = _ok(_merge(api, "rachel", {"merge_into": "rach"}))
    assert back["merge"]["reversed"] is True and back["merge"]["memories_updated"] == 3
    assert back["entity"]["id"] == RACH and back["entity"]["merged_into"] is None
    assert back["entity"]["aliases"] == ["rachel"] and back["merged"]["merged_into"] == RACH
    for memory_id in people["rachel"] + people["rach"]:
        assert RACH in _memory(api, memory_id)["tags"]
        assert RACHEL not in _memory(api, memory_id)["tags"]
    listed = {e["id"] for e in _ok(api.get("/entities?category=person"))["entities"]}
    assert RACH in listed and RACHEL not in listed
    # An entity merged elsewhere cannot be merged into a third one.
    _store(api, "Met Monica for coffee.")
    jobs()
    gone = _error(_merge(api, "rachel", {"merge_into": "monica"}), 404, "entity_merged")
    assert gone["merged_into"] == RACH


def test_a_client_edit_during_a_merge_survives(
    api: Api, monkeypatch: pytest.MonkeyPatch, people: dict[str, list[str]]
) -> None:
    """The merge writes a memory only at the version it read: a PATCH in between is kept, and
    the memory is re-read and merged on top of it."""
    from automem import entities

    memory_id = people["rach"][0]
    real = entities.rewrite_for_merge
    edited: list[bool] = []

    def rewrite_after_a_client_edit(*args: Any, **kwargs: Any) -> Any:
        props = real(*args, **kwargs)
        if not edited:  # the client edits the memory after the merge read it
            edited.append(True)
            response = api.patch(f"/memory/{memory_id}", json={"importance": 0.95})
            assert response.status_code == 200
        return props

    monkeypatch.setattr(entities, "rewrite_for_merge", rewrite_after_a_client_edit)
    merge = _ok(_merge(api, "rach", {"merge_into": "rachel"}))["merge"]
    assert merge["memories_updated"] == 1 and merge["skipped"] == []
    memory = _memory(api, memory_id)
    assert memory["importance"] == 0.95 and RACHEL in memory["tags"] and RACH not in memory["tags"]
    events = [e["event"] for e in _ok(api.get(f"/memory/{memory_id}/history"))["events"]]
    assert events[:2] == ["entity_merged", "modified"]
