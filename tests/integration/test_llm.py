"""The LLM client against the real OpenAI-compatible stub server and a real Redis."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from automem.embedded import EmbeddedFalkorDB
from automem.llm import (
    BREAKER_KEY,
    FAILURES_TO_OPEN,
    LlmClient,
    LlmFailed,
    LlmPaused,
    LlmRateLimited,
    memory_type_for,
    parse_classification,
)
from automem.settings import Settings
from tests.stubs.openai_stub import OpenAIStub

CHAT = "/chat/completions"
QUOTA_BODY = {
    "message": "You exceeded your current quota.",
    "type": "insufficient_quota",
    "code": "insufficient_quota",
}


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(chat_reply={"type": "Decision", "confidence": 0.9}) as server:
        yield server


def llm_settings(base_url: str | None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"llm_base_url": base_url, "llm_rate_per_minute": 0, "llm_breaker_seconds": 60}
    values.update(overrides)
    return Settings(**values)


def make_client(stub: OpenAIStub, redis_conn: redis.Redis, **overrides: Any) -> LlmClient:
    client = LlmClient.from_settings(llm_settings(stub.base_url, **overrides), redis_conn)
    assert client is not None
    return client


# --- configuration ---------------------------------------------------------------------------------
def test_no_llm_configured_gives_no_client(redis_conn: redis.Redis) -> None:
    assert LlmClient.from_settings(llm_settings(None), redis_conn) is None


def test_disabled_llm_gives_no_client(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    assert LlmClient.from_settings(llm_settings(stub.base_url, llm_enabled=False), redis_conn) is None


def test_sends_model_key_and_json_mode(redis_conn: redis.Redis) -> None:
    with OpenAIStub(api_key="sk-test", chat_reply={"type": "Habit", "confidence": 0.8}) as stub:
        client = make_client(stub, redis_conn, llm_api_key="sk-test", llm_model="tiny-model")
        assert client.classify("I run every morning") == ("Habit", 0.8)
        body = stub.requests_to(CHAT)[0].body
    assert body["model"] == "tiny-model"
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_keyless_local_endpoint_gets_a_placeholder_key(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    make_client(stub, redis_conn).classify("x")
    assert stub.requests_to(CHAT)[0].headers["authorization"] == "Bearer not-needed"


# --- classification ------------------------------------------------------------------------------
def test_classify_parses_the_reply_and_sends_at_most_1000_chars(
    stub: OpenAIStub, redis_conn: redis.Redis
) -> None:
    client = make_client(stub, redis_conn)
    assert client.classify("We decided to use Postgres. " * 100) == ("Decision", 0.9)
    sent = stub.requests_to(CHAT)[0].body["messages"][1]["content"]
    assert len(sent) == 1000


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"type": "preference", "confidence": 0.8}', ("Preference", 0.8)),
        ('{"type": "INSIGHTS", "confidence": "0.65"}', ("Insight", 0.65)),
        ('{"type": "routine", "confidence": 0.5}', ("Habit", 0.5)),
        ('{"type": "**Lesson**", "confidence": 0.5}', ("Insight", 0.5)),
        ('{"type": "Style"}', ("Style", 0.7)),  # missing confidence
        ('{"type": "Context", "confidence": 7}', ("Context", 0.07)),  # a percentage
        ('{"type": "Pattern", "confidence": 250}', ("Pattern", 1.0)),  # clamped
        ('{"type": "Pattern", "confidence": -1}', ("Pattern", 0.0)),
        ('{"type": "Pattern", "confidence": "high"}', ("Pattern", 0.7)),
        ('```json\n{"type": "Decision", "confidence": 0.9}\n```', ("Decision", 0.9)),
        ('Sure! ```\n{"memory_type": "decision"}\n``` Hope that helps.', ("Decision", 0.7)),
        ('{"type": "Recipe", "confidence": 0.9}', None),  # unknown type
        ('{"confidence": 0.9}', None),
        ('{"type": 3}', None),
    ],
)
def test_classification_replies(reply: str, expected: tuple[str, float] | None) -> None:
    result = parse_classification(reply)
    if expected is None:
        assert result is None
    else:
        assert result is not None
        assert result[0] == expected[0]
        assert result[1] == pytest.approx(expected[1])


def test_type_aliases() -> None:
    assert memory_type_for("Decisions") == "Decision"
    assert memory_type_for("user preference") == "Preference"
    assert memory_type_for("nonsense") is None


def test_classify_through_the_stub_with_fences_and_unknown_types(
    stub: OpenAIStub, redis_conn: redis.Redis
) -> None:
    client = make_client(stub, redis_conn)
    stub.chat_reply = '```json\n{"type": "choice", "confidence": 0.95}\n```'
    assert client.classify("we went with Rust") == ("Decision", 0.95)
    stub.chat_reply = {"type": "Shopping list", "confidence": 0.9}
    assert client.classify("eggs, milk") is None
    assert client.stats()["successes"] == 2


def test_classify_reply_without_json_is_a_failure(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.chat_reply = "It is a decision."
    with pytest.raises(LlmFailed):
        client.classify("we went with Rust")
    assert client.stats()["failures"] == 1
    assert not client.breaker_state()["open"]


def test_json_mode_falls_back_when_the_server_rejects_it(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    rejection = {"message": "'response_format.type' must be 'json_schema' or 'text'", "type": "invalid"}
    stub.fail_next(400, body=rejection)
    assert client.classify("we went with Rust") == ("Decision", 0.9)
    client.classify("again")
    requests = stub.requests_to(CHAT)
    assert len(requests) == 3
    assert "response_format" in requests[0].body
    assert "response_format" not in requests[1].body
    assert "response_format" not in requests[2].body


# --- summaries ---------------------------------------------------------------------------------------
def test_summarize_returns_only_shorter_text(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    content = "We met with Alice on Monday and decided to move the billing service to Postgres. " * 3
    stub.chat_reply = "Summary: Alice + team chose Postgres for billing (Monday)."
    assert client.summarize(content, 100) == "Alice + team chose Postgres for billing (Monday)."
    assert "100 characters" in stub.requests_to(CHAT)[0].body["messages"][0]["content"]
    assert "response_format" not in stub.requests_to(CHAT)[0].body
    stub.chat_reply = content + " And more."
    assert client.summarize(content, 100) is None
    stub.chat_reply = "   "
    assert client.summarize(content, 100) is None


def test_summary_sentence_is_one_line_within_the_limit(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.chat_reply = '"Alice moved billing to Postgres."\nSecond line.'
    assert client.summary_sentence("long content", 240) == "Alice moved billing to Postgres."
    stub.chat_reply = "Alice moved the whole billing service to Postgres after the outage"
    short = client.summary_sentence("long content", 30)
    assert short is not None and len(short) <= 30 and short.endswith("…")
    stub.chat_reply = ""
    assert client.summary_sentence("long content", 30) is None


# --- circuit breaker -------------------------------------------------------------------------------
def test_429_opens_the_breaker_without_further_requests(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn, llm_breaker_seconds=60)
    stub.fail_next(429)
    with pytest.raises(LlmPaused) as first:
        client.classify("x")
    assert first.value.retry_after == pytest.approx(60)
    with pytest.raises(LlmPaused) as second:
        client.summarize("some content", 10)
    assert 0 < second.value.retry_after <= 60
    assert second.value.reason == "rate_limited"
    assert len(stub.requests_to(CHAT)) == 1
    state = client.breaker_state()
    assert state["open"] is True and state["reason"] == "rate_limited"
    assert 55 < state["retry_after"] <= 60 and state["opened_at"]
    assert client.stats() == {
        "calls": 1,
        "successes": 0,
        "failures": 1,
        "rate_limited": 0,
        "paused": 1,
        "breaker_opened": 1,
    }


def test_breaker_closes_after_its_time(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn, llm_breaker_seconds=1)
    stub.fail_next(429)
    with pytest.raises(LlmPaused):
        client.classify("x")
    with pytest.raises(LlmPaused):
        client.classify("x")
    time.sleep(1.1)
    assert client.breaker_state()["open"] is False
    assert client.classify("x") == ("Decision", 0.9)
    assert len(stub.requests_to(CHAT)) == 2


def test_a_longer_retry_after_header_wins(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn, llm_breaker_seconds=1)
    stub.fail_next(429, headers={"Retry-After": "30"})
    with pytest.raises(LlmPaused) as paused:
        client.classify("x")
    assert paused.value.retry_after == pytest.approx(30)
    assert client.breaker_state()["retry_after"] > 25


def test_quota_error_opens_the_breaker(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.fail_next(429, body=QUOTA_BODY)
    with pytest.raises(LlmPaused):
        client.classify("x")
    assert client.breaker_state()["reason"] == "quota"


def test_quota_error_with_another_status_opens_the_breaker(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.fail_next(403, body=QUOTA_BODY)
    with pytest.raises(LlmPaused):
        client.classify("x")
    with pytest.raises(LlmPaused):
        client.classify("x")
    assert len(stub.requests_to(CHAT)) == 1


def test_server_error_fails_and_leaves_the_breaker_closed(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.fail_next(500)
    with pytest.raises(LlmFailed) as failed:
        client.classify("x")
    assert failed.value.status_code == 500
    assert client.breaker_state()["open"] is False
    assert client.classify("x") == ("Decision", 0.9)


def test_consecutive_server_errors_open_the_breaker(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.fail_next(503, FAILURES_TO_OPEN)
    for _ in range(FAILURES_TO_OPEN):
        with pytest.raises(LlmFailed):
            client.classify("x")
    assert client.breaker_state()["reason"] == "failing"
    with pytest.raises(LlmPaused):
        client.classify("x")
    assert len(stub.requests_to(CHAT)) == FAILURES_TO_OPEN


def test_a_success_ends_the_failure_streak(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn)
    stub.fail_next(500, FAILURES_TO_OPEN - 1)
    for _ in range(FAILURES_TO_OPEN - 1):
        with pytest.raises(LlmFailed):
            client.classify("x")
    client.classify("x")
    stub.fail_next(500)
    with pytest.raises(LlmFailed):
        client.classify("x")
    assert client.breaker_state()["open"] is False


def test_breaker_is_shared_by_clients_on_one_redis(
    stub: OpenAIStub, redis_conn: redis.Redis, falkordb_server: EmbeddedFalkorDB
) -> None:
    api_side = make_client(stub, redis_conn)
    # Another connection, as another process would have; decoded replies must work as well.
    worker_side = make_client(stub, redis.Redis.from_url(falkordb_server.url, decode_responses=True))
    stub.fail_next(429)
    with pytest.raises(LlmPaused):
        api_side.classify("x")
    with pytest.raises(LlmPaused):
        worker_side.summary_sentence("some content", 50)
    assert len(stub.requests_to(CHAT)) == 1
    assert worker_side.breaker_state()["open"] is True
    assert worker_side.stats()["paused"] == 1


def test_breaker_zero_seconds_never_opens(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn, llm_breaker_seconds=0)
    stub.fail_next(429, headers={"retry-after-ms": "0"})
    with pytest.raises(LlmPaused):
        client.classify("x")
    assert redis_conn.exists(BREAKER_KEY) == 0
    assert client.classify("x") == ("Decision", 0.9)


# --- rate limit ----------------------------------------------------------------------------------
def test_rate_limit_refuses_the_third_call_without_a_request(
    stub: OpenAIStub, redis_conn: redis.Redis
) -> None:
    first = make_client(stub, redis_conn, llm_rate_per_minute=2)
    second = make_client(stub, redis_conn, llm_rate_per_minute=2)
    first.classify("x")
    second.classify("x")
    with pytest.raises(LlmRateLimited) as limited:
        first.classify("x")
    assert 55 < limited.value.retry_after <= 60
    assert len(stub.requests_to(CHAT)) == 2
    assert first.stats()["rate_limited"] == 1
    assert first.breaker_state()["open"] is False


def test_unlimited_rate(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn, llm_rate_per_minute=0)
    for _ in range(5):
        client.classify("x")
    assert client.stats()["calls"] == 5


# --- transport failures ------------------------------------------------------------------------------
def test_timeout_is_a_failure(stub: OpenAIStub, redis_conn: redis.Redis) -> None:
    client = make_client(stub, redis_conn, llm_timeout_seconds=0.2)
    stub.delay = 5.0  # far beyond the timeout, so a loaded machine's slowness cannot pass for it
    started = time.monotonic()
    with pytest.raises(LlmFailed, match="timed out"):
        client.classify("x")
    assert time.monotonic() - started < 3
    assert len(stub.requests_to(CHAT)) == 1  # the SDK did not retry
    assert client.breaker_state()["open"] is False


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_error_is_a_failure(redis_conn: redis.Redis) -> None:
    settings = llm_settings(f"http://127.0.0.1:{closed_port()}/v1", llm_timeout_seconds=2)
    client = LlmClient.from_settings(settings, redis_conn)
    assert client is not None
    with pytest.raises(LlmFailed, match="could not connect"):
        client.summarize("some content", 10)
    assert client.stats()["failures"] == 1


def test_logs_hold_no_content_or_key(
    stub: OpenAIStub, redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    # Our logger only: the SDK's own debug logging (OPENAI_LOG=debug) prints request bodies.
    caplog.set_level(logging.DEBUG, logger="automem.llm")
    client = make_client(stub, redis_conn, llm_api_key="sk-very-secret")
    stub.chat_reply = "not json at all"
    with pytest.raises(LlmFailed):
        client.classify("PRIVATE-CONTENT")
    stub.fail_next(500)
    with pytest.raises(LlmFailed):
        client.classify("PRIVATE-CONTENT")
    stub.fail_next(429)
    with pytest.raises(LlmPaused):
        client.classify("PRIVATE-CONTENT")
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name == "automem.llm")
    assert "HTTP 500" in ours and "HTTP 429" in ours
    for secret in ("PRIVATE-CONTENT", "sk-very-secret", "not json at all"):
        assert secret not in ours
