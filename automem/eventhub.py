"""The live-event hub of one API process: one subscriber thread on the Redis channel of
`automem.events`, fanning every event out to this process's open streams (`GET /stream`).

Why this shape:
- One Redis subscription per process, not one per stream: a dashboard's streams cost a deque
  each, not a connection and a thread blocked in Redis.
- Each stream has a bounded queue (AUTOMEM_STREAM_QUEUE_SIZE events). A client that reads too
  slowly loses the newest events once its queue is full, never the server's memory, and is told
  so by a `stream.dropped` notice (with the count) in the place the events went missing; other
  streams are not affected.
- An open stream holds one of gunicorn's threads for as long as it lasts, so a process admits at
  most AUTOMEM_STREAM_MAX_CLIENTS streams (`Settings.stream_client_limit`: always fewer than its
  threads) and answers 503 `too_many_streams` beyond; and every stream ends after
  AUTOMEM_STREAM_MAX_SECONDS (EventSource reconnects by itself), so threads come back.

The app factory creates the hub; its thread starts with the first stream (a process nobody
watches holds no subscription), and `automem.app.stop_app` stops it, which ends every stream.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import redis
from flask import Response, current_app

from automem.errors import ServiceUnavailable
from automem.events import CHANNEL, EventType, envelope
from automem.settings import Settings
from automem.timeutil import now_iso

log = logging.getLogger(__name__)

# How long opening a stream waits for the hub's subscription (the first stream starts it).
READY_WAIT_SECONDS = 3.0
# EventSource waits this long before it reconnects (the `retry:` line of every stream).
RETRY_MS = 2000
# Frames written in one go when several are waiting (fewer, larger writes under a burst).
_MAX_FRAMES_PER_WRITE = 64
_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0)
_KEEPALIVE = ": keepalive\n\n"


@dataclass(frozen=True)
class StreamLimits:
    queue_size: int
    max_clients: int
    keepalive_seconds: float
    max_seconds: float

    @classmethod
    def from_settings(cls, settings: Settings) -> StreamLimits:
        return cls(
            queue_size=settings.stream_queue_size,
            max_clients=settings.stream_client_limit(),
            keepalive_seconds=settings.stream_keepalive_seconds,
            max_seconds=settings.stream_max_seconds,
        )


@dataclass(frozen=True)
class _Notice:
    """A gap in a stream: `count` events dropped from its full queue, or (count None) events
    missed while the hub re-subscribed to the channel."""

    reason: str
    count: int | None
    total: int

    def frame(self, tenant: str) -> str:
        data = {"reason": self.reason, "dropped": self.count, "total_dropped": self.total}
        body = orjson.dumps(envelope(EventType.STREAM_DROPPED, data, tenant)).decode()
        return f"data: {body}\n\n"


class Subscription:
    """One open stream: a bounded queue of ready-made SSE frames, filled by the hub's thread and
    drained by the request's thread (`frames`)."""

    def __init__(self, tenant: str, capacity: int, on_close: Callable[[Subscription], None]) -> None:
        self.id = uuid.uuid4().hex[:12]
        self.tenant = tenant
        self.capacity = capacity
        self.opened_at = now_iso()
        self._items: deque[str | _Notice] = deque()
        self._events = 0  # frames in `_items` (notices do not count against the capacity)
        self._unreported = 0  # dropped events no notice has announced yet
        self._cond = threading.Condition()
        self._on_close = on_close
        self.closed = False
        self.delivered = 0
        self.dropped = 0

    # --- the hub's side ------------------------------------------------------------------------
    def offer(self, frame: str) -> bool:
        """Queue one event's frame; False (and counted) when the queue is full."""
        with self._cond:
            if self.closed:
                return False
            if self._events >= self.capacity:
                self.dropped += 1
                self._unreported += 1
                return False
            if self._unreported:
                self._items.append(_Notice("queue_full", self._unreported, self.dropped))
                self._unreported = 0
            self._items.append(frame)
            self._events += 1
            self._cond.notify()
            return True

    def note_gap(self) -> None:
        """The hub lost the channel for a while: the client may have missed events."""
        with self._cond:
            self._items.append(_Notice("channel_reconnected", None, self.dropped))
            self._cond.notify()

    # --- the request's side --------------------------------------------------------------------
    def take(self, timeout: float) -> list[str]:
        """The frames waiting (up to a write's worth), after waiting up to `timeout` for one;
        empty on timeout or once closed."""
        with self._cond:
            self._cond.wait_for(lambda: self._items or self._unreported or self.closed, timeout)
            if self.closed:
                return []
            out: list[str] = []
            while self._items and len(out) < _MAX_FRAMES_PER_WRITE:
                item = self._items.popleft()
                if isinstance(item, _Notice):
                    out.append(item.frame(self.tenant))
                else:
                    self._events -= 1
                    self.delivered += 1
                    out.append(item)
            if not self._items and self._unreported:  # drops with no event after them yet
                out.append(_Notice("queue_full", self._unreported, self.dropped).frame(self.tenant))
                self._unreported = 0
            return out

    def frames(self, keepalive: float, max_seconds: float) -> Iterator[str]:
        """The response body: a `retry:` line, then events as they come, `: keepalive` after
        `keepalive` seconds of silence, until the client leaves, the hub stops or `max_seconds`."""
        yield f"retry: {RETRY_MS}\n: connected {self.id}\n\n"
        deadline = time.monotonic() + max_seconds
        while not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                yield ": stream time limit reached, reconnect\n\n"
                return
            batch = self.take(min(keepalive, left))
            if batch:
                yield "".join(batch)
            elif not self.closed and deadline - time.monotonic() > 0:
                yield _KEEPALIVE

    def queued(self) -> int:
        with self._cond:
            return self._events

    def close(self) -> None:
        """Idempotent: called when the response is closed (client gone, time limit) or by the hub."""
        with self._cond:
            if self.closed:
                return
            self.closed = True
            self._items.clear()
            self._cond.notify_all()
        self._on_close(self)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "opened_at": self.opened_at,
            "queued": self.queued(),
            "delivered": self.delivered,
            "dropped": self.dropped,
        }


