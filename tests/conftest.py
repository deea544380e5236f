"""Shared fixtures: a real embedded FalkorDB server (which also hosts Redis for RQ), a real
Qdrant Edge shard per test, the app, its test client and a helper that adds the API key."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import settings as hypothesis_settings
from werkzeug.serving import make_server

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.settings import Settings, registry
from enrichment.context import use_services
from enrichment.worker import run_burst
from tests.stack import Service, started_services

# `HYPOTHESIS_PROFILE=deep pytest ...` draws fifty times the examples: a search for the rare case
# that a CI run would otherwise meet first (each run draws new examples).
hypothesis_settings.register_profile("deep", max_examples=5000, deadline=None)
# The default, less the 200 ms deadline per example: a loaded 2-core CI machine can exceed it.
hypothesis_settings.register_profile("patient", deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "patient"))

API_TOKEN = "test-api-token"
ADMIN_TOKEN = "test-admin-token"
SHARED = Path(__file__).resolve().parents[2] / "shared"
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx-int8"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the test, never from the developer's shell."""
    for entry in registry():
        for name in (entry.env, *entry.aliases):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedFalkorDB]:
    # No test kills this server, so it skips the per-write fsync of the default `always`.
    server = EmbeddedFalkorDB(tmp_path_factory.mktemp("falkordb"), appendfsync="everysec")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_conn(falkordb_server: EmbeddedFalkorDB) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(falkordb_server.url)
    conn.flushall()
    yield conn
    conn.close()


@pytest.fixture
def one_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rate limiter's clock held inside one minute: its budgets are per clock minute, and a
    minute turning over between a test's writes would reset them."""
    monkeypatch.setattr("automem.ratelimit.time", SimpleNamespace(time=lambda: 1_700_000_010.0))


def make_settings(url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "falkordb_url": url,
        "redis_url": url,
        "data_dir": str(data_dir),
        "falkordb_graph": f"test_{uuid.uuid4().hex[:8]}",
        "embedding_provider": "hash",
        "vector_backend": "edge",
        "api_token": API_TOKEN,
        "admin_token": ADMIN_TOKEN,
        "job_retry_intervals": "",
        # run_jobs() has no RQ scheduler to release delayed jobs
        "access_flush_delay_seconds": 0,
        "intake_delay_seconds": 0,
        # Tests read /health right after a write: counts are never reused (share 1); the reuse
        # policy has a test of its own (test_health.py).
        "counts_max_share": 1.0,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def settings(falkordb_server: EmbeddedFalkorDB, redis_conn: redis.Redis, tmp_path: Path) -> Settings:
    return make_settings(falkordb_server.url, tmp_path / "data")


@pytest.fixture
def app(settings: Settings) -> Iterator[Flask]:
    application = create_app(settings, start_vector_drain=False)
    application.config["TESTING"] = True
    yield application
    use_services(None)
    stop_app(application)


@pytest.fixture
def live_url(app: Flask) -> Iterator[str]:
    """The app served over real HTTP on a free port (for the CLI and other HTTP clients)."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


@pytest.fixture
def services(app: Flask) -> Services:
    return app.extensions["automem"]


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


class Api:
    """The test client with the API key added to every request."""

    def __init__(self, client: FlaskClient, token: str = API_TOKEN) -> None:
        self.client = client
        self.headers = {"X-API-Key": token}

    def _call(self, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
        return self.client.open(path, method=method, headers={**self.headers, **(headers or {})}, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Any:
        return self._call("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self._call("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> Any:
        return self._call("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self._call("DELETE", path, **kwargs)


@pytest.fixture
def api(client: FlaskClient) -> Api:
    return Api(client)


def run_jobs(services: Services) -> None:
    """Run every queued job in-process with a real RQ worker, then apply handed-off vector writes."""
    run_burst(services)
    if services.vectors is not None:
        services.sync.drain_all()


@pytest.fixture
def jobs(services: Services) -> Any:
    return lambda: run_jobs(services)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Callable[..., Service]]:
    """Starts `automem serve` subprocesses (`stack(env={...})`); all are stopped at teardown."""
    with started_services(tmp_path) as start:
        yield start


@pytest.fixture
def service(stack: Callable[..., Service]) -> Service:
    """One running `automem serve` with default test settings."""
    return stack()
