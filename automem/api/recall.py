"""GET /recall and POST /recall (the same fields as JSON, for long embeddings)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, request

from automem import metrics
from automem.api import json_body, respond, services, serving_read
from automem.auth import current_tenant
from automem.errors import InvalidInput
from automem.models import parse
from automem.recall.engine import RecallEngine
from automem.recall.query import RecallQuery, body_args, query_args
from automem.recall.timeparse import TimeQueryError

bp = Blueprint("recall", __name__)


def engine() -> RecallEngine:
    recall_engine: RecallEngine = current_app.extensions["automem.recall"]
    return recall_engine


def _run(data: dict[str, object]) -> tuple[Response, int]:
    serving_read()
    query = parse(RecallQuery, data, services().settings)
    try:
        body = engine().recall(query, current_tenant())
    except TimeQueryError as exc:
        raise InvalidInput(str(exc), field=exc.field) from exc
    metrics.observe_recall(body["timings_ms"])
    return respond(body)


@bp.get("/recall")
def recall_get() -> tuple[Response, int]:
    return _run(query_args(request.args))


@bp.post("/recall")
def recall_post() -> tuple[Response, int]:
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object", field="body")
    return _run(body_args(body))
