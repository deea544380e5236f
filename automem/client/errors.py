"""The SDK's exceptions: one tree that mirrors the service's error envelope.

Every HTTP error becomes an `ApiError` carrying the envelope's HTTP status (`status`, the
envelope's `code`), `message`, machine `reason` and `field` (`{"status": "error", "code": 400,
"message": ..., "error": ..., "reason": "invalid_input", "field": ...}`), as a subclass chosen by
the status, so callers catch exactly what they handle:

    AutomemClientError
    ├── TransportError                 the request never got an answer (after the retries)
    │   └── RequestTimeout             the call's time budget ran out
    └── ApiError                       the service answered with an error status
        ├── BadRequestError            400 invalid input (`field` names it)
        ├── AuthenticationError        401 missing or wrong API key
        ├── PermissionDeniedError      403 admin token missing or wrong, admin routes disabled
        ├── NotFoundError              404 unknown memory (or not recoverable any more)
        ├── ConflictError              409 version conflict, duplicate id, idempotency key reuse
        ├── PayloadTooLargeError       413
        ├── RateLimitError             429 (`retry_after` seconds)
        └── ServerError                5xx (retried before it is raised)
            ├── NotImplementedByServer 501 a SPEC route this server does not implement yet
            └── ServiceUnavailableError 503 the graph store is unreachable
"""

from __future__ import annotations

from typing import Any

import httpx


class AutomemClientError(Exception):
    """Base of every error the SDK raises."""


class TransportError(AutomemClientError):
    """No answer: connection refused or reset, DNS failure, broken response, after every retry."""


class RequestTimeout(TransportError):
    """The call's time budget (retries included) ran out before an answer came."""


class ApiError(AutomemClientError):
    """The service answered with an error status; the fields are its error envelope's."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        reason: str | None = None,
        field: str | None = None,
        body: Any = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason  # the envelope's machine code, e.g. "invalid_input"
        self.field = field
        self.body = body
        self.request_id = request_id

    def __str__(self) -> str:
        where = f", field {self.field}" if self.field else ""
        return f"{self.status} {self.reason or 'error'}{where}: {self.message}"


class BadRequestError(ApiError):
    pass


class AuthenticationError(ApiError):
    pass


class PermissionDeniedError(ApiError):
    pass


class NotFoundError(ApiError):
    pass


class ConflictError(ApiError):
    pass


class PayloadTooLargeError(ApiError):
    pass


class RateLimitError(ApiError):
    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(ApiError):
    pass


class NotImplementedByServer(ServerError):
    pass


class ServiceUnavailableError(ServerError):
    pass


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
    501: NotImplementedByServer,
    503: ServiceUnavailableError,
}


def error_from_response(response: httpx.Response) -> ApiError:
    """The exception for an error response: the envelope's fields when the body is one, else
    the status and the start of the body (a proxy's HTML page, say)."""
    status = response.status_code
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    said = body.get("message", body.get("error")) if isinstance(body, dict) else None
    if isinstance(said, str):
        message, reason, field = said, body.get("reason"), body.get("field")
    else:
        message, reason, field = (response.text[:200] or response.reason_phrase), None, None
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    kwargs: dict[str, Any] = {
        "status": status,
        "reason": reason,
        "field": field,
        "body": body,
        "request_id": response.headers.get("X-Request-ID"),
    }
    if cls is RateLimitError:
        kwargs["retry_after"] = _seconds(response.headers.get("Retry-After"))
    return cls(message, **kwargs)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
