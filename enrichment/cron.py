"""Consolidation on RQ's cron scheduler (`rq.cron.CronScheduler`).

Each consolidation task with an interval > 0 (and CONSOLIDATION_ENABLED) is registered as an RQ
cron job named `consolidation:<task>` that enqueues `run_consolidation(task, scheduled=True)` on the
`maintenance` queue. Its last enqueue time is seeded from the graph (the last successful run of
the task, which outlives history pruning), so a restart does not re-run every task: a task that
never ran is due at once, any other one interval after its last run.

RQ's cron scheduler has no locking: two schedulers would both enqueue. `CronRunner` therefore
drives the scheduler only while it holds a Redis leader lease (`SET NX PX`, renewed every tick),
so any number of processes may run one — `automem worker` does by default, `automem cron` runs
only the scheduler — and exactly one is active; another takes over within the lease time when
the leader dies. As a second guard the job itself skips a scheduled run whose task already ran
within half its interval. The leader's scheduler is visible in RQ's cron scheduler registry
(`CronScheduler.all`), with each job's next enqueue time.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import redis
from rq.cron import CronScheduler
from rq.exceptions import SchedulerNotFound

from automem.services import require_urls
from automem.settings import Settings
from automem.stores.graph import GraphStore
from automem.stores.queue import CONSOLIDATION_TIMEOUT
from automem.timeutil import format_utc, parse_iso, utc_now
from enrichment.consolidation import TASKS, run_consolidation, task_interval
from enrichment.intake import dispatch_intake
from enrichment.maintenance import purge_deleted, reconcile

log = logging.getLogger(__name__)

LEADER_KEY = "automem:consolidation:cron-leader"
LEASE_MS = 90_000
MAX_TICK_SECONDS = 30.0
JOB_PREFIX = "consolidation:"
PURGE_JOB = "purge-deleted"
INTAKE_SWEEP_JOB = "intake-sweep"
# The intake's safety net: a dispatch job lost with its claim still set is made good this soon.
INTAKE_SWEEP_SECONDS = 60
RECONCILE_JOB = "reconcile"

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


def scheduled_tasks(settings: Settings) -> dict[str, int]:
    """Task -> interval in seconds, for every task the scheduler should run."""
    if not settings.consolidation_enabled:
        return {}
    return {task: task_interval(settings, task) for task in TASKS if task_interval(settings, task) > 0}


def build_scheduler(
    settings: Settings, connection: redis.Redis, last_runs: dict[str, str], name: str = ""
) -> CronScheduler:
    """An RQ cron scheduler with the enabled consolidation tasks registered."""
    scheduler = CronScheduler(connection=connection, logging_level=settings.log_level, name=name)
    timeout = max(settings.job_timeout_seconds, CONSOLIDATION_TIMEOUT)
    for task, interval in scheduled_tasks(settings).items():
        job = scheduler.register(
            run_consolidation,
            "maintenance",
            kwargs={"mode": task, "dry_run": False, "scheduled": True},
            interval=interval,
            job_timeout=timeout,
            result_ttl=7 * 86400,
            failure_ttl=7 * 86400,
            name=JOB_PREFIX + task,
        )
        last = last_runs.get(task)
        if last:
            with contextlib.suppress(ValueError):
                job.set_enqueue_time(parse_iso(last))
    # Not consolidation, but the same one active scheduler runs them: the purge of memories deleted
    # past RETENTION_DAYS, the intake's safety net, and reconcile (work whose enqueue was lost).
    periodic = (
        (purge_deleted, "maintenance", settings.purge_interval_seconds, timeout, 86400, PURGE_JOB),
        (dispatch_intake, "embed", INTAKE_SWEEP_SECONDS, settings.job_timeout_seconds, 0, INTAKE_SWEEP_JOB),
        (reconcile, "maintenance", settings.reconcile_interval_seconds, timeout, 3600, RECONCILE_JOB),
    )
    for func, queue, interval, job_timeout, result_ttl, name in periodic:
        if interval > 0:
            scheduler.register(
                func,
                queue,
                interval=interval,
                job_timeout=job_timeout,
                result_ttl=result_ttl,
                failure_ttl=7 * 86400,
                name=name,
            )
    return scheduler


class CronRunner:
    """Runs RQ's cron scheduler while this process holds the leader lease."""

    def __init__(self, settings: Settings, connection: redis.Redis, graph: GraphStore) -> None:
        self.settings = settings
        self.connection = connection
        self.graph = graph
        self.name = f"automem-cron:{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
        self.scheduler: CronScheduler | None = None

    def _acquire(self) -> bool:
        if self.scheduler is not None:
            if self.connection.eval(_RENEW, 1, LEADER_KEY, self.name, LEASE_MS):
                return True
            log.warning("lost the consolidation cron lease; another scheduler took over")
            self._retire()
            return False
        return bool(self.connection.set(LEADER_KEY, self.name, nx=True, px=LEASE_MS))

    def _retire(self) -> None:
        if self.scheduler is None:
            return
        with contextlib.suppress(SchedulerNotFound, redis.exceptions.RedisError):
            self.scheduler.register_death()
        self.scheduler = None

    def tick(self) -> float:
        """One round: take or renew the lease, enqueue due tasks; returns seconds to sleep."""
        if not self._acquire():
            return MAX_TICK_SECONDS
        if self.scheduler is None:
            self.scheduler = build_scheduler(
                self.settings, self.connection, self.graph.consolidation_last_runs(), self.name
            )
            self.scheduler.register_birth()
            log.info("consolidation cron active: %s", sorted(scheduled_tasks(self.settings)))
        if self.scheduler.enqueue_jobs():
            self.scheduler.save()
        self.scheduler.heartbeat()
        return min(MAX_TICK_SECONDS, self.scheduler.calculate_sleep_interval())

    def stop(self) -> None:
        self._retire()
        with contextlib.suppress(redis.exceptions.RedisError):
            self.connection.eval(_RELEASE, 1, LEADER_KEY, self.name)

    def run(self, stop: threading.Event) -> None:
        """Tick until `stop` is set; errors (a store restarting) are logged and retried."""
        try:
            while not stop.is_set():
                try:
                    delay = self.tick()
                except Exception:
                    log.exception("consolidation cron tick failed; retrying")
                    self._retire()
                    delay = 5.0
                stop.wait(max(0.5, delay))
        finally:
            self.stop()


