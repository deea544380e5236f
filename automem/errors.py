"""Exceptions and the one JSON error envelope.

Every error response is `{"status": "error", "error": <message>, "code": <machine code>,
"field": <field, when one is at fault>}`; `envelope()` is the only place that builds it.
"""

from __future__ import annotations

from typing import Any


class AutomemError(Exception):
    """Base of every error that maps to an HTTP response."""

    status = 500
    code = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code
        self.extra = extra or {}


class InvalidInput(AutomemError):
    status = 400
    code = "invalid_input"


class Unauthorized(AutomemError):
    status = 401
    code = "unauthorized"


class Forbidden(AutomemError):
    status = 403
    code = "forbidden"


class NotFound(AutomemError):
    status = 404
    code = "not_found"


class Conflict(AutomemError):
    status = 409
    code = "conflict"


class PayloadTooLarge(AutomemError):
    status = 413
    code = "payload_too_large"


class NotImplementedYet(AutomemError):
    """A route whose feature this process does not have (documented as such)."""

    status = 501
    code = "not_implemented"


class StoreUnavailable(AutomemError):
    """The graph store (the source of truth) cannot be reached."""

    status = 503
    code = "graph_unavailable"


class ConfigurationError(Exception):
    """The service cannot start with this configuration; the message names the fix."""


class ShardLocked(ConfigurationError):
    """The Qdrant Edge shard is open in another process (its WAL lock is held)."""


class DimensionMismatch(ConfigurationError):
    """The vector collection's dimension differs from the embedding provider's."""


def envelope(message: str, code: str, field: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"status": "error", "error": message, "code": code}
    if field:
        body["field"] = field
    body.update(extra)
    return body


class RateLimited(AutomemError):
    status = 429
    code = "rate_limited"
