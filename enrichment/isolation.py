"""One bad memory never fails its batch.

A job hands each memory of its batch to `isolated`. An error of the store or the network (the
graph or Redis unreachable, an embedding provider down) still fails the job, so RQ retries the
whole batch later; any other error belongs to that memory: it is logged, recorded (the
`FAILED_ITEMS_KEY` hash that GET /enrichment/status lists, and an `<kind>_failed` history event
with the reason) and the job goes on with the rest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import redis

from automem.counters import ENRICHMENT_STATS_KEY, FAILED_ITEMS_KEY
from automem.embedding.base import EmbeddingError
from automem.errors import ServiceUnavailable, StoreUnavailable
from automem.history import JOB_EMBED, JOB_ENRICH
from automem.jobnames import JobName
from automem.services import Services
from automem.timeutil import now_iso
from enrichment.jobevents import error_text

log = logging.getLogger(__name__)
T = TypeVar("T")

# Errors that say nothing about the memory being processed: the job fails and is retried.
TRANSIENT: tuple[type[BaseException], ...] = (
    StoreUnavailable,
    ServiceUnavailable,
    EmbeddingError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)
# The history event's kind and actor of each job that isolates its items.
_RECORDED_AS = {
    JobName.ENRICH: ("enrichment_failed", JOB_ENRICH),
    JobName.EMBED: ("embedding_failed", JOB_EMBED),
}


class ItemFailed:
    """What `isolated` returns for a memory it skipped."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def isolated(svc: Services, job: JobName, memory_id: str, work: Callable[[], T]) -> T | ItemFailed:
    """`work()` for one memory; its own error is recorded and returned, a transient one raised."""
    try:
        return work()
    except TRANSIENT:
        raise
    except Exception as exc:
        log.exception("%s skipped memory %s after an error of its own", job, memory_id)
        return record_failure(svc, job, memory_id, error_text(exc))


def record_failure(svc: Services, job: JobName, memory_id: str, reason: str) -> ItemFailed:
    kind, actor = _RECORDED_AS[job]
    event = replace(actor, reason=reason).event(kind, now_iso())
    if svc.graph.record_job_failure(memory_id, event, enrichment=job is JobName.ENRICH):
        svc.sync.request([memory_id], payload_only=True)  # rev went up
    entry = {"memory_id": memory_id, "job": str(job), "reason": reason, "at": event["at"]}
    pipe = svc.queue_redis.pipeline(transaction=False)
    pipe.hset(FAILED_ITEMS_KEY, f"{job}:{memory_id}", json.dumps(entry))
    if job is JobName.ENRICH:  # GET /enrichment/status counts failed memories
        pipe.hincrby(ENRICHMENT_STATS_KEY, "failures", 1)
        pipe.hset(ENRICHMENT_STATS_KEY, mapping={"last_error": reason, "last_error_at": event["at"]})
    pipe.execute()
    return ItemFailed(reason)


def clear_failures(svc: Services, job: JobName, memory_ids: Sequence[str]) -> None:
    """Memories this job has now processed are no longer listed as failed."""
    if memory_ids:
        svc.queue_redis.hdel(FAILED_ITEMS_KEY, *(f"{job}:{i}" for i in memory_ids))
