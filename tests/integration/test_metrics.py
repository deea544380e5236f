"""GET /metrics (Prometheus), request ids and JSON logs: scraped and parsed for real, in process
and from `automem serve` under gunicorn."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from automem import logs
from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from enrichment.context import use_services
from tests.conftest import Api, make_settings
from tests.stack import Service, wait_until


def scrape(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)]."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(v for found, v in samples.get(name, []) if all(found.get(k) == x for k, x in labels.items()))


def test_metrics_are_public_and_count_routes_recall_stages_queues_and_embeddings(
    api: Api, services: Services, jobs: Callable[[], None]
) -> None:
    before = scrape(api.client.get("/metrics").get_data(as_text=True))
    memory_id = api.post("/memory", json={"content": "Metrics count what happens"}).get_json()["memory_id"]
    api.get(f"/memory/{memory_id}")
    queued = scrape(api.client.get("/metrics").get_data(as_text=True))
    assert value(queued, "automem_intake_memories", work="embed") == 1
    assert value(queued, "automem_queue_jobs", queue="embed", state="queued") == 1  # the dispatch job
    jobs()
    api.post("/recall", json={"query": "what happens"})
    response = api.client.get("/metrics")  # no key: Prometheus scrapes like /health
    assert response.status_code == 200 and response.content_type.startswith("text/plain")
    after = scrape(response.get_data(as_text=True))

    count = "automem_http_request_duration_seconds_count"
    route = {"method": "GET", "route": "/memory/<memory_id>", "status": "200"}
    assert value(after, count, **route) == value(before, count, **route) + 1  # the template, never the id
    assert value(after, count, method="POST", route="/memory", status="201") >= 1
    stages = {labels["stage"] for labels, _ in after["automem_recall_stage_duration_seconds_count"]}
    assert {"embed", "vector", "keyword", "fusion", "total"} <= stages
    assert value(after, "automem_embedding_texts_total") >= value(before, "automem_embedding_texts_total") + 2
    assert value(after, "automem_embedding_calls_total") > value(before, "automem_embedding_calls_total")
    assert value(after, "automem_enrichment_memories_total") >= 1
    assert value(after, "automem_intake_memories", work="embed") == 0
    assert value(after, "automem_queue_jobs", queue="enrich", state="failed") == 0


def test_metrics_can_require_the_key(
    falkordb_server: EmbeddedFalkorDB, redis_conn: Any, tmp_path: Path
) -> None:
    settings = make_settings(falkordb_server.url, tmp_path / "data", metrics_require_key=True)
    app = create_app(settings, start_vector_drain=False)
    try:
        client = app.test_client()
        assert client.get("/metrics").status_code == 401
        assert Api(client).get("/metrics").status_code == 200
    finally:
        use_services(None)
        stop_app(app)


@pytest.mark.parametrize(
    ("given", "kept"), [("req-42.a:b", True), ("x" * 129, False), ("bad id; forged", False), ("", False)]
)
def test_request_id_is_honoured_when_plain_and_returned(api: Api, given: str, kept: bool) -> None:
    response = api.get("/health", headers={"X-Request-ID": given})
    returned = response.headers["X-Request-ID"]
    assert (returned == given) is kept and returned


def test_json_log_lines_carry_the_request_id(app: Any) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(logs.RequestIdFilter())
    handler.setFormatter(logs.formatter("json"))
    logger = logging.getLogger("automem.test")
    logger.addHandler(handler)
    try:
        with app.test_request_context("/health", headers={"X-Request-ID": "abc-123"}):
            app.preprocess_request()
            logger.warning("inside a request")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["request_id"] == "abc-123" and inside["level"] == "WARNING" and inside["message"]
    assert outside["request_id"] is None and inside["logger"] == "automem.test" and "time" in inside


@pytest.mark.slow
def test_gunicorn_serves_metrics_and_logs_json(stack: Callable[..., Service]) -> None:
    service = stack(env={"AUTOMEM_LOG_LEVEL": "INFO"})
    response = service.http.get(
        "/memory/00000000-0000-4000-8000-000000000000", headers={"X-Request-ID": "e2e-7"}
    )
    assert response.status_code == 404 and response.headers["X-Request-ID"] == "e2e-7"
    samples = scrape(httpx_get_text(service, "/metrics"))
    assert value(samples, "automem_http_request_duration_seconds_count", status="404") >= 1
    lines = wait_until(lambda: _json_lines(service.log_path), 10, "no JSON log lines")
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert {line["logger"] for line in lines} & {"gunicorn.error", "automem.embedded"}


def httpx_get_text(service: Service, path: str) -> str:
    response = service.http.get(path, headers={"X-API-Key": ""})
    assert response.status_code == 200
    return response.text


def _json_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out
