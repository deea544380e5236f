"""API-key and admin-token checks.

The API token is read from `X-API-Key`, `Authorization: Bearer`, or `?api_key=` (when allowed)
and compared in constant time. Admin routes additionally need the admin token, read as AutoMem
reads it: `X-Admin-Token`, `X-Admin-Api-Key`, or `?admin_token=` (when query tokens are allowed).
As AutoMem, a missing or wrong admin token is a 401 and an unconfigured one a 403; and
GET /backup takes the admin token alone.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import current_app, request

from automem.errors import ConfigurationError, Forbidden, Unauthorized
from automem.settings import Settings, host_is_loopback

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

# /viewer: AutoMem serves its viewer paths without a key (they answer 503 until /ui/ exists).
PUBLIC_PATHS = ("/health", "/metrics", "/viewer")
# Routes AutoMem serves on the admin token alone (its API-key check skips them).
ADMIN_ONLY_PATHS = ("/backup",)


def _matches(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def presented_token(settings: Settings) -> str | None:
    header = request.headers.get("X-API-Key")
    if header:
        return header.strip()
    auth = request.headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    if settings.allow_query_token:
        return request.args.get("api_key")
    return None


def presented_admin_token(settings: Settings) -> str | None:
    for header in ("X-Admin-Token", "X-Admin-Api-Key"):
        value = request.headers.get(header)
        if value:
            return value.strip()
    return request.args.get("admin_token") if settings.allow_query_token else None


def is_admin(settings: Settings) -> bool:
    return bool(settings.admin_token) and _matches(presented_admin_token(settings), str(settings.admin_token))


def is_public(path: str, settings: Settings | None = None) -> bool:
    """/health and /viewer always; /metrics unless AUTOMEM_METRICS_REQUIRE_KEY."""
    public: tuple[str, ...] = PUBLIC_PATHS
    if settings is not None and settings.metrics_require_key:
        public = tuple(p for p in PUBLIC_PATHS if p != "/metrics")
    return any(path == p or path.startswith(p + "/") for p in public)


def check_api_key(settings: Settings) -> None:
    """Before every request: 401 unless the route is public or the token matches."""
    if request.method == "OPTIONS" or is_public(request.path, settings) or not settings.api_token:
        return
    if request.path in ADMIN_ONLY_PATHS and is_admin(settings):
        return
    if not _matches(presented_token(settings), settings.api_token):
        raise Unauthorized("missing or invalid API token (send X-API-Key or Authorization: Bearer)")


def require_admin(view: F) -> F:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        settings: Settings = current_app.extensions["automem"].settings
        if not settings.admin_token:
            raise Forbidden(
                "admin routes are disabled: ADMIN_API_TOKEN is not configured", reason="admin_disabled"
            )
        if not is_admin(settings):
            message = "Admin authorization required: send a valid X-Admin-Token"
            raise Unauthorized(message, reason="admin_required")
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def check_bind_allowed(settings: Settings, host: str | None = None) -> None:
    """Refuse to serve a non-loopback address without an API token."""
    address = host or settings.host
    if not settings.api_token and not host_is_loopback(address):
        raise ConfigurationError(
            f"refusing to bind {address} without AUTOMEM_API_TOKEN: set a token, or bind 127.0.0.1"
        )
    if not settings.api_token:
        log.warning("AUTOMEM_API_TOKEN is not set: accepting unauthenticated requests on %s", address)
