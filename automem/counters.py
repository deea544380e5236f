"""Counters every process keeps in Redis, so GET /metrics and GET /enrichment/status see the
work of workers on any host: embedding calls, texts and failures; enrichment successes,
failures and the last error; the memories a job could not process."""

from __future__ import annotations

from collections.abc import Mapping

import redis

EMBEDDING_STATS_KEY = "automem:embedding:stats"
# Written by the enrichment job (enrichment.enrich), read by the API.
ENRICHMENT_STATS_KEY = "automem:enrichment:stats"
# One field per (job, memory) a job skipped after an error of that memory's own (enrichment.isolation):
# "<job>:<memory id>" -> {"memory_id", "job", "reason", "at", "version"} as JSON. A later success clears it.
FAILED_ITEMS_KEY = "automem:jobs:failed_items"


def add_embedding_counts(conn: redis.Redis | None, counts: Mapping[str, int]) -> None:
    """Add provider calls, texts and errors to the shared counters; a Redis failure never fails
    the embedding (the counts are then lost)."""
    if conn is None or not counts:
        return
    try:
        pipe = conn.pipeline(transaction=False)
        for name, amount in counts.items():
            pipe.hincrby(EMBEDDING_STATS_KEY, name, amount)
        pipe.execute()
    except redis.exceptions.RedisError:
        pass
