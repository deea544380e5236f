"""RQ queues: the only module that enqueues background work.

Job ids are deterministic (derived from what the job will do), so enqueueing the same work twice
while it is waiting or running is a no-op, and a memory is never embedded twice concurrently.

New memories reach their jobs through an intake: the request path appends `id|hash` (embedding)
and `id|version` (enrichment) to two Redis lists and makes sure one dispatch job is pending, in a
single pipelined round trip; the dispatch job (a worker) pops the lists and enqueues the usual
deterministic embed/enrich jobs in full chunks. Creating an RQ job per request cost ~2 ms of
Redis round trips on the write path, and single-memory jobs embedded one text per model call.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import redis
from rq import Queue, Retry, Worker
from rq.exceptions import NoSuchJobError
from rq.executions import Execution
from rq.job import Job, JobStatus

from automem.jobnames import ENRICH_QUEUE, QUEUE_NAMES, JobName
from automem.settings import Settings
from automem.timers import timer_running

log = logging.getLogger(__name__)

# Memories a paging job reads from the graph at a time.
PAGE_SIZE = 500
ACCESS_LOG = "automem:access-log"
ACCESS_FLUSH_PENDING = "automem:access-flush-pending"
INTAKE_EMBED = "automem:intake:embed"
INTAKE_ENRICH = "automem:intake:enrich"
INTAKE_PENDING = "automem:intake:pending"
# A claim outlives a lost dispatch job by this long; the cron sweep dispatches in any case.
INTAKE_CLAIM_SECONDS = 120
_ACTIVE = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED, JobStatus.SCHEDULED}
# A consolidation pass pages through every memory: it gets at least an hour.
CONSOLIDATION_TIMEOUT = 3600
# Work whose intake push failed (Redis unreachable) is retried from the process this often, and at
# most this many entries are held: beyond that the reconcile pass (at start and on cron) finds them.
DEFERRED_RETRY_SECONDS = 2.0
DEFERRED_MAX_ENTRIES = 100_000


class JobQueue:
    def __init__(self, connection: redis.Redis, settings: Settings) -> None:
        self.connection = connection
        self.settings = settings
        self.queues = {name: Queue(name, connection=connection) for name in QUEUE_NAMES}
        self._deferred_embed: list[tuple[str, str]] = []
        self._deferred_enrich: list[tuple[str, int]] = []
        self._deferred_lock = threading.Lock()
        self._retry_timer: threading.Timer | None = None

    @classmethod
    def from_url(cls, url: str, settings: Settings) -> JobQueue:
        return cls(redis.Redis.from_url(url), settings)

    def _retry(self) -> Retry | None:
        intervals = self.settings.retry_intervals()
        return Retry(max=len(intervals), interval=intervals) if intervals else None

    def _enqueue(
        self,
        queue: str,
        name: JobName,
        job_id: str,
        *args: object,
        delay: float | None = None,
        tenant: str | None = None,
    ) -> bool:
        """Enqueue unless a job with this id is already waiting or running; True if enqueued.
        With `delay` (seconds) the job waits in RQ's scheduled registry first. A job of one
        tenant's memories carries the tenant in its meta (a tenant's erasure cancels them)."""
        try:
            existing = Job.fetch(job_id, connection=self.connection)
            if existing.get_status(refresh=False) in _ACTIVE:
                return False
        except NoSuchJobError:
            pass
        options: dict[str, Any] = {
            "job_id": job_id,
            "retry": self._retry(),
            "job_timeout": self.settings.job_timeout_seconds,
            "result_ttl": 3600,
            "failure_ttl": 7 * 86400,
        }
        if tenant is not None:
            options["meta"] = {"tenant": tenant}
        if delay:
            self.queues[queue].enqueue_in(timedelta(seconds=delay), name.value, *args, **options)
        else:
            self.queues[queue].enqueue(name.value, *args, **options)
        return True

    def enqueue_classify(
        self, memory_id: str, version: int, attempt: int = 0, delay: float | None = None
    ) -> bool:
        """LLM classification of one memory. A job deferred while the LLM is paused or rate
        limited comes back as the next attempt (its own id: the running job still holds its id)."""
        return self._enqueue(
            ENRICH_QUEUE,
            JobName.CLASSIFY,
            f"classify-{memory_id}-{version}-{attempt}",
            memory_id,
            attempt,
            delay=delay,
        )

    def enqueue_embed(
        self,
        memory_ids: Sequence[str],
        content_hashes: Sequence[str],
        force: bool = False,
        run: str | None = None,
        tenant: str | None = None,
        context: str = "",
    ) -> bool:
        """Embed these memories' current contents (`force`: even where a vector of the current
        model exists, for a full re-embedding). `run` names the re-embedding run the job belongs
        to, so it reports the run's progress when done. `context` (what changed around the
        memories, e.g. their new predecessor) makes the job id differ from an embedding job of
        the same contents that may be running with the old context."""
        pairs = zip(memory_ids, content_hashes, strict=True)
        digest = _digest([*(f"{i}:{h}" for i, h in pairs), *([context] if context else [])])
        job_id = f"{'reembed' if force else 'embed'}-{digest}"
        args: tuple[object, ...] = (list(memory_ids), force) + ((run,) if run else ())
        return self._enqueue("embed", JobName.EMBED, job_id, *args, tenant=tenant)

    def enqueue_reembed(self, every: bool, limit: int | None = None, batch_size: int | None = None) -> bool:
        """The re-embedding run (one at a time per mode)."""
        mode = "all" if every else "missing"
        job_id = f"reembed-run-{mode}"
        return self._enqueue("maintenance", JobName.REEMBED, job_id, every, PAGE_SIZE, limit, batch_size)

    def enqueue_enrich(
        self,
        memory_ids: Sequence[str],
        versions: Sequence[int],
        force: bool = False,
        tenant: str | None = None,
    ) -> bool:
        """Enrich these memories as of these versions (a newer version is a new job); `force`
        re-enriches memories that are already enriched (reprocess)."""
        digest = _digest(f"{i}:{v}" for i, v in zip(memory_ids, versions, strict=True))
        prefix = "reenrich" if force else "enrich"
        return self._enqueue(
            ENRICH_QUEUE, JobName.ENRICH, f"{prefix}-{digest}", list(memory_ids), force, tenant=tenant
        )

    def enqueue_reconcile(self) -> bool:
        """Queue a reconcile pass (one at a time: asking again while it waits is a no-op)."""
        return self._enqueue("maintenance", JobName.RECONCILE, "reconcile")

    def enqueue_consolidation(self, mode: str, dry_run: bool = False) -> tuple[str, bool]:
        """Queue a consolidation run on `maintenance`; one job id per mode, so asking again while
        it waits or runs is a no-op. Returns (job id, whether it was enqueued now)."""
        job_id = f"consolidation-{mode}{'-dry' if dry_run else ''}"
        try:
            if Job.fetch(job_id, connection=self.connection).get_status(refresh=False) in _ACTIVE:
                return job_id, False
        except NoSuchJobError:
            pass
        self.queues["maintenance"].enqueue(
            JobName.CONSOLIDATE.value,
            mode,
            dry_run,
            job_id=job_id,
            retry=self._retry(),
            job_timeout=max(self.settings.job_timeout_seconds, CONSOLIDATION_TIMEOUT),
            result_ttl=7 * 86400,
            failure_ttl=7 * 86400,
        )
        return job_id, True

    def submit(self, embed: Sequence[tuple[str, str]], enrich: Sequence[tuple[str, int]]) -> None:
        """Hand new work to the intake: (memory id, content hash) to embed, (memory id, version)
        to enrich. One round trip; a dispatch job is enqueued only when none is pending.

        When Redis refuses, the work is kept in this process and pushed again every
        DEFERRED_RETRY_SECONDS (and with the next submit) before the error is raised: a memory
        acknowledged while Redis restarts is embedded once it is back, not at the next reconcile."""
        with self._deferred_lock:
            # A failed push may have left a claim without its dispatch job: dispatch regardless.
            retrying = bool(self._deferred_embed or self._deferred_enrich)
            embed = [*self._deferred_embed, *embed]
            enrich = [*self._deferred_enrich, *enrich]
            self._deferred_embed, self._deferred_enrich = [], []
        try:
            self._push_intake(embed, enrich, dispatch=retrying)
        except redis.exceptions.RedisError:
            self._defer(embed, enrich)
            raise

    def _defer(self, embed: list[tuple[str, str]], enrich: list[tuple[str, int]]) -> None:
        with self._deferred_lock:
            room = DEFERRED_MAX_ENTRIES - len(self._deferred_embed) - len(self._deferred_enrich)
            self._deferred_embed.extend(embed[: max(room, 0)])
            self._deferred_enrich.extend(enrich[: max(room - len(embed), 0)])
            self._retry_timer = timer_running(self._retry_timer, DEFERRED_RETRY_SECONDS, self._retry_deferred)

    def _retry_deferred(self) -> None:
        with self._deferred_lock:
            self._retry_timer = None
            if not self._deferred_embed and not self._deferred_enrich:
                return
        try:
            self.submit([], [])
            log.info("deferred background work queued after Redis came back")
        except redis.exceptions.RedisError:
            pass  # submit has deferred it again and armed the next retry

    def deferred_count(self) -> int:
        """Entries held in this process because Redis refused them (see submit)."""
        with self._deferred_lock:
            return len(self._deferred_embed) + len(self._deferred_enrich)

    def _push_intake(
        self, embed: Sequence[tuple[str, str]], enrich: Sequence[tuple[str, int]], dispatch: bool = False
    ) -> None:
        if not embed and not enrich:
            return
        pipe = self.connection.pipeline(transaction=False)
        if embed:
            pipe.rpush(INTAKE_EMBED, *(f"{i}|{h}" for i, h in embed))
        if enrich:
            pipe.rpush(INTAKE_ENRICH, *(f"{i}|{v}" for i, v in enrich))
        pipe.set(INTAKE_PENDING, "1", nx=True, ex=INTAKE_CLAIM_SECONDS)
        claimed = pipe.execute()[-1]
        if claimed or dispatch:
            self.enqueue_dispatch()

    def enqueue_dispatch(self) -> None:
        # Its own id each time: a dispatch that is running has released the claim, and the next
        # one must not replace its job record. At the front, so new work is not stuck behind a
        # long embedding backlog. After AUTOMEM_INTAKE_DELAY_SECONDS, so that under a stream of
        # writes one dispatch (and one RQ enqueue, ~1 ms) serves a second's worth of them.
        self._enqueue_maybe_later(
            "embed",
            JobName.DISPATCH_INTAKE,
            self.settings.intake_delay_seconds,
            job_id=f"intake-{uuid.uuid4().hex}",
            at_front=True,
            result_ttl=0,
            failure_ttl=7 * 86400,
            retry=self._retry(),
        )

    def take_intake(self, batch: int) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
        """Pop up to `batch` entries of each intake list (atomically: two dispatchers never get
        the same entry). Releases the claim first, so work submitted meanwhile is dispatched too."""
        self.connection.delete(INTAKE_PENDING)
        pipe = self.connection.pipeline(transaction=False)
        pipe.lpop(INTAKE_EMBED, batch)
        pipe.lpop(INTAKE_ENRICH, batch)
        raw_embed, raw_enrich = pipe.execute()
        embed = [_pair(item) for item in raw_embed or []]
        enrich = [(i, int(v)) for i, v in (_pair(item) for item in raw_enrich or [])]
        return embed, enrich

    def intake_depths(self) -> dict[str, int]:
        pipe = self.connection.pipeline(transaction=False)
        pipe.llen(INTAKE_EMBED)
        pipe.llen(INTAKE_ENRICH)
        embed, enrich = pipe.execute()
        return {"embed": int(embed), "enrich": int(enrich)}

    def enqueue_access(
        self, memory_ids: Sequence[str], at: str, versions: Sequence[int | None] | None = None
    ) -> None:
        """Log recalled ids (with the version recall saw) and make sure one flush job is pending:
        a recall costs two cheap Redis commands, and the worker applies many accesses in one
        graph write."""
        seen = versions if versions is not None else [None] * len(memory_ids)
        entries = [
            f"{memory_id}|{at}" + ("" if v is None else f"|{int(v)}")
            for memory_id, v in zip(memory_ids, seen, strict=True)
        ]
        pipe = self.connection.pipeline(transaction=False)
        pipe.rpush(ACCESS_LOG, *entries)
        pipe.set(ACCESS_FLUSH_PENDING, "1", nx=True, ex=300)
        _, claimed = pipe.execute()
        if claimed:
            # Its own id each time (see enqueue_dispatch). Delayed, so the accesses of many recalls
            # go into one graph write instead of a write per recall, which stalls reads meanwhile.
            self._enqueue_maybe_later(
                "maintenance",
                JobName.FLUSH_ACCESS,
                self.settings.access_flush_delay_seconds,
                job_id=f"access-flush-{uuid.uuid4().hex}",
                result_ttl=0,
                failure_ttl=3600,
            )

    def _enqueue_maybe_later(self, queue: str, name: JobName, delay: float, **options: Any) -> None:
        if delay > 0:
            self.queues[queue].enqueue_in(timedelta(seconds=delay), name.value, **options)
        else:
            self.queues[queue].enqueue(name.value, **options)

    def take_access_log(self, batch: int) -> list[tuple[str, str, int | None]]:
        """Pop up to `batch` logged accesses as (memory_id, at, version seen or None); releases
        the flush claim first so accesses logged meanwhile schedule the next flush."""
        self.connection.delete(ACCESS_FLUSH_PENDING)
        raw = self.connection.lpop(ACCESS_LOG, batch) or []
        out: list[tuple[str, str, int | None]] = []
        for item in raw:
            parts = (item.decode() if isinstance(item, bytes) else str(item)).split("|")
            if len(parts) >= 2:
                version = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
                out.append((parts[0], parts[1], version))
        return out

    def clear(self) -> int:
        """Drop waiting, scheduled, deferred, failed and finished jobs of every queue and the
        access log (a restore replacing the store: this work is about memories that are gone).
        Jobs already running finish; their writes are guarded like any job's. Returns jobs dropped."""
        dropped = 0
        for queue in self.queues.values():
            dropped += queue.count
            queue.empty()
            for registry in (
                queue.scheduled_job_registry,
                queue.deferred_job_registry,
                queue.failed_job_registry,
                queue.finished_job_registry,
            ):
                for job_id in registry.get_job_ids():
                    try:
                        registry.remove(job_id, delete_job=True)
                    except NoSuchJobError:  # its hash expired or a worker removed it meanwhile
                        registry.remove(job_id)
                    dropped += 1
        self.connection.delete(ACCESS_LOG, ACCESS_FLUSH_PENDING)
        return dropped

    def cancel_tenant(self, tenant: str) -> int:
        """Delete the waiting and scheduled jobs that carry `tenant` (its erasure); the number
        deleted. A job already running finds its memories gone and does nothing."""
        cancelled = 0
        for queue in self.queues.values():
            ids = [*queue.get_job_ids(), *queue.scheduled_job_registry.get_job_ids()]
            for job in Job.fetch_many(ids, connection=self.connection):
                if job is not None and (job.meta or {}).get("tenant") == tenant:
                    queue.remove(job.id)
                    queue.scheduled_job_registry.remove(job.id)
                    job.delete()
                    cancelled += 1
        return cancelled

    def depths(self) -> dict[str, int]:
        """Jobs waiting per queue, plus memories waiting in the intake (`intake_embed`,
        `intake_enrich`) for the dispatch job to put them in jobs."""
        out: dict[str, int] = {}
        for name, queue in self.queues.items():
            try:
                out[name] = queue.count
            except redis.exceptions.RedisError:
                out[name] = -1
        try:
            out.update({f"intake_{k}": v for k, v in self.intake_depths().items()})
        except redis.exceptions.RedisError:
            out.update({"intake_embed": -1, "intake_enrich": -1})
        return out

    def registry_counts(self) -> dict[str, dict[str, int]]:
        """Per queue: waiting, running (in flight), scheduled/deferred, failed and finished jobs."""
        out: dict[str, dict[str, int]] = {}
        for name, queue in self.queues.items():
            out[name] = {
                "queued": queue.count,
                "in_flight": queue.started_job_registry.count,
                "scheduled": queue.scheduled_job_registry.count + queue.deferred_job_registry.count,
                "failed": queue.failed_job_registry.count,
                "finished": queue.finished_job_registry.count,
            }
        return out

    def failed_jobs(self, limit: int = 50) -> list[dict[str, object]]:
        """The newest failed jobs of every queue: id, function, queue, when, the error's last line."""
        out: list[dict[str, object]] = []
        for name, queue in self.queues.items():
            registry = queue.failed_job_registry
            for job in Job.fetch_many(registry.get_job_ids(0, limit - 1), connection=self.connection):
                if job is None:
                    continue
                result = job.latest_result()
                error = (result.exc_string if result is not None else "") or ""
                out.append(
                    {
                        "id": job.id,
                        "queue": name,
                        "function": job.func_name,
                        "ended_at": job.ended_at.isoformat() if job.ended_at else None,
                        "error": error.strip().splitlines()[-1][:300] if error.strip() else None,
                    }
                )
        return out[:limit]

    def requeue_failed(self) -> int:
        """Put every failed job back on its queue; the number requeued."""
        count = 0
        for queue in self.queues.values():
            registry = queue.failed_job_registry
            for job_id in registry.get_job_ids():
                try:
                    registry.requeue(job_id)
                    count += 1
                except (NoSuchJobError, redis.exceptions.ResponseError):
                    registry.remove(job_id)
        return count

    def recover_abandoned(self) -> list[str]:
        """Hand the jobs that a dead worker process left running to RQ's abandoned-job handling
        now (retried while retries are left, else failed); returns their ids.

        RQ finds an abandoned job only when its execution's heartbeat expires: for a SimpleWorker
        the job timeout + 60 s, and then only at a worker's next maintenance run. Until then its
        deterministic id still reads "started", so re-queueing the same work is a no-op. A worker
        is known dead when its Redis key expired or it ran on this host and its process is gone;
        a worker on another host is left to RQ's heartbeat. Call it before this process's own
        worker registers (a worker registered under our pid is a previous incarnation)."""
        recovered: list[str] = []
        for queue in self.queues.values():
            registry = queue.started_job_registry
            dead = [
                (job_id, execution_id)
                for job_id, execution_id in registry.get_job_and_execution_ids(cleanup=False)
                if _execution_worker_dead(self.connection, job_id, execution_id)
            ]
            if dead:
                # Expire these executions, then let RQ's own cleanup retry or fail them.
                self.connection.zadd(registry.key, {f"{j}:{e}": 0 for j, e in dead}, xx=True)
                registry.cleanup()
                recovered += [job_id for job_id, _ in dead]
        if recovered:
            log.warning("recovered %d job(s) abandoned by a dead worker: %s", len(recovered), recovered)
        return recovered

    def workers(self) -> int:
        """RQ workers registered on our queues (their registration expires without heartbeats)."""
        ours = set(QUEUE_NAMES)
        return sum(1 for w in Worker.all(connection=self.connection) if set(w.queue_names()) & ours)

    def failed_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, queue in self.queues.items():
            try:
                out[name] = queue.failed_job_registry.count
            except redis.exceptions.RedisError:
                out[name] = -1
        return out


def _pair(item: bytes | str) -> tuple[str, str]:
    text = item.decode() if isinstance(item, bytes) else item
    left, _, right = text.partition("|")
    return left, right


def _execution_worker_dead(connection: redis.Redis, job_id: str, execution_id: str) -> bool:
    try:
        name = Execution.fetch(execution_id, job_id, connection).worker_name
    except ValueError:
        return False  # the execution's record expired: RQ's cleanup sees it as expired too
    if not name:
        return False
    worker = Worker.find_by_key(Worker.redis_worker_namespace_prefix + name, connection=connection)
    if worker is None:
        return True  # no heartbeat for the worker TTL
    if worker.hostname != socket.gethostname():
        return False
    # Our own pid under another worker name: a previous incarnation (e.g. a restarted container).
    if worker.pid == os.getpid() or not _process_alive(worker.pid):
        worker.register_death()
        return True
    return False


def _process_alive(pid: int | None) -> bool:
    if not pid:
        return True  # unknown: leave the job to RQ's heartbeat
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:24]
