"""The service's one OpenAI-compatible chat client: classification, summaries, one-line summaries.

It lives in the core because both sides call it: the API summarises long memories as it stores
them, the worker side's classification job asks for a type.

Every call passes two gates kept in Redis, so the API and all worker processes share them:

* Circuit breaker (`automem:llm:breaker`, a hash that expires when the breaker closes). An HTTP
  429 or a quota error opens it for AUTOMEM_LLM_BREAKER_SECONDS, or for the server's Retry-After
  when that is longer. So do FAILURES_TO_OPEN endpoint-wide failures in a row (5xx, timeouts,
  connection errors, 401/403/404), so a dead or misconfigured endpoint is not hammered. While it
  is open every call raises `LlmPaused` without an HTTP request.
* Rate limit (`automem:llm:rate`, a sorted set of call times): at most AUTOMEM_LLM_RATE_PER_MINUTE
  calls in any rolling 60 seconds (0: unlimited). Over budget, a call raises `LlmRateLimited`
  without an HTTP request.

Both gates are checked in one Lua script with Redis' clock, so they are atomic and immune to
clock skew between hosts. Nothing here sleeps: the exceptions carry `retry_after` and jobs
reschedule themselves. The SDK never retries (max_retries=0); retrying is the jobs' decision.
Counters for /enrichment/status live in the hash `automem:llm:stats`. Logs carry lengths, status
codes and reasons only, never content or keys.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import openai
import redis

from automem.classify import canonical_type
from automem.embedding.openai import DEFAULT_BASE_URL
from automem.settings import Settings
from automem.timeutil import now_iso

log = logging.getLogger(__name__)

KEY_PREFIX = "automem:llm:"
BREAKER_KEY = KEY_PREFIX + "breaker"
RATE_KEY = KEY_PREFIX + "rate"
STREAK_KEY = KEY_PREFIX + "failure_streak"
STATS_KEY = KEY_PREFIX + "stats"
STAT_FIELDS = ("calls", "successes", "failures", "rate_limited", "paused", "breaker_opened")

RATE_WINDOW_MS = 60_000
FAILURES_TO_OPEN = 5
# A failure streak older than this is stale: isolated failures hours apart should not add up.
STREAK_TTL_SECONDS = 600
# A Retry-After of days is honoured up to a day, so a bogus header cannot park the LLM for good.
MAX_RETRY_AFTER_SECONDS = 86_400.0
CLASSIFY_INPUT_CHARS = 1000
SENTENCE_INPUT_CHARS = 4000
MISSING_CONFIDENCE = 0.7

# HTTP statuses that say the endpoint as a whole is unusable, not just this request.
_ENDPOINT_STATUSES = (401, 403, 404)

T = TypeVar("T")


class LlmError(Exception):
    """Base of every error an `LlmClient` call raises."""


class LlmPaused(LlmError):
    """The circuit breaker is open (after a 429, a quota error or repeated failures)."""

    def __init__(self, retry_after: float, reason: str = "") -> None:
        super().__init__(f"LLM calls are paused for {retry_after:.1f}s ({reason or 'breaker open'})")
        self.retry_after = retry_after
        self.reason = reason


class LlmRateLimited(LlmError):
    """This minute's call budget (AUTOMEM_LLM_RATE_PER_MINUTE) is spent."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"LLM call budget spent; next call in {retry_after:.1f}s")
        self.retry_after = retry_after


class LlmFailed(LlmError):
    """One call failed (timeout, connection, HTTP error, unusable reply); the breaker may be closed."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class _JsonModeUnsupported(LlmFailed):
    """The server rejected `response_format` (LM Studio and some proxies do); retried without it."""


# Checks the breaker, then takes a slot in the rolling window, and counts the verdict. Returns
# {0} (go), {1, ms, reason} (breaker open) or {2, ms} (budget spent). Refused calls take no slot,
# so a crowd of waiting jobs cannot starve the window.
_GATE_LUA = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('HINCRBY', KEYS[3], 'paused', 1)
  return {1, ttl, redis.call('HGET', KEYS[1], 'reason') or ''}
end
local limit = tonumber(ARGV[1])
if limit > 0 then
  local window = tonumber(ARGV[2])
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  if redis.call('ZCARD', KEYS[2]) >= limit then
    redis.call('HINCRBY', KEYS[3], 'rate_limited', 1)
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {2, tonumber(oldest[2]) + window - now}
  end
  redis.call('ZADD', KEYS[2], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[2], window)
end
redis.call('HINCRBY', KEYS[3], 'calls', 1)
return {0}
"""

