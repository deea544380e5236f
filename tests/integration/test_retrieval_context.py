"""Retrieval context: a memory is embedded with the start of the memory it follows in its
sequence, its stored content untouched; a memory spliced in later is embedded into its
successor's vector; client vectors and RETRIEVAL_CONTEXT_CHARS=0 keep the content alone."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from automem.app import create_app, stop_app
from automem.services import Services
from enrichment.context import use_services
from tests.archives import post_restore, take_backup, wipe_store
from tests.conftest import Api, make_settings, run_jobs

SESSION = ["chat:session-7"]
TURNS = (
    ("Alice: Have you been camping this summer?", "2024-06-01T10:00:00Z"),
    ("Bob: Yes, twice last month! The lake was freezing.", "2024-06-01T10:00:05Z"),
    ("Alice: Brave. I only went hiking near the coast.", "2024-06-01T10:00:10Z"),
)


def _store(api: Api, content: str, timestamp: str, **fields: Any) -> str:
    response = api.post(
        "/memory", json={"content": content, "tags": SESSION, "timestamp": timestamp, **fields}
    )
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def _stored(services: Services, memory_id: str) -> tuple[list[float], str | None, str]:
    [doc] = services.graph.get_memories([memory_id], with_embedding=True)
    assert doc.embedding is not None
    return doc.embedding, doc.embedding_context, doc.content


def _same(a: list[float], b: list[float]) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True))


def _embedding(services: Services, text: str) -> list[float]:
    return services.embedder.embed([text])[0]


def test_each_memory_is_embedded_with_what_it_follows(api: Api, services: Services) -> None:
    ids = [_store(api, content, at) for content, at in TURNS]
    run_jobs(services)
    chars = services.settings.retrieval_context_chars
    assert chars > 0
    first, context, content = _stored(services, ids[0])
    assert context == "" and content == TURNS[0][0]
    assert _same(first, _embedding(services, TURNS[0][0]))
    for index in (1, 2):
        vector, context, content = _stored(services, ids[index])
        assert context == ids[index - 1]
        assert content == TURNS[index][0]  # what the client stored is untouched
        expected = f"{TURNS[index][0]}\n{TURNS[index - 1][0][:chars]}"
        assert _same(vector, _embedding(services, expected))
        assert not _same(vector, _embedding(services, TURNS[index][0]))
    assert api.get(f"/memory/{ids[1]}").get_json()["memory"]["content"] == TURNS[1][0]


def test_a_memory_spliced_in_later_becomes_its_successors_context(api: Api, services: Services) -> None:
    first = _store(api, TURNS[0][0], TURNS[0][1])
    last = _store(api, TURNS[2][0], TURNS[2][1])
    run_jobs(services)
    assert _stored(services, last)[1] == first
    late = _store(api, TURNS[1][0], TURNS[1][1])  # arrives after its successor was embedded
    run_jobs(services)
    vector, context, _ = _stored(services, last)
    assert context == late
    chars = services.settings.retrieval_context_chars
    assert _same(vector, _embedding(services, f"{TURNS[2][0]}\n{TURNS[1][0][:chars]}"))
    assert _stored(services, late)[1] == first


def _embed_jobs_for(services: Services, memory_id: str) -> list[Any]:
    """Queued embedding jobs of this memory (the embed queue also holds the intake's dispatches)."""
    return [job for job in services.jobs.queues["embed"].get_jobs() if job.args and memory_id in job.args[0]]


def test_the_memory_enriched_is_embedded_again_when_it_now_follows_another(
    api: Api, services: Services
) -> None:
    """Its own enrichment finds the earlier turn that arrived after it was embedded alone, and
    queues it to be embedded again with that turn's words (enrichment checks the memory as it
    wrote it, without reading it again); one whose context still holds queues nothing."""
    from enrichment.embedding import embed_memories
    from enrichment.enrich import enrich_memories

    use_services(services)
    reply = _store(api, TURNS[1][0], TURNS[1][1])
    embed_memories([reply])
    assert _stored(services, reply)[1] == ""  # nothing before it yet
    question = _store(api, TURNS[0][0], TURNS[0][1])  # arrives later, belongs before it
    embed_memories([question])
    enrich_memories([reply])
    assert _embed_jobs_for(services, reply)
    enrich_memories([question])  # the first of its session: its context "" still holds
    assert not _embed_jobs_for(services, question)


def test_an_import_reads_the_next_memory_and_the_predecessors_in_one_query(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns embedded in order, then enriched in order: each is placed before the next one,
    written with it, so its enrichment checks two memories' contexts (its own and the next's),
    which needs one read of the graph, not two; nothing is embedded again."""
    from enrichment.embedding import embed_memories
    from enrichment.enrich import enrich_memories

    use_services(services)
    ids = [_store(api, content, at) for content, at in TURNS]
    embed_memories(ids)
    reads: list[list[str]] = []
    plain = services.graph.get_memories

    def counted(memory_ids: list[str], *args: Any, **kwargs: Any) -> Any:
        reads.append(list(memory_ids))
        return plain(memory_ids, *args, **kwargs)

    monkeypatch.setattr(services.graph, "get_memories", counted)
    monkeypatch.setattr(services.sync, "request", lambda *a, **k: None)  # its reads are its own
    enrich_memories([ids[1]])
    assert reads == [sorted([ids[0], ids[2]])]  # the next turn and the predecessor, together
    assert not any(_embed_jobs_for(services, i) for i in ids)


def test_a_client_vector_is_never_replaced_by_a_contextual_one(api: Api, services: Services) -> None:
    _store(api, TURNS[0][0], TURNS[0][1])
    own = [0.0] * services.embedder.dimension
    own[3] = 1.0
    reply = _store(api, TURNS[1][0], TURNS[1][1], embedding=own)
    run_jobs(services)
    vector, _, _ = _stored(services, reply)
    assert _same(vector, own)


def _other_app(settings: Any, path: Path, **overrides: Any) -> Iterator[tuple[Api, Services]]:
    app: Flask = create_app(make_settings(settings.falkordb_url, path, **overrides), start_vector_drain=False)
    app.config["TESTING"] = True
    yield Api(app.test_client()), app.extensions["automem"]
    use_services(None)
    stop_app(app)


@pytest.fixture
def plain_services(settings: Any, tmp_path: Path) -> Iterator[tuple[Api, Services]]:
    yield from _other_app(settings, tmp_path / "plain", retrieval_context_chars=0)


@pytest.fixture
def own_words_services(settings: Any, tmp_path: Path) -> Iterator[tuple[Api, Services]]:
    yield from _other_app(settings, tmp_path / "own-words", retrieval_context_keywords=False)


def _keyword_hits(services: Services, text: str) -> list[str]:
    assert services.vectors is not None
    return [h.id for h in services.vectors.keyword_search(text, 10, with_payload=False)]


def test_the_keyword_index_holds_the_context_unless_turned_off(
    api: Api, services: Services, own_words_services: tuple[Api, Services]
) -> None:
    assert services.settings.retrieval_context_keywords  # the default
    for client, svc in ((api, services), own_words_services):
        ids = [_store(client, content, at) for content, at in TURNS[:2]]
        run_jobs(svc)
        found = _keyword_hits(svc, "camping summer")
        assert ids[0] in found
        assert (ids[1] in found) is svc.settings.retrieval_context_keywords
        assert ids[1] in _keyword_hits(svc, "freezing lake")  # its own words, either way


def test_a_restored_archive_indexes_the_same_contexts(api: Api, services: Services) -> None:
    ids = [_store(api, content, at) for content, at in TURNS]
    run_jobs(services)
    assert services.vectors is not None
    before = {q: _keyword_hits(services, q) for q in ("camping summer", "freezing lake", "coast")}
    archive = take_backup(api)
    wipe_store(services)
    assert post_restore(api, archive).get_json()["vectors_source"] == "archive"
    assert {q: _keyword_hits(services, q) for q in before} == before
    assert ids[1] in before["camping summer"] and ids[2] in before["freezing lake"]


def test_no_context_when_it_is_turned_off(plain_services: tuple[Api, Services]) -> None:
    api, services = plain_services
    _store(api, TURNS[0][0], TURNS[0][1])
    reply = _store(api, TURNS[1][0], TURNS[1][1])
    run_jobs(services)
    vector, context, _ = _stored(services, reply)
    assert context == ""
    assert _same(vector, _embedding(services, TURNS[1][0]))


@pytest.mark.parametrize(
    ("tags", "apart"),
    [(SESSION, "2024-06-01T11:00:00Z"), (SESSION, "2024-06-03T10:00:00Z"), ([], "2024-06-01T10:00:05Z")],
    ids=["an hour apart", "two days apart", "untagged"],
)
def test_a_note_that_is_no_reply_is_embedded_alone(
    api: Api, services: Services, tags: list[str], apart: str
) -> None:
    """Two notes of one tag filed hours apart, or two untagged notes, are separate thoughts: the
    later one's vector does not carry the earlier one's words (it would be found for them)."""
    assert services.settings.retrieval_context_gap_seconds < 3600
    api.post("/memory", json={"content": TURNS[0][0], "tags": tags, "timestamp": TURNS[0][1]})
    later = api.post("/memory", json={"content": TURNS[1][0], "tags": tags, "timestamp": apart})
    assert later.status_code == 201
    run_jobs(services)
    vector, context, _ = _stored(services, str(later.get_json()["memory_id"]))
    assert context == ""
    assert _same(vector, _embedding(services, TURNS[1][0]))


def test_a_late_note_far_from_its_neighbours_leaves_their_vectors_alone(api: Api, services: Services) -> None:
    """A memory spliced in before another but a day earlier does not become its context."""
    first = _store(api, TURNS[0][0], TURNS[0][1])
    last = _store(api, TURNS[2][0], TURNS[2][1])
    run_jobs(services)
    _store(api, TURNS[1][0], "2024-05-31T10:00:00Z")  # filed late, dated the day before both
    run_jobs(services)
    assert _stored(services, last)[1] == first
