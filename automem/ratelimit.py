"""Abuse limits on the HTTP API: per-key rate limits on mutating routes, and CORS.

A tenant with `writes_per_minute` set gets that budget over all of its keys (429
`tenant_rate_limited`), wherever its clients are.

Rate limit: at most AUTOMEM_RATE_LIMIT_PER_MINUTE POST/PATCH/DELETE requests per API key (or per
client address when no key is sent) in each clock minute, counted in Redis so every API process
shares the budget; beyond it, 429 `rate_limited` with `Retry-After`. POST /recall and POST
/admin/existing only read and are not counted. Loopback clients of a one-machine stack (vectors
in a Qdrant Edge shard, as in the embedded mode: one user on their own machine) are not limited
unless AUTOMEM_RATE_LIMIT_LOOPBACK is set. If Redis cannot count, the request goes through: a
limiter must not take the API down.

CORS is off unless AUTOMEM_CORS_ORIGINS names origins (flask-cors answers preflights).
"""

from __future__ import annotations

import hashlib
import logging
import time

import redis
from flask import Flask, Response, g, request
from flask_cors import CORS

from automem.auth import READ_ONLY_ENDPOINTS, presented_token
from automem.errors import RateLimited
from automem.settings import Settings, host_is_loopback
from automem.tenants import TenantBook

log = logging.getLogger(__name__)

MUTATING = {"POST", "PATCH", "PUT", "DELETE"}
WINDOW_SECONDS = 60


def init_app(app: Flask, settings: Settings, connection: redis.Redis, tenants: TenantBook | None) -> None:
    if settings.cors_origins.strip():
        origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
        CORS(
            app, origins="*" if origins == ["*"] else origins, expose_headers=["X-Request-ID", "Retry-After"]
        )

    @app.before_request
    def _limit() -> None:
        if request.method not in MUTATING or request.endpoint in READ_ONLY_ENDPOINTS:
            return
        if tenants is not None and g.get("principal") is not None:
            _limit_tenant(connection, tenants, g.principal.tenant)
        if settings.rate_limit_per_minute <= 0 or _exempt(settings):
            return
        retry_after = _over_budget(connection, _client_key(settings), settings.rate_limit_per_minute)
        if retry_after is not None:
            g.retry_after = retry_after
            limit = settings.rate_limit_per_minute
            raise RateLimited(f"more than {limit} write requests in a minute; retry in {retry_after} s")

    @app.after_request
    def _retry_after_header(response: Response) -> Response:
        retry_after = getattr(g, "retry_after", None)
        if retry_after is not None and response.status_code == 429:
            response.headers["Retry-After"] = str(retry_after)
        return response


def _limit_tenant(connection: redis.Redis, tenants: TenantBook, tenant: str) -> None:
    """The tenant's own `writes_per_minute`, over every key of it (loopback clients included)."""
    limit = tenants.limits(tenant).get("writes_per_minute")
    if limit is None:
        return
    bucket = hashlib.sha256(f"tenant:{tenant}".encode()).hexdigest()[:24]
    retry_after = _over_budget(connection, bucket, limit)
    if retry_after is not None:
        g.retry_after = retry_after
        raise RateLimited(
            f"tenant {tenant} is limited to {limit} write requests a minute; retry in {retry_after} s",
            reason="tenant_rate_limited",
            field="writes_per_minute",
            extra={"limit": "writes_per_minute", "limit_value": limit},
        )


def _exempt(settings: Settings) -> bool:
    address = request.remote_addr or ""
    return settings.single_host and not settings.rate_limit_loopback and host_is_loopback(address)


def _client_key(settings: Settings) -> str:
    token = presented_token(settings)
    identity = f"key:{token}" if token else f"addr:{request.remote_addr}"
    # Only a digest of the key is stored: Redis never holds a usable token.
    return hashlib.sha256(identity.encode()).hexdigest()[:24]


def _over_budget(connection: redis.Redis, client: str, limit: int) -> int | None:
    """Count this request; seconds until the window ends when it is over the limit, else None."""
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    key = f"automem:ratelimit:{client}:{window}"
    try:
        pipe = connection.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, WINDOW_SECONDS * 2)
        count = int(pipe.execute()[0])
    except redis.exceptions.RedisError:
        log.warning("rate limiter could not reach Redis; request allowed")
        return None
    if count <= limit:
        return None
    return max(1, int((window + 1) * WINDOW_SECONDS - now) + 1)
