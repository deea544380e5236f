"""GET /metrics: Prometheus text exposition (no API key unless AUTOMEM_METRICS_REQUIRE_KEY)."""

from __future__ import annotations

from flask import Blueprint, Response

from automem import metrics
from automem.api import services

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def exposition() -> Response:
    body, content_type = metrics.exposition(services())
    return Response(body, content_type=content_type)
