"""Live events without stores: the event shape, a stream's bounded queue and its notices, the
frames a stream writes, the per-process bound on streams, and the consolidation summary."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from automem.eventhub import Subscription
from automem.events import MAX_LISTED_IDS, EventType, envelope, listed
from automem.settings import Settings
from enrichment.consolidation import run_event
from enrichment.jobevents import JobInfo
from tests.stack import wait_until


def _subscription(capacity: int) -> Subscription:
    return Subscription("default", capacity, lambda sub: None)


def _frame(n: int) -> str:
    return f"id: {n}\ndata: {json.dumps({'type': 'test', 'data': {'n': n}})}\n\n"


def _decoded(frames: list[str]) -> list[dict[str, Any]]:
    lines = [line for frame in frames for line in frame.split("\n")]
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def test_an_event_is_automems_shape_plus_id_and_tenant() -> None:
    event = envelope(EventType.MEMORY_STORED, {"memory_id": "m"}, "default")
    assert set(event) == {"id", "type", "timestamp", "tenant", "data"}
    assert event["type"] == "memory.stored" and event["data"] == {"memory_id": "m"}
    assert event["id"] != envelope(EventType.MEMORY_STORED, {}, None)["id"]


def test_listed_ids_name_one_memory_or_count_many() -> None:
    assert listed(["a"]) == {"count": 1, "memory_ids": ["a"], "memory_id": "a"}
    many = listed([str(n) for n in range(MAX_LISTED_IDS + 5)])
    assert many["count"] == MAX_LISTED_IDS + 5 and len(many["memory_ids"]) == MAX_LISTED_IDS
    assert many["ids_truncated"] is True and "memory_id" not in many


def test_a_full_queue_drops_new_events_and_says_how_many_where_they_went_missing() -> None:
    sub = _subscription(70)
    accepted = [sub.offer(_frame(n)) for n in range(73)]
    assert accepted == [True] * 70 + [False] * 3
    assert (sub.queued(), sub.dropped) == (70, 3)
    first = _decoded(sub.take(0))  # one write's worth: 64 of the 70 kept
    assert [e["data"]["n"] for e in first] == list(range(64))
    assert sub.offer(_frame(73))  # room again: the notice goes between the kept and the new
    events = _decoded(sub.take(0))
    assert [e["data"].get("n") for e in events] == [64, 65, 66, 67, 68, 69, None, 73]
    assert events[6]["type"] == "stream.dropped"
    assert events[6]["data"] == {"reason": "queue_full", "dropped": 3, "total_dropped": 3}
    assert sub.take(0) == []


def test_drops_at_the_end_are_reported_once_the_queue_is_read() -> None:
    sub = _subscription(1)
    for n in range(3):
        sub.offer(_frame(n))
    events = _decoded(sub.take(0))
    assert [e["type"] for e in events] == ["test", "stream.dropped"]
    assert events[1]["data"]["dropped"] == 2 and sub.take(0) == []


def test_a_channel_gap_is_announced_in_place() -> None:
    sub = _subscription(10)
    sub.offer(_frame(0))
    sub.note_gap()
    sub.offer(_frame(1))
    events = _decoded(sub.take(0))
    assert [e["type"] for e in events] == ["test", "stream.dropped", "test"]
    assert events[1]["data"]["reason"] == "channel_reconnected" and events[1]["data"]["dropped"] is None


def test_frames_keepalive_in_silence_and_stop_at_the_time_limit() -> None:
    sub = _subscription(10)
    started = time.monotonic()
    frames = list(sub.frames(keepalive=0.05, max_seconds=0.3))
    assert 0.25 < time.monotonic() - started < 3.0  # a loaded machine may wake the thread late
    assert frames[0].startswith("retry: ") and f": connected {sub.id}" in frames[0]
    assert 3 <= frames.count(": keepalive\n\n") <= 6
    assert frames[-1].startswith(": stream time limit reached")


def test_frames_end_when_the_stream_is_closed() -> None:
    sub = _subscription(10)
    written: list[str] = []
    reader = threading.Thread(target=lambda: written.extend(sub.frames(keepalive=5, max_seconds=60)))
    reader.start()
    sub.offer(_frame(7))
    # close() drops frames not yet taken: the reader must have taken this one first.
    wait_until(lambda: sub.delivered >= 1, 5, "the reader did not take the frame", interval=0.01)
    sub.close()
    reader.join(2)
    assert not reader.is_alive()
    assert [e["data"]["n"] for e in _decoded(written)] == [7]
    assert not sub.offer(_frame(8))


@pytest.mark.parametrize(
    ("threads", "configured", "limit"),
    [(4, 0, 2), (8, 0, 4), (2, 0, 1), (1, 0, 0), (4, 3, 3), (4, 10, 3), (16, 2, 2)],
)
def test_streams_always_leave_a_thread_for_requests(threads: int, configured: int, limit: int) -> None:
    settings = Settings(api_threads=threads, stream_max_clients=configured)
    assert settings.stream_client_limit() == limit


def test_stream_settings_are_checked() -> None:
    with pytest.raises(ValueError):
        Settings(stream_queue_size=0)
    with pytest.raises(ValueError):
        Settings(stream_keepalive_seconds=0)


def test_a_consolidation_event_carries_counts_not_texts() -> None:
    run = {
        "id": "r1",
        "mode": "full",
        "trigger": "schedule",
        "started_at": "2025-01-01T00:00:00.000000+00:00",
        "finished_at": "2025-01-01T00:00:01.500000+00:00",
        "success": True,
        "steps": {
            "decay": {"processed": 10, "written": 4, "distribution": {"high": 3}},
            "creative": {"created": 2, "updated": 1, "associations": [{"from": "a", "to": "b"}]},
            "cluster": {"created": 1, "updated": 0, "patterns": [{"content": "key terms"}]},
        },
    }
    event = run_event(run, Settings())
    assert event["task_type"] == "full" and event["affected_count"] == 4 + 3 + 1
    assert event["elapsed_ms"] == 1500.0 and event["next_scheduled"] is None  # `full` has no interval
    assert event["steps"]["decay"] == {"processed": 10, "written": 4}
    assert "patterns" not in event["steps"]["cluster"] and "associations" not in event["steps"]["creative"]
    decay = run_event({**run, "mode": "decay", "steps": {"decay": {"written": 1}}}, Settings())
    assert decay["next_scheduled"] == "2025-01-02T00:00:01.500000+00:00"  # daily, after this run


def test_outside_a_worker_nothing_retries() -> None:
    assert JobInfo.current() == JobInfo(None, False, None)
