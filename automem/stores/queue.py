"""RQ queues: the only module that enqueues background work.

Job ids are deterministic (derived from what the job will do), so enqueueing the same work twice
while it is waiting or running is a no-op, and a memory is never embedded twice concurrently.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import redis
from rq import Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from automem.settings import Settings

log = logging.getLogger(__name__)

QUEUE_NAMES = ("embed", "enrich", "maintenance")
ACCESS_LOG = "automem:access-log"
ACCESS_FLUSH_PENDING = "automem:access-flush-pending"
_ACTIVE = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED, JobStatus.SCHEDULED}


class JobQueue:
    def __init__(self, connection: redis.Redis, settings: Settings) -> None:
        self.connection = connection
        self.settings = settings
        self.queues = {name: Queue(name, connection=connection) for name in QUEUE_NAMES}

    @classmethod
    def from_url(cls, url: str, settings: Settings) -> JobQueue:
        return cls(redis.Redis.from_url(url), settings)

    def _retry(self) -> Retry | None:
        intervals = self.settings.retry_intervals()
        return Retry(max=len(intervals), interval=intervals) if intervals else None

    def _enqueue(self, queue: str, func: str, job_id: str, *args: object) -> bool:
        """Enqueue unless a job with this id is already waiting or running; True if enqueued."""
        try:
            existing = Job.fetch(job_id, connection=self.connection)
            if existing.get_status(refresh=False) in _ACTIVE:
                return False
        except NoSuchJobError:
            pass
        self.queues[queue].enqueue(
            func,
            *args,
            job_id=job_id,
            retry=self._retry(),
            job_timeout=self.settings.job_timeout_seconds,
            result_ttl=3600,
            failure_ttl=7 * 86400,
        )
        return True

    def enqueue_embed(self, memory_ids: Sequence[str], content_hashes: Sequence[str]) -> bool:
        digest = hashlib.sha1(
            "|".join(f"{i}:{h}" for i, h in zip(memory_ids, content_hashes, strict=True)).encode()
        ).hexdigest()[:24]
        return self._enqueue("embed", "enrichment.jobs.embed_memories", f"embed-{digest}", list(memory_ids))

    def enqueue_access(self, memory_ids: Sequence[str], at: str) -> None:
        """Log recalled ids and make sure one flush job is pending: a recall costs two cheap Redis
        commands, and the worker applies many accesses in one graph write."""
        pipe = self.connection.pipeline(transaction=False)
        pipe.rpush(ACCESS_LOG, *(f"{memory_id}|{at}" for memory_id in memory_ids))
        pipe.set(ACCESS_FLUSH_PENDING, "1", nx=True, ex=300)
        _, claimed = pipe.execute()
        if claimed:
            self.queues["maintenance"].enqueue(
                "enrichment.jobs.flush_access", job_id="access-flush", result_ttl=0, failure_ttl=3600
            )

    def take_access_log(self, batch: int) -> list[tuple[str, str]]:
        """Pop up to `batch` logged accesses as (memory_id, at); releases the flush claim first so
        accesses logged meanwhile schedule the next flush."""
        self.connection.delete(ACCESS_FLUSH_PENDING)
        raw = self.connection.lpop(ACCESS_LOG, batch) or []
        entries = [item.decode() if isinstance(item, bytes) else str(item) for item in raw]
        return [tuple(entry.split("|", 1)) for entry in entries if "|" in entry]  # type: ignore[misc]

    def depths(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, queue in self.queues.items():
            try:
                out[name] = queue.count
            except redis.exceptions.RedisError:
                out[name] = -1
        return out

    def failed_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, queue in self.queues.items():
            try:
                out[name] = queue.failed_job_registry.count
            except redis.exceptions.RedisError:
                out[name] = -1
        return out
