"""What the sync and async clients share: the call description, the retry policy, the headers
and the parsing of answers. Only the sending differs between the two clients."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import httpx
from pydantic import BaseModel

from automem import __version__
from automem.client.errors import ApiError, RequestTimeout, TransportError, error_from_response

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT = 25.0
DEFAULT_DELAYS = (0.5, 1.0, 2.0)
# Writes whose retry could repeat an effect carry an Idempotency-Key: the service then answers
# a retried request with the first response instead of acting twice.
Params = list[tuple[str, str | int | float | bool | None]]
_KEYED = {("POST", "/memory"), ("POST", "/memory/batch"), ("PATCH", "/memory/")}


@dataclass(frozen=True)
class RetryPolicy:
    """Retries after a network error or a 5xx answer; a 4xx is never retried.

    The defaults are AutoMem's client contract: 3 retries, sleeping 0.5, 1 and 2 seconds. 501
    (a route this server does not implement) is not retried: it cannot change in seconds."""

    retries: int = 3
    delays: tuple[float, ...] = DEFAULT_DELAYS

    def delay(self, retry: int) -> float:
        """Seconds to sleep before retry number `retry` (0-based)."""
        return self.delays[min(retry, len(self.delays) - 1)] if self.delays else 0.0

    @staticmethod
    def retryable(status: int) -> bool:
        return status >= 500 and status != 501


@dataclass
class Call(Generic[T]):
    """One API call: the request, and how to read a successful answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Params | None = None
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    admin: bool = False
    # Statuses that are answers, not errors (GET /health answers 503 with a full report).
    accept: tuple[int, ...] = ()
    # Stream the body (backups): the time budget then covers the wait for the headers only.
    stream: bool = False


def model(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate(response.json())


def json_of(response: httpx.Response) -> Any:
    return response.json()


def text_of(response: httpx.Response) -> str:
    return response.text


def body(fields: Mapping[str, Any], allowed: frozenset[str], what: str) -> dict[str, Any]:
    """A JSON body from keyword fields: unknown names are a TypeError here (the service would
    silently ignore a misspelt field), datetimes become ISO 8601."""
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise TypeError(f"{what} got unexpected field(s): {', '.join(unknown)}")
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in fields.items()}


def query(params: Mapping[str, Any]) -> Params:
    """Query parameters; lists repeat the parameter, None leaves it out, bools are true/false."""
    out: Params = []
    for name, value in params.items():
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if item is None:
                continue
            out.append((name, ("true" if item else "false") if isinstance(item, bool) else str(item)))
    return out


class Base:
    """Configuration shared by both clients."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        admin_token: str | None,
        timeout: float,
        retry: RetryPolicy | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.admin_token = admin_token
        self.timeout = timeout
        self.retry = retry or RetryPolicy()

    def _headers(self, call: Call[Any]) -> dict[str, str]:
        headers = {"User-Agent": f"automem-python/{__version__}", "Accept": "application/json"}
        if self.api_key:
            headers["X-API-Key"] = self.api_key
        if call.admin and self.admin_token:
            headers["X-Admin-Token"] = self.admin_token
        if _keyed(call) and "Idempotency-Key" not in call.headers:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        return {**headers, **call.headers}

    def _request(
        self,
        client: httpx.Client | httpx.AsyncClient,
        call: Call[Any],
        headers: dict[str, str],
        budget: float,
    ) -> httpx.Request:
        timeout = httpx.Timeout(self.timeout) if call.stream else httpx.Timeout(max(budget, 0.001))
        return client.build_request(
            call.method,
            call.path,
            params=call.params,
            json=call.json,
            content=call.content,
            headers=headers,
            timeout=timeout,
        )


def _keyed(call: Call[Any]) -> bool:
    return any(
        call.method == m and (call.path == p or (p.endswith("/") and call.path.startswith(p)))
        for m, p in _KEYED
    )


@dataclass
class Attempts:
    """The retry loop's state for one call: which attempt this is and how much time is left.

    The time budget covers the whole call, retries and sleeps included, so a caller with a hard
    deadline (an MCP client's 30 s) always gets an answer or an error in time."""

    policy: RetryPolicy
    budget: float
    started: float = field(default_factory=time.monotonic)
    retry: int = 0

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def next_delay(self, error: Exception) -> float:
        """The sleep before the next attempt, or re-raise `error` when no attempt is left."""
        if self.retry >= self.policy.retries:
            raise _final(error)
        delay = self.policy.delay(self.retry)
        if delay >= self.remaining():
            raise _final(error, timed_out=True)
        self.retry += 1
        return delay


def outcome(call: Call[T], response: httpx.Response) -> T:
    """The parsed answer, or the ApiError for an error status."""
    if response.status_code >= 400 and response.status_code not in call.accept:
        raise error_from_response(response)
    return call.parse(response)


def failure(call: Call[Any], response: httpx.Response) -> ApiError | None:
    """A retryable error answer as an exception (the retry loop decides), else None."""
    if response.status_code in call.accept or not RetryPolicy.retryable(response.status_code):
        return None
    return error_from_response(response)


def transport_error(exc: httpx.TransportError) -> TransportError:
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeout(f"no answer in time: {exc.__class__.__name__}")
    return TransportError(f"{exc.__class__.__name__}: {exc}")


def _final(error: Exception, timed_out: bool = False) -> Exception:
    if isinstance(error, ApiError):
        return error
    if timed_out and not isinstance(error, RequestTimeout):
        return RequestTimeout(f"time budget spent after {error}")
    return error


def archive_bytes(archive: str | Path | bytes | BinaryIO) -> bytes:
    # Held in memory so a retried upload sends the same bytes again.
    if isinstance(archive, bytes):
        return archive
    if isinstance(archive, str | Path):
        return Path(archive).read_bytes()
    return archive.read()
