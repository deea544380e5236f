"""`automem serve` end to end: real subprocesses, kill -9 of the API, clean stop, restart on the same data."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from automem.embedded import free_port

pytestmark = pytest.mark.slow

TOKEN = "e2e-token"


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    out = []
    for child in children_of(pid):
        out += [child, *descendants(child)]
    return out


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Service:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, headers={"X-API-Key": TOKEN}, timeout=10)

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOMEM_", "FALKORDB_", "QDRANT_"))}
        env.update(
            {
                "AUTOMEM_API_TOKEN": TOKEN,
                "EMBEDDING_PROVIDER": "hash",
                "AUTOMEM_LOG_LEVEL": "WARNING",
                # Loopback clients of the embedded stack are exempt: 20 writes pass a limit of 5.
                "AUTOMEM_RATE_LIMIT_PER_MINUTE": "5",
            }
        )
        argv = [
            sys.executable,
            "-m",
            "automem",
            "serve",
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(self.port),
        ]
        self.process = subprocess.Popen(argv, env=env)
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, "automem serve exited"
            try:
                response = self.http.get("/health")
                if response.status_code == 200:
                    return response.json()  # type: ignore[no-any-return]
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError("the service did not become healthy")

    def wait_drained(self, expected_vectors: int, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        health: dict[str, Any] = {}
        while time.monotonic() < deadline:
            health = self.wait_healthy()
            if (
                health["vector_count"] == expected_vectors
                and health["drift"]["difference"] == 0
                and health["drift"]["embedding_pending"] == 0
            ):
                return health
            time.sleep(0.2)
        raise AssertionError(f"queues did not drain: {health}")

    def stop(self) -> int:
        assert self.process is not None
        tree = descendants(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(60)
        time.sleep(0.5)
        alive = [cmdline(pid) for pid in tree if cmdline(pid)]  # a reaped or zombie process has none
        assert not alive, f"children left running: {alive}"
        return code


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    svc = Service(tmp_path / "data")
    svc.start()
    yield svc
    if svc.process and svc.process.poll() is None:
        tree = descendants(svc.process.pid)  # before the supervisor dies and they are re-parented
        svc.process.send_signal(signal.SIGTERM)
        try:
            svc.process.wait(30)
        except subprocess.TimeoutExpired:
            svc.process.kill()
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_data_survives_kill9_of_the_api_and_a_restart(service: Service) -> None:
    ids = []
    for n in range(20):
        response = service.http.post("/memory", json={"content": f"durable memory {n}", "tags": ["e2e"]})
        assert response.status_code == 201
        ids.append(response.json()["memory_id"])
    assert service.http.get("/memory/by-tag?tags=e2e").status_code == 200
    assert service.process is not None
    api = [pid for pid in descendants(service.process.pid) if "gunicorn" in cmdline(pid)]
    assert api, "no gunicorn process found"
    for pid in api:
        os.kill(pid, signal.SIGKILL)
    service.wait_healthy()
    for memory_id in ids:
        assert service.http.get(f"/memory/{memory_id}").status_code == 200
    service.wait_drained(expected_vectors=20)
    assert service.http.get("/memory/nope", headers={"X-API-Key": ""}).status_code == 401

    assert service.stop() == 0
    service.start()  # same data dir: a second start finds everything
    for memory_id in ids:
        body = service.http.get(f"/memory/{memory_id}").json()
        assert body["memory"]["embedding_status"] == "stored"
    health = service.wait_drained(expected_vectors=20)
    assert health["memory_count"] == 20
    assert service.stop() == 0


def test_worker_crash_mid_queue_loses_no_embedding(service: Service) -> None:
    assert service.process is not None
    workers = [pid for pid in children_of(service.process.pid) if "automem worker" in cmdline(pid)]
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    for n in range(30):
        assert (
            service.http.post("/memory", json={"content": f"queued while the worker is down {n}"}).status_code
            == 201
        )
    health = service.wait_drained(expected_vectors=30)  # the supervisor restarted the worker
    assert health["queues"]["failed"]["embed"] == 0
