"""GET /health: per-dependency status, counts, graph-to-vector drift, queue depths, embedding."""

from __future__ import annotations

from flask import Blueprint, Response

from automem.api import respond, services
from automem.health import health_report

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> tuple[Response, int]:
    body, status = health_report(services())
    return respond(body, status)
