"""GET /startup-recall (what an agent should know at the start of a session) and GET /analyze."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import insights
from automem.api import respond, services
from automem.api.recall import engine
from automem.auth import current_tenant
from automem.models import parse

bp = Blueprint("insights", __name__)


@bp.get("/startup-recall")
def startup_recall() -> tuple[Response, int]:
    svc = services()
    query = parse(insights.StartupRecallQuery, request.args.to_dict(), svc.settings)
    return respond(insights.startup_recall(engine(), svc.settings, query, current_tenant()))


@bp.get("/analyze")
def analyze() -> tuple[Response, int]:
    return respond(insights.analyze(services().graph, current_tenant()))
