"""The job registry: each RQ entry point bound to its `JobName`, beside the function.

    @job(JobName.EMBED)
    def embed_memories(memory_ids: list[str], force: bool = False) -> dict[str, Any]: ...

The core enqueues by name (`automem.stores.queue`); `RegisteredJob`, the RQ job class every
worker of ours runs with (`enrichment.worker`), turns the name back into the function. Jobs that
RQ's cron scheduler enqueues by function reference keep RQ's usual dotted path, which resolves
as it always does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rq.job import Job

from automem.jobnames import JobName

F = TypeVar("F", bound=Callable[..., Any])

_JOBS: dict[str, Callable[..., Any]] = {}


class DuplicateJobName(Exception):
    """Two functions were registered under one name."""


def job(name: JobName) -> Callable[[F], F]:
    """Register the decorated top-level function as the job `name`."""

    def register(func: F) -> F:
        known = _JOBS.get(name.value)
        if known is not None and known is not func:
            raise DuplicateJobName(f"{name.value} is already {known.__module__}.{known.__qualname__}")
        _JOBS[name.value] = func
        return func

    return register


def registered() -> dict[str, Callable[..., Any]]:
    """Name -> function, for every job registered so far (see `enrichment.worker.load_jobs`)."""
    return dict(_JOBS)


# Jobs queued before the registry named them by the module they lived in then.
_LEGACY_PREFIX = "enrichment.jobs."


class RegisteredJob(Job):
    """An RQ job whose `func_name` may be a registered name instead of a dotted path."""

    @property
    def func(self) -> Any:
        name = self.func_name or ""
        found = _JOBS.get(name.removeprefix(_LEGACY_PREFIX))
        return found if found is not None else super().func
