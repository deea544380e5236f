"""The enrichment pipeline on real FalkorDB, Redis, Qdrant Edge and an in-process RQ worker:
entities become tags, nodes and MENTIONS edges; PRECEDED_BY follows event time within a scope;
SIMILAR_TO appears once vectors exist; client changes made during a job survive; reconcile
re-does work lost with the queue."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
import redis

from automem.record import MemoryRecord
from automem.services import Services
from enrichment import enrich as enrichment_jobs
from enrichment import links
from enrichment.enrich import ENRICHMENT_VERSION, first_sentence
from enrichment.intake import dispatch_intake
from enrichment.links import SequenceLocks
from enrichment.maintenance import reconcile
from tests.conftest import ADMIN_TOKEN, Api

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _memory(api: Api, memory_id: str) -> dict[str, Any]:
    response = api.get(f"/memory/{memory_id}")
    assert response.status_code == 200
    return dict(response.get_json()["memory"])


def test_create_reports_enrichment_queued(api: Api) -> None:
    response = api.post("/memory", json={"content": "We chose PostgreSQL for the billing service."})
    assert response.get_json()["enrichment"] == "queued"


def test_enrichment_adds_entity_tags_nodes_summary_and_run_info(
    api: Api, services: Services, jobs: Any
) -> None:
    memory_id = _store(
        api,
        "We migrated the billing service from MySQL to PostgreSQL. Alice Johnson led it.",
        tags=["project-x"],
    )
    jobs()
    memory = _memory(api, memory_id)
    assert memory["enriched"] is True
    assert "project-x" in memory["tags"]
    assert "entity:tool:postgresql" in memory["tags"]
    assert "entity:tool:mysql" in memory["tags"]
    assert "entity:person:alice-johnson" in memory["tags"]
    assert "entity:tool" in memory["tag_prefixes"]
    run = memory["metadata"]["enrichment"]
    assert run["version"] == ENRICHMENT_VERSION
    assert run["at"]
    assert "entity:tool:postgresql" in run["tags"]
    assert "PostgreSQL" in memory["metadata"]["entities"]["tool"]
    entities = services.graph.entities_of([memory_id])[memory_id]
    assert {e["key"] for e in entities} >= {"default:tool:postgresql", "default:person:alice-johnson"}
    doc = services.graph.get_memory(memory_id)
    assert doc is not None
    assert doc.summary == "We migrated the billing service from MySQL to PostgreSQL."


def test_entity_tags_are_browsable_and_filter_recall(api: Api, jobs: Any) -> None:
    _store(api, "Bob set up Redis for the session cache.")
    _store(api, "The weather was nice today.")
    jobs()
    listing = api.get("/memory/by-tag?tags=entity:tool:redis").get_json()
    assert listing["count"] == 1
    tree = api.get("/tags?prefix=entity").get_json()
    assert any(item["tag"] == "entity:tool:redis" for item in tree["flat"])


def test_entity_nodes_are_shared_between_memories(api: Api, services: Services, jobs: Any) -> None:
    first = _store(api, "Rachel started a new job at a hospital.")
    second = _store(api, "I had dinner with Rachel and her sister.")
    jobs()
    stats = services.graph.entity_stats(["default:person:rachel"])
    assert stats == {"default:person:rachel": 2}
    found = services.graph.entities_of([first, second])
    assert "default:person:rachel" in {e["key"] for e in found[first]}
    assert "default:person:rachel" in {e["key"] for e in found[second]}


def test_re_enrichment_after_content_change_replaces_entities(
    api: Api, services: Services, jobs: Any
) -> None:
    memory_id = _store(api, "We run everything on Kubernetes.", tags=["infra"])
    jobs()
    assert "entity:tool:kubernetes" in _memory(api, memory_id)["tags"]
    api.patch(f"/memory/{memory_id}", json={"content": "We moved everything to Nomad and Consul."})
    jobs()
    memory = _memory(api, memory_id)
    assert "entity:tool:kubernetes" not in memory["tags"]
    assert "infra" in memory["tags"]
    keys = {e["key"] for e in services.graph.entities_of([memory_id]).get(memory_id, [])}
    assert "default:tool:kubernetes" not in keys


def test_client_tags_survive_and_client_entity_tags_are_kept(api: Api, jobs: Any) -> None:
    memory_id = _store(api, "Plain note without names.", tags=["entity:person:zoe", "notes"])
    jobs()
    memory = _memory(api, memory_id)
    assert memory["tags"][:2] == ["entity:person:zoe", "notes"]


def _chain(services: Services, ids: list[str]) -> list[tuple[list[str], list[str]]]:
    return [services.graph.sequence_links(i) for i in ids]


def test_preceded_by_follows_event_time_within_scope(api: Api, services: Services, jobs: Any) -> None:
    scope = ["chat", "chat:session-1"]
    first = _store(api, "first turn", tags=scope, timestamp="2025-01-01T10:00:00Z")
    third = _store(api, "third turn", tags=scope, timestamp="2025-01-01T10:02:00Z")
    other = _store(api, "another session", tags=["chat", "chat:session-2"], timestamp="2025-01-01T10:01:30Z")
    jobs()
    # A late arrival is spliced between the two it belongs between.
    second = _store(api, "second turn", tags=scope, timestamp="2025-01-01T10:01:00Z")
    jobs()
    assert services.graph.sequence_links(third) == ([second], [])
    assert services.graph.sequence_links(second) == ([first], [third])
    assert services.graph.sequence_links(first) == ([], [second])
    assert services.graph.sequence_links(other) == ([], [])


def test_neighbours_far_apart_in_time_are_found(api: Api, services: Services, jobs: Any) -> None:
    """The neighbour search widens its time window (an hour, a day, the whole scope)."""
    scope = ["chat", "chat:sparse"]
    stamps = ["2024-03-01T09:00:00Z", "2025-01-01T08:00:00Z", "2025-01-01T09:30:00Z", "2025-01-01T10:00:00Z"]
    ids = [_store(api, f"turn {n}", tags=scope, timestamp=t) for n, t in enumerate(stamps)]
    _store(api, "other scope, in between", tags=["chat", "chat:dense"], timestamp="2025-01-01T09:45:00Z")
    jobs()
    assert [services.graph.sequence_links(i)[0] for i in ids] == [[], [ids[0]], [ids[1]], [ids[2]]]
    assert services.graph.sequence_links(ids[0])[1] == [ids[1]]  # ten months later


def test_equal_timestamps_follow_creation_order(api: Api, services: Services, jobs: Any) -> None:
    body = {
        "memories": [
            {"content": f"turn {n}", "tags": ["log:day-1"], "timestamp": "2025-03-01T00:00:00Z"}
            for n in range(4)
        ]
    }
    items = api.post("/memory/batch", json=body).get_json()["results"]
    ids = [item["id"] for item in items]
    jobs()
    for earlier, later in itertools.pairwise(ids):
        assert services.graph.sequence_links(later)[0] == [earlier]


def test_changing_timestamp_moves_memory_and_heals_the_gap(api: Api, services: Services, jobs: Any) -> None:
    tags = ["journal"]
    a = _store(api, "entry a", tags=tags, timestamp="2025-01-01T00:00:00Z")
    b = _store(api, "entry b", tags=tags, timestamp="2025-01-02T00:00:00Z")
    c = _store(api, "entry c", tags=tags, timestamp="2025-01-03T00:00:00Z")
    jobs()
    api.patch(f"/memory/{b}", json={"timestamp": "2025-01-04T00:00:00Z"})
    jobs()
    assert services.graph.sequence_links(c) == ([a], [b])
    assert services.graph.sequence_links(b) == ([c], [])
    assert services.graph.sequence_links(a) == ([], [c])


def test_session_metadata_defines_the_scope(api: Api, services: Services, jobs: Any) -> None:
    a = _store(api, "one", tags=["x:y:z"], metadata={"session_id": "s1"}, timestamp="2025-01-01T00:00:00Z")
    _store(api, "two", tags=["x:y:z"], metadata={"session_id": "s2"}, timestamp="2025-01-01T00:01:00Z")
    c = _store(api, "three", tags=["other"], metadata={"session_id": "s1"}, timestamp="2025-01-01T00:02:00Z")
    jobs()
    assert services.graph.sequence_links(c)[0] == [a]


def _vector(seed: float, dimension: int) -> list[float]:
    return [1.0] + [seed] + [0.0] * (dimension - 2)


def test_similar_to_only_after_the_vector_exists(api: Api, services: Services) -> None:
    from tests.conftest import run_jobs

    dim = services.embedder.dimension
    first = _store(api, "Alpha note", embedding=_vector(0.0, dim))
    second = _store(api, "Beta note")  # embedded later by the worker
    # Enrichment alone (the embedding job has not run): no similarity edge yet.
    enrichment_jobs_run(services, [second])
    assert not services.graph.edges_of([second], ["SIMILAR_TO"], 10)
    # Give the second memory a near-identical vector as a client would, then enrich again.
    api.patch(f"/memory/{second}", json={"embedding": _vector(0.05, dim)})
    run_jobs(services)
    edges = services.graph.edges_of([second], ["SIMILAR_TO"], 10)[second]
    assert {e["id"] for e in edges} == {first}
    assert {e["outgoing"] for e in edges} == {True, False}  # both directions
    assert all(e["strength"] >= 0.8 for e in edges)


def test_similar_to_from_the_embedding_job(api: Api, services: Services, jobs: Any) -> None:
    same = "The nightly backup job copies the Postgres data directory to S3."
    a = _store(api, same)
    b = _store(api, same + " It runs at 2am.")
    _store(api, "Completely unrelated: my cat likes tuna.")
    jobs()
    neighbours = {e["id"] for e in services.graph.edges_of([a], ["SIMILAR_TO"], 10).get(a, [])}
    assert neighbours == {b}


def test_similarity_searched_once_per_vector(
    api: Api, services: Services, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedding job links the vectors it writes; enrichment searches again only for a
    client's vector or when forced (the similarity search counted on the real graph)."""
    searched: list[str] = []
    real = services.graph.similar_memories_of  # every similarity search goes through it

    def counted(ids: list[str], k: int, min_similarity: float) -> dict[str, list[tuple[str, float]]]:
        searched.extend(ids)
        return real(ids, k, min_similarity)

    monkeypatch.setattr(services.graph, "similar_memories_of", counted)
    embedded = _store(api, "The nightly backup job copies the Postgres data directory to S3.")
    jobs()
    assert searched == [embedded]
    client = _store(api, "Alpha note", embedding=_vector(0.0, services.embedder.dimension))
    jobs()
    assert searched == [embedded, client]
    enrichment_jobs.enrich_memories([embedded], force=True)
    assert searched == [embedded, client, embedded]


