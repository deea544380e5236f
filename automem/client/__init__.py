"""The Python SDK of automem: sync and async clients for every route of the HTTP API.

    from automem.client import AutomemClient

    with AutomemClient.from_env() as mem:          # AUTOMEM_ENDPOINT, AUTOMEM_API_KEY
        mem.store("Chose PostgreSQL for ACID transactions", tags=["db"], importance=0.9)
        print(mem.recall("database decisions").results[0].memory.content)

Results are the pydantic models of `automem.schemas` (the server documents its responses with
the same models); errors are the `automem.client.errors` tree. See docs/sdk.md.
"""

from __future__ import annotations

from typing import Any

from automem.client._calls import (
    Association,
    MemoryFields,
    NewMemory,
    RecallParams,
    RelationKey,
    UpdateFields,
)
from automem.client._core import RetryPolicy
from automem.client.aio import AsyncAutomemClient
from automem.client.errors import (
    ApiError,
    AuthenticationError,
    AutomemClientError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    NotImplementedByServer,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeout,
    ServerError,
    ServiceUnavailableError,
    TransportError,
)
from automem.client.sync import AutomemClient


def settings_kwargs() -> dict[str, Any]:
    """Client arguments from the settings registry (environment variables, `.env` not read)."""
    from automem.settings import load_settings

    settings = load_settings()
    return {
        "base_url": settings.client_endpoint,
        "api_key": settings.client_key,
        "admin_token": settings.admin_token,
        "timeout": settings.client_timeout_seconds,
        "retry": RetryPolicy(retries=settings.client_retries),
    }


__all__ = [
    "ApiError",
    "Association",
    "AsyncAutomemClient",
    "AuthenticationError",
    "AutomemClient",
    "AutomemClientError",
    "BadRequestError",
    "ConflictError",
    "MemoryFields",
    "NewMemory",
    "NotFoundError",
    "NotImplementedByServer",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "RecallParams",
    "RelationKey",
    "RequestTimeout",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailableError",
    "TransportError",
    "UpdateFields",
    "settings_kwargs",
]
