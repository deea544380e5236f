"""Prometheus metrics: what `GET /metrics` serves.

Two sources:
- Measured in the API process: request latency per route and recall stage timings, as
  prometheus_client histograms. Under gunicorn with several processes, prometheus_client's
  multiprocess mode adds the processes up: `automem serve` sets PROMETHEUS_MULTIPROC_DIR (a fresh
  directory) before gunicorn starts, and the gunicorn config marks dead workers.
- Counted by every process in Redis and read at scrape time, so workers on other hosts are
  included: queue depths and failed jobs (RQ's registries), the intake, embedding calls, texts
  and errors, LLM calls and outcomes, enrichment successes and failures.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import redis
from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from automem.counters import EMBEDDING_STATS_KEY, ENRICHMENT_STATS_KEY
from automem.stores.codec import decoded

if TYPE_CHECKING:
    from automem.services import Services

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Request latencies from 1 ms to 10 s; recall stages from 0.1 ms to 1 s.
_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
_STAGE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

REQUEST_LATENCY = Histogram(
    "automem_http_request_duration_seconds",
    "Time to answer an HTTP request, by method, route template and status.",
    ["method", "route", "status"],
    buckets=_HTTP_BUCKETS,
)
RECALL_STAGE = Histogram(
    "automem_recall_stage_duration_seconds",
    "Time each recall stage took (the response's timings_ms).",
    ["stage"],
    buckets=_STAGE_BUCKETS,
)


def init_app(app: Flask) -> None:
    """Time every request by its route template (never the raw path: ids would explode labels)."""

    @app.before_request
    def _start_timer() -> None:
        g.metrics_started = time.perf_counter()

    @app.after_request
    def _observe(response: Response) -> Response:
        started = getattr(g, "metrics_started", None)
        if started is not None:
            route = request.url_rule.rule if request.url_rule is not None else "unmatched"
            REQUEST_LATENCY.labels(request.method, route, str(response.status_code)).observe(
                time.perf_counter() - started
            )
        return response


def observe_recall(timings_ms: dict[str, float]) -> None:
    for stage, ms in timings_ms.items():
        RECALL_STAGE.labels(stage).observe(ms / 1000)


def exposition(svc: Services) -> tuple[bytes, str]:
    """The text exposition format: this host's API processes, then the Redis-held counters."""
    if os.environ.get(MULTIPROC_ENV):
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes)
        local = generate_latest(processes)
    else:
        local = generate_latest(REGISTRY)
    shared = CollectorRegistry(auto_describe=False)
    shared.register(StoreCollector(svc))
    return local + generate_latest(shared), CONTENT_TYPE_LATEST


class StoreCollector(Collector):
    """Gauges and counters read from Redis when scraped."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._queues()
            yield from self._counters()
        except redis.exceptions.RedisError as exc:
            log.warning("metrics: Redis unreachable (%s); queue metrics left out", type(exc).__name__)

    def _queues(self) -> Iterator[Metric]:
        registries = self.svc.jobs.registry_counts()
        waiting = GaugeMetricFamily(
            "automem_queue_jobs", "RQ jobs by queue and state.", labels=["queue", "state"]
        )
        for queue, counts in registries.items():
            for state in ("queued", "in_flight", "scheduled", "failed"):
                waiting.add_metric([queue, state], counts[state])
        yield waiting
        intake = GaugeMetricFamily(
            "automem_intake_memories", "New memories waiting for the dispatch job.", labels=["work"]
        )
        for work, depth in self.svc.jobs.intake_depths().items():
            intake.add_metric([work], depth)
        yield intake
        yield GaugeMetricFamily(
            "automem_vector_sync_backlog",
            "Vector writes handed to the shard owner and not applied yet.",
            value=max(0, self.svc.sync.backlog()),
        )

    def _counters(self) -> Iterator[Metric]:
        conn = self.svc.queue_redis
        self.svc.embedder.flush()  # this process's own counts, which wait up to FLUSH_SECONDS
        embedding = decoded(conn.hgetall(EMBEDDING_STATS_KEY))
        for name, help_text in (
            ("calls", "Embedding provider calls."),
            ("texts", "Texts embedded."),
            ("errors", "Embedding provider calls that failed."),
        ):
            yield CounterMetricFamily(
                f"automem_embedding_{name}", help_text, value=float(embedding.get(name, 0))
            )
        enrichment = decoded(conn.hgetall(ENRICHMENT_STATS_KEY))
        yield CounterMetricFamily(
            "automem_enrichment_memories", "Memories enriched.", value=float(enrichment.get("enriched", 0))
        )
        yield CounterMetricFamily(
            "automem_enrichment_failures",
            "Enrichment jobs that failed.",
            value=float(enrichment.get("failures", 0)),
        )
        llm = self.svc.llm
        if llm is not None:
            calls = CounterMetricFamily("automem_llm_calls", "LLM calls by outcome.", labels=["outcome"])
            for outcome, count in llm.stats().items():
                calls.add_metric([outcome], float(count))
            yield calls
