"""A background job never overwrites a newer client change, and a client change never overwrites a
job's: each test makes the other side land between a reader's read and its guarded write.

(Enrichment and LLM classification have the same kind of test in test_enrichment.py and
test_enrichment_llm.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from automem.services import Services
from enrichment.consolidation import Consolidator
from enrichment.context import use_services
from enrichment.embedding import embed_memories
from enrichment.enrich import enrich_memories
from enrichment.maintenance import flush_access
from tests.conftest import Api

OLD = "2019-01-01T00:00:00Z"


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _graph(services: Services, memory_id: str, *fields: str) -> list[Any]:
    cypher = "MATCH (m:Memory {id: $id}) RETURN " + ", ".join(f"m.{f}" for f in fields)
    return list(services.graph._ro(cypher, {"id": memory_id})[0])


def test_the_embedding_job_keeps_a_vector_the_client_supplied_meanwhile(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_id = _store(api, "The embedding job races a client vector")
    client_vector = [0.0] * services.embedder.dimension
    client_vector[3] = 1.0
    real_embed = services.embedder.embed

    def embed_while_the_client_sends_its_vector(texts: Any) -> list[list[float]]:
        vectors = real_embed(texts)  # the job has read the memory and computed its vector
        response = api.patch(f"/memory/{memory_id}", json={"embedding": client_vector})
        assert response.status_code == 200
        return vectors

    monkeypatch.setattr(services.embedder, "embed", embed_while_the_client_sends_its_vector)
    use_services(services)
    result = embed_memories([memory_id])
    assert result["embedded"] == 0
    (stored,) = services.graph.get_memories([memory_id], with_embedding=True)
    assert stored.embedding_model == "client"
    assert [round(v, 6) for v in stored.embedding or []] == client_vector


def test_a_recall_access_does_not_undo_a_client_last_accessed(api: Api, services: Services) -> None:
    memory_id = _store(api, "Quarterly review notes about the roadmap")
    assert memory_id in {r["id"] for r in api.get("/recall?query=quarterly%20roadmap").get_json()["results"]}
    # After the recall (logged, not yet applied) the client sets an older last_accessed.
    assert api.patch(f"/memory/{memory_id}", json={"last_accessed": OLD}).status_code == 200
    use_services(services)
    flush_access()
    count, last = _graph(services, memory_id, "access_count", "last_accessed")
    assert count == 1 and last.startswith("2019-01-01")
    # An access after the client's change moves it as usual.
    api.get("/recall?query=quarterly%20roadmap")
    flush_access()
    count, last = _graph(services, memory_id, "access_count", "last_accessed")
    assert count == 2 and not last.startswith("2019")


def test_forgetting_leaves_a_memory_the_client_just_changed(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_id = _store(api, "Trivia about the old office", importance=0.1, timestamp=OLD, last_accessed=OLD)
    services.settings = services.settings.model_copy(update={"consolidation_grace_period_days": 0})
    real_archive = services.graph.archive_memories

    def archive_after_a_client_edit(rows: Any, at: str) -> list[str]:
        assert api.patch(f"/memory/{memory_id}", json={"importance": 0.95}).status_code == 200
        return real_archive(rows, at)

    monkeypatch.setattr(services.graph, "archive_memories", archive_after_a_client_edit)
    result = Consolidator(services).run("forget", dry_run=False)
    assert result["steps"]["forget"]["archived"] == 0 and result["steps"]["forget"]["conflicts"] == 1
    memory = api.get(f"/memory/{memory_id}").get_json()["memory"]
    assert memory["state"] == "active" and memory["importance"] == 0.95
    events = api.get(f"/memory/{memory_id}/history").get_json()["events"]
    assert [e["event"] for e in events] == ["modified", "created"]  # no archive was recorded


def test_a_patch_keeps_what_enrichment_wrote_after_the_patch_read(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_id = _store(api, "Bob set up Grafana dashboards for the API.", tags=["ops"])
    real_get = services.graph.get_memory
    raced: list[bool] = []

    def read_then_enrichment_lands(mid: str, include_deleted: bool = False, tenant: str | None = None) -> Any:
        doc = real_get(mid, include_deleted, tenant)
        if not raced:  # the PATCH has read the memory; enrichment commits before its write
            raced.append(True)
            use_services(services)
            assert enrich_memories([memory_id])["enriched"] == 1
        return doc

    monkeypatch.setattr(services.graph, "get_memory", read_then_enrichment_lands)
    response = api.patch(f"/memory/{memory_id}", json={"metadata": {"reviewed": True}})
    assert response.status_code == 200
    memory = response.get_json()["memory"]
    assert memory["metadata"]["reviewed"] is True
    assert "entities" in memory["metadata"] and "enrichment" in memory["metadata"]  # not overwritten
    assert "entity:tool:grafana" in memory["tags"]
    modified = api.get(f"/memory/{memory_id}/history").get_json()["events"][0]
    # The recorded old values are the enriched ones the write really replaced.
    assert modified["event"] == "modified"
    assert modified["changes"] == {"metadata.reviewed": {"old": None, "new": True}}
