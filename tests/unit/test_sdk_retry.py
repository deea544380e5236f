"""The SDK's retry and timeout contract against a scripted HTTP server (a stand-in for a flaky
network): network errors and 5xx are retried 3 times after 0.5, 1 and 2 s, 4xx never, and
a call's 25 s budget covers its retries."""

from __future__ import annotations

import asyncio
import itertools
import socket
import uuid

import pytest

from automem.client import (
    AsyncAutomemClient,
    AutomemClient,
    BadRequestError,
    NotImplementedByServer,
    RateLimitError,
    RequestTimeout,
    RetryPolicy,
    ServerError,
    ServiceUnavailableError,
    TransportError,
)
from tests.stubs.flaky_server import FlakyServer

FAST = RetryPolicy(retries=3, delays=(0.01, 0.02, 0.04))
MEMORY_ID = str(uuid.uuid4())
STORED = (201, {"status": "success", "memory_id": MEMORY_ID, "type": "Context", "confidence": 0.3})


def test_5xx_and_dropped_connections_are_retried_with_the_same_idempotency_key() -> None:
    with FlakyServer([503, "drop", 500, STORED]) as server:
        with AutomemClient(server.base_url, "key", retry=FAST) as mem:
            result = mem.store("retried until it lands")
        assert result.memory_id == MEMORY_ID
        assert len(server.requests) == 4
        keys = {r.headers["Idempotency-Key"] for r in server.requests}
        assert len(keys) == 1 and keys != {""}
        assert {r.headers["X-API-Key"] for r in server.requests} == {"key"}


def test_default_policy_sleeps_half_one_and_two_seconds_then_gives_up() -> None:
    with FlakyServer([502]) as server:
        with AutomemClient(server.base_url) as mem, pytest.raises(ServerError) as failed:
            mem.get(MEMORY_ID)
        assert failed.value.status == 502
        arrivals = [r.at for r in server.requests]
        assert len(arrivals) == 4  # the first attempt and three retries
        gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
        # Lower bounds only: a sleep never ends early, a busy machine may make it longer.
        assert [gap >= delay for gap, delay in zip(gaps, (0.5, 1.0, 2.0), strict=True)] == [True] * 3


@pytest.mark.parametrize(
    ("answer", "error", "code"),
    [
        (
            (
                400,
                {
                    "status": "error",
                    "code": 400,
                    "message": "bad",
                    "reason": "invalid_input",
                    "field": "tags",
                },
            ),
            BadRequestError,
            400,
        ),
        (
            # An older server's envelope (`error`, no `message`) is read too.
            (429, {"status": "error", "error": "slow down", "reason": "rate_limited"}, {"Retry-After": "7"}),
            RateLimitError,
            429,
        ),
        (501, NotImplementedByServer, 501),
    ],
)
def test_4xx_and_501_are_not_retried(answer: object, error: type[Exception], code: int) -> None:
    with FlakyServer([answer, STORED]) as server:
        with AutomemClient(server.base_url, retry=FAST) as mem, pytest.raises(error) as raised:
            mem.store("rejected")
        assert len(server.requests) == 1
        assert getattr(raised.value, "status", None) == code
    if isinstance(raised.value, RateLimitError):
        assert raised.value.retry_after == 7.0
    if isinstance(raised.value, BadRequestError):
        assert raised.value.field == "tags" and raised.value.reason == "invalid_input"
        assert raised.value.message == "bad"
    if isinstance(raised.value, RateLimitError):
        assert raised.value.message == "slow down" and raised.value.reason == "rate_limited"


def test_a_non_envelope_error_body_still_maps_by_status() -> None:
    with (
        FlakyServer([(503, "<html>bad gateway</html>")]) as server,
        AutomemClient(server.base_url, retry=RetryPolicy(retries=0)) as mem,
        pytest.raises(ServiceUnavailableError) as raised,
    ):
        mem.analyze()
    assert raised.value.reason is None and "bad gateway" in raised.value.message


def test_health_503_is_a_report_not_an_error_and_is_not_retried() -> None:
    report = {
        "status": "degraded",
        "falkordb": "disconnected",
        "qdrant": "connected",
        "embedding": {"provider": "hash", "model": None, "dimension": 384},
    }
    with FlakyServer([(503, report)]) as server:
        with AutomemClient(server.base_url, retry=FAST) as mem:
            health = mem.health()
        assert (health.status, health.falkordb) == ("degraded", "disconnected")
        assert len(server.requests) == 1


def test_the_time_budget_covers_the_whole_call() -> None:
    with (
        FlakyServer([("hang", 3.0)]) as server,
        AutomemClient(server.base_url, timeout=0.5, retry=FAST) as mem,
        pytest.raises(RequestTimeout),
    ):
        mem.get(MEMORY_ID)


def test_a_refused_connection_is_a_transport_error_after_the_retries() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with AutomemClient(f"http://127.0.0.1:{port}", retry=FAST) as mem, pytest.raises(TransportError):
        mem.health()


def test_async_client_retries_the_same_way() -> None:
    async def scenario(base_url: str) -> str:
        async with AsyncAutomemClient(base_url, "key", retry=FAST) as mem:
            return (await mem.store("async retry")).memory_id

    with FlakyServer([500, "drop", STORED]) as server:
        assert asyncio.run(scenario(server.base_url)) == MEMORY_ID
        assert len(server.requests) == 3
        assert len({r.headers["Idempotency-Key"] for r in server.requests}) == 1

    async def rejected(base_url: str) -> None:
        async with AsyncAutomemClient(base_url, retry=FAST) as mem:
            await mem.recall("x")

    with FlakyServer([400]) as server:
        with pytest.raises(BadRequestError):
            asyncio.run(rejected(server.base_url))
        assert len(server.requests) == 1
