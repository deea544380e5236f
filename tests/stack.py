"""`automem serve` in a subprocess, for end-to-end and fault tests: start, find its processes,
kill them, wait for health and drained queues, reach its embedded FalkorDB."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import redis

from automem.embedded import free_port

TOKEN = "e2e-token"
ADMIN = "e2e-admin"


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


def roles_of(svc: Service) -> dict[int, str]:
    """Every process of the service's tree (grandchildren too: the gunicorn worker, the RQ
    scheduler of a worker) with the role of the supervisor's child it descends from."""
    assert svc.process is not None
    roles = {}
    for pid in children_of(svc.process.pid):
        cmd = cmdline(pid)
        role = next((name for word, name in ROLE_WORDS if word in cmd), f"unknown: {cmd}")
        for member in (pid, *descendants(pid)):
            roles[member] = role
    return roles


ROLE_WORDS = [
    ("redis-server", "falkordb"),
    ("gunicorn", "api"),
    ("automem worker", "worker"),
    ("automem cron", "cron"),
]


def gone(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # exited, not yet reaped by its parent


def kill9(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_until(predicate: Callable[[], Any], timeout: float, message: str, interval: float = 0.1) -> Any:
    """Poll `predicate` until it returns something truthy; its value, or AssertionError(message)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{message} (after {timeout:.0f} s)")


def session_processes(sid: int) -> list[int]:
    """Live (not zombie) processes of session `sid`: whatever a service started in a session of
    its own left behind, re-parented or not."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


class Service:
    """One `automem serve` on a fresh port; its output goes to `<data_dir>/../serve-<port>.log`.

    `command` replaces `python -m automem` (e.g. the `automem` script), `cwd` is its working
    directory, and `new_session` starts it in a session (and process group) of its own, so a
    test can signal the group as a terminal's Ctrl-C would."""

    def __init__(
        self,
        data_dir: Path,
        env: dict[str, str] | None = None,
        *,
        command: list[str] | None = None,
        cwd: Path | None = None,
        new_session: bool = False,
    ) -> None:
        self.data_dir = data_dir
        self.extra_env = env or {}
        self.command = command or [sys.executable, "-m", "automem"]
        self.cwd = cwd
        self.new_session = new_session
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir.parent / f"serve-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, headers={"X-API-Key": TOKEN}, timeout=10)

    # --- lifecycle ------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOMEM_", "FALKORDB_", "QDRANT_"))}
        env.update(
            {
                "AUTOMEM_API_TOKEN": TOKEN,
                "ADMIN_API_TOKEN": ADMIN,
                "EMBEDDING_PROVIDER": "hash",
                "AUTOMEM_LOG_LEVEL": "WARNING",
                # Loopback clients of the embedded stack are exempt: 20 writes pass a limit of 5.
                "AUTOMEM_RATE_LIMIT_PER_MINUTE": "5",
                **self.extra_env,
            }
        )
        return env

    def argv(self) -> list[str]:
        return [*self.command, "serve", "--data-dir", str(self.data_dir), "--port", str(self.port)]

    def launch(self, stderr: Path | None = None) -> subprocess.Popen[bytes]:
        """Start `automem serve` without waiting; stdout (and stderr, unless given a file of its
        own) go to the log."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log, open(stderr or os.devnull, "ab") as err:
            self.process = subprocess.Popen(
                self.argv(),
                env=self.env(),
                cwd=self.cwd,
                stdout=log,
                stderr=err if stderr else subprocess.STDOUT,
                start_new_session=self.new_session,
            )
        return self.process

    def start(self, timeout: float = 90) -> None:
        self.launch()
        self.wait_healthy(timeout)

    def stop(self) -> int:
        assert self.process is not None
        tree = descendants(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(60)
        time.sleep(0.5)
        alive = [cmdline(pid) for pid in tree if cmdline(pid)]  # a reaped or zombie process has none
        assert not alive, f"children left running: {alive}"
        return code

    def kill_everything(self) -> None:
        """Teardown: stop the supervisor, then SIGKILL whatever of its tree (or session) is left."""
        if self.process is None:
            return
        if self.process.poll() is None:
            tree = descendants(self.process.pid)  # before the supervisor dies and they are re-parented
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
            kill9(tree)
        if self.new_session:
            kill9(session_processes(self.process.pid))

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # --- its processes --------------------------------------------------------------------------
    def _supervisor_pid(self) -> int:
        assert self.process is not None and self.process.poll() is None, "automem serve exited"
        return self.process.pid

    def api_pids(self) -> list[int]:
        """The gunicorn master and its worker process."""
        return [pid for pid in descendants(self._supervisor_pid()) if "gunicorn" in cmdline(pid)]

    def worker_pids(self) -> list[int]:
        return [pid for pid in children_of(self._supervisor_pid()) if "automem worker" in cmdline(pid)]

    def falkordb_pid(self) -> int:
        found = [pid for pid in children_of(self._supervisor_pid()) if "redis-server" in cmdline(pid)]
        assert len(found) == 1, f"expected one FalkorDB process, found {found}"
        return found[0]

    def redis(self) -> redis.Redis:
        """A client of the embedded FalkorDB (which also hosts the RQ queues)."""
        # redis-server shows "redis-server 127.0.0.1:<port>" as its command line.
        [address] = [word for word in cmdline(self.falkordb_pid()).split() if word.startswith("127.0.0.1:")]
        port = int(address.rsplit(":", 1)[1])
        password = (self.data_dir / "falkordb.secret").read_text().strip()
        return redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=10)

    # --- waiting --------------------------------------------------------------------------------
    def wait_healthy(self, timeout: float = 90) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, (
                f"automem serve exited:\n{self.log_tail()}"
            )
            try:
                response = self.http.get("/health")
                if response.status_code == 200:
                    return response.json()
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"the service did not become healthy:\n{self.log_tail()}")

    def wait_drained(self, expected_vectors: int, timeout: float = 90) -> dict[str, Any]:
        """Health once every memory has its vector: points == memories, drift 0, nothing pending."""
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
        raise AssertionError(f"queues did not drain: {health}\n{self.log_tail()}")


@contextlib.contextmanager
def started_services(base: Path) -> Iterator[Callable[..., Service]]:
    """A factory of started services under `base`, all torn down at exit."""
    started: list[Service] = []

    def start(env: dict[str, str] | None = None, data_dir: Path | None = None, **options: Any) -> Service:
        """A started service; `options` (command, cwd, new_session) go to Service."""
        svc = Service(data_dir or base / "data", env, **options)
        started.append(svc)
        svc.start()
        return svc

    try:
        yield start
    finally:
        for svc in started:
            svc.kill_everything()
