"""The application factory: `create_app(settings)` builds clients, blueprints and the error handler.

A composition root: the one module of the API process that sees both layers. It builds the core's
services and hands them the worker side's part of the API (`enrichment.port`, see `automem.ports`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from typing import Any

import redis
from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from automem import jsonio, metrics, ratelimit, ui
from automem.api import check_query_text
from automem.api.routes import register_blueprints
from automem.auth import authenticate, check_bind_allowed
from automem.errors import AutomemError, envelope
from automem.eventhub import EventHub
from automem.recall.engine import RecallEngine
from automem.services import Services, build_services, require_urls
from automem.settings import Settings, load_settings
from enrichment.port import WorkerConsolidation

__all__ = ["check_bind_allowed", "create_app", "end_streams", "stop_app"]

log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None, *, services: Services | None = None, start_vector_drain: bool = True
) -> Flask:
    """The app. `start_vector_drain=False` (tests) leaves out the serving process's background
    duties: draining the workers' vector writes and queueing the start-up reconcile."""
    settings = settings or load_settings()
    check_bind_allowed(settings)
    app = Flask("automem")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    jsonio.init_app(app)
    svc = services or build_services(settings, owner_of_vectors=True)
    if svc.consolidation is None:
        svc.consolidation = WorkerConsolidation(svc)
    app.extensions["automem"] = svc
    app.extensions["automem.recall"] = RecallEngine(svc)
    # Live events for GET /stream; its subscriber thread starts with the first stream.
    app.extensions["automem.events"] = EventHub.from_settings(require_urls(settings)[1], settings)
    register_blueprints(app)
    ui.register(app, svc.queue_redis, settings.ui_idle_minutes)
    _register_hooks(app, settings, svc)
    ratelimit.init_app(app, settings, svc.queue_redis, svc.tenants)
    metrics.init_app(app)
    _register_error_handlers(app)
    if start_vector_drain and svc.vectors is not None and settings.resolved_vector_backend() == "edge":
        _start_vector_drain(app, svc)
    if start_vector_drain and settings.reconcile_on_start:
        _queue_reconcile(svc)
    return app


def _register_hooks(app: Flask, settings: Settings, svc: Services) -> None:
    @app.before_request
    def _request_context() -> None:
        g.started = time.perf_counter()
        g.request_id = _request_id(request.headers.get("X-Request-ID"))
        authenticate(settings, svc.keys)
        check_query_text()

    @app.after_request
    def _request_id_header(response: Response) -> Response:
        response.headers["X-Request-ID"] = getattr(g, "request_id", "")
        return response


_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _request_id(given: str | None) -> str:
    """The client's X-Request-ID when it is a plain token (it goes into every log line), else a new one."""
    if given and _REQUEST_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


def _register_error_handlers(app: Flask) -> None:
    @app.errorhandler(AutomemError)
    def _automem_error(exc: AutomemError) -> tuple[Response, int]:
        return jsonify(exc.body()), exc.status

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        status = exc.code or 500
        reason = (exc.name or "error").lower().replace(" ", "_")
        message = exc.description or exc.name or "error"
        if status == 413:
            reason, message = (
                "payload_too_large",
                f"the request body exceeds {app.config['MAX_CONTENT_LENGTH']} bytes",
            )
        return jsonify(envelope(status, message, reason)), status

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> tuple[Response, int]:
        log.exception("unhandled error (request %s)", getattr(g, "request_id", "-"))
        return jsonify(envelope(500, "internal server error", "internal_error")), 500


def _queue_reconcile(svc: Services) -> None:
    """A previous API process may have died between a graph write and its enqueue: a worker
    re-queues whatever lacks its embedding or enrichment."""
    try:
        svc.jobs.enqueue_reconcile()
    except redis.exceptions.RedisError:
        log.warning("could not queue the start-up reconcile; the reconcile cron job will run it")


def _start_vector_drain(app: Flask, svc: Services) -> None:
    """Embedded mode: this process owns the Edge shard and applies the workers' vector writes."""
    stop = threading.Event()
    thread = threading.Thread(
        target=svc.sync.run_forever,
        args=(stop,),
        kwargs={"linger_seconds": svc.settings.vector_sync_linger_seconds},
        name="vector-sync",
        daemon=True,
    )
    thread.start()
    app.extensions["automem.vector_drain"] = (thread, stop)


def end_streams(app: Flask, wait: bool = True) -> None:
    """End every live stream and stop the event hub: a stopping process must not wait for its
    streams (each would hold its thread until AUTOMEM_STREAM_MAX_SECONDS). `wait=False` returns at
    once (a signal handler); `stop_app` waits for the hub's thread."""
    hub: EventHub | None = app.extensions.get("automem.events")
    if hub is not None:
        hub.close(wait)


def stop_app(app: Flask) -> None:
    """Stop background threads and release the stores (tests and clean shutdown)."""
    end_streams(app)
    drain: Any = app.extensions.pop("automem.vector_drain", None)
    if drain:
        thread, stop = drain
        stop.set()
        thread.join(timeout=5)
    app.extensions["automem.recall"].close()
    app.extensions["automem"].close()
