"""Tenants, scoped API keys and who a request is.

Every memory belongs to one tenant; a request acts as a `Principal`: a tenant and a scope
(`read` < `write` < `tenant-admin`), or the global admin. Keys are minted by the admin
(`POST /admin/keys`): the secret (`amk_` + 256 random bits, URL-safe) is shown once and stored
as its SHA-256 digest only. A slow or keyed hash buys nothing for a random 256-bit secret (no
dictionary to try), and a plain digest needs no server secret to keep or rotate.

Key lookups are cached per process for `KEY_CACHE_SECONDS` (1 s), so a revocation reaches every
API process within a second without a store read on every request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from automem.errors import Conflict, InvalidInput, NotFound
from automem.record import DEFAULT_TENANT
from automem.stores.access import AccessStore
from automem.timeutil import now_iso, parse_iso

KEY_PREFIX = "amk_"
KEY_CACHE_SECONDS = 1.0
TENANT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
# Names the service keeps for itself (a restore into a tenant stages under `<name>~restore`).
_RESERVED = ("~",)


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    TENANT_ADMIN = "tenant-admin"

    def allows(self, needed: Scope) -> bool:
        return _RANK[self] >= _RANK[needed]


_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.TENANT_ADMIN: 2}


@dataclass(frozen=True)
class Principal:
    """Who a request acts as. `admin`: the global admin token was presented."""

    tenant: str
    scope: Scope
    key_id: str | None = None
    admin: bool = False

    def allows(self, needed: Scope) -> bool:
        return self.admin or self.scope.allows(needed)


LEGACY = Principal(DEFAULT_TENANT, Scope.WRITE)  # AUTOMEM_API_TOKEN, or no token configured


def check_tenant_name(name: Any, field: str = "tenant") -> str:
    if not isinstance(name, str) or not TENANT_NAME.fullmatch(name):
        raise InvalidInput(
            f"{field} must be 1-63 characters of a-z, 0-9, '-' and '_', starting with a letter or digit",
            field=field,
        )
    return name


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


class _Recent:
    """Records read from the access store, each trusted for KEY_CACHE_SECONDS (a key's
    revocation or a tenant's new limits reach every process within that time)."""

    MAX_ENTRIES = 10_000  # unknown keys sprayed at the API must not grow it forever

    def __init__(self, read: Callable[[str], dict[str, Any] | None]) -> None:
        self._read = read
        self._entries: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> dict[str, Any] | None:
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(name)
        if entry is not None and now - entry[0] < KEY_CACHE_SECONDS:
            return entry[1]
        record = self._read(name)
        with self._lock:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[name] = (now, record)
        return record

    def forget(self) -> None:
        with self._lock:
            self._entries.clear()


class KeyRing:
    """Minting, listing, revoking and resolving keys (the access store's records)."""

    def __init__(self, store: AccessStore) -> None:
        self.store = store
        self._recent = _Recent(store.key_by_digest)

    # --- resolving a presented key ------------------------------------------------------------
    def resolve(self, secret: str) -> Principal | None:
        """The principal of a live key; None for an unknown, revoked or expired one."""
        return self.resolve_digest(digest(secret))

    def resolve_digest(self, key_digest: str) -> Principal | None:
        """As `resolve`, from the key's digest (what a dashboard session keeps)."""
        record = self._recent.get(key_digest)
        if record is None or record.get("revoked_at"):
            return None
        expires = record.get("expires_at")
        if expires and parse_iso(expires).timestamp() <= time.time():
            return None
        return Principal(str(record["tenant"]), Scope(record["scope"]), str(record["id"]))

    # --- the admin's side ---------------------------------------------------------------------
    def mint(self, tenant: str, scope: Scope, name: str | None, expires_at: str | None) -> dict[str, Any]:
        """A new key; the returned record is the only place its secret ever appears."""
        if self.store.get_tenant(tenant) is None and tenant != DEFAULT_TENANT:
            raise NotFound(f"tenant {tenant} does not exist; create it first", field="tenant")
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        record = {
            "id": uuid.uuid4().hex[:16],
            "tenant": tenant,
            "scope": str(scope),
            "name": name,
            "created_at": now_iso(),
            "expires_at": expires_at,
            "digest": digest(secret),
        }
        self.store.create_key({k: v for k, v in record.items() if v is not None})
        public = {k: v for k, v in record.items() if k != "digest"}
        return {**public, "revoked_at": None, "key": secret}

    def revoke(self, key_id: str) -> dict[str, Any]:
        record = self.store.revoke_key(key_id, now_iso())
        if record is None:
            raise NotFound(f"key {key_id} not found", field="id")
        self.forget()  # this process at once; the others within KEY_CACHE_SECONDS
        return public_key(record)

    def forget(self) -> None:
        self._recent.forget()

    def listing(self, tenant: str | None) -> list[dict[str, Any]]:
        return [public_key(r) for r in self.store.list_keys(tenant)]


def public_key(record: dict[str, Any]) -> dict[str, Any]:
    """What GET /admin/keys shows of a key: never the secret or its digest."""
    shown = {k: v for k, v in record.items() if k not in ("digest", "last_used_at")}
    expires = shown.get("expires_at")
    expired = bool(expires) and parse_iso(str(expires)).timestamp() <= time.time()
    shown["active"] = not shown.get("revoked_at") and not expired
    return shown


def ensure_new_tenant(store: AccessStore, props: dict[str, Any]) -> None:
    if not store.create_tenant(props):
        raise Conflict(f"tenant {props['name']} already exists", field="name", reason="tenant_exists")


LIMIT_FIELDS = ("max_memories", "max_content_bytes", "writes_per_minute")


class TenantBook:
    """Tenant records (their limits), cached per process like keys."""

    def __init__(self, store: AccessStore) -> None:
        self.store = store
        self._recent = _Recent(store.get_tenant)

    def limits(self, tenant: str) -> dict[str, int]:
        """The tenant's limits that are set (none: unlimited)."""
        record = self._recent.get(tenant) or {}
        return {f: int(record[f]) for f in LIMIT_FIELDS if record.get(f) is not None}

    def forget(self) -> None:
        self._recent.forget()
