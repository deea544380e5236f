"""The worker process: the worker side's composition root.

`automem worker` lands here. It loads every job module (so each `@job` registration has run),
builds the worker's services, recovers jobs a dead worker left behind, queues the start-up
reconcile, and runs one RQ `SimpleWorker` (jobs run in this process: the embedding model and the
clients load once, not per job) with the registry's job class, plus the cron scheduler thread.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from rq import SimpleWorker

from automem.jobnames import JobName
from automem.services import Services
from automem.stores.queue import QUEUE_NAMES
from enrichment.context import current_services, use_services
from enrichment.cron import start_thread
from enrichment.maintenance import reconcile
from enrichment.registry import RegisteredJob, registered

log = logging.getLogger("automem")

# Every module that registers jobs; `load_jobs` imports them all.
JOB_MODULES = (
    "enrichment.intake",
    "enrichment.embedding",
    "enrichment.enrich",
    "enrichment.classification",
    "enrichment.maintenance",
    "enrichment.consolidation",
)


def load_jobs() -> dict[str, Callable[..., Any]]:
    """Import every job module; the registry, which then names every `JobName`."""
    for module in JOB_MODULES:
        importlib.import_module(module)
    jobs = registered()
    missing = [name.value for name in JobName if name.value not in jobs]
    if missing:
        raise RuntimeError(f"no job registered for {', '.join(missing)}")
    return jobs


def make_worker(svc: Services, queues: Sequence[str] = QUEUE_NAMES) -> SimpleWorker:
    load_jobs()
    return SimpleWorker(list(queues), connection=svc.queue_redis, job_class=RegisteredJob)


def run_burst(svc: Services) -> None:
    """Run every queued job in this process with these services, then stop (tests, tools)."""
    use_services(svc)
    make_worker(svc).work(burst=True, with_scheduler=False)


def run(queues: Sequence[str], *, burst: bool, cron: bool, reconcile_first: bool) -> int:
    """`automem worker`: work the queues until stopped (or, with `burst`, until they are empty)."""
    svc = current_services()
    if svc.settings.worker_nice > 0:
        os.nice(min(19, svc.settings.worker_nice))
    svc.jobs.recover_abandoned()  # before reconcile: their ids must not read "started" any more
    if svc.settings.reconcile_on_start and reconcile_first:
        log.info("reconcile: %s", reconcile())
    worker = make_worker(svc, queues)
    scheduler = None
    if cron and not burst:
        # Consolidation's RQ cron scheduler; a Redis lease keeps exactly one active across workers.
        scheduler = start_thread(svc.settings, svc.queue_redis, svc.graph)
    try:
        worker.work(burst=burst, with_scheduler=True, logging_level=svc.settings.log_level)
    finally:
        svc.embedder.flush()  # the last half second's embedding counts
        if scheduler:
            scheduler[1].set()
            scheduler[0].join(timeout=5)
    return 0
