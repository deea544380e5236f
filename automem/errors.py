"""Exceptions and the one JSON error envelope.

Every error response is AutoMem's envelope plus ours:

    {"status": "error", "code": <HTTP status, int>, "message": <for humans>,
     "error": <the same message>, "reason": <machine code, e.g. "invalid_input">,
     "field": <the field at fault, when one is>}

AutoMem's clients read `code` and `message`; ours read `reason` and `field`. `envelope()` is the
only place that builds it.
"""

from __future__ import annotations

from typing import Any


class AutomemError(Exception):
    """Base of every error that maps to an HTTP response."""

    status = 500
    reason = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        reason: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if reason:
            self.reason = reason
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        return envelope(self.status, self.message, self.reason, self.field, **self.extra)


class InvalidInput(AutomemError):
    status = 400
    reason = "invalid_input"


class Unauthorized(AutomemError):
    status = 401
    reason = "unauthorized"


class Forbidden(AutomemError):
    status = 403
    reason = "forbidden"


class NotFound(AutomemError):
    status = 404
    reason = "not_found"


class Conflict(AutomemError):
    status = 409
    reason = "conflict"


class PayloadTooLarge(AutomemError):
    status = 413
    reason = "payload_too_large"


class NotImplementedYet(AutomemError):
    """A route whose feature this process does not have (documented as such)."""

    status = 501
    reason = "not_implemented"


class StoreUnavailable(AutomemError):
    """The graph store (the source of truth) cannot be reached."""

    status = 503
    reason = "graph_unavailable"


class ServiceUnavailable(AutomemError):
    """A part of the service other than the graph cannot answer now (the reason says which:
    too_many_streams, events_unavailable, ...)."""

    status = 503
    reason = "unavailable"


class ConfigurationError(Exception):
    """The service cannot start with this configuration; the message names the fix."""


class ShardLocked(ConfigurationError):
    """The Qdrant Edge shard is open in another process (its WAL lock is held)."""


class DimensionMismatch(ConfigurationError):
    """The vector collection's dimension differs from the embedding provider's."""


def envelope(
    status: int, message: str, reason: str, field: str | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "status": "error",
        "code": status,
        "message": message,
        "error": message,
        "reason": reason,
    }
    if field:
        body["field"] = field
    body.update(extra)
    return body


class RateLimited(AutomemError):
    status = 429
    reason = "rate_limited"
