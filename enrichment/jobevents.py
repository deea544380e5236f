"""Live events of jobs (`automem.events`): the enrichment job's start, completion and failure.

One event per job and tenant, not per memory: a job enriches up to 50 memories, and a bulk import
must not flood the streams (each event lists its memories' ids and counts). A failure says
whether RQ will run the job again (`will_retry`, from the job's remaining retries), as AutoMem's
`enrichment.failed` does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rq import get_current_job

from automem.events import EventType, listed
from automem.services import Services


@dataclass(frozen=True)
class JobInfo:
    """The RQ job this code runs in, if any, and what RQ does when it fails."""

    job_id: str | None
    will_retry: bool
    retries_left: int | None

    @classmethod
    def current(cls) -> JobInfo:
        job = get_current_job()
        if job is None:  # called outside a worker (tests, tools): nothing retries it
            return cls(None, False, None)
        left = job.retries_left
        # RQ takes one retry off only after the function raised: any left means it runs again.
        return cls(job.id, bool(left and left > 0), left)


def error_text(exc: BaseException) -> str:
    """The exception as the enrichment counters record it: class and a short message."""
    return f"{exc.__class__.__name__}: {str(exc)[:200]}"


@contextmanager
def enrichment_events(svc: Services, memory_ids: Sequence[str]) -> Iterator[set[str]]:
    """`enrichment.start` per tenant of the job's memories, then `enrichment.complete` (the
    caller adds each enriched id to the yielded set; the rest were skipped) or, when the body
    raises, `enrichment.failed`."""
    started = time.monotonic()
    job = JobInfo.current()
    groups: dict[str | None, list[str]] = {}
    enriched: set[str] = set()
    try:
        groups = _by_tenant(svc, memory_ids)
        for tenant, ids in groups.items():
            svc.events.publish(EventType.ENRICHMENT_START, {**listed(ids), "job_id": job.job_id}, tenant)
        yield enriched
    except Exception as exc:
        _failed(svc, groups or {None: list(memory_ids)}, job, exc, _ms(started))
        raise
    for tenant, ids in groups.items():
        done = sum(1 for i in ids if i in enriched)
        data = {
            **listed(ids),
            "job_id": job.job_id,
            "enriched": done,
            "skipped": len(ids) - done,
            "elapsed_ms": _ms(started),
        }
        svc.events.publish(EventType.ENRICHMENT_COMPLETE, data, tenant)


def _by_tenant(svc: Services, memory_ids: Sequence[str]) -> dict[str | None, list[str]]:
    """The job's ids by their memory's tenant; ids of memories gone meanwhile are left out."""
    tenants = svc.graph.tenants_of(memory_ids)
    groups: dict[str | None, list[str]] = {}
    for memory_id in memory_ids:
        if memory_id in tenants:
            groups.setdefault(tenants[memory_id], []).append(memory_id)
    return groups


def _failed(
    svc: Services, groups: dict[str | None, list[str]], job: JobInfo, exc: Exception, elapsed: float
) -> None:
    common: dict[str, Any] = {
        "job_id": job.job_id,
        "error": error_text(exc),
        "will_retry": job.will_retry,
        "retries_left": job.retries_left,
        "elapsed_ms": elapsed,
    }
    for tenant, ids in groups.items():
        # Tenants unknown (the graph failed before they were read): counts only, no ids, so an
        # event that reaches every stream names no tenant's memories.
        ids_part = listed(ids) if tenant is not None else {"count": len(ids)}
        svc.events.publish(EventType.ENRICHMENT_FAILED, {**ids_part, **common}, tenant)


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
