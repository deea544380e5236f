"""An embedding provider that counts its calls, texts and failures for GET /metrics."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from automem.counters import count_embedding
from automem.embedding.base import EmbeddingProvider


class MeteredEmbedder(EmbeddingProvider):
    """A provider that counts its calls, texts and failures in Redis (see `count_embedding`)."""

    def __init__(self, inner: EmbeddingProvider, conn: redis.Redis | None) -> None:
        super().__init__(inner.model, inner.dimension)
        self.name = inner.name
        self.inner = inner
        self.conn = conn

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            vectors = self.inner.embed(texts)
        except Exception:
            count_embedding(self.conn, len(texts), failed=True)
            raise
        count_embedding(self.conn, len(texts), failed=False)
        return vectors
