"""What the benchmarks share: an embedded service in a session of its own, its processes and
their memory, percentiles, and the machine description that goes into every report."""

from __future__ import annotations

import json
import os
import platform
import secrets
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from automem.embedded import free_port

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"
# Variables of the developer's shell that would change the service under test.
_FOREIGN_PREFIXES = ("AUTOMEM_", "FALKORDB_", "QDRANT_", "EMBEDDING_", "ENRICHMENT_", "CONSOLIDATION_")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress(total: int, label: str) -> tqdm:
    """A progress bar on a terminal (nothing in logs or CI)."""
    return tqdm(total=total, desc=label, unit="req", leave=False, disable=not sys.stderr.isatty())


def service_env(token: str, admin_token: str | None = None, **overrides: str) -> dict[str, str]:
    """The environment of a benchmarked service: the shell's, minus any automem setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
    env.update({"AUTOMEM_API_TOKEN": token, "AUTOMEM_LOG_LEVEL": "WARNING"})
    if admin_token:
        env["ADMIN_API_TOKEN"] = admin_token
    env.update(overrides)
    return env


def model_env() -> dict[str, str]:
    """Settings for the offline MiniLM model the quality benchmarks embed with."""
    return {"AUTOMEM_EMBEDDING_MODEL_DIR": str(MODEL_DIR), "EMBEDDING_PROVIDER": "fastembed"}


def category_words(env: dict[str, str]) -> str:
    """Whether the embedded service started with `env` adds category words (a WordNet database at
    its WORDNET_DIR), for the report: without it, recall on the quality benchmarks is lower
    than the committed figures, which had it. Warns when off."""
    from automem.settings import load_settings
    from enrichment.categories import load as load_wordnet

    directory = env.get("WORDNET_DIR", load_settings().wordnet_dir)
    if load_wordnet(directory) is not None:
        return "on"
    log(f"WARNING: no WordNet at {directory!r}: category words are off (README: wordnet-base)")
    return f"off (no WordNet at {directory!r})"


def wait_for_health(url: str, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"automem serve exited with {proc.returncode} before it was healthy")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url}/health did not answer 200 within {timeout:.0f}s")


def stop_service(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        log("automem serve ignored SIGTERM for 60s; killing it")
        proc.kill()
        proc.wait(10)


@dataclass
class Service:
    url: str
    token: str
    admin_token: str
    proc: subprocess.Popen[bytes] | None = None
    data_dir: Path | None = None
    log_path: Path | None = None
    leftovers: list[str] = field(default_factory=list)

    def client(self, timeout: float = 60, connections: int = 16) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"X-API-Key": self.token, "X-Admin-Token": self.admin_token},
            timeout=timeout,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )


@contextmanager
def embedded_service(
    env: dict[str, str] | None = None,
    *,
    data_dir: Path | None = None,
    workers: int | None = None,
    start_timeout: float = 300,
    log_path: Path | None = None,
    prefix: str = "automem-bench-",
) -> Iterator[Service]:
    """Run `python -m automem serve` in a session of its own (Ctrl-C reaches only the benchmark,
    which then stops the service cleanly); a temporary data dir unless `data_dir` is given."""
    token, admin = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        data = data_dir if data_dir is not None else Path(tmp)
        data.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "automem", "serve", "--data-dir", str(data), "--port", str(port)]
        if workers is not None:
            argv += ["--workers", str(workers)]
        output = log_path.open("wb") if log_path else None
        try:
            proc = subprocess.Popen(
                argv,
                env=service_env(token, admin, **(env or {})),
                cwd=ROOT,
                stdout=output,
                stderr=subprocess.STDOUT if output else None,
                start_new_session=True,
            )
        finally:
            if output:
                output.close()
        service = Service(f"http://127.0.0.1:{port}", token, admin, proc, data, log_path)
        try:
            wait_for_health(service.url, proc, start_timeout)
            yield service
        finally:
            stop_service(proc)
            service.leftovers = _reap_session(proc.pid)


def _reap_session(sid: int) -> list[str]:
    deadline = time.monotonic() + 10
    while session_processes(sid) and time.monotonic() < deadline:
        time.sleep(0.5)
    leftovers = [f"{pid} {cmd}" for pid, cmd in session_processes(sid)]
    for line in leftovers:
        log(f"WARNING: left over after SIGTERM, killing: {line}")
        with suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    return leftovers


def _stat_fields(pid: str) -> list[str]:
    stat = (Path("/proc") / pid / "stat").read_text()
    return stat[stat.rindex(")") + 2 :].split()


def _cmdline(pid: str) -> str:
    raw = (Path("/proc") / pid / "cmdline").read_bytes()
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def session_processes(sid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live process of session `sid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat_fields(entry.name)
            if int(fields[3]) != sid or fields[0] == "Z":
                continue
            found.append((int(entry.name), _cmdline(entry.name)))
        except (OSError, ValueError, IndexError):
            continue
    return found


def other_service_processes(own_sid: int | None = None) -> list[str]:
    """automem / gunicorn / redis-server processes outside the benchmarked service: they share the CPU."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmd = _cmdline(entry.name)
            sid = int(_stat_fields(entry.name)[3])
        except (OSError, ValueError, IndexError):
            continue
        if sid == own_sid or "scripts/bench" in cmd:
            continue
        if any(word in cmd for word in ("automem", "gunicorn", "redis-server")):
            found.append(f"{entry.name} {cmd[:160]}")
    return found


