"""Live streams against the real gunicorn of `automem serve` (gthread, AUTOMEM_API_THREADS = 4):
a stream holds a thread for its whole life, so the process admits a bounded number of them and
turns the rest away at once; idle streams never starve other requests; a stop ends them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from statistics import median

import httpx
import pytest

from tests.envelope import envelope_problem
from tests.sse import SseReader
from tests.stack import TOKEN, Service, gone, roles_of, wait_until

pytestmark = pytest.mark.slow

KEY = {"X-API-Key": TOKEN}
ATTEMPTS = 50


def _attempt(url: str, out: dict[int, tuple[SseReader, float]], n: int, lock: threading.Lock) -> None:
    reader = SseReader(url, KEY)
    with lock:
        out[n] = (reader, reader.seconds)  # the server's answer alone, not the client's set-up


def _timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_idle_streams_are_bounded_and_never_starve_the_api(stack: Callable[..., Service]) -> None:
    # Short keepalives: a departed client's slot comes back within a second.
    service = stack(env={"AUTOMEM_STREAM_KEEPALIVE_SECONDS": "1"})
    results: dict[int, tuple[SseReader, float]] = {}
    lock = threading.Lock()
    threads = [
        threading.Thread(target=_attempt, args=(service.url, results, n, lock), daemon=True)
        for n in range(ATTEMPTS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == ATTEMPTS, "some stream attempts got no answer"
    admitted = [reader for reader, _ in results.values() if reader.status == 200]
    refused = [(reader, seconds) for reader, seconds in results.values() if reader.status != 200]
    try:
        assert len(admitted) == 2  # half of the 4 threads
        assert all(reader.status == 503 for reader, _ in refused)
        assert all(envelope_problem(503, r.body, "too_many_streams") is None for r, _ in refused)
        waits = [seconds for _, seconds in refused]
        # Turned away at once, not held: 48 refusals share the 2 free threads of this 2-core box.
        assert max(waits) < 5 and median(waits) < 3, f"503s were slow: {sorted(waits)}"
        _api_answers_promptly_while_streams_stay_open(service, admitted)
    finally:
        for reader in admitted:
            reader.close()
    _slots_come_back(service)
    _a_stop_ends_open_streams(service)


def _api_answers_promptly_while_streams_stay_open(service: Service, admitted: list[SseReader]) -> None:
    health, health_seconds = _timed(lambda: service.http.get("/health"))
    body = {"content": "written while two dashboards watch"}
    created, store_seconds = _timed(lambda: service.http.post("/memory", json=body))
    assert (health.status_code, created.status_code) == (200, 201)
    assert health_seconds < 5 and store_seconds < 5, (health_seconds, store_seconds)
    memory_id = created.json()["memory_id"]
    for reader in admitted:
        event = reader.next(timeout=10)
        assert (event["type"], event["data"]["memory_id"]) == ("memory.stored", memory_id)
        assert not reader.ended.is_set()
    status = service.http.get("/stream/status").json()
    assert (status["subscribers"], status["max_subscribers"]) == (2, 2)
    assert status["rejected"] == ATTEMPTS - 2


def _slots_come_back(service: Service) -> None:
    deadline = time.monotonic() + 15
    while service.http.get("/stream/status").json()["subscribers"] > 0:
        assert time.monotonic() < deadline, "closed streams kept their slots"
        time.sleep(0.2)
    again = SseReader(service.url, KEY)
    assert again.status == 200
    again.close()


def _a_stop_ends_open_streams(service: Service) -> None:
    """gunicorn waits for in-flight requests on SIGTERM (15 s here); a stream never finishes by
    itself, so the worker ends its streams first (automem.gunicorn_conf.post_worker_init)."""
    watcher = SseReader(service.url, KEY)
    assert watcher.status == 200 and watcher.connected.wait(10)
    assert service.process is not None
    # The supervisor signals the API once these (the workers and cron) have exited.
    first = [pid for pid, role in roles_of(service).items() if role in ("worker", "cron")]
    with ThreadPoolExecutor(1) as pool:
        stopping = pool.submit(service.stop)
        wait_until(lambda: all(gone(pid) for pid in first), 60, "the workers did not stop")
        api_signalled = time.monotonic()
        assert watcher.ended.wait(30)
        # Timed from the API's SIGTERM, not the whole stack's stop (slow on a loaded machine): a
        # stream left open would be waited out for the 15 s graceful timeout.
        assert time.monotonic() - api_signalled < 10, "the stop waited for the open stream"
        assert stopping.result(90) == 0
    watcher.close()
