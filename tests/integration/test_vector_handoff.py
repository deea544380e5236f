"""The shard owner's hand-off stream: workers' vector writes arrive one memory at a time and are
applied in batches after a short linger; a step that failed is retried from the consumer's
pending entries, so no hand-off is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from automem.services import Services
from automem.vectorsync import VectorSync
from tests.conftest import Api


def _store(api: Api, n: int) -> list[str]:
    ids = []
    for i in range(n):
        response = api.post("/memory", json={"content": f"note {i} about the harbour", "tags": ["handoff"]})
        assert response.status_code == 201
        ids.append(str(response.get_json()["memory_id"]))
    return ids


def _worker_side(services: Services) -> VectorSync:
    """What a worker holds: the graph and Redis, no vector store."""
    return VectorSync(services.graph, None, services.queue_redis)


def _counting_apply(services: Services, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    original = services.sync.apply

    def apply(ids: Sequence[str], payload_only: bool = False) -> int:
        calls.append(list(ids))
        return original(ids, payload_only)

    monkeypatch.setattr(services.sync, "apply", apply)
    return calls


def _wait_empty(services: Services, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while services.sync.backlog() > 0:
        assert time.monotonic() < deadline, "the hand-off stream was not drained"
        time.sleep(0.02)


def test_a_trickle_of_hand_offs_is_applied_in_batches(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _store(api, 6)
    calls = _counting_apply(services, monkeypatch)
    stop = threading.Event()
    loop = threading.Thread(
        target=services.sync.run_forever, args=(stop,), kwargs={"block_ms": 100, "linger_seconds": 0.5}
    )
    loop.start()
    try:
        worker = _worker_side(services)
        for memory_id in ids:
            worker.request([memory_id], payload_only=True)
            time.sleep(0.03)
        _wait_empty(services)
    finally:
        stop.set()
        loop.join(timeout=10)
    applied = [i for call in calls for i in call]
    assert sorted(applied) == sorted(ids)
    assert len(calls) <= 2, calls  # the first alone, the rest gathered while the owner lingered


def test_a_failed_step_is_retried_from_the_pending_entries(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    [memory_id] = _store(api, 1)
    original = services.sync.apply
    failures: list[Exception] = []

    def flaky_apply(ids: Sequence[str], payload_only: bool = False) -> Any:
        if failures:
            raise failures.pop()
        return original(ids, payload_only)

    monkeypatch.setattr(services.sync, "apply", flaky_apply)
    services.sync.drain_all()  # the consumer starts with nothing pending
    _worker_side(services).request([memory_id], payload_only=True)
    failures.append(RuntimeError("the vector store is away"))
    with pytest.raises(RuntimeError):
        services.sync.drain_once()
    assert services.sync.backlog() == 1  # read, unacknowledged, still in the stream
    assert services.sync.drain_once() == 1  # taken again from this consumer's pending entries
    assert services.sync.backlog() == 0


def test_a_read_that_times_out_is_a_warning_and_loses_nothing(
    api: Api, services: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server busy past the socket timeout (a 1M import's writes did it) is no failure: the
    loop warns, reads again, and applies the hand-off."""
    import redis

    [memory_id] = _store(api, 1)
    calls = _counting_apply(services, monkeypatch)
    read, timeouts = services.sync._read, []

    def slow_once(pending: bool, block_ms: int = 0) -> Any:
        if not timeouts:
            timeouts.append(1)
            raise redis.exceptions.TimeoutError("Timeout reading from socket")
        return read(pending=pending, block_ms=block_ms)

    monkeypatch.setattr(services.sync, "_read", slow_once)
    _worker_side(services).request([memory_id], payload_only=True)
    stop = threading.Event()
    loop = threading.Thread(target=services.sync.run_forever, args=(stop,), kwargs={"block_ms": 100})
    with caplog.at_level("WARNING", logger="automem.vectorsync"):
        loop.start()
        try:
            _wait_empty(services)
        finally:
            stop.set()
            loop.join(timeout=10)
    assert timeouts and [i for call in calls for i in call] == [memory_id]
    assert any("did not answer in time" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
