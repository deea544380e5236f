"""The API's gunicorn worker class (automem.gunicorn_worker) under a real gunicorn: a thread that
serves a kept-alive connection's next request itself must answer exactly what the main thread's
route would, whatever the timing, the number of connections per thread and requests sent ahead."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.embedded import api_command, free_port
from tests.conftest import make_settings
from tests.stack import wait_until

ROOT = Path(__file__).resolve().parents[2]


class Gunicorn:
    def __init__(self, threads: int, linger_ms: int = 5) -> None:
        self.linger_ms = linger_ms
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--worker-class",
                "automem.gunicorn_worker.LingeringThreadWorker",
                "--workers",
                "1",
                "--threads",
                str(threads),
                "--keep-alive",
                "30",
                "--graceful-timeout",
                "5",
                "--no-control-socket",
                "--bind",
                f"127.0.0.1:{self.port}",
                "tests.stubs.echo_wsgi:app",
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "AUTOMEM_API_LINGER_MS": str(linger_ms)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._wait_listening()

    def _wait_listening(self) -> None:
        wait_until(self._accepting, 30, "gunicorn did not listen", interval=0.05)

    def _accepting(self) -> bool:
        assert self.proc.poll() is None, self.proc.stderr.read().decode() if self.proc.stderr else ""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def connection(self, timeout: float = 10) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def one_thread() -> Iterator[Gunicorn]:
    server = Gunicorn(threads=1)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def two_threads() -> Iterator[Gunicorn]:
    server = Gunicorn(threads=2)
    yield server
    server.stop()


def ask(conn: http.client.HTTPConnection, path: str, body: bytes = b"") -> bytes:
    conn.request("POST", path, body=body)
    response = conn.getresponse()
    assert response.status == 200
    assert not response.will_close  # the same connection stays in use
    return response.read()


def sent_ahead(port: int, paths: list[str]) -> list[bytes]:
    """Several requests written in one send before any answer is read (HTTP/1.1 pipelining)."""
    raw = b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        reader = sock.makefile("rb")
        return [_one_answer(reader) for _ in paths]


def _one_answer(reader: Any) -> bytes:
    status = reader.readline()
    assert status.startswith(b"HTTP/1.1 200"), status
    length = 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return bytes(reader.read(length))


def test_back_to_back_requests_on_one_connection_are_answered_in_order(one_thread: Gunicorn) -> None:
    conn = one_thread.connection()
    answers = [ask(conn, f"/n{i}", str(i).encode()) for i in range(200)]
    assert answers == [f"/n{i}|{i}".encode() for i in range(200)]


def test_a_connection_idle_past_the_linger_is_served_through_the_poller(one_thread: Gunicorn) -> None:
    conn = one_thread.connection()
    assert ask(conn, "/first") == b"/first|"
    time.sleep(one_thread.linger_ms / 1000 * 20)
    assert ask(conn, "/after-idle") == b"/after-idle|"


def test_more_connections_than_threads_are_all_served(one_thread: Gunicorn) -> None:
    conns = [one_thread.connection() for _ in range(3)]
    for round_ in range(20):
        for k, conn in enumerate(conns):
            assert ask(conn, f"/c{k}/r{round_}") == f"/c{k}/r{round_}|".encode()


def test_no_thread_lingers_while_connections_outnumber_threads() -> None:
    """One thread, a linger far longer than the clients' patience: once two connections are
    open, each request is answered without the thread first waiting on the other client."""
    # A linger far above a loaded machine's slowest answer: a 5 s wait tells the two apart.
    server = Gunicorn(threads=1, linger_ms=10_000)
    try:
        first, second = server.connection(timeout=30), server.connection(timeout=30)
        assert ask(first, "/a") == b"/a|"
        assert ask(second, "/b") == b"/b|"  # waits out the linger that began with one connection
        for conn in (first, second):
            assert conn.sock is not None
            conn.sock.settimeout(5.0)
        for k in range(10):
            assert ask(first, f"/a{k}") == f"/a{k}|".encode()
            assert ask(second, f"/b{k}") == f"/b{k}|".encode()
    finally:
        server.stop()


def test_requests_sent_ahead_are_each_answered(two_threads: Gunicorn) -> None:
    paths = [f"/ahead{i}" for i in range(5)]
    assert sent_ahead(two_threads.port, paths) == [f"{p}|".encode() for p in paths]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["now", "pause", "ahead"])), min_size=1, max_size=12
    )
)
def test_every_request_gets_its_own_answer(two_threads: Gunicorn, steps: list[tuple[int, str]]) -> None:
    """Three connections on two threads, requests sent at once, after the linger ran out, or
    several ahead on a fresh connection: each is answered with its own path."""
    conns = [two_threads.connection() for _ in range(3)]
    try:
        for n, (k, how) in enumerate(steps):
            if how == "ahead":
                paths = [f"/p{n}a", f"/p{n}b"]
                assert sent_ahead(two_threads.port, paths) == [f"{p}|".encode() for p in paths]
                continue
            if how == "pause":
                time.sleep(two_threads.linger_ms / 1000 * 2)
            assert ask(conns[k], f"/p{n}", b"x" * n) == f"/p{n}|".encode() + b"x" * n
    finally:
        for conn in conns:
            conn.close()


def test_a_lingering_thread_does_not_hold_up_a_stop() -> None:
    server = Gunicorn(threads=2)
    conn = server.connection()
    assert ask(conn, "/one") == b"/one|"
    assert server.stop() == 0


def test_automem_serve_runs_the_api_with_this_worker_and_its_setting(tmp_path: Path) -> None:
    settings = make_settings("redis://127.0.0.1:1", tmp_path, api_linger_ms=7)
    argv = api_command(settings, "127.0.0.1", 8001)
    assert argv[argv.index("--worker-class") + 1] == "automem.gunicorn_worker.LingeringThreadWorker"
    assert argv[argv.index("--env") + 1] == "AUTOMEM_API_LINGER_MS=7"
