"""Counters every process keeps in Redis, so GET /metrics and GET /enrichment/status see the
work of workers on any host: embedding calls, texts and failures; enrichment successes,
failures and the last error; the memories a job could not process."""

from __future__ import annotations

import redis

EMBEDDING_STATS_KEY = "automem:embedding:stats"
# Written by the enrichment job (enrichment.enrich), read by the API.
ENRICHMENT_STATS_KEY = "automem:enrichment:stats"
# One field per (job, memory) a job skipped after an error of that memory's own (enrichment.isolation):
# "<job>:<memory id>" -> {"memory_id", "job", "reason", "at", "version"} as JSON. A later success clears it.
FAILED_ITEMS_KEY = "automem:jobs:failed_items"


def count_embedding(conn: redis.Redis | None, texts: int, failed: bool) -> None:
    """Add one provider call to the shared counters; a Redis failure never fails the embedding."""
    if conn is None:
        return
    try:
        pipe = conn.pipeline(transaction=False)
        pipe.hincrby(EMBEDDING_STATS_KEY, "calls", 1)
        pipe.hincrby(EMBEDDING_STATS_KEY, "errors" if failed else "texts", 1 if failed else texts)
        pipe.execute()
    except redis.exceptions.RedisError:
        pass
