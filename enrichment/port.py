"""The worker side's part of the API process (`automem.ports.ConsolidationPort`): consolidation
dry runs answered in the request, and the schedule's state for GET /consolidate/status.

The app factory, a composition root, hands an instance to the core; nothing in the core imports
this module.
"""

from __future__ import annotations

from typing import Any

from automem.services import Services
from automem.timeutil import utc_now
from enrichment.consolidation import (
    DESTRUCTIVE_MODES,
    TASKS,
    Consolidator,
    consolidation_running,
    task_interval,
)
from enrichment.cron import MAX_TICK_SECONDS, in_words, next_runs, scheduler_info


class WorkerConsolidation:
    destructive_modes: tuple[str, ...] = DESTRUCTIVE_MODES

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def preview(self, mode: str) -> dict[str, Any]:
        return Consolidator(self.svc).run(mode, dry_run=True, trigger="api")

    def status(self) -> dict[str, Any]:
        svc, settings = self.svc, self.svc.settings
        last_runs = svc.graph.consolidation_last_runs()
        times = next_runs(settings, svc.queue_redis, last_runs)
        scheduler = scheduler_info(svc.queue_redis)
        return {
            "enabled": settings.consolidation_enabled,
            "running": consolidation_running(svc),
            "intervals": {task: task_interval(settings, task) for task in TASKS},
            # AutoMem's words ("Due now", "In 3 day(s)", "Disabled"), and the times themselves.
            "next_runs": {task: in_words(when, utc_now()) for task, when in times.items()},
            "next_run_at": times,
            "scheduler": scheduler,
            "thread_alive": bool(scheduler.get("active")),
            "tick_seconds": MAX_TICK_SECONDS,
            "history": svc.graph.consolidation_runs(settings.consolidation_history_limit),
        }
