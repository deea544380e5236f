"""Background work: GET /enrichment/status, POST /enrichment/reprocess, GET /admin/jobs."""

from __future__ import annotations

from typing import Any

import redis
from flask import Blueprint, Response

from automem.api import json_body, respond, services
from automem.auth import require_admin
from automem.errors import StoreUnavailable
from automem.models import ReprocessBody, parse
from automem.services import Services
from enrichment.enrich import ENRICHMENT_VERSION
from enrichment.jobs import STATS_KEY, queue_enrichment

bp = Blueprint("enrichment", __name__)


@bp.get("/enrichment/status")
def status() -> tuple[Response, int]:
    svc = services()
    try:
        queues = svc.jobs.registry_counts()
        intake = svc.jobs.intake_depths()
        stats = _decoded(svc.queue_redis.hgetall(STATS_KEY))
    except redis.exceptions.RedisError as exc:
        raise StoreUnavailable("the job queue is unreachable") from exc
    pending = svc.graph.counts()["enrichment_pending"]
    enrich = queues["enrich"]
    body: dict[str, Any] = {
        "status": "success",
        "enabled": svc.settings.enrichment_enabled,
        "enrichment_version": ENRICHMENT_VERSION,
        "queues": queues,
        "intake": intake,
        # Work waiting: memories not yet dispatched plus enrich jobs (of up to 50 memories) queued.
        "queue_size": intake["enrich"] + enrich["queued"],
        "in_flight": enrich["in_flight"],
        "failed": sum(q["failed"] for q in queues.values()),
        "pending_memories": pending,
        "stats": {
            "enriched": int(stats.get("enriched", 0)),
            "failures": int(stats.get("failures", 0)),
            "last_success_id": stats.get("last_success_id"),
            "last_success_at": stats.get("last_success_at"),
            "last_error": stats.get("last_error"),
            "last_error_at": stats.get("last_error_at"),
        },
    }
    body.update(_llm_section(svc))
    return respond(body)


def _llm_section(svc: Services) -> dict[str, Any]:
    llm = getattr(svc, "llm", None)
    if llm is None:
        return {"llm": {"configured": False}}
    return {"llm": {"configured": True, "breaker": llm.breaker_state(), "stats": llm.stats()}}


@bp.post("/enrichment/reprocess")
@require_admin
def reprocess() -> tuple[Response, int]:
    svc = services()
    body = parse(ReprocessBody, json_body(), svc.settings)
    out: dict[str, Any] = {"status": "success"}
    if body.failed:
        out["requeued_failed"] = svc.jobs.requeue_failed()
    if body.all:
        out["queued"] = queue_enrichment(svc, force=True)
    elif body.ids:
        docs = {d["id"]: d for d in svc.graph.get_memories(body.ids) if d.get("state") == "active"}
        ids = [i for i in body.ids if i in docs]
        if ids:
            svc.jobs.enqueue_enrich(ids, [int(docs[i]["version"]) for i in ids], force=True)
        out["queued"] = len(ids)
        out["unknown_ids"] = [i for i in body.ids if i not in docs]
    return respond(out, 202)


@bp.get("/admin/jobs")
@require_admin
def jobs() -> tuple[Response, int]:
    svc = services()
    return respond(
        {"status": "success", "queues": svc.jobs.registry_counts(), "failed_jobs": svc.jobs.failed_jobs()}
    )


def _decoded(raw: dict[Any, Any]) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else str(k)): (v.decode() if isinstance(v, bytes) else str(v))
        for k, v in raw.items()
    }
