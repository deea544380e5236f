"""Who a request is, and what it may do.

The API key is read from `X-API-Key`, `Authorization: Bearer`, or `?api_key=` (when allowed).
`AUTOMEM_API_TOKEN` (compared in constant time) is a `write` key of tenant `default`; a minted
key (`amk_...`, `automem.tenants`) carries its own tenant and scope. Admin routes need the admin
token, read as AutoMem reads it: `X-Admin-Token`, `X-Admin-Api-Key`, or `?admin_token=` (when
query tokens are allowed). As AutoMem, a missing or wrong admin token is a 401 and an
unconfigured one a 403; GET /backup, /admin/keys and /admin/tenants take the admin token alone.
A key whose scope is too small for the route is a 403 `insufficient_scope`.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from dataclasses import replace
from functools import wraps
from typing import Any, TypeVar

from flask import current_app, g, request

from automem.errors import ConfigurationError, Forbidden, Unauthorized
from automem.record import DEFAULT_TENANT
from automem.settings import Settings, host_is_loopback
from automem.tenants import LEGACY, KeyRing, Principal, Scope, digest, looks_like_key

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

# /viewer: AutoMem serves its viewer paths without a key (they lead to the dashboard, /ui/).
PUBLIC_PATHS = ("/health", "/metrics", "/viewer", "/ui")  # /ui signs in with its own session
# Routes served on the admin token alone (AutoMem's /backup; tenants and keys, which no API key
# manages).
ADMIN_ONLY_PATHS = ("/backup", "/admin/keys", "/admin/tenants")
# POST routes that only read (POST /recall exists for bodies too long for a query string;
# POST /admin/existing takes up to 2000 keys): a read key may call them.
READ_ONLY_ENDPOINTS = {"recall.recall_post", "admin.existing"}


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


def is_admin_token(settings: Settings, token_digest: str) -> bool:
    """Whether `token_digest` is the SHA-256 of the configured admin token (a dashboard session
    keeps the digest, so rotating the token ends its admin rights)."""
    return bool(settings.admin_token) and _matches(token_digest, digest(str(settings.admin_token)))


def is_admin_secret(settings: Settings, given: str | None) -> bool:
    return bool(settings.admin_token) and _matches(given, str(settings.admin_token))


def is_admin(settings: Settings) -> bool:
    return is_admin_secret(settings, presented_admin_token(settings))


def principal_of(settings: Settings, keys: KeyRing | None, token: str) -> Principal | None:
    """Whom a presented API key stands for: the legacy token, a live minted key, or None."""
    if settings.api_token and _matches(token, settings.api_token):
        return LEGACY
    return keys.resolve(token) if keys is not None and looks_like_key(token) else None


def is_public(path: str, settings: Settings | None = None) -> bool:
    """/health and /viewer always; /metrics unless AUTOMEM_METRICS_REQUIRE_KEY."""
    public: tuple[str, ...] = PUBLIC_PATHS
    if settings is not None and settings.metrics_require_key:
        public = tuple(p for p in PUBLIC_PATHS if p != "/metrics")
    return any(path == p or path.startswith(p + "/") for p in public)


def authenticate(settings: Settings, keys: KeyRing | None) -> None:
    """Before every request: who it acts as (`g.principal`), and 401/403 unless that principal
    may call the route with this method. Public routes need no key (and see no tenant's data)."""
    g.principal = None
    if request.method == "OPTIONS" or is_public(request.path, settings):
        return
    principal = _principal(settings, keys)
    if is_admin(settings):
        principal = replace(principal, admin=True)
    needed = needed_scope()
    if not principal.allows(needed):
        raise Forbidden(
            f"this key's scope is {principal.scope}; {request.method} {request.path} needs {needed}",
            reason="insufficient_scope",
            extra={"scope": str(principal.scope), "required_scope": str(needed)},
        )
    g.principal = principal


def _principal(settings: Settings, keys: KeyRing | None) -> Principal:
    token = presented_token(settings)
    if token:
        found = principal_of(settings, keys, token)
        if found is None:
            raise Unauthorized(
                "invalid, revoked or expired API key (send X-API-Key or Authorization: Bearer)"
            )
        return found
    if is_admin(settings) and _admin_only(request.path):
        return Principal(DEFAULT_TENANT, Scope.TENANT_ADMIN, admin=True)
    if not settings.api_token:
        return LEGACY  # a loopback-only stack without a token (check_bind_allowed)
    raise Unauthorized("missing or invalid API token (send X-API-Key or Authorization: Bearer)")


def _admin_only(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in ADMIN_ONLY_PATHS)


def needed_scope() -> Scope:
    """read for GET and the POST routes that only read, write for every other method; routes
    that need more say so with `require_tenant_admin` or `require_admin`."""
    if request.method in ("GET", "HEAD") or request.endpoint in READ_ONLY_ENDPOINTS:
        return Scope.READ
    return Scope.WRITE


def principal() -> Principal:
    """The request's principal (set by `authenticate`)."""
    found: Principal | None = g.get("principal")
    return found if found is not None else LEGACY


def current_tenant() -> str:
    return principal().tenant


def tenant_bound() -> str | None:
    """The tenant a service-wide route is narrowed to: None for the global admin (every
    tenant), else the key's tenant."""
    found = principal()
    return None if found.admin else found.tenant


def require_admin(view: F) -> F:
    """The global admin token."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _check_admin(current_app.extensions["automem"].settings)
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def require_tenant_admin(view: F) -> F:
    """A tenant-admin key of the tenant, or the global admin token."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        found = principal()
        if found.key_id and not found.admin and found.scope is not Scope.TENANT_ADMIN:
            raise Forbidden(
                f"this key's scope is {found.scope}; {request.method} {request.path} needs tenant-admin",
                reason="insufficient_scope",
                extra={"scope": str(found.scope), "required_scope": str(Scope.TENANT_ADMIN)},
            )
        if not (found.key_id and found.scope is Scope.TENANT_ADMIN):
            _check_admin(current_app.extensions["automem"].settings)
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _check_admin(settings: Settings) -> None:
    if not settings.admin_token:
        raise Forbidden(
            "admin routes are disabled: ADMIN_API_TOKEN is not configured", reason="admin_disabled"
        )
    if not is_admin(settings):
        message = (
            "Admin authorization required: send a valid X-Admin-Token "
            "(or a tenant-admin key where the route takes one)"
        )
        raise Unauthorized(message, reason="admin_required")


def check_bind_allowed(settings: Settings, host: str | None = None) -> None:
    """Refuse to serve a non-loopback address without an API token."""
    address = host or settings.host
    if not settings.api_token and not host_is_loopback(address):
        raise ConfigurationError(
            f"refusing to bind {address} without AUTOMEM_API_TOKEN: set a token, or bind 127.0.0.1"
        )
    if not settings.api_token:
        log.warning("AUTOMEM_API_TOKEN is not set: accepting unauthenticated requests on %s", address)
