"""Live events (GET /stream) on the real stack: events published by the write path and by RQ jobs
travel through Redis pub/sub to the hub of the serving process and out over real HTTP, in order,
with their ids; slow clients lose events, not the server's memory; a Redis outage never fails a
write; streams are bounded per process; the viewer paths answer 503 until the dashboard exists."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from rq import Retry

from automem import eventhub
from automem.app import create_app, end_streams, stop_app
from automem.embedded import EmbeddedFalkorDB, free_port
from automem.errors import ServiceUnavailable
from automem.eventhub import EventHub, StreamLimits, Subscription
from automem.events import EventPublisher
from automem.services import Services
from automem.settings import Settings
from enrichment import enrich
from tests.conftest import ADMIN_TOKEN, API_TOKEN, Api, make_settings, run_jobs
from tests.envelope import envelope_problem
from tests.served import base_url, serve  # noqa: F401  (fixture)
from tests.sse import SseReader
from tests.stack import wait_until

KEY = {"X-API-Key": API_TOKEN}
ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


@pytest.fixture
def settings(falkordb_server: EmbeddedFalkorDB, redis_conn: redis.Redis, tmp_path: Path) -> Settings:
    """Short keepalives: a server notices a client that left at its next write."""
    return make_settings(falkordb_server.url, tmp_path / "data", stream_keepalive_seconds=0.3)


@pytest.fixture
def reader(base_url: str) -> Iterator[SseReader]:  # noqa: F811
    stream = SseReader(base_url, KEY)
    assert stream.status == 200
    assert stream.connected.wait(10), "the stream never said it was subscribed"
    yield stream
    stream.close()


@pytest.fixture
def subscription(app: Flask) -> Iterator[Subscription]:
    """A stream of the app's hub read in the test (the same path as HTTP, without the socket)."""
    sub = app.extensions["automem.events"].open("default")
    yield sub
    sub.close()


