"""Fault tests on the embedded stack (`automem serve` in subprocesses): kill -9 of the API, of a
worker mid-job and of FalkorDB during a stream of writes, and the loss of the Qdrant Edge shard.
After each, every acknowledged memory is readable and, once the queues drain, has its vector
(graph and vector store agree: drift 0, no embedding pending)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest
from rq import Queue

from automem.stores.queue import QUEUE_NAMES
from tests.stack import TOKEN, Service, kill9, wait_until

pytestmark = pytest.mark.slow


class WriteStream(threading.Thread):
    """A client storing memories one after another, retrying like a real client: a connection
    error or a 503 repeats the same request. Identical content deduplicates, so a write the server
    committed before it died comes back on the retry as 200 with the id it was stored under."""

    def __init__(self, svc: Service, label: str) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=svc.url, headers={"X-API-Key": TOKEN}, timeout=10)
        self.label = label
        self.acked: dict[int, str] = {}  # write number -> memory id
        self.statuses: Counter[str] = Counter()
        self.unexpected: list[tuple[int, str]] = []
        self._halt = threading.Event()

    def content(self, n: int) -> str:
        return f"{self.label}: acknowledged write number {n} of the stream"

    def run(self) -> None:
        n = 0
        while not self._halt.is_set():
            try:
                response = self.http.post("/memory", json={"content": self.content(n), "tags": ["stream"]})
            except httpx.TimeoutException:
                self.statuses["timeout"] += 1
                continue
            except httpx.TransportError:
                self.statuses["connection_error"] += 1
                time.sleep(0.05)
                continue
            self.statuses[str(response.status_code)] += 1
            if response.status_code in (200, 201):
                self.acked[n] = response.json()["memory_id"]
                n += 1
            elif response.status_code == 503 and _is_envelope(response, "graph_unavailable"):
                time.sleep(0.05)
            else:
                self.unexpected.append((response.status_code, response.text[:300]))
                n += 1

    def wait_for(self, count: int, timeout: float = 90) -> None:
        wait_until(lambda: len(self.acked) >= count, timeout, f"{count} acknowledged writes: {self.statuses}")

    def finish(self) -> None:
        self._halt.set()
        self.join(30)
        self.http.close()


def _is_envelope(response: httpx.Response, code: str) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    return body.get("status") == "error" and body.get("code") == code and bool(body.get("error"))


def assert_all_present(svc: Service, stream: WriteStream) -> dict[str, Any]:
    """Every acknowledged write is readable with its content; no retry stored a second copy; once
    the queues drain every memory has its vector."""
    assert not stream.unexpected, stream.unexpected
    for n, memory_id in stream.acked.items():
        response = svc.http.get(f"/memory/{memory_id}")
        assert response.status_code == 200, (n, memory_id, response.text)
        assert response.json()["memory"]["content"] == stream.content(n)
    ids = set(stream.acked.values())
    assert len(ids) == len(stream.acked), "a retried write was stored twice"
    health = svc.wait_drained(expected_vectors=len(ids))
    assert health["memory_count"] == len(ids)
    return health


def test_kill9_of_the_api_during_a_stream_of_writes(service: Service) -> None:
    stream = WriteStream(service, "api-kill")
    stream.start()
    stream.wait_for(30)
    kill9(service.api_pids())
    at_kill = len(stream.acked)
    stream.wait_for(at_kill + 30)  # the supervisor restarted the API and writes go on
    stream.finish()
    print(f"api kill -9: {len(stream.acked)} acknowledged writes, responses {dict(stream.statuses)}")
    assert stream.statuses["connection_error"] > 0, "the kill did not interrupt the stream"
    assert stream.statuses["timeout"] == 0
    assert_all_present(service, stream)


def test_a_write_committed_but_never_queued_is_done_after_the_api_restarts(service: Service) -> None:
    """The state a kill -9 between the graph commit and the enqueue leaves behind, made on
    purpose: the workers are paused, the memory is stored, its jobs are dropped from the queues,
    and the API dies. The restarted API queues a reconcile, so the memory still gets its
    embedding and enrichment (the workers themselves did not restart)."""
    workers = service.worker_pids()
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    try:
        response = service.http.post("/memory", json={"content": "Committed to the graph, never queued."})
        assert response.status_code == 201
        conn = service.redis()
        for name in QUEUE_NAMES:
            Queue(name, connection=conn).empty()
        kill9(service.api_pids())
        service.wait_healthy()
    finally:
        for pid in workers:
            os.kill(pid, signal.SIGCONT)
    service.wait_drained(expected_vectors=1)
    wait_until(
        lambda: service.wait_healthy()["counts"]["enrichment_pending"] == 0, 60, "enrichment never ran"
    )
