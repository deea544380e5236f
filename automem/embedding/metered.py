"""An embedding provider that counts its calls, texts and failures for GET /metrics."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

import redis

from automem.counters import add_embedding_counts
from automem.embedding.base import EmbeddingProvider
from automem.timers import timer_running

# How long counts wait in the process before they are written to Redis (see MeteredEmbedder).
FLUSH_SECONDS = 0.5


class MeteredEmbedder(EmbeddingProvider):
    """A provider that counts its calls, texts and failures in Redis (`add_embedding_counts`).

    A recall embeds its query on the request path, and a Redis round trip for a counter is work
    that can wait: counts are added up in the process and written by a timer thread within
    FLUSH_SECONDS of the first one waiting (GET /metrics writes its own process's first). A
    process that dies loses at most that long's counts."""

    def __init__(self, inner: EmbeddingProvider, conn: redis.Redis | None) -> None:
        super().__init__(inner.model, inner.dimension)
        self.name = inner.name
        self.inner = inner
        self.conn = conn
        self._waiting: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            vectors = self.inner.embed(texts)
        except Exception:
            self._count(errors=1)
            raise
        self._count(texts=len(texts))
        return vectors

    def _count(self, **counts: int) -> None:
        with self._lock:
            self._waiting.update(calls=1, **counts)
            self._timer = timer_running(self._timer, FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        """Write the counts waiting in this process."""
        with self._lock:
            waiting, self._waiting = self._waiting, Counter()
            self._timer = None  # a count from now on starts a timer of its own
        add_embedding_counts(self.conn, waiting)
