"""Live events over Server-Sent Events: GET /stream and GET /stream/status (AutoMem's routes).

The stream's events come from this process's hub (`automem.eventhub`), which receives what any
process published (`automem.events`). The response is `text/event-stream`: an `id:` line and a
`data: {"id", "type", "timestamp", "tenant", "data"}` line per event, no `event:` line (so
EventSource's `onmessage` sees every event, as with AutoMem), `: keepalive` after
AUTOMEM_STREAM_KEEPALIVE_SECONDS of silence; it ends after AUTOMEM_STREAM_MAX_SECONDS.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app

from automem.api import respond
from automem.auth import current_tenant
from automem.eventhub import EventHub

bp = Blueprint("stream", __name__)


def event_hub() -> EventHub:
    hub: EventHub = current_app.extensions["automem.events"]
    return hub


@bp.get("/stream")
def stream() -> Response:
    hub = event_hub()
    # Every key is the default tenant's today; with per-key tenants this becomes the key's.
    subscription = hub.open(current_tenant())
    limits = hub.limits
    try:
        body = subscription.frames(limits.keepalive_seconds, limits.max_seconds)
        response = Response(body, mimetype="text/event-stream")
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
        # The server closes the response when the client leaves, the stream times out or the
        # process stops; the slot is freed then, whether or not the body ever started.
        response.call_on_close(subscription.close)
    except Exception:
        subscription.close()
        raise
    return response


@bp.get("/stream/status")
def status() -> tuple[Response, int]:
    return respond({"status": "success", **event_hub().status()})
