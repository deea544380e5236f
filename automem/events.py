"""Live events: what changed, published on one Redis pub/sub channel for the streams of every API
process (`GET /stream`, served by `automem.eventhub`).

Any process publishes — API processes after a committed write, RQ workers from their jobs, on any
host — and every API process subscribes once and fans the events out to its streams. An event is
AutoMem's `{"type", "timestamp", "data"}` plus an `id` (the SSE `id:` line) and the `tenant` of
what it reports (None: a service-wide event such as a consolidation run), so a stream can show
only its own tenant once keys carry tenants.

Publishing never fails or slows the change it reports: `EventPublisher.publish` only appends to
a bounded in-process queue (a full queue drops the event and counts it), and one daemon thread
per process sends what is queued to Redis in pipelined batches. A Redis error drops that batch
and is logged once per outage. Pub/sub keeps no history: a stream sees the events published while
it is connected, nothing before. Payloads carry ids and small facts, never a memory's content.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

import orjson
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from automem.timeutil import now_iso

log = logging.getLogger(__name__)

CHANNEL = "automem:events"
# Ids listed in one event: a batch of 1000 memories is one event with its count and the first 100.
MAX_LISTED_IDS = 100
# Events waiting for the publisher thread; beyond this (Redis slow or down) new events are dropped.
PUBLISH_BACKLOG = 10_000
_BATCH = 200
# The publisher's own connection: a hung Redis stalls only the publisher thread, and not for long;
# one immediate retry (a pooled connection Redis closed meanwhile), not redis-py's backoff: a
# batch of events is not worth seconds of retrying.
_SOCKET_TIMEOUT = 5.0
_CONNECT_TIMEOUT = 2.0
_RETRIES = 1


class EventType(StrEnum):
    """Every event type. AutoMem's names where it has one (enrichment.*, consolidation.run)."""

    MEMORY_STORED = "memory.stored"
    MEMORY_UPDATED = "memory.updated"
    MEMORY_DELETED = "memory.deleted"
    MEMORY_RECOVERED = "memory.recovered"
    ASSOCIATION_CREATED = "association.created"
    ENRICHMENT_START = "enrichment.start"
    ENRICHMENT_COMPLETE = "enrichment.complete"
    ENRICHMENT_FAILED = "enrichment.failed"
    CONSOLIDATION_RUN = "consolidation.run"
    REEMBED_PROGRESS = "reembed.progress"
    # Written by a stream for its own client, never published: events it had to drop.
    STREAM_DROPPED = "stream.dropped"


def envelope(event_type: str, data: Mapping[str, Any], tenant: str | None) -> dict[str, Any]:
    """One event as it travels and as a stream shows it (the `data:` line)."""
    return {
        "id": uuid.uuid4().hex,
        "type": str(event_type),
        "timestamp": now_iso(),
        "tenant": tenant,
        "data": dict(data),
    }


def listed(ids: Sequence[str]) -> dict[str, Any]:
    """The id fields of an event about memories: `count`, `memory_ids` (the first
    MAX_LISTED_IDS) and, for a single memory, `memory_id` (what AutoMem's clients read)."""
    out: dict[str, Any] = {"count": len(ids), "memory_ids": list(ids[:MAX_LISTED_IDS])}
    if len(ids) == 1:
        out["memory_id"] = ids[0]
    if len(ids) > MAX_LISTED_IDS:
        out["ids_truncated"] = True
    return out


class EventPublisher:
    """Publishes events from this process; see the module docstring. Thread-safe."""

    def __init__(self, connection: redis.Redis, backlog: int = PUBLISH_BACKLOG) -> None:
        self.connection = connection
        self._queue: queue.Queue[bytes] = queue.Queue(maxsize=backlog)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False
        self._failing = False
        self.published = 0
        self.dropped = 0
        _LIVE.add(self)

    @classmethod
    def from_url(cls, url: str) -> EventPublisher:
        conn = redis.Redis.from_url(
            url,
            socket_timeout=_SOCKET_TIMEOUT,
            socket_connect_timeout=_CONNECT_TIMEOUT,
            retry=Retry(NoBackoff(), _RETRIES),
        )
        return cls(conn)

    def publish(self, event_type: str, data: Mapping[str, Any], tenant: str | None) -> None:
        """Queue one event for the channel. Never raises and never waits."""
        if self._closed:  # the process is stopping: nothing will send it
            self.dropped += 1
            return
        try:
            message = orjson.dumps(envelope(event_type, data, tenant), default=str)
            self._ensure_thread()
            self._queue.put_nowait(message)
        except queue.Full:
            self.dropped += 1
            self._warn_once("the event backlog is full; live events are being dropped")
        except Exception:
            log.exception("could not queue a %s event", event_type)

    def flush(self, timeout: float = 2.0) -> bool:
        """Wait until every queued event was sent (or dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                done.wait(left)
        return True

    def close(self, timeout: float = 2.0) -> None:
        """Send what is queued (within `timeout`), then stop the thread."""
        self._closed = True
        self.flush(timeout)
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self.connection.close()

    # --- the publisher thread ------------------------------------------------------------------
    def _ensure_thread(self) -> None:
        """Started with the first event; again in a forked child (threads do not survive a fork)."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="event-publisher", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not (self._stop.is_set() and self._queue.empty()):
            try:
                batch = [self._queue.get(timeout=0.5)]
            except queue.Empty:
                continue
            while len(batch) < _BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._send(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _send(self, batch: list[bytes]) -> None:
        try:
            pipe = self.connection.pipeline(transaction=False)
            for message in batch:
                pipe.publish(CHANNEL, message)
            pipe.execute()
        except Exception as exc:  # a Redis error above all; the thread must live on regardless
            self.dropped += len(batch)
            self._warn_once(f"live events are being dropped: Redis refused them ({type(exc).__name__})")
            return
        self.published += len(batch)
        if self._failing:
            self._failing = False
            log.info("live events reach Redis again (%d dropped so far)", self.dropped)

    def _warn_once(self, message: str) -> None:
        """One warning per outage, not one per event."""
        if not self._failing:
            self._failing = True
            log.warning(message)


_LIVE: weakref.WeakSet[EventPublisher] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    """A worker or command that exits right after a job still gets its last events out."""
    for publisher in list(_LIVE):
        publisher.flush(timeout=1.0)