def start_thread(
    settings: Settings, connection: redis.Redis, graph: GraphStore
) -> tuple[threading.Thread, threading.Event]:
    """Run the cron in a daemon thread of this process (used by `automem worker`)."""
    stop = threading.Event()
    runner = CronRunner(settings, connection, graph)
    thread = threading.Thread(target=runner.run, args=(stop,), name="consolidation-cron", daemon=True)
    thread.start()
    return thread, stop


def run_forever(settings: Settings) -> int:
    """`automem cron`: only the scheduler, until SIGINT/SIGTERM."""
    graph_url, queue_url = require_urls(settings)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    runner = CronRunner(
        settings,
        redis.Redis.from_url(queue_url),
        GraphStore.from_url(graph_url, settings.falkordb_graph, settings.graph_timeout_seconds),
    )
    runner.run(stop)
    return 0


# --- status -------------------------------------------------------------------------------------
def active_scheduler(connection: redis.Redis) -> CronScheduler | None:
    leader = connection.get(LEADER_KEY)
    if not leader:
        return None
    try:
        return CronScheduler.fetch(leader.decode() if isinstance(leader, bytes) else str(leader), connection)
    except SchedulerNotFound:
        return None


def next_runs(settings: Settings, connection: redis.Redis, last_runs: dict[str, str]) -> dict[str, str]:
    """Task -> ISO time of its next scheduled run, or "disabled". Taken from the active RQ cron
    scheduler when one runs; otherwise computed from the last run (never run: now)."""
    enabled = scheduled_tasks(settings)
    live: dict[str, datetime] = {}
    scheduler = active_scheduler(connection)
    if scheduler is not None:
        for job in scheduler.get_jobs():
            if (
                job.name.startswith(JOB_PREFIX)
                and job.next_enqueue_time
                and job.next_enqueue_time != datetime.max
            ):
                live[job.name.removeprefix(JOB_PREFIX)] = job.next_enqueue_time
    now = utc_now()
    out: dict[str, str] = {}
    for task in TASKS:
        if task not in enabled:
            out[task] = "disabled"
        elif task in live:
            out[task] = format_utc(live[task])
        elif last_runs.get(task):
            out[task] = format_utc(max(now, parse_iso(last_runs[task]) + timedelta(seconds=enabled[task])))
        else:
            out[task] = format_utc(now)
    return out


def scheduler_info(connection: redis.Redis) -> dict[str, Any]:
    scheduler = active_scheduler(connection)
    if scheduler is None:
        return {"active": False}
    beat = scheduler.last_heartbeat
    return {
        "active": beat is not None and (time.time() - beat.timestamp()) * 1000 < LEASE_MS,
        "name": scheduler.name,
        "last_heartbeat": format_utc(beat) if beat else None,
        "jobs": sorted(job.name for job in scheduler.get_jobs()),
    }


def in_words(when: str, now: datetime) -> str:
    """A next run as AutoMem's status words it: "Disabled", "Due now", "In N hour(s)", "In N day(s)"."""
    if when == "disabled":
        return "Disabled"
    seconds = (parse_iso(when) - now).total_seconds()
    if seconds <= 0:
        return "Due now"
    hours = max(1, round(seconds / 3600))
    return f"In {hours} hour(s)" if hours < 24 else f"In {round(hours / 24)} day(s)"
