"""Abuse limits: per-key rate limit on writes (429 with Retry-After, shared through Redis, off for
loopback in embedded mode), and CORS off by default, on for configured origins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from enrichment.context import use_services
from tests.conftest import API_TOKEN, Api, make_settings


@pytest.fixture
def limited(
    falkordb_server: EmbeddedFalkorDB, redis_conn: Any, tmp_path: Path, one_minute: None
) -> Iterator[Flask]:
    settings = make_settings(
        falkordb_server.url,
        tmp_path / "limited",
        rate_limit_per_minute=3,
        rate_limit_loopback=True,  # the test client calls from 127.0.0.1
        cors_origins="https://app.example",
    )
    application = create_app(settings, start_vector_drain=False)
    yield application
    use_services(None)
    stop_app(application)


def test_writes_beyond_the_limit_get_429_with_retry_after(limited: Flask) -> None:
    api = Api(limited.test_client())
    codes = [api.post("/memory", json={"content": f"note {n}"}).status_code for n in range(4)]
    assert codes == [201, 201, 201, 429]
    refused = api.post("/memory", json={"content": "one more"})
    assert refused.get_json()["reason"] == "rate_limited"
    assert refused.get_json()["status"] == "error"
    assert 1 <= int(refused.headers["Retry-After"]) <= 61
    # Reads are not limited, and nothing was written by the refused requests.
    assert api.get("/memory/by-tag?tags=x").status_code == 200
    assert api.get("/health").get_json()["counts"]["total"] == 3


def test_recall_by_post_is_a_read_and_not_counted(limited: Flask) -> None:
    api = Api(limited.test_client())
    for n in range(5):
        assert api.post("/recall", json={"query": f"q {n}"}).status_code == 200
    assert [api.post("/memory", json={"content": f"w {n}"}).status_code for n in range(4)] == [
        201,
        201,
        201,
        429,
    ]


def test_the_budget_is_per_key(limited: Flask, redis_conn: Any) -> None:
    first = Api(limited.test_client())
    for n in range(3):
        assert first.post("/memory", json={"content": f"a {n}"}).status_code == 201
    assert first.post("/memory", json={"content": "a 4"}).status_code == 429
    # An unauthenticated client has its own (address) budget, and is refused for auth first.
    anonymous = limited.test_client().post("/memory", json={"content": "b"})
    assert anonymous.status_code == 401
    assert API_TOKEN not in str(redis_conn.keys("automem:ratelimit:*"))


def test_loopback_is_exempt_in_embedded_mode(
    falkordb_server: EmbeddedFalkorDB, redis_conn: Any, tmp_path: Path
) -> None:
    from automem import ratelimit

    # The processes `automem serve` supervises are told FALKORDB_URL: the Edge shard marks the stack.
    embedded = make_settings(falkordb_server.url, tmp_path / "data", rate_limit_per_minute=1)
    assert embedded.single_host and not embedded.embedded
    app = Flask("probe")
    with app.test_request_context("/memory", method="POST", environ_base={"REMOTE_ADDR": "127.0.0.1"}):
        assert ratelimit._exempt(embedded)
    with app.test_request_context("/memory", method="POST", environ_base={"REMOTE_ADDR": "10.0.0.8"}):
        assert not ratelimit._exempt(embedded)
    strict = embedded.model_copy(update={"rate_limit_loopback": True})
    with app.test_request_context("/memory", method="POST", environ_base={"REMOTE_ADDR": "127.0.0.1"}):
        assert not ratelimit._exempt(strict)
    server = embedded.model_copy(update={"vector_backend": "qdrant"})
    with app.test_request_context("/memory", method="POST", environ_base={"REMOTE_ADDR": "127.0.0.1"}):
        assert not ratelimit._exempt(server)


def test_cors_only_for_configured_origins(limited: Flask, app: Flask) -> None:
    allowed = limited.test_client().options(
        "/recall", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}
    )
    assert allowed.headers.get("Access-Control-Allow-Origin") == "https://app.example"
    other = limited.test_client().options(
        "/recall", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}
    )
    assert "Access-Control-Allow-Origin" not in other.headers
    default = app.test_client().get("/health", headers={"Origin": "https://app.example"})
    assert "Access-Control-Allow-Origin" not in default.headers  # off by default