_CLASSIFY_PROMPT = """You classify one memory that an AI assistant stored about its user or work.
The types:
- Decision: a choice that was made (a tool, an approach, a plan).
- Pattern: something that recurs or tends to happen.
- Preference: what someone likes, dislikes or favours.
- Style: how something is written, formatted or communicated; conventions.
- Habit: a routine action done regularly.
- Insight: something learned, realised or discovered; a root cause or a lesson.
- Context: background facts, or the situation at a time.
Answer with a JSON object only: {"type": "<one of the seven>", "confidence": <0.0 to 1.0>}."""

_SUMMARIZE_PROMPT = (
    "Compress the memory the user sends to at most {limit} characters. Keep decisions, names, "
    "numbers, dates and outcomes; drop filler. Answer with the compressed text only."
)
_SENTENCE_PROMPT = (
    "Summarise the memory the user sends in one sentence of at most {limit} characters. "
    "Answer with the sentence only."
)

# Names models use for the seven types besides the canonical ones (plurals are handled apart).
_TYPE_ALIASES = {
    "choice": "Decision",
    "decided": "Decision",
    "trend": "Pattern",
    "recurring": "Pattern",
    "pref": "Preference",
    "like": "Preference",
    "dislike": "Preference",
    "favorite": "Preference",
    "favourite": "Preference",
    "convention": "Style",
    "format": "Style",
    "formatting": "Style",
    "tone": "Style",
    "routine": "Habit",
    "learning": "Insight",
    "lesson": "Insight",
    "realization": "Insight",
    "realisation": "Insight",
    "discovery": "Insight",
    "finding": "Insight",
    "background": "Context",
    "fact": "Context",
    "situation": "Context",
}
_FENCED = re.compile(r"^\s*```[\w+-]*[ \t]*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_LABEL = re.compile(r"^(summary|compressed|sentence|compressed memory)\s*:\s*", re.IGNORECASE)


# --- reply parsing ------------------------------------------------------------------------------
def memory_type_for(name: str) -> str | None:
    """One of the seven types for a model's answer ("decisions", "PREF", "**Insight**"), or None."""
    for word in re.findall(r"[a-z]+", name.lower()):
        for candidate in (word, word.removesuffix("s")):
            found = canonical_type(candidate) or _TYPE_ALIASES.get(candidate)
            if found:
                return found
    return None


def _confidence(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return MISSING_CONFIDENCE
    try:
        number = float(str(value).strip().rstrip("%"))
    except ValueError:
        return MISSING_CONFIDENCE
    if math.isnan(number):
        return MISSING_CONFIDENCE
    if 1.0 < number <= 100.0:
        number /= 100.0  # models sometimes answer a percentage
    return min(1.0, max(0.0, number))


def _strip_fences(text: str) -> str:
    match = _FENCED.match(text)
    return (match.group(1) if match else text).strip()


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply, tolerating code fences and chatter around it; ValueError if none."""
    body = _strip_fences(text)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the reply holds no JSON object")
    value = json.loads(body[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("the reply's JSON is not an object")
    return value


def parse_classification(text: str) -> tuple[str, float] | None:
    """(type, confidence) from a classification reply; None for an unknown type, ValueError if no JSON."""
    answer = _json_object(text)
    raw = answer.get("type", answer.get("memory_type", answer.get("category")))
    memory_type = memory_type_for(raw) if isinstance(raw, str) else None
    if memory_type is None:
        return None
    return memory_type, _confidence(answer.get("confidence"))


def _clean_text(text: str) -> str:
    body = _LABEL.sub("", _strip_fences(text)).strip()
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        body = body[1:-1].strip()
    return body


def _shorten(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[: max(1, max_chars - 1)]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


# --- error classification ------------------------------------------------------------------------
def _is_quota_error(exc: openai.APIStatusError) -> bool:
    # OpenAI sends 429 + insufficient_quota; some compatible servers send it with 402/403.
    fields = (exc.code, exc.type)
    if any(isinstance(f, str) and "insufficient_quota" in f for f in fields):
        return True
    return isinstance(exc.body, Mapping) and "insufficient_quota" in json.dumps(exc.body, default=str)


def _header_seconds(value: str, scale: float = 1.0) -> float:
    """A header's delay: a number (times `scale`) or an HTTP date; 0 when absent or malformed."""
    value = value.strip()
    if not value:
        return 0.0
    try:
        return float(value) * scale
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return 0.0


def _retry_after_seconds(headers: Mapping[str, str]) -> float:
    """The longer of `retry-after-ms` (OpenAI's) and `Retry-After` (seconds or an HTTP date)."""
    asked = max(
        _header_seconds(headers.get("retry-after-ms", ""), 0.001),
        _header_seconds(headers.get("retry-after", "")),
    )
    return min(MAX_RETRY_AFTER_SECONDS, max(0.0, asked))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class _Request:
    system: str  # the instructions
    user: str  # the memory text, apart from the instructions so it cannot pose as them
    json_mode: bool = False


# --- the client ------------------------------------------------------------------------------------
class LlmClient:
    """Chat completions behind a Redis-shared circuit breaker and rate limit (see the module doc)."""

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        redis_connection: redis.Redis,
        *,
        rate_per_minute: int,
        breaker_seconds: float,
    ) -> None:
        self.model = model
        self.rate_per_minute = max(0, rate_per_minute)
        self.breaker_seconds = max(0.0, float(breaker_seconds))
        self._client = client
        self._redis = redis_connection
        self._gate = redis_connection.register_script(_GATE_LUA)
        # Flipped off for good once the server rejects response_format; code fences are parsed anyway.
        self._json_mode = True

    @classmethod
    def from_settings(cls, settings: Settings, redis_connection: redis.Redis) -> LlmClient | None:
        """The client for the configured chat endpoint, or None when no LLM is configured or it is off."""
        endpoint = settings.llm_endpoint()
        if endpoint is None:
            return None
        base_url, api_key = endpoint
        # An explicit URL, so the SDK cannot pick up OPENAI_BASE_URL on its own; local servers
        # (Ollama, vLLM) need no key but the SDK insists on one.
        client = openai.OpenAI(
            base_url=base_url or DEFAULT_BASE_URL,
            api_key=api_key or "not-needed",
            timeout=settings.llm_timeout_seconds,
            max_retries=0,
        )
        return cls(
            client,
            settings.llm_model,
            redis_connection,
            rate_per_minute=settings.llm_rate_per_minute,
            breaker_seconds=settings.llm_breaker_seconds,
        )

    # --- the tasks ----------------------------------------------------------------------------
    def classify(self, content: str) -> tuple[str, float] | None:
        """(one of the seven memory types, confidence 0..1), or None when the model names no known type."""
        request = _Request(_CLASSIFY_PROMPT, content[:CLASSIFY_INPUT_CHARS], json_mode=True)
        return self._chat(request, parse_classification)

    def summarize(self, content: str, target_chars: int) -> str | None:
        """A compressed version of `content`, or None unless the model's answer is shorter."""

        def parse(reply: str) -> str | None:
            summary = _clean_text(reply)
            return summary if summary and len(summary) < len(content) else None

        return self._chat(_Request(_SUMMARIZE_PROMPT.format(limit=target_chars), content), parse)

    def summary_sentence(self, content: str, max_chars: int) -> str | None:
        """A one-line summary of at most `max_chars` characters, or None for an empty answer."""

        def parse(reply: str) -> str | None:
            lines = [_clean_text(line) for line in _strip_fences(reply).splitlines()]
            first = next((line for line in lines if line), None)
            return _shorten(first, max_chars) if first else None

        request = _Request(_SENTENCE_PROMPT.format(limit=max_chars), content[:SENTENCE_INPUT_CHARS])
        return self._chat(request, parse)

    # --- shared state for /enrichment/status ------------------------------------------------------
    def breaker_state(self) -> dict[str, Any]:
        """{"open", "retry_after" (seconds), "reason", "opened_at" (ISO)}, the same in every process."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.hgetall(BREAKER_KEY)
        pipe.pttl(BREAKER_KEY)
        fields, ttl_ms = pipe.execute()
        if ttl_ms <= 0:
            return {"open": False, "retry_after": 0.0, "reason": None, "opened_at": None}
        state = {_text(k): _text(v) for k, v in fields.items()}
        return {
            "open": True,
            "retry_after": ttl_ms / 1000.0,
            "reason": state.get("reason"),
            "opened_at": state.get("opened_at"),
        }

    def stats(self) -> dict[str, int]:
        """Counters since the Redis data was last cleared: calls sent, their outcomes, refusals."""
        raw = {_text(k): int(v) for k, v in self._redis.hgetall(STATS_KEY).items()}
        return {name: raw.get(name, 0) for name in STAT_FIELDS}

    # --- one call -------------------------------------------------------------------------------
    def _chat(self, request: _Request, parse: Callable[[str], T]) -> T:
        try:
            return self._attempt(request, parse, request.json_mode and self._json_mode)
        except _JsonModeUnsupported:
            log.info("the LLM endpoint rejects response_format; asking for JSON by prompt only")
            self._json_mode = False
            return self._attempt(request, parse, False)

    def _attempt(self, request: _Request, parse: Callable[[str], T], json_mode: bool) -> T:
        self._acquire()
        try:
            reply = self._send(request, json_mode)
        except openai.OpenAIError as exc:
            self._count("failures")
            raise self._failure(exc, json_mode) from exc
        try:
            result = parse(reply)
        except ValueError as exc:
            self._answered("failures")
            log.warning("unusable LLM reply (%d chars)", len(reply))
            raise LlmFailed("the LLM reply could not be parsed") from exc
        self._answered("successes")
        return result

    def _send(self, request: _Request, json_mode: bool) -> str:
        # No temperature or max_tokens: reasoning models reject both, and the prompts bound the length.
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        response = self._client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            **extra,
        )
        if not response.choices:
            return ""
        return response.choices[0].message.content or ""

    def _acquire(self) -> None:
        """Pass the breaker and take a rate slot, or raise LlmPaused / LlmRateLimited."""
        try:
            verdict = self._gate(
                keys=[BREAKER_KEY, RATE_KEY, STATS_KEY],
                args=[self.rate_per_minute, RATE_WINDOW_MS, uuid.uuid4().hex],
            )
        except redis.RedisError as exc:
            raise LlmFailed("cannot reach Redis for the LLM breaker and rate limit") from exc
        code = int(verdict[0])
        if code == 1:
            raise LlmPaused(int(verdict[1]) / 1000.0, _text(verdict[2]))
        if code == 2:
            raise LlmRateLimited(max(0.001, int(verdict[1]) / 1000.0))

    # --- failures and the breaker -------------------------------------------------------------
    def _failure(self, exc: openai.OpenAIError, json_mode: bool) -> LlmError:
        """The exception to raise for a failed request; opens the breaker when the failure calls for it."""
        if isinstance(exc, openai.APIStatusError):
            return self._status_failure(exc, json_mode)
        if isinstance(exc, openai.APIConnectionError):  # timeouts included
            self._note_endpoint_failure()
            kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "could not connect"
        else:
            kind = "failed"  # e.g. a response the SDK cannot validate
        log.warning("LLM call %s (%s)", kind, type(exc).__name__)
        return LlmFailed(f"LLM call {kind} ({type(exc).__name__})")

    def _status_failure(self, exc: openai.APIStatusError, json_mode: bool) -> LlmError:
        status = exc.status_code
        quota = _is_quota_error(exc)
        if status == 429 or quota:
            seconds = max(self.breaker_seconds, _retry_after_seconds(exc.response.headers))
            reason = "quota" if quota else "rate_limited"
            self._open_breaker(seconds, reason, status)
            return LlmPaused(seconds, reason)
        if json_mode and status == 400 and "response_format" in str(exc.message):
            return _JsonModeUnsupported("the endpoint rejects response_format", status_code=status)
        if status >= 500 or status in _ENDPOINT_STATUSES:
            self._note_endpoint_failure()
        log.warning("LLM call failed with HTTP %d", status)
        # The server's message is left out: it can quote a (masked) key or the request.
        code = f", {exc.code}" if exc.code else ""
        return LlmFailed(f"LLM call failed with HTTP {status}{code}", status_code=status)

    def _open_breaker(self, seconds: float, reason: str, status: int | None = None) -> None:
        if seconds <= 0:
            return  # AUTOMEM_LLM_BREAKER_SECONDS=0 and no Retry-After: no breaker
        log.warning("LLM breaker open for %.0fs (%s, HTTP %s)", seconds, reason, status or "-")
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(BREAKER_KEY)
            pipe.hset(BREAKER_KEY, mapping={"reason": reason, "opened_at": now_iso()})
            pipe.pexpire(BREAKER_KEY, max(1, int(seconds * 1000)))
            pipe.hincrby(STATS_KEY, "breaker_opened", 1)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("cannot store the LLM breaker in Redis (%s)", type(exc).__name__)

    def _note_endpoint_failure(self) -> None:
        """Count a failure of the whole endpoint; FAILURES_TO_OPEN in a row open the breaker."""
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.incr(STREAK_KEY)
            pipe.expire(STREAK_KEY, STREAK_TTL_SECONDS)
            streak = int(pipe.execute()[0])
        except redis.RedisError as exc:
            log.warning("cannot count LLM failures in Redis (%s)", type(exc).__name__)
            return
        if streak >= FAILURES_TO_OPEN:
            self._reset_streak()
            self._open_breaker(self.breaker_seconds, "failing")

    def _reset_streak(self) -> None:
        try:
            self._redis.delete(STREAK_KEY)
        except redis.RedisError as exc:
            log.warning("cannot reset the LLM failure streak in Redis (%s)", type(exc).__name__)

    def _answered(self, field: str) -> None:
        """Count the outcome of a call the endpoint answered; it is alive, so any failure streak ends."""
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.hincrby(STATS_KEY, field, 1)
            pipe.delete(STREAK_KEY)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("cannot count LLM %s in Redis (%s)", field, type(exc).__name__)

    def _count(self, field: str) -> None:
        # Counters are for display; losing one must not fail the call.
        try:
            self._redis.hincrby(STATS_KEY, field, 1)
        except redis.RedisError as exc:
            log.warning("cannot count LLM %s in Redis (%s)", field, type(exc).__name__)