def enrichment_jobs_run(services: Services, ids: list[str]) -> dict[str, Any]:
    from enrichment.context import use_services

    use_services(services)
    return enrichment_jobs.enrich_memories(ids)


def test_patch_during_enrichment_survives(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_id = _store(api, "We use Redis for caching.", tags=["infra"])
    real_derive = enrichment_jobs.derive
    patched: list[bool] = []

    def derive_with_a_client_edit(doc: dict[str, Any], **kwargs: Any) -> Any:
        plan = real_derive(doc, **kwargs)
        if not patched:  # the client edits the memory after the job read it
            patched.append(True)
            response = api.patch(
                f"/memory/{memory_id}", json={"content": "We use Memcached for caching.", "importance": 0.9}
            )
            assert response.status_code == 200
        return plan

    monkeypatch.setattr(enrichment_jobs, "derive", derive_with_a_client_edit)
    result = enrichment_jobs_run(services, [memory_id])
    assert result["enriched"] == 1
    memory = _memory(api, memory_id)
    assert memory["content"] == "We use Memcached for caching."
    assert memory["importance"] == 0.9
    assert "entity:tool:redis" not in memory["tags"]
    assert "entity:tool:memcached" in memory["tags"]
    assert memory["version"] == 2  # enrichment never bumps the client version


def test_reconcile_after_queue_loss_redoes_the_work(api: Api, services: Services, jobs: Any) -> None:
    ids = [_store(api, f"Note {n} about Docker and Kubernetes.") for n in range(3)]
    # Every queue key is lost: RQ's queues and registries, and the intake with its claim.
    for pattern in ("rq:*", "automem:intake:*"):
        for key in services.queue_redis.scan_iter(pattern):
            services.queue_redis.delete(key)
    assert all(not _memory(api, i)["enriched"] for i in ids)
    from enrichment.context import use_services

    use_services(services)
    result = reconcile()
    assert result["enrichment_queued"] == 3
    assert result["queued"] == 3  # embeddings too
    jobs()
    for memory_id in ids:
        memory = _memory(api, memory_id)
        assert memory["enriched"] is True
        assert memory["embedding_status"] == "stored"
        assert "entity:tool:docker" in memory["tags"]


def _queued_functions(services: Services, queue: str) -> list[str]:
    from rq import Queue

    return [job.func_name for job in Queue(queue, connection=services.queue_redis).jobs]


def test_single_writes_reach_the_workers_in_chunked_jobs(api: Api, services: Services, jobs: Any) -> None:
    ids = [_store(api, f"Intake note {n} on Redis and Postgres.") for n in range(40)]
    # The request path only appended to the intake; one dispatch job was queued for all 40.
    assert _queued_functions(services, "embed") == ["dispatch_intake"]
    assert services.jobs.intake_depths() == {"embed": 40, "enrich": 40}
    from enrichment.context import use_services

    use_services(services)
    assert dispatch_intake() == {"embed": 40, "enrich": 40}
    embed_jobs = [f for f in _queued_functions(services, "embed") if f.endswith("embed_memories")]
    size = services.settings.embedding_batch_size  # texts per job: not 40 single-text model calls
    assert len(embed_jobs) == -(-40 // size) < 40
    assert _queued_functions(services, "enrich") == ["enrich_memories"]
    jobs()
    assert all(_memory(api, i)["enriched"] and _memory(api, i)["embedding_status"] == "stored" for i in ids)


def test_a_lost_dispatch_job_is_made_good_by_the_sweep(api: Api, services: Services, jobs: Any) -> None:
    from rq import Queue

    first = _store(api, "Lost dispatch one.")
    Queue("embed", connection=services.queue_redis).empty()  # the dispatch job is gone, its claim is not
    second = _store(api, "Lost dispatch two.")
    assert _queued_functions(services, "embed") == []  # the claim still stands: no new dispatch
    from enrichment.context import use_services

    use_services(services)
    assert dispatch_intake() == {"embed": 2, "enrich": 2}  # what the cron sweep runs
    jobs()
    assert all(_memory(api, i)["enriched"] for i in (first, second))


def test_enrichment_is_idempotent(api: Api, services: Services, jobs: Any) -> None:
    memory_id = _store(api, "Ana moved to Lisbon.")
    jobs()
    before = _memory(api, memory_id)
    assert enrichment_jobs_run(services, [memory_id]) == {"enriched": 0, "skipped": 1, "failed": 0}
    assert _memory(api, memory_id)["tags"] == before["tags"]


def test_disabled_enrichment(
    api: Api, services: Services, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        services.memories, "settings", settings.model_copy(update={"enrichment_enabled": False})
    )
    response = api.post("/memory", json={"content": "Nothing to see."})
    assert response.get_json()["enrichment"] == "disabled"


def test_status_reports_queues_and_counts(api: Api, jobs: Any) -> None:
    _store(api, "Carol prefers Vim over Emacs.")
    before = api.get("/enrichment/status").get_json()
    assert before["status"] == "stopped"  # AutoMem's word: no worker process is registered here
    assert before["queue_size"] >= 1 and before["pending"] == 1 and before["max_attempts"] >= 1
    assert before["pending_memories"] == 1
    assert set(before["queues"]) == {"embed", "enrich", "maintenance"}
    jobs()
    after = api.get("/enrichment/status").get_json()
    assert after["pending_memories"] == 0
    assert after["stats"]["enriched"] >= 1
    assert after["stats"]["last_success_id"]
    assert after["llm"] == {"configured": False}


def test_reprocess_requires_admin_and_validates(api: Api) -> None:
    assert api.post("/enrichment/reprocess", json={"all": True}).status_code == 401
    bad = api.post("/enrichment/reprocess", json={}, headers=ADMIN)
    assert bad.status_code == 400
    assert bad.get_json()["reason"] == "invalid_input"
    # As AutoMem, any id is taken (a list, a comma string or ?ids=); one that names no memory is
    # reported instead of queued.
    unknown = api.post("/enrichment/reprocess", json={"ids": "nope, 123"}, headers=ADMIN)
    assert unknown.status_code == 202
    body = unknown.get_json()
    assert (body["status"], body["count"], body["ids"]) == ("queued", 0, [])
    assert body["unknown_ids"] == ["nope", "123"]
    by_query = api.post("/enrichment/reprocess?ids=nope", headers=ADMIN)
    assert by_query.status_code == 202 and by_query.get_json()["unknown_ids"] == ["nope"]


def test_reprocess_by_id_and_all(api: Api, services: Services, jobs: Any) -> None:
    memory_id = _store(api, "Dan joined Acme Corp.")
    jobs()
    first_run = _memory(api, memory_id)["metadata"]["enrichment"]["at"]
    response = api.post("/enrichment/reprocess", json={"ids": [memory_id]}, headers=ADMIN)
    assert response.status_code == 202
    assert response.get_json()["queued"] == 1
    jobs()
    assert _memory(api, memory_id)["metadata"]["enrichment"]["at"] > first_run
    everything = api.post("/enrichment/reprocess", json={"all": True}, headers=ADMIN).get_json()
    assert everything["queued"] == 1


def test_failed_jobs_are_listed_and_requeued(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import run_jobs

    memory_id = _store(api, "Eve uses Terraform.")

    def broken(*_: Any, **__: Any) -> Any:
        # A store error fails the whole job (an error of one memory's own would be isolated).
        raise redis.exceptions.ConnectionError("extractor exploded")

    monkeypatch.setattr(enrichment_jobs, "derive", broken)
    run_jobs(services)
    listing = api.get("/admin/jobs", headers=ADMIN).get_json()
    failed = [j for j in listing["failed_jobs"] if j["function"] == "enrich_memories"]
    assert failed
    assert "extractor exploded" in failed[0]["error"]
    status = api.get("/enrichment/status").get_json()
    assert status["failed"] >= 1
    assert "ConnectionError" in status["stats"]["last_error"]
    monkeypatch.undo()
    requeued = api.post("/enrichment/reprocess", json={"failed": True}, headers=ADMIN).get_json()
    assert requeued["requeued_failed"] >= 1
    run_jobs(services)
    assert _memory(api, memory_id)["enriched"] is True
    assert api.get("/admin/jobs").status_code == 401


def test_first_sentence_is_cut_at_a_word_boundary() -> None:
    assert first_sentence("Short one. Second.", 50) == "Short one."
    long = "word " * 100
    cut = first_sentence(long, 30)
    assert len(cut) <= 31
    assert cut.endswith("…")
    assert json.dumps(cut)


def test_admin_sync_repairs_vectors_from_the_graph(api: Api, services: Services, jobs: Any) -> None:
    ids = [_store(api, f"Sync note {n}") for n in range(3)]
    jobs()
    assert services.vectors is not None
    services.vectors.delete(ids[:2])  # lost vector writes
    assert api.post("/admin/sync").status_code == 401
    response = api.post("/admin/sync", headers=ADMIN)
    assert response.status_code == 200
    body = response.get_json()
    assert body["repaired"] == 2
    assert body["difference"] == 0
    assert {r.id for r in services.vectors.retrieve(ids)} == set(ids)
    # A payload in an older shape (here: a field changed behind the graph's back) at the graph's
    # rev: `all` writes every point again, not only those behind the graph.
    [point] = services.vectors.retrieve([ids[2]])
    services.vectors.set_payload_values([(ids[2], int(point.payload["rev"]), {"type": "Stale"})])
    everything = api.post("/admin/sync", json={"all": True}, headers=ADMIN).get_json()
    assert everything["repaired"] == 3
    assert services.vectors.retrieve([ids[2]])[0].payload["type"] == point.payload["type"]
    bad = api.post("/admin/sync", json={"all": "yes"}, headers=ADMIN)
    assert bad.status_code == 400
    assert bad.get_json()["field"] == "all"


def test_relative_dates_are_resolved_and_searchable(api: Api, services: Services, jobs: Any) -> None:
    camping = _store(api, "We went camping by the lake last weekend.", timestamp="2023-05-08T13:56:00Z")
    other = _store(api, "We went camping by the lake.", timestamp="2023-05-08T13:56:00Z")
    jobs()
    memory = _memory(api, camping)
    assert memory["content"] == "We went camping by the lake last weekend."  # untouched
    [resolved] = memory["metadata"]["enrichment"]["dates"]
    assert resolved == {
        "text": "last weekend",
        "start": "2023-05-06",
        "end": "2023-05-08",
        "label": "weekend of 6 May 2023",
    }
    assert "dates" not in _memory(api, other)["metadata"]["enrichment"]
    assert services.vectors is not None
    hits = services.vectors.keyword_search("camping on 6 May", 5, with_payload=False)
    assert [h.id for h in hits][:1] == [camping]


def test_category_words_find_a_memory_by_the_kind_of_thing_it_names(
    api: Api, services: Services, jobs: Any
) -> None:
    violin = _store(api, "Melanie: I unwind by playing my violin after work.")
    reading = _store(api, "Melanie: I unwind by reading after work.")
    jobs()
    memory = _memory(api, violin)
    assert memory["content"] == "Melanie: I unwind by playing my violin after work."  # untouched
    assert "stringed instrument" in memory["metadata"]["enrichment"]["categories"]
    assert services.vectors is not None
    hits = services.vectors.keyword_search("What instruments does Melanie play?", 5, with_payload=False)
    assert [h.id for h in hits][:1] == [violin]
    assert reading in {h.id for h in services.vectors.keyword_search("Melanie after work", 5)}


def test_a_sequence_lock_is_kept_across_its_memories_and_freed_at_the_end(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An enrichment job takes a sequence's Redis lock once for consecutive memories of the
    sequence, changes it when the sequence changes, renews its lifetime after a third of it (or
    takes it anew when it expired meanwhile), and frees it when the job ends; a worker waiting
    for it then gets it at once."""
    redis_client = services.queue_redis
    standup = MemoryRecord("a", tenant="t", seq_scope="standup")
    retro = MemoryRecord("b", tenant="t", seq_scope="retro")
    key = {doc.seq_scope: f"automem:seq-lock:t:{doc.seq_scope}" for doc in (standup, retro)}
    clock = [1000.0]
    monkeypatch.setattr(links.time, "monotonic", lambda: clock[0])
    with SequenceLocks(redis_client) as locks:
        with locks.hold(standup):
            token = redis_client.get(key["standup"])
        with locks.hold(standup):
            assert redis_client.get(key["standup"]) == token  # not freed and taken again
        redis_client.pexpire(key["standup"], 2_000)  # as if most of its lifetime had passed
        clock[0] += links.LOCK_SECONDS / 3 + 1
        with locks.hold(standup):
            assert redis_client.get(key["standup"]) == token  # the same hold, renewed
            assert redis_client.pttl(key["standup"]) > (links.LOCK_SECONDS - 5) * 1000
        redis_client.delete(key["standup"])  # expired meanwhile
        clock[0] += links.LOCK_SECONDS / 3 + 1
        with locks.hold(standup):
            assert redis_client.get(key["standup"]) not in (None, token)  # taken anew
        with locks.hold(retro):
            assert redis_client.get(key["standup"]) is None and redis_client.get(key["retro"])
    assert redis_client.get(key["retro"]) is None
    other = redis_client.lock(key["retro"], timeout=5, blocking_timeout=0.5)
    assert other.acquire()
    other.release()
