"""Tenants and API keys: their Cypher, on a graph of their own.

They live in `<graph>__access` on the same FalkorDB server as the memories, not in the memory
graph: a restore swaps the memory graph whole and must not take the keys with it, and a backup of
memories must not carry key digests. A key is stored as the SHA-256 of its secret, never the
secret (`automem.tenants`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.exceptions

from automem.stores.graph import CypherGraph

_TENANT_FIELDS = ("name", "created_at", "max_memories", "max_content_bytes", "writes_per_minute")
_KEY_FIELDS = ("id", "tenant", "scope", "name", "created_at", "expires_at", "revoked_at", "last_used_at")
_UNIQUE = (("Tenant", "name"), ("ApiKey", "id"), ("ApiKey", "digest"))


def _columns(alias: str, fields: Sequence[str]) -> str:
    return ", ".join(f"{alias}.{f}" for f in fields)


def _row(fields: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(fields, values, strict=True))


class AccessStore(CypherGraph):
    """Tenant and key records (`:Tenant {name, limits}`, `:ApiKey {id, tenant, scope, digest}`)."""

    def ensure_schema(self) -> None:
        for label, prop in _UNIQUE:
            try:
                self._query(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
            except redis.exceptions.ResponseError as exc:  # another process got there first
                if "already indexed" not in str(exc).lower():
                    raise
        self._ensure_unique(_UNIQUE)

    # --- tenants --------------------------------------------------------------------------------
    def create_tenant(self, props: dict[str, Any]) -> bool:
        """False when a tenant of that name exists (the unique constraint says so, races included)."""
        try:
            self._query("CREATE (n:Tenant) SET n = $props", {"props": props})
        except redis.exceptions.ResponseError as exc:
            if "unique constraint" in str(exc).lower():
                return False
            raise
        return True

    def get_tenant(self, name: str) -> dict[str, Any] | None:
        rows = self._ro(
            f"MATCH (t:Tenant {{name: $name}}) RETURN {_columns('t', _TENANT_FIELDS)}", {"name": name}
        )
        return _row(_TENANT_FIELDS, rows[0]) if rows else None

    def list_tenants(self) -> list[dict[str, Any]]:
        rows = self._ro(f"MATCH (t:Tenant) RETURN {_columns('t', _TENANT_FIELDS)} ORDER BY t.name")
        return [_row(_TENANT_FIELDS, r) for r in rows]

    def update_tenant(self, name: str, changes: dict[str, Any]) -> dict[str, Any] | None:
        """Set (or, with a None value, remove) the given limits."""
        cypher = f"MATCH (t:Tenant {{name: $name}}) SET t += $changes RETURN {_columns('t', _TENANT_FIELDS)}"
        rows = self._query(cypher, {"name": name, "changes": changes}).result_set
        return _row(_TENANT_FIELDS, rows[0]) if rows else None

    def delete_tenant(self, name: str) -> int:
        """Remove the tenant record and every key of it; the number of keys removed."""
        cypher = """
        MATCH (t:Tenant {name: $name})
        OPTIONAL MATCH (k:ApiKey {tenant: $name})
        WITH t, collect(k) AS keys
        FOREACH (k IN keys | DELETE k)
        DELETE t
        RETURN size(keys)
        """
        rows = self._query(cypher, {"name": name}).result_set
        return int(rows[0][0]) if rows else 0

    # --- keys -----------------------------------------------------------------------------------
    def create_key(self, props: dict[str, Any]) -> None:
        self._query("CREATE (k:ApiKey) SET k = $props", {"props": props})

    def key_by_digest(self, digest: str) -> dict[str, Any] | None:
        cypher = f"MATCH (k:ApiKey {{digest: $digest}}) RETURN {_columns('k', _KEY_FIELDS)}"
        rows = self._ro(cypher, {"digest": digest})
        return _row(_KEY_FIELDS, rows[0]) if rows else None

    def list_keys(self, tenant: str | None = None) -> list[dict[str, Any]]:
        where = "WHERE k.tenant = $tenant" if tenant else ""
        cypher = f"MATCH (k:ApiKey) {where} RETURN {_columns('k', _KEY_FIELDS)} ORDER BY k.created_at, k.id"
        return [_row(_KEY_FIELDS, r) for r in self._ro(cypher, {"tenant": tenant})]

    def revoke_key(self, key_id: str, at: str) -> dict[str, Any] | None:
        """Mark the key revoked (the first revocation's time is kept); None when there is no such key."""
        cypher = f"""
        MATCH (k:ApiKey {{id: $id}})
        SET k.revoked_at = coalesce(k.revoked_at, $at)
        RETURN {_columns("k", _KEY_FIELDS)}
        """
        rows = self._query(cypher, {"id": key_id, "at": at}).result_set
        return _row(_KEY_FIELDS, rows[0]) if rows else None
