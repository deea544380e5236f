"""Fault tests on the embedded stack (`automem serve` in subprocesses): kill -9 of the API, of a
worker mid-job and of FalkorDB during a stream of writes, and the loss of the Qdrant Edge shard.
After each, every acknowledged memory is readable and, once the queues drain, has its vector
(graph and vector store agree: drift 0, no embedding pending)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest
import redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry

from automem.stores.queue import QUEUE_NAMES
from tests.envelope import envelope_problem
from tests.stack import ADMIN, TOKEN, Service, kill9, wait_until
from tests.stubs.openai_stub import OpenAIStub

pytestmark = pytest.mark.slow


class WriteStream(threading.Thread):
    """A client storing memories one after another, retrying like a real client: a connection
    error or a 503 repeats the same request. Identical content deduplicates, so a write the server
    committed before it died comes back on the retry as 200 with the id it was stored under."""

    def __init__(self, svc: Service, label: str, timeout: float = 10) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=svc.url, headers={"X-API-Key": TOKEN}, timeout=timeout)
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
                self.statuses["timeout"] += 1  # retried: a committed write comes back deduplicated
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


def _is_envelope(response: httpx.Response, reason: str) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    return envelope_problem(response.status_code, body, reason) is None


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
    # Timeouts are not asserted away here: requests that reach the new gunicorn while its worker
    # still loads the app wait in the socket backlog, and a busy machine may make that slow.
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


def test_kill9_of_a_worker_mid_job_redoes_the_job(stack: Any) -> None:
    """Embeddings come from an OpenAI-compatible endpoint that takes seconds to answer, so the
    embedding job is caught running (in RQ's StartedJobRegistry, its request at the endpoint)
    when its worker is killed. The restarted worker hands the abandoned job to RQ's own
    handling at once (a retry), instead of when its heartbeat would expire (job timeout + 60 s)."""
    with OpenAIStub(dimension=32) as stub:
        # The call must still be waiting when the kill comes, however slow this machine; under
        # the 30 s EMBEDDING_TIMEOUT_SECONDS, so the killed call is not a timeout first.
        stub.delay = 20.0
        svc = stack(
            env={
                "EMBEDDING_PROVIDER": "openai",
                "OPENAI_API_KEY": "stub-key",
                "OPENAI_BASE_URL": stub.base_url,
                "EMBEDDING_MODEL": "stub-embedding",
                "VECTOR_SIZE": "32",
                "AUTOMEM_LLM_ENABLED": "false",
            }
        )
        conn = svc.redis()
        running = StartedJobRegistry("embed", connection=conn)
        response = svc.http.post("/memory", json={"content": "Embedded by a slow remote model."})
        assert response.status_code == 201
        memory_id = response.json()["memory_id"]
        # (The intake's dispatch job runs first on this queue; the embedding job is `embed-<digest>`.)
        [job_id] = wait_until(
            lambda: [j for j in running.get_job_ids() if j.startswith("embed-")],
            30,
            "the embedding job never started",
        )
        wait_until(lambda: stub.requests_to("/embeddings"), 30, "the job never called the endpoint")
        job = Job.fetch(job_id, connection=conn)
        assert job.get_status() == JobStatus.STARTED and memory_id in job.args[0]
        [worker] = svc.worker_pids()
        kill9([worker])
        stub.delay = 0  # read per request: the redo is answered at once

        svc.wait_drained(expected_vectors=1, timeout=60)
        assert Job.fetch(job_id, connection=conn).get_status() == JobStatus.FINISHED  # RQ's retry ran it
        assert running.get_job_ids() == []
        assert len(stub.requests_to("/embeddings")) >= 2  # the killed call and its redo
        memory = svc.http.get(f"/memory/{memory_id}").json()["memory"]
        assert memory["embedding_status"] == "stored"


def test_kill9_of_falkordb_during_a_stream_of_writes(service: Service) -> None:
    """The supervisor restarts FalkorDB; meanwhile the API answers 503 with the error envelope
    (never a 500, never a hang), and every write it acknowledged is there afterwards."""
    # A hang is a request outliving 30 s, under the API's own 35 s bound on a graph reply: a
    # request that meets the restart waits out the graph client's retries, over 10 s when loaded.
    stream = WriteStream(service, "falkordb-kill", timeout=30)
    stream.start()
    stream.wait_for(30)
    old = service.falkordb_pid()
    kill9([old])
    at_kill = len(stream.acked)
    stream.wait_for(at_kill + 30, timeout=120)
    stream.finish()
    print(f"falkordb kill -9: {len(stream.acked)} acknowledged writes, responses {dict(stream.statuses)}")
    assert service.falkordb_pid() != old
    assert stream.statuses["503"] > 0, "the API never reported the graph store unavailable"
    assert stream.statuses["timeout"] == 0
    assert_all_present(service, stream)


def _store(svc: Service, n: int) -> dict[str, str]:
    ids = {}
    for k in range(n):
        content = f"Note {k}: the {WORDS[k % len(WORDS)]} rollout is tracked in ticket {1000 + k}."
        response = svc.http.post("/memory", json={"content": content, "tags": ["rebuild"]})
        assert response.status_code == 201
        ids[WORDS[k % len(WORDS)]] = response.json()["memory_id"]
    return ids


WORDS = ["kubernetes", "postgres", "grafana", "terraform", "rabbitmq", "elasticsearch", "nginx", "vault"]


def _recall_finds(svc: Service, ids: dict[str, str]) -> None:
    for word, memory_id in ids.items():
        response = svc.http.get("/recall", params={"query": f"{word} rollout", "limit": 3})
        assert response.status_code == 200, response.text
        assert response.json()["results"][0]["id"] == memory_id, (word, response.json()["results"])


def test_a_deleted_vector_store_is_rebuilt_from_the_graph(service: Service) -> None:
    ids = _store(service, len(WORDS))
    service.wait_drained(expected_vectors=len(WORDS))
    _recall_finds(service, ids)
    assert service.stop() == 0
    shutil.rmtree(service.data_dir / "qdrant-edge")
    service.start()
    health = service.wait_drained(expected_vectors=len(WORDS))
    assert health["vectors"]["points"] == len(WORDS)
    _recall_finds(service, ids)


def test_a_vector_store_deleted_under_the_running_service_is_rebuilt_on_restart(service: Service) -> None:
    """Deleting the shard's directory under a running API: the open shard keeps answering from
    its open files, writes still succeed (the graph is the commit point), and the next start
    rebuilds every point from the graph."""
    ids = _store(service, 4)
    service.wait_drained(expected_vectors=4)
    shutil.rmtree(service.data_dir / "qdrant-edge")
    more = [service.http.post("/memory", json={"content": f"stored after the loss {k}"}) for k in range(4)]
    assert all(r.status_code == 201 for r in more), [r.text for r in more]
    assert service.http.get("/recall", params={"query": "rollout"}).status_code == 200
    assert service.stop() == 0
    service.start()
    service.wait_drained(expected_vectors=8)
    _recall_finds(service, ids)


# --- kill -9 of the API in the middle of a restore ---------------------------------------------------
ADMIN_HEADERS = {"X-API-Key": TOKEN, "X-Admin-Token": ADMIN}


def _memory_ids(svc: Service, graph: str) -> set[str]:
    rows = svc.redis().execute_command("GRAPH.RO_QUERY", graph, "MATCH (m:Memory) RETURN m.id")[1]
    return {row[0].decode() for row in rows}


def _graphs(svc: Service) -> list[str]:
    return [name.decode() for name in svc.redis().execute_command("GRAPH.LIST")]


def _staged_memories(svc: Service, staging: str) -> int | None:
    """Memories the restore has written into its staging graph so far; None once the graph is
    gone (swapped in)."""
    try:
        reply = svc.redis().execute_command("GRAPH.RO_QUERY", staging, "MATCH (m:Memory) RETURN count(m)")
    except redis.exceptions.ResponseError:  # the key is gone: the swap renamed it
        return None
    return int(reply[1][0][0])


def _store_batch(svc: Service, label: str, count: int) -> None:
    for start in range(0, count, 500):
        memories = [
            {"content": f"{label} memory {n}", "tags": [label]} for n in range(start, min(count, start + 500))
        ]
        response = svc.http.post("/memory/batch", json={"memories": memories}, timeout=60)
        assert response.status_code == 201, response.text


def _restore_in_background(svc: Service, archive: bytes) -> dict[str, Any]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            response = httpx.post(
                f"{svc.url}/admin/restore?mode=replace",
                content=archive,
                headers={**ADMIN_HEADERS, "Content-Type": "application/gzip"},
                timeout=120,
            )
            outcome["status"] = response.status_code
        except httpx.TransportError as exc:
            outcome["error"] = type(exc).__name__

    outcome["thread"] = threading.Thread(target=run, daemon=True)
    outcome["thread"].start()
    return outcome


@pytest.mark.parametrize("moment", ["building", "building later", "just after the swap"])
def test_kill9_of_the_api_mid_restore_leaves_the_old_store_or_the_new_one_whole(
    service: Service, moment: str
) -> None:
    """The restore's commit point is one atomic rename of a complete staging graph: killed before
    it, the old store is untouched; after it, the archive's store is whole and its vectors are
    rebuilt at the next start. The killed restore's lock expires and the next restore cleans up."""
    graph = service.http.get("/health").json()["graph"]
    _store_batch(service, "archived", 2000)
    archive = service.http.get("/backup", headers=ADMIN_HEADERS, timeout=120).content
    new_ids = _memory_ids(service, graph)
    _store_batch(service, "later", 20)  # the store now differs from the archive
    old_ids = _memory_ids(service, graph)

    outcome = _restore_in_background(service, archive)
    staging = f"{graph}__restore"
    wait_until(lambda: staging in _graphs(service) or "status" in outcome, 60, "the restore to start")
    assert "status" not in outcome, outcome  # the staging graph was seen: the restore is under way
    if moment == "building later":
        # Its first page of memories written (a page is 500 of the 2,000): not a fixed delay,
        # which a fast restore outran (it finished within 0.5 s and the kill found it done).
        # (None: the staging graph is already swapped in; then the kill may find the restore
        # done, and the test fails as it should when it cannot kill during the building.)
        wait_until(lambda: _staged_memories(service, staging) != 0, 60, "a page staged", interval=0.005)
    elif moment == "just after the swap":
        wait_until(lambda: staging not in _graphs(service), 60, "the swap", interval=0.005)
    kill9(service.api_pids())
    outcome["thread"].join(120)
    print(f"restore killed {moment}: {outcome.get('status') or outcome.get('error')}")
    assert "error" in outcome, "the kill did not interrupt the restore"

    service.wait_healthy()
    after = _memory_ids(service, graph)
    assert after in (old_ids, new_ids), f"a partial store: {len(after)} memories"
    if moment == "just after the swap":
        assert after == new_ids
    service.wait_drained(expected_vectors=len(after), timeout=180)

    # The lock of the killed restore expires; the next restore goes through and removes leftovers.
    def restored() -> bool:
        response = service.http.post(
            "/admin/restore?mode=replace",
            content=archive,
            headers={**ADMIN_HEADERS, "Content-Type": "application/gzip"},
            timeout=120,
        )
        assert response.status_code in (200, 409), service.log_tail(60)
        return response.status_code == 200

    wait_until(restored, 90, "the next restore", interval=2)
    assert _memory_ids(service, graph) == new_ids
    leftovers = [g for g in _graphs(service) if g.startswith(f"{graph}__") and g != f"{graph}__access"]
    assert leftovers == []  # the staging graph of the killed restore is gone (keys stay)
    service.wait_drained(expected_vectors=len(new_ids), timeout=180)
