"""Consolidation: POST /consolidate and GET /consolidate/status.

Dry runs (the default) run in the request and return what a run would do; they write nothing.
Real runs are queued on the `maintenance` RQ queue (202 with the job id; one job per mode, so a
repeated request while it waits is a no-op) and recorded in the history once done. Runs that
can archive memories (`forget`, `full`) need the admin token.
"""

from __future__ import annotations

from typing import Any, Literal

from flask import Blueprint, Response, request
from pydantic import BaseModel, ConfigDict, StrictBool, field_validator

from automem.api import json_body, respond, services
from automem.auth import require_admin
from automem.models import parse
from automem.schemas import ConsolidationStatus
from enrichment.consolidation import DESTRUCTIVE_MODES, Consolidator, consolidation_running, task_interval
from enrichment.cron import next_runs, scheduler_info

bp = Blueprint("consolidation", __name__)


class ConsolidateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mode: Literal["decay", "creative", "cluster", "forget", "full"] = "full"
    dry_run: StrictBool = True

    @field_validator("mode", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


@bp.post("/consolidate")
def consolidate() -> tuple[Response, int]:
    svc = services()
    data = json_body() if request.get_data(cache=True) else {}
    body = parse(ConsolidateRequest, data, svc.settings)
    if body.dry_run:
        run = Consolidator(svc).run(body.mode, dry_run=True, trigger="api")
        return respond({"status": "success", "consolidation": run})
    if body.mode in DESTRUCTIVE_MODES:
        return _enqueue_destructive(body.mode)
    return _enqueue(body.mode)


@require_admin
def _enqueue_destructive(mode: str) -> tuple[Response, int]:
    return _enqueue(mode)


def _enqueue(mode: str) -> tuple[Response, int]:
    job_id, queued = services().jobs.enqueue_consolidation(mode, dry_run=False)
    body = {
        "status": "success",
        "mode": mode,
        "dry_run": False,
        "job_id": job_id,
        "job_status": "queued" if queued else "already_queued",
        "status_url": "/consolidate/status",
    }
    return respond(body, 202)


@bp.get("/consolidate/status")
def status() -> tuple[Response, int]:
    svc = services()
    settings = svc.settings
    last_runs = svc.graph.consolidation_last_runs()
    body = ConsolidationStatus(
        enabled=settings.consolidation_enabled,
        running=consolidation_running(svc),
        intervals={t: task_interval(settings, t) for t in ("decay", "creative", "cluster", "forget")},
        next_runs=next_runs(settings, svc.queue_redis, last_runs),
        scheduler=scheduler_info(svc.queue_redis),
        history=svc.graph.consolidation_runs(settings.consolidation_history_limit),
    )
    return respond(body.model_dump())