def process_role(cmd: str) -> str:
    if "redis-server" in cmd:
        return "falkordb"
    if "gunicorn" in cmd:
        return "api"
    if "automem worker" in cmd:
        return "worker"
    if "automem cron" in cmd:
        return "cron"
    if "automem serve" in cmd:
        return "supervisor"
    return cmd.split()[0] if cmd else "?"


MEMORY_FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile")


def status_mb(pid: int | str = "self") -> dict[str, float]:
    """A process's resident memory from /proc/<pid>/status, in MB: VmRSS, its peak VmHWM, and
    RssAnon / RssFile (anonymous, and file-backed: mapped files, which the kernel may drop).
    Empty when the process is gone."""
    fields: dict[str, float] = {}
    with suppress(OSError):
        for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
            key, _, value = line.partition(":")
            mb = _kb_to_mb(value.strip()) if key in MEMORY_FIELDS else None
            if mb is not None:
                fields[key] = mb
    return fields


def memory_of(sid: int) -> list[dict[str, Any]]:
    """Resident memory (now and peak) of every process of the service's session, in MB."""
    rows = []
    for pid, cmd in session_processes(sid):
        status = status_mb(pid)
        rows.append(
            {
                "pid": pid,
                "role": process_role(cmd),
                "rss_mb": status.get("VmRSS"),
                "peak_rss_mb": status.get("VmHWM"),
            }
        )
    return sorted(rows, key=lambda r: (r["role"], r["pid"]))


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used, in seconds."""
    fields = _stat_fields(str(pid))
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(sid: int) -> dict[str, float]:
    """CPU seconds used so far by the service's processes, summed per role."""
    totals: dict[str, float] = {}
    for pid, cmd in session_processes(sid):
        with suppress(OSError, ValueError, IndexError):
            role = process_role(cmd)
            totals[role] = totals.get(role, 0.0) + process_cpu_seconds(pid)
    return totals


def cpu_ms_each(
    before: dict[str, float],
    after: dict[str, float],
    count: int,
    roles: Iterable[str] | None = None,
    digits: int = 3,
) -> dict[str, float]:
    """Each role's CPU between two `cpu_seconds` readings, in ms per one of `count` (a memory, a
    recall); `roles`: which to report (default: every role of the later reading, sorted)."""
    chosen = sorted(after) if roles is None else roles
    return {
        role: round((after.get(role, 0.0) - before.get(role, 0.0)) * 1000 / count, digits) for role in chosen
    }


def _kb_to_mb(value: str | None) -> float | None:
    return round(int(value.split()[0]) / 1024, 1) if value else None


def percentiles(samples: Sequence[float], scale: float = 1000.0) -> dict[str, float]:
    """p50/p95/p99/mean of durations in seconds, reported in ms (nearest-rank)."""
    ordered = sorted(samples)
    if not ordered:
        return {}

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * scale, 2)

    return {
        "p50_ms": pick(0.50),
        "p95_ms": pick(0.95),
        "p99_ms": pick(0.99),
        "mean_ms": round(statistics.fmean(ordered) * scale, 2),
    }


def machine_info() -> dict[str, Any]:
    cpu = None
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def git_commit() -> str | None:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def command_line(script: str, argv: Sequence[str]) -> str:
    """The command used, with the value of --token masked."""
    shown: list[str] = []
    hide = False
    for arg in argv:
        if hide:
            shown.append("***")
            hide = False
        elif arg == "--token":
            shown.append(arg)
            hide = True
        elif arg.startswith("--token="):
            shown.append("--token=***")
        else:
            shown.append(arg)
    return f"python scripts/bench/{script}" + ("" if not shown else " " + shlex.join(shown))


def run_meta(script: str, **extra: Any) -> dict[str, Any]:
    """What every report says of its run: when, where, which commit, the command."""
    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": machine_info(),
        "git_commit": git_commit(),
        "command": f"python scripts/bench/{script} " + " ".join(sys.argv[1:]),
        **extra,
    }


def run_child(script: str, *args: str) -> dict[str, Any]:
    """Run `script` again in a process of its own (so what it measures, its memory above all, is
    its own) with `args` and `--child-out FILE`; the JSON it wrote there."""
    fd, name = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    out = Path(name)
    try:
        subprocess.run([sys.executable, script, *args, "--child-out", str(out)], check=True)
        result: dict[str, Any] = json.loads(out.read_text())
        return result
    finally:
        out.unlink(missing_ok=True)


def report_title(title: str, meta: dict[str, Any]) -> str:
    """A report's first line: what it measured, when, on how many cores, at which commit."""
    return f"# {title} ({meta['date']}, {meta['machine']['cores']} cores, commit {meta['git_commit']})"


def write_report(
    out: Path, name: str, report: dict[str, Any], render: Callable[[dict[str, Any]], str]
) -> int:
    """Write `<name>.json` and `<name>.md` under `out`, print the markdown; the exit status."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = render(report)
    (out / f"{name}.md").write_text(markdown)
    print(markdown)
    return 0
