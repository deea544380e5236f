"""One bad memory never fails its batch (issue 17): the enrichment and embedding jobs record the
memory that raised an error of its own (history event, GET /enrichment/status) and finish the
rest of their batch; the job itself succeeds, so nothing waits for an admin to reprocess it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from automem.backlog import queue_enrichment
from automem.record import MemoryRecord
from automem.services import Services
from automem.stores.graph import SequencePlace
from tests.conftest import ADMIN_TOKEN, Api

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _events(api: Api, memory_id: str) -> list[dict[str, Any]]:
    return list(api.get(f"/memory/{memory_id}/history").get_json()["events"])


def _failed_enrich_jobs(api: Api) -> int:
    return int(api.get("/enrichment/status").get_json()["queues"]["enrich"]["failed"])


def test_a_memory_the_enricher_cannot_handle_does_not_fail_its_batch(
    api: Api, services: Services, jobs: Any
) -> None:
    ids = [_store(api, f"Deployed release {n} of the billing service", tags=["ops"]) for n in range(3)]
    bad = ids[1]
    # A timestamp from before the validation existed, which no time arithmetic can read.
    services.graph._query("MATCH (m:Memory {id: $id}) SET m.timestamp = 'sometime last spring'", {"id": bad})
    jobs()

    status = api.get("/enrichment/status").get_json()
    assert _failed_enrich_jobs(api) == 0  # the job finished
    for memory_id in (ids[0], ids[2]):
        assert api.get(f"/memory/{memory_id}").get_json()["memory"]["metadata"].get("enrichment")
    failure = next(e for e in _events(api, bad) if e["event"] == "enrichment_failed")
    assert failure["actor"] == "job:enrich" and "ValueError" in failure["reason"]
    assert status["failed_items"]["count"] == 1 and status["failed_memories"] == 1
    [item] = status["failed_items"]["items"]
    assert item["memory_id"] == bad and item["job"] == "enrich_memories" and "ValueError" in item["reason"]
    assert status["stats"]["failures"] == 1 and status["pending"] == 0
    assert queue_enrichment(services) == 0  # not queued again until it changes

    # A client's fix makes a new version: enriched at the next run, and no longer listed.
    fixed = api.patch(f"/memory/{bad}", json={"timestamp": "2025-03-01T09:00:00Z"})
    assert fixed.status_code == 200, fixed.get_json()
    jobs()
    assert api.get(f"/memory/{bad}").get_json()["memory"]["metadata"].get("enrichment")
    status = api.get("/enrichment/status").get_json()
    assert status["failed_items"]["count"] == 0 and status["failed_memories"] == 0


def test_a_forced_reprocess_retries_a_failed_memory(api: Api, services: Services, jobs: Any) -> None:
    # Tagged, so it is in a sequence, whose place needs its time: an unreadable one fails it.
    memory_id = _store(api, "A note written by an older version", tags=["notes"])
    services.graph._query("MATCH (m:Memory {id: $id}) SET m.timestamp = 'the day before'", {"id": memory_id})
    jobs()
    assert api.get("/enrichment/status").get_json()["failed_memories"] == 1
    services.graph._query(  # an operator repairs the value in the graph, then reprocesses
        "MATCH (m:Memory {id: $id}) SET m.timestamp = '2025-01-01T00:00:00Z'", {"id": memory_id}
    )
    reprocess = api.post("/enrichment/reprocess", json={"ids": [memory_id]}, headers=ADMIN)
    assert reprocess.status_code == 202
    jobs()
    assert api.get("/enrichment/status").get_json()["failed_items"]["count"] == 0


def test_a_vector_the_provider_botches_fails_only_its_memory(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    embed = services.embedder.embed

    def botching(texts: list[str]) -> list[list[float]]:
        vectors = embed(texts)
        return [[float("nan")] * len(v) if "poison" in t else v for t, v in zip(texts, vectors, strict=True)]

    monkeypatch.setattr(services.embedder, "embed", botching)
    good = [_store(api, f"Ordinary note number {n}") for n in range(3)]
    bad = _store(api, "A poison note the provider cannot embed")
    jobs()

    assert api.get("/enrichment/status").get_json()["queues"]["embed"]["failed"] == 0
    for memory_id in good:
        assert api.get(f"/memory/{memory_id}").get_json()["memory"]["embedding_status"] == "stored"
    assert api.get(f"/memory/{bad}").get_json()["memory"]["embedding_status"] == "pending"
    failure = next(e for e in _events(api, bad) if e["event"] == "embedding_failed")
    assert failure["actor"] == "job:embed" and "finite" in failure["reason"]
    stored = services.graph.get_memories([bad], with_embedding=True)[0].embedding
    assert stored is None or np.isfinite(np.asarray(stored)).all()
    items = api.get("/enrichment/status").get_json()["failed_items"]["items"]
    assert [(i["memory_id"], i["job"]) for i in items] == [(bad, "embed_memories")]


def test_a_memory_whose_sequence_splice_fails_leaves_the_rest_of_its_sequence_linked(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A splice made under a sequence lock the job keeps from one memory to the next is isolated
    too: the memory whose splice raises is recorded, the others are linked and synced."""
    ids = [
        _store(
            api,
            f"Standup note {n} of the billing team",
            tags=["billing"],
            timestamp=f"2025-03-0{n + 1}T09:00:00Z",
        )
        for n in range(3)
    ]
    bad = ids[1]
    place = services.graph.sequence_place

    def failing_for_the_bad_one(doc: MemoryRecord) -> SequencePlace:
        if doc.id == bad:
            raise ValueError("a splice that cannot be made")
        return place(doc)

    monkeypatch.setattr(services.graph, "sequence_place", failing_for_the_bad_one)
    jobs()

    status = api.get("/enrichment/status").get_json()
    assert _failed_enrich_jobs(api) == 0 and status["failed_memories"] == 1
    assert [i["memory_id"] for i in status["failed_items"]["items"]] == [bad]
    assert status["stats"]["enriched"] == 2
    monkeypatch.undo()
    assert services.graph.sequence_links(ids[2]) == ([bad], [])  # the third follows the second
    revs = {d.id: d.rev for d in services.graph.get_memories([ids[0], ids[2]])}
    synced = services.vectors.retrieve([ids[0], ids[2]], fields=("rev",))
    assert {r.id: r.payload["rev"] for r in synced} == revs  # the enrichment reached the index