class EventHub:
    """Subscribes to the event channel (one thread, started by the first stream) and fans events
    out to this process's subscriptions."""

    def __init__(self, connection: redis.Redis, limits: StreamLimits) -> None:
        self.connection = connection
        self.limits = limits
        self._subs: set[Subscription] = set()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.received = 0
        self.rejected = 0

    @classmethod
    def from_settings(cls, url: str, settings: Settings) -> EventHub:
        # Health checks (a PING while idle) notice a connection that died silently.
        conn = redis.Redis.from_url(url, socket_connect_timeout=2.0, health_check_interval=15)
        return cls(conn, StreamLimits.from_settings(settings))

    # --- streams -------------------------------------------------------------------------------
    def open(self, tenant: str) -> Subscription:
        """A new subscription for a stream of `tenant`'s events; 503 beyond the process's bound,
        while stopping, or when the channel cannot be subscribed to."""
        with self._lock:
            self._admit()
            sub = Subscription(tenant, self.limits.queue_size, self._forget)
            self._subs.add(sub)
            self._start()
        if not self._ready.wait(READY_WAIT_SECONDS):
            sub.close()
            raise ServiceUnavailable(
                "live events are unavailable: the event channel (Redis) cannot be reached",
                reason="events_unavailable",
            )
        return sub

    def _admit(self) -> None:
        """Raise unless one more stream fits (called with the lock held)."""
        if self._stop.is_set():
            raise ServiceUnavailable("the service is stopping", reason="shutting_down")
        limit = self.limits.max_clients
        if len(self._subs) < limit:
            return
        self.rejected += 1
        if limit == 0:
            message = "live streams are off: they need AUTOMEM_API_THREADS of at least 2"
        else:
            message = (
                f"this API process already serves {limit} live streams (AUTOMEM_STREAM_MAX_CLIENTS); "
                "retry later"
            )
        raise ServiceUnavailable(message, reason="too_many_streams")

    def _forget(self, sub: Subscription) -> None:
        with self._lock:
            self._subs.discard(sub)

    def status(self) -> dict[str, Any]:
        with self._lock:
            subs = list(self._subs)
        return {
            "subscribers": len(subs),
            "max_subscribers": self.limits.max_clients,
            "queue_size": self.limits.queue_size,
            "keepalive_seconds": self.limits.keepalive_seconds,
            "max_seconds": self.limits.max_seconds,
            "channel_ready": self._ready.is_set(),
            "events_received": self.received,
            "rejected": self.rejected,
            "streams": [s.describe() for s in sorted(subs, key=lambda s: s.opened_at)],
        }

    def close(self, wait: bool = True) -> None:
        """End every stream and stop the subscriber thread; `wait=False` (from a signal handler)
        does not wait for the thread, which stops within a second, nor release the connection."""
        self._stop.set()
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            sub.close()
        if not wait:
            return
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.connection.close()

    # --- the subscriber thread -----------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="event-hub", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self._listen()
                return
            except Exception as exc:  # Redis down, or a connection lost: re-subscribe
                lost = self._ready.is_set()
                self._ready.clear()
                if lost:
                    log.warning("live events: lost the channel (%s); re-subscribing", type(exc).__name__)
                    self._note_gap()
                delay = _BACKOFF_SECONDS[min(failures, len(_BACKOFF_SECONDS) - 1)]
                failures += 1
                self._stop.wait(delay)

    def _listen(self) -> None:
        pubsub = self.connection.pubsub()
        try:
            pubsub.subscribe(CHANNEL)
            while not self._stop.is_set():
                message = pubsub.get_message(timeout=1.0)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    self._ready.set()
                elif message["type"] == "message":
                    self._fan_out(message["data"])
        finally:
            pubsub.close()

    def _fan_out(self, raw: bytes) -> None:
        event = _decoded(raw)
        if event is None:
            return
        self.received += 1
        tenant = event.get("tenant")
        frame = f"id: {event['id']}\ndata: {orjson.dumps(event).decode()}\n\n"
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            # Service-wide events (no tenant) go to every stream; the rest to their tenant's.
            if tenant is None or sub.tenant == tenant:
                sub.offer(frame)

    def _note_gap(self) -> None:
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            sub.note_gap()


def _decoded(raw: Any) -> dict[str, Any] | None:
    """An event from the channel, or None for anything else published there."""
    try:
        event = orjson.loads(raw)
    except (orjson.JSONDecodeError, TypeError):
        log.debug("ignoring a message on %s that is not JSON", CHANNEL)
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    event.setdefault("id", uuid.uuid4().hex)
    event["id"] = str(event["id"]).replace("\n", " ").replace("\r", " ")
    return event


def current_hub() -> EventHub:
    """The app's hub (made by the app factory)."""
    hub: EventHub = current_app.extensions["automem.events"]
    return hub


def event_stream(hub: EventHub, tenant: str) -> Response:
    """A `text/event-stream` response of `tenant`'s events (GET /stream, the dashboard's feed);
    503 when the process serves as many streams as it may."""
    subscription = hub.open(tenant)
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
