"""Every blueprint of the API, registered in one place (the served app and `routes_app`)."""

from __future__ import annotations

from flask import Flask

from automem.api import (
    admin,
    backup,
    consolidation,
    docs,
    enrichment,
    entities,
    graph,
    health,
    insights,
    memories,
    metrics,
    recall,
    stream,
    tags,
    tenants,
    viewer,
)

BLUEPRINTS = (
    health,
    memories,
    tags,
    recall,
    graph,
    entities,
    insights,
    enrichment,
    consolidation,
    admin,
    tenants,
    backup,
    metrics,
    docs,
    stream,
    viewer,
)


def register_blueprints(app: Flask) -> None:
    for module in BLUEPRINTS:
        app.register_blueprint(module.bp)


def routes_app() -> Flask:
    """An app with every blueprint but no services, hooks or clients: its URL map is the served
    API's, so the OpenAPI document and the generated API docs are built without any store."""
    app = Flask("automem")
    register_blueprints(app)
    return app