def _decoded(frames: list[str]) -> list[dict[str, Any]]:
    """The events of SSE frames (one or more per string, as a stream writes them)."""
    lines = [line for frame in frames for line in frame.split("\n")]
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def _events(sub: Subscription, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The next `count` events of a subscription."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        out += _decoded(sub.take(0.2))
    assert len(out) >= count, f"only {len(out)} of {count} events: {out}"
    return out


def _until(sub: Subscription, event_type: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The events of a subscription up to the first of `event_type`, that one included."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not any(e["type"] == event_type for e in out):
        assert time.monotonic() < deadline, f"no {event_type} event: {out}"
        out += _decoded(sub.take(0.2))
    return out[: 1 + next(n for n, e in enumerate(out) if e["type"] == event_type)]


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


# --- (a) the whole path, over HTTP ------------------------------------------------------------------
def test_a_stream_shows_every_change_in_order_with_its_ids(reader: SseReader, api: Api, jobs: Any) -> None:
    content = "We moved the billing service to PostgreSQL. Alice Johnson led the migration."
    first = _store(api, content, tags=["billing"], importance=0.8)
    second = _store(api, "Bob reviews every schema change on Fridays.")
    linked = api.post("/associate", json={"memory1_id": first, "memory2_id": second, "type": "LEADS_TO"})
    assert linked.status_code == 201
    jobs()  # the intake, embedding and enrichment jobs, run by a real RQ worker in this process
    assert api.patch(f"/memory/{first}", json={"importance": 0.9}).status_code == 200
    assert api.delete(f"/memory/{first}").status_code == 200
    assert api.post(f"/memory/{first}/recover").status_code == 200

    stored = reader.next()
    assert (stored["type"], stored["data"]["memory_id"]) == ("memory.stored", first)
    assert stored["data"]["memory_ids"] == [first] and stored["data"]["count"] == 1
    assert stored["data"]["content_length"] == len(content) and stored["data"]["tags"] == ["billing"]
    assert stored["data"]["importance"] == 0.8 and stored["data"]["enrichment"] == "queued"
    assert "Alice" not in str(stored), "an event never carries the content"
    seen = [stored, reader.next()]
    assert (seen[1]["type"], seen[1]["data"]["memory_id"]) == ("memory.stored", second)
    seen.append(reader.next())
    assert seen[2]["type"] == "association.created"
    assert (seen[2]["data"]["memory1_id"], seen[2]["data"]["memory2_id"]) == (first, second)
    assert seen[2]["data"]["relation_type"] == "LEADS_TO" and seen[2]["data"]["count"] == 1
    seen += _enrichment_events(reader, {first, second})
    for event_type, version in (("memory.updated", 2), ("memory.deleted", 3), ("memory.recovered", 4)):
        event = reader.next()
        assert (event["type"], event["data"]["memory_id"], event["data"]["version"]) == (
            event_type,
            first,
            version,
        )
        seen.append(event)
    assert seen[-3]["data"]["fields"] == ["importance"] and seen[-2]["data"]["hard"] is False
    for event in seen:
        assert event["sse_id"] == event["id"] and event["tenant"] == "default", event
    assert len({e["id"] for e in seen}) == len(seen)
    assert [e["timestamp"] for e in seen] == sorted(e["timestamp"] for e in seen)
    time.sleep(0.5)
    assert reader.events.empty(), "nothing else happened"


def _enrichment_events(reader: SseReader, ids: set[str]) -> list[dict[str, Any]]:
    """The enrichment jobs' events (from the RQ worker, through Redis), until every id of `ids`
    is reported complete; each job's start comes before its completion."""
    events: list[dict[str, Any]] = []
    done: set[str] = set()
    while done != ids:
        event = reader.next()
        assert event["type"] in ("enrichment.start", "enrichment.complete"), event
        events.append(event)
        if event["type"] == "enrichment.complete":
            job = event["data"]["job_id"]
            starts = [e for e in events if e["type"] == "enrichment.start" and e["data"]["job_id"] == job]
            assert starts and starts[0]["data"]["memory_ids"] == event["data"]["memory_ids"]
            assert event["data"]["enriched"] == event["data"]["count"] and event["data"]["skipped"] == 0
            done |= set(event["data"]["memory_ids"])
    return events


def test_stream_headers_status_and_the_bound_per_process(base_url: str, reader: SseReader) -> None:  # noqa: F811
    assert reader.headers["content-type"].startswith("text/event-stream")
    assert reader.headers["cache-control"] == "no-cache"
    assert reader.headers["x-accel-buffering"] == "no"
    assert reader.comments[0].startswith(": connected")
    second = SseReader(base_url, KEY)
    try:
        assert second.status == 200  # the default bound: half of AUTOMEM_API_THREADS (4)
        started = time.monotonic()
        third = SseReader(base_url, KEY)
        assert time.monotonic() - started < 5
        assert third.status == 503
        assert envelope_problem(503, third.body, "too_many_streams") is None
        status = httpx.get(f"{base_url}/stream/status", headers=KEY).json()
        assert (status["subscribers"], status["max_subscribers"], status["rejected"]) == (2, 2, 1)
        assert status["channel_ready"] is True and len(status["streams"]) == 2
    finally:
        second.close()
    # The server notices the departed client at its next keepalive and frees the slot.
    wait_until(
        lambda: httpx.get(f"{base_url}/stream/status", headers=KEY).json()["subscribers"] == 1,
        10,
        "the departed client's slot was not freed",
        0.05,
    )
    fourth = SseReader(base_url, KEY)
    assert fourth.status == 200
    fourth.close()


def test_a_stream_needs_the_api_key(base_url: str) -> None:  # noqa: F811
    anonymous = SseReader(base_url, {})
    assert anonymous.status == 401
    assert envelope_problem(401, anonymous.body) is None


def test_keepalives_in_silence_and_the_end_after_max_seconds(
    falkordb_server: EmbeddedFalkorDB, tmp_path: Path
) -> None:
    settings = make_settings(
        falkordb_server.url, tmp_path / "data", stream_keepalive_seconds=0.2, stream_max_seconds=1.0
    )
    app = create_app(settings, start_vector_drain=False)
    try:
        with serve(app) as url:
            started = time.monotonic()
            stream = SseReader(url, KEY)
            assert stream.ended.wait(15), "the stream did not end"
            elapsed = time.monotonic() - started
            stream.close()
        assert 0.9 < elapsed < 10  # ends near max_seconds (1 s), well before the 60 s read timeout
        assert stream.comments.count(": keepalive") >= 3
        assert stream.comments[-1].startswith(": stream time limit reached")
        assert app.extensions["automem.events"].status()["subscribers"] == 0
    finally:
        stop_app(app)


def test_stopping_the_app_ends_its_streams(app: Flask, base_url: str, reader: SseReader) -> None:  # noqa: F811
    started = time.monotonic()
    end_streams(app, wait=False)  # what SIGTERM does in a gunicorn worker (automem.gunicorn_conf)
    assert reader.ended.wait(10)
    assert time.monotonic() - started < 5
    late = SseReader(base_url, KEY)
    assert late.status == 503 and late.body["reason"] == "shutting_down"  # a stopping process
    late.close()


# --- the other events ---------------------------------------------------------------------------
def test_batch_bulk_delete_purge_and_association_batches_are_one_event_each(
    api: Api, subscription: Subscription
) -> None:
    batch = api.post(
        "/memory/batch",
        json={"memories": [{"content": f"batch note {n}", "tags": ["bulk"]} for n in range(3)]},
    )
    assert batch.status_code == 201
    ids = batch.get_json()["memory_ids"]
    pairs = [{"memory1_id": ids[0], "memory2_id": ids[1]}, {"memory1_id": ids[1], "memory2_id": ids[0]}]
    missing = {"memory1_id": ids[0], "memory2_id": "00000000-0000-4000-8000-000000000000"}
    assert api.post("/associate", json={"associations": [*pairs, missing]}).status_code == 207
    assert api.delete("/memory/by-tag?tags=bulk").get_json()["deleted_count"] == 3
    assert api.delete(f"/memory/{ids[0]}?hard=true", headers=ADMIN).status_code == 200
    stored, linked, deleted, purged = _events(subscription, 4)
    assert stored["type"] == "memory.stored" and stored["data"]["count"] == 3
    assert stored["data"]["memory_ids"] == ids and stored["data"]["batch"] is True
    assert "memory_id" not in stored["data"]
    assert linked["type"] == "association.created"
    assert (linked["data"]["count"], linked["data"]["failed_count"]) == (2, 1)
    assert linked["data"]["relation_types"] == ["RELATES_TO"]
    assert deleted["type"] == "memory.deleted" and deleted["data"]["bulk"] is True
    assert sorted(deleted["data"]["memory_ids"]) == sorted(ids) and deleted["data"]["tags"] == ["bulk"]
    assert purged["type"] == "memory.deleted" and purged["data"] == {
        "count": 1,
        "memory_ids": [ids[0]],
        "memory_id": ids[0],
        "hard": True,
    }


def test_rejected_and_deduplicated_writes_announce_nothing(api: Api, subscription: Subscription) -> None:
    assert api.post("/memory", json={}).status_code == 400
    _store(api, "said once")
    again = api.post("/memory", json={"content": "said once"})
    assert again.status_code == 201 and again.get_json()["deduplicated"] is True
    events = _events(subscription, 1)
    assert [e["type"] for e in events] == ["memory.stored"]
    assert subscription.take(0.5) == []


def test_a_real_consolidation_run_reports_its_summary(
    api: Api, subscription: Subscription, jobs: Any
) -> None:
    for n in range(3):
        _store(api, f"consolidation input {n}")
    _events(subscription, 3)
    dry = api.post("/consolidate", json={"mode": "decay"})
    assert dry.status_code == 200
    assert subscription.take(0.5) == [], "a dry run changes nothing and announces nothing"
    assert api.post("/consolidate", json={"mode": "decay", "dry_run": False}).status_code == 202
    jobs()
    run = _until(subscription, "consolidation.run")[-1]
    data = run["data"]
    assert run["tenant"] is None  # service-wide: a run spans every tenant
    assert (data["task_type"], data["trigger"], data["success"]) == ("decay", "job", True)
    assert data["steps"]["decay"]["processed"] == 3 and data["affected_count"] == 3
    assert data["elapsed_ms"] >= 0 and data["next_scheduled"] is None
    assert "distribution" not in data["steps"]["decay"]  # counts only


def test_a_re_embedding_run_reports_its_progress(
    api: Api, services: Services, subscription: Subscription, jobs: Any
) -> None:
    for n in range(3):
        _store(api, f"re-embed me {n}")
    jobs()
    _events(subscription, 5)  # stored x3, enrichment start and complete
    assert api.post("/admin/reembed", json={"mode": "all"}, headers=ADMIN).status_code == 202
    jobs()
    progress = _events(subscription, 2)
    assert [e["type"] for e in progress] == ["reembed.progress"] * 2
    first, last = progress[0]["data"], progress[-1]["data"]
    assert (first["queued"], first["enqueued_all"], first["mode"]) == (3, True, "all")
    assert (last["done"], last["remaining"], last["finished"]) == (3, 0, True)
    assert progress[-1]["tenant"] is None and last["run_id"] == first["run_id"]


def test_a_failed_enrichment_says_whether_rq_retries_it(
    api: Api, services: Services, subscription: Subscription, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the job below enriches: the write queues no enrichment of its own.
    no_enrichment = services.settings.model_copy(update={"enrichment_enabled": False})
    monkeypatch.setattr(services.memories, "settings", no_enrichment)
    memory_id = _store(api, "enrichment of this one fails")

    def broken(*args: Any, **kwargs: Any) -> Any:
        # A store error fails the job; an error of the memory's own would be isolated instead.
        raise redis.exceptions.ConnectionError("entity extraction exploded")

    monkeypatch.setattr(enrich, "derive", broken)
    # Two retries, at once (interval 0): the in-process worker runs all three attempts.
    services.jobs.queues["enrich"].enqueue(
        "enrich_memories", [memory_id], job_id="enrich-failing", retry=Retry(max=2)
    )
    run_jobs(services)
    events = _events(subscription, 7)[1:]  # after memory.stored: three starts, three failures
    failures = [e["data"] for e in events if e["type"] == "enrichment.failed"]
    assert [f["will_retry"] for f in failures] == [True, True, False]
    assert [f["retries_left"] for f in failures] == [2, 1, 0]
    assert failures[0]["memory_id"] == memory_id and failures[0]["job_id"] == "enrich-failing"
    assert failures[0]["error"] == "ConnectionError: entity extraction exploded"
    assert [e["type"] for e in events] == ["enrichment.start", "enrichment.failed"] * 3


# --- (c) a slow client ------------------------------------------------------------------------------
def test_a_slow_stream_loses_events_not_memory_and_others_get_everything(
    settings: Settings, services: Services
) -> None:
    """Through the real channel: the slow stream's queue stops at its bound and counts what it
    drops; a stream that keeps reading gets every event, in order."""
    capacity, total = 50, 300
    limits = StreamLimits(queue_size=capacity, max_clients=2, keepalive_seconds=30, max_seconds=60)
    hub = EventHub(redis.Redis.from_url(str(settings.queue_url())), limits)
    slow, fast = hub.open("default"), hub.open("default")
    received: list[int] = []
    reading = threading.Thread(target=_read_numbers, args=(fast, received, total), daemon=True)
    reading.start()
    try:
        for start in range(0, total, 5):  # a steady pace, as real writes come
            for n in range(start, start + 5):
                services.events.publish("test.tick", {"n": n}, "default")
            assert services.events.flush(5)
            time.sleep(0.005)
        reading.join(20)
        assert received == list(range(total)), "the reading stream missed events"
        # The hub offers each event to the streams in turn: the reader may be served first.
        wait_until(
            lambda: slow.queued() + slow.dropped == total,
            10,
            "the slow stream was not offered every event",
            0.05,
        )
        assert (slow.queued(), slow.dropped) == (capacity, total - capacity)
        described = {s["id"]: s for s in hub.status()["streams"]}
        assert described[slow.id]["dropped"] == total - capacity and described[fast.id]["dropped"] == 0
        kept = _decoded(slow.take(1))
        assert [e["data"]["n"] for e in kept[:-1]] == list(range(capacity))  # the oldest, kept
        notice = kept[-1]  # then, where the rest went missing, how many
        assert notice["type"] == "stream.dropped" and notice["data"]["dropped"] == total - capacity
        assert slow.queued() == 0 and slow.take(0.1) == []
    finally:
        hub.close()


def _read_numbers(sub: Subscription, out: list[int], total: int) -> None:
    deadline = time.monotonic() + 30
    while len(out) < total and time.monotonic() < deadline:
        out += [event["data"]["n"] for event in _decoded(sub.take(0.5))]


# --- (d) Redis down -----------------------------------------------------------------------------------
def test_a_write_succeeds_at_once_while_events_cannot_be_published(
    api: Api, services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    dead = EventPublisher.from_url(f"redis://127.0.0.1:{free_port()}")
    services.memories.events = dead
    caplog.set_level(logging.WARNING, logger="automem.events")
    started = time.monotonic()
    for n in range(3):
        _store(api, f"written while the event channel is down {n}")
    assert time.monotonic() - started < 5
    assert dead.flush(5)
    assert (dead.dropped, dead.published) == (3, 0)
    warnings = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(warnings) == 1, "one warning per outage, not one per event"
    dead.close()


def test_publishing_never_waits_for_a_redis_that_hangs() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    publisher = EventPublisher(redis.Redis(port=silent.getsockname()[1], socket_timeout=2))
    try:
        started = time.monotonic()
        for n in range(1000):
            publisher.publish("memory.stored", {"n": n}, "default")
        # A publish that waited on the socket would alone take its 2 s timeout.
        assert time.monotonic() - started < 1.9
    finally:
        publisher.close(timeout=0.1)
        silent.close()


def test_a_stream_answers_503_when_the_channel_is_unreachable(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eventhub, "READY_WAIT_SECONDS", 0.5)
    hub = EventHub(redis.Redis(port=free_port(), socket_connect_timeout=0.5), StreamLimits(10, 2, 30, 60))
    try:
        with pytest.raises(ServiceUnavailable) as raised:
            hub.open("default")
        assert raised.value.reason == "events_unavailable"
        assert hub.status()["subscribers"] == 0
    finally:
        hub.close()


# --- the viewer -------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/viewer/", "/viewer/index.html", "/viewer/assets/app.js?x=1"])
def test_the_viewer_paths_lead_to_the_dashboard(client: FlaskClient, path: str) -> None:
    response = client.get(path)  # no key needed, as in AutoMem
    assert response.status_code == 302
    assert response.headers["Location"].endswith("/ui/")
