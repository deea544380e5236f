"""Clients' reads come first: background enrichment slows down while recalls are being served.

On a small machine the worker's enrichment and a client's recall share the same cores, and
most of an enrichment's cost is FalkorDB's, which no niceness of the worker process reaches
(docs/performance.md: pausing the worker took a recall during a drain from ~11.4 to ~9.1 ms).
So the API marks, in Redis, that reads are being served (`ReadActivity`, at most one write per
half window and process), and an enrichment job paces itself while the mark lives (`Pacer`):
after each memory it waits `ratio` times as long as that memory took, so it runs at
1 / (1 + ratio) of its pace while clients read and at full pace otherwise. Writes do not mark:
they are what enrichment follows, and an import would otherwise starve it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress

import redis

FOREGROUND_KEY = "automem:foreground:reads"

# The longest wait after one memory, whatever it took: a job's memories stay seconds apart at
# most, well inside its timeout and its sequence lock's lifetime.
MAX_PAUSE_SECONDS = 0.25


class ReadActivity:
    """The API side: `mark()` on every latency-sensitive read; the mark lasts `window_ms`."""

    def __init__(self, client: redis.Redis, window_ms: int) -> None:
        self._redis = client
        self._window_ms = max(0, int(window_ms))
        self._next_write = 0.0  # monotonic; racing threads may both write, which is harmless

    def mark(self) -> None:
        if self._window_ms <= 0:
            return
        now = time.monotonic()
        if now < self._next_write:
            return
        self._next_write = now + self._window_ms / 2000.0
        with suppress(redis.exceptions.RedisError):  # advisory: a read never fails for it
            self._redis.set(FOREGROUND_KEY, b"1", px=self._window_ms)


class Pacer:
    """The worker side: `pace(worked)` after each unit of background work."""

    def __init__(
        self,
        client: redis.Redis,
        ratio: float,
        *,
        check_every: float = 0.05,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._redis = client
        self._ratio = max(0.0, float(ratio))
        self._check_every = check_every
        self._checked_at = float("-inf")
        self._reading = False
        self._sleep = sleep
        self.paused = 0.0  # seconds waited in all, for the job's record

    def pace(self, worked: float) -> float:
        """Wait after `worked` seconds of work if clients are reading; the seconds waited."""
        if self._ratio <= 0 or worked <= 0 or not self._clients_reading():
            return 0.0
        pause = min(worked * self._ratio, MAX_PAUSE_SECONDS)
        self._sleep(pause)
        self.paused += pause
        return pause

    def _clients_reading(self) -> bool:
        now = time.monotonic()
        if now - self._checked_at >= self._check_every:
            try:
                self._reading = bool(self._redis.exists(FOREGROUND_KEY))
            except redis.exceptions.RedisError:  # the job's own calls will report an outage
                self._reading = False
            self._checked_at = now
        return self._reading
