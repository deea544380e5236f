"""Live events over Server-Sent Events: GET /stream and GET /stream/status (AutoMem's routes).

The stream's events come from this process's hub (`automem.eventhub`), which receives what any
process published (`automem.events`). The response is `text/event-stream`: an `id:` line and a
`data: {"id", "type", "timestamp", "tenant", "data"}` line per event, no `event:` line (so
EventSource's `onmessage` sees every event, as with AutoMem), `: keepalive` after
AUTOMEM_STREAM_KEEPALIVE_SECONDS of silence; it ends after AUTOMEM_STREAM_MAX_SECONDS.
"""

from __future__ import annotations

from flask import Blueprint, Response

from automem.api import respond
from automem.auth import current_tenant
from automem.eventhub import current_hub, event_stream

bp = Blueprint("stream", __name__)


@bp.get("/stream")
def stream() -> Response:
    return event_stream(current_hub(), current_tenant())


@bp.get("/stream/status")
def status() -> tuple[Response, int]:
    return respond({"status": "success", **current_hub().status()})
