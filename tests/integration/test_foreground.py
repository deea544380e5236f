"""Enrichment yields to clients' reads (automem.foreground), on a real Redis and a real app:
a recall or a by-tag listing marks reads, a write does not; an enrichment job paces itself
while the mark lives and runs at full pace otherwise, and yielding never changes what it does."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.foreground import FOREGROUND_KEY, MAX_PAUSE_SECONDS, Pacer, ReadActivity
from automem.services import Services
from enrichment import enrich as enrichment_jobs
from enrichment.context import use_services
from tests.conftest import Api


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def _mark_for(conn: redis.Redis, ms: int = 60_000) -> None:
    conn.set(FOREGROUND_KEY, b"1", px=ms)


def test_a_mark_lives_for_the_window_and_is_written_once_per_half_window(redis_conn: redis.Redis) -> None:
    reads = ReadActivity(redis_conn, window_ms=10_000)
    reads.mark()
    ttl = int(redis_conn.pttl(FOREGROUND_KEY))
    assert 9_000 < ttl <= 10_000
    redis_conn.delete(FOREGROUND_KEY)
    reads.mark()  # within half the window of the last write: no round trip
    assert not redis_conn.exists(FOREGROUND_KEY)


def test_a_window_of_zero_never_marks(redis_conn: redis.Redis) -> None:
    ReadActivity(redis_conn, window_ms=0).mark()
    assert not redis_conn.exists(FOREGROUND_KEY)


@pytest.mark.parametrize(
    ("reading", "ratio", "worked", "expected"),
    [
        (True, 3.0, 0.01, 0.03),
        (True, 3.0, 1.0, MAX_PAUSE_SECONDS),  # capped
        (False, 3.0, 0.01, 0.0),
        (True, 0.0, 0.01, 0.0),  # yielding switched off
    ],
)
def test_the_pacer_waits_ratio_times_the_work_while_clients_read(
    redis_conn: redis.Redis, reading: bool, ratio: float, worked: float, expected: float
) -> None:
    if reading:
        _mark_for(redis_conn)
    sleeps = Sleeps()
    pacer = Pacer(redis_conn, ratio, sleep=sleeps)
    assert pacer.pace(worked) == pytest.approx(expected)
    assert sum(sleeps.calls) == pytest.approx(expected) == pytest.approx(pacer.paused)


def test_the_pacer_asks_redis_at_most_once_per_check_interval(redis_conn: redis.Redis) -> None:
    sleeps = Sleeps()
    pacer = Pacer(redis_conn, 1.0, check_every=3600, sleep=sleeps)
    assert pacer.pace(0.01) == 0.0
    _mark_for(redis_conn)
    assert pacer.pace(0.01) == 0.0  # the answer of the first check is kept
    fresh = Pacer(redis_conn, 1.0, check_every=0, sleep=sleeps)
    assert fresh.pace(0.01) == pytest.approx(0.01)
    redis_conn.delete(FOREGROUND_KEY)
    assert fresh.pace(0.01) == 0.0  # the mark has gone: full pace again


@pytest.mark.parametrize(
    ("method", "path", "marks"),
    [
        ("get", "/recall?query=database", True),
        ("post", "/recall", True),
        ("get", "/memory/by-tag?tags=infra", True),
        ("post", "/memory", False),
        ("get", "/health", False),
    ],
)
def test_reads_mark_and_writes_do_not(
    api: Api, redis_conn: redis.Redis, method: str, path: str, marks: bool
) -> None:
    memory = {"content": "We chose Postgres.", "tags": ["infra"]}
    body = {"query": "database"} if path == "/recall" else memory
    kwargs: dict[str, Any] = {"json": body} if method == "post" else {}
    response = getattr(api, method)(path, **kwargs)
    assert response.status_code < 300, response.get_json()
    assert bool(redis_conn.exists(FOREGROUND_KEY)) is marks


def _store_all(api: Api, contents: list[str]) -> list[str]:
    """Each content stored anew (a second sentence makes it unique, the summary stays)."""
    ids = []
    for content in contents:
        unique = f"{content} (ref {uuid.uuid4().hex[:8]})"
        response = api.post("/memory", json={"content": unique, "tags": ["infra"]})
        assert response.status_code == 201, response.get_json()
        ids.append(str(response.get_json()["memory_id"]))
    return ids


def _enriched_state(api: Api, ids: list[str]) -> list[tuple[Any, ...]]:
    state = []
    for memory_id in ids:
        memory = api.get(f"/memory/{memory_id}").get_json()["memory"]
        state.append((memory["enriched"], tuple(sorted(memory["tags"])), memory.get("summary")))
    return state


def _status_yielded(api: Api) -> float:
    return float(api.get("/enrichment/status").get_json()["stats"]["yielded_seconds"])


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=st.lists(
        st.sampled_from(
            [
                "Alice Johnson moved the billing service to PostgreSQL.",
                "We cache sessions in Redis.",
                "Bob prefers Kubernetes over Nomad for the API.",
                "The team met in Berlin last Friday.",
            ]
        ),
        min_size=1,
        max_size=4,
    )
)
def test_yielding_changes_the_pace_of_enrichment_not_its_result(
    api: Api, services: Services, redis_conn: redis.Redis, contents: list[str]
) -> None:
    """The same memories enriched with and without clients reading end up the same, and only
    the run during reads waits (as GET /enrichment/status reports)."""
    use_services(services)
    quiet_ids = _store_all(api, contents)
    redis_conn.delete(FOREGROUND_KEY)
    before = _status_yielded(api)
    assert enrichment_jobs.enrich_memories(quiet_ids)["enriched"] == len(quiet_ids)
    assert _status_yielded(api) == before

    busy_ids = _store_all(api, contents)
    _mark_for(redis_conn)
    assert enrichment_jobs.enrich_memories(busy_ids)["enriched"] == len(busy_ids)
    assert _status_yielded(api) > before
    redis_conn.delete(FOREGROUND_KEY)

    assert _enriched_state(api, busy_ids) == _enriched_state(api, quiet_ids)


def test_an_unreachable_redis_neither_fails_a_read_nor_pauses_work() -> None:
    gone = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    ReadActivity(gone, window_ms=500).mark()
    sleeps = Sleeps()
    assert Pacer(gone, 3.0, sleep=sleeps).pace(0.01) == 0.0 and sleeps.calls == []
