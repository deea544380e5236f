"""GET /openapi.json: the OpenAPI 3.1 document, generated from the routes and models once."""

from __future__ import annotations

from flask import Blueprint, Response, current_app

from automem.api import respond
from automem.openapi import build_spec

bp = Blueprint("docs", __name__)


@bp.get("/openapi.json")
def openapi() -> tuple[Response, int]:
    spec = current_app.extensions.get("automem.openapi")
    if spec is None:
        spec = current_app.extensions["automem.openapi"] = build_spec(current_app)
    return respond(spec)
