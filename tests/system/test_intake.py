"""The intake keeps work Redis refused and pushes it once Redis is back (a real server, stopped
and restarted on the same port)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from automem.embedded import EmbeddedFalkorDB
from automem.stores.queue import INTAKE_EMBED, INTAKE_ENRICH, JobQueue
from tests.conftest import make_settings

Stack = tuple[EmbeddedFalkorDB, redis.Redis, JobQueue]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    server = EmbeddedFalkorDB(tmp_path, appendfsync="everysec")
    server.start()
    conn = redis.Redis.from_url(server.url, socket_connect_timeout=1)
    try:
        yield server, conn, JobQueue(conn, make_settings(server.url, tmp_path))
    finally:
        conn.close()
        server.stop()


def test_work_refused_while_redis_is_down_is_queued_when_it_returns(stack: Stack) -> None:
    server, conn, queue = stack
    server.stop()
    with pytest.raises(redis.exceptions.RedisError):
        queue.submit([("m1", "hash1")], [("m1", 1)])
    assert queue.deferred_count() == 2

    server.start()
    # The retry takes the entries out of the count before its push reaches Redis (no lock is
    # held over the network), so the wait is for the push and its dispatch job, not the count.
    deadline = time.monotonic() + 20
    while not _pushed(conn, queue) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert queue.deferred_count() == 0
    assert conn.lrange(INTAKE_EMBED, 0, -1) == [b"m1|hash1"]
    assert conn.lrange(INTAKE_ENRICH, 0, -1) == [b"m1|1"]
    assert queue.queues["embed"].count == 1  # the dispatch job that will hand them to workers


def _pushed(conn: redis.Redis, queue: JobQueue) -> bool:
    try:
        return bool(conn.llen(INTAKE_ENRICH)) and queue.queues["embed"].count > 0
    except redis.exceptions.ConnectionError:  # the restarted server may not answer yet
        return False


def test_a_later_submit_carries_the_deferred_work(stack: Stack) -> None:
    server, conn, queue = stack
    server.stop()
    with pytest.raises(redis.exceptions.RedisError):
        queue.submit([("m1", "hash1")], [])
    # The 2 s retry would push m1 itself if the restart is slow: the later submit must carry it.
    assert queue._retry_timer is not None
    queue._retry_timer.cancel()
    server.start()
    queue.submit([("m2", "hash2")], [])
    assert queue.deferred_count() == 0
    assert conn.lrange(INTAKE_EMBED, 0, -1) == [b"m1|hash1", b"m2|hash2"]
