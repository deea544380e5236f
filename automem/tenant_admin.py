"""The tenant lifecycle (create, describe, set limits, erase) and the limits a write must fit.

The admin's routes (`/admin/tenants`) call these. `default` always exists (every memory stored
before tenants belongs to it) and cannot be deleted; other tenants are created first, then keys
are minted for them.
"""

from __future__ import annotations

import logging
from typing import Any

from automem.errors import AutomemError, InvalidInput, NotFound, PayloadTooLarge, RateLimited
from automem.record import DEFAULT_TENANT
from automem.services import Services
from automem.tenants import LIMIT_FIELDS, check_tenant_name, ensure_new_tenant
from automem.timeutil import now_iso

log = logging.getLogger(__name__)

ERASE_PAGE = 500


def _access(svc: Services) -> Any:
    if svc.keys is None or svc.tenants is None:
        raise RuntimeError("tenants are not wired into this process")
    return svc.keys.store


def create(svc: Services, name: str, limits: dict[str, int | None]) -> dict[str, Any]:
    check_tenant_name(name, "name")
    props = {"name": name, "created_at": now_iso(), **{k: v for k, v in limits.items() if v is not None}}
    ensure_new_tenant(_access(svc), props)
    return describe(svc, name)


def describe(svc: Services, name: str) -> dict[str, Any]:
    record = _access(svc).get_tenant(name)
    if record is None and name != DEFAULT_TENANT:
        raise NotFound(f"tenant {name} not found", field="name")
    record = record or {"name": DEFAULT_TENANT, "created_at": None}
    limits = {f: record.get(f) for f in LIMIT_FIELDS}
    keys = _access(svc).list_keys(name)
    return {
        "name": name,
        "created_at": record.get("created_at"),
        "limits": limits,
        "usage": svc.graph.tenant_usage(name),
        "keys": sum(1 for k in keys if not k.get("revoked_at")),
    }


def listing(svc: Services) -> list[dict[str, Any]]:
    names = {r["name"] for r in _access(svc).list_tenants()} | {DEFAULT_TENANT}
    return [describe(svc, n) for n in sorted(names)]


def update(svc: Services, name: str, changes: dict[str, int | None]) -> dict[str, Any]:
    store = _access(svc)
    if name == DEFAULT_TENANT and store.get_tenant(name) is None:
        store.create_tenant({"name": DEFAULT_TENANT, "created_at": now_iso()})
    if store.update_tenant(name, changes) is None:
        raise NotFound(f"tenant {name} not found", field="name")
    if svc.tenants is not None:
        svc.tenants.forget()
    return describe(svc, name)


def erase(svc: Services, name: str) -> dict[str, Any]:
    """Delete the tenant: every memory (graph node, edges, history, vector point), entity and
    key of it, then the tenant record; the receipt counts what went."""
    if name == DEFAULT_TENANT:
        raise InvalidInput("the default tenant cannot be deleted", field="name")
    store = _access(svc)
    if store.get_tenant(name) is None:
        raise NotFound(f"tenant {name} not found", field="name")
    keys = store.delete_tenant(name)  # keys first: nothing can write to it while it goes
    if svc.keys is not None and svc.tenants is not None:
        svc.keys.forget()
        svc.tenants.forget()
    counts = erase_data(svc, name)
    jobs = svc.jobs.cancel_tenant(name)
    idempotency = svc.idempotency.clear(name)
    log.info("tenant %s erased: %s", name, counts)
    return {
        "status": "success",
        "tenant": name,
        "deleted": True,
        "removed": {
            **counts,
            "keys": keys,
            "idempotency_keys": idempotency,
            "queued_jobs": jobs,
        },
        "at": now_iso(),
    }


def erase_data(svc: Services, tenant: str, vectors: bool = True) -> dict[str, int]:
    """Delete every memory of `tenant` (node, edges, history and, with `vectors`, its point),
    then its entities and remaining history events; the counts removed. (A restore's staging
    tenant has no points, and its marked ids are not point ids.)"""
    counts = {"memories": 0, "edges": 0, "history_events": 0, "vectors": 0}
    while ids := svc.graph.tenant_ids_page(tenant, ERASE_PAGE):
        if vectors and svc.vectors is not None:
            counts["vectors"] += len(svc.vectors.retrieve(ids, fields=("rev",)))
            svc.vectors.delete(ids)
        for key, value in svc.graph.erase_memories(tenant, ids).items():
            counts[key] += value
    rest = svc.graph.erase_tenant_rest(tenant)
    counts["history_events"] += rest["history_events"]
    return {**counts, "entities": rest["entities"]}


def check_write(svc: Services, tenant: str, memories: int, content_chars: int) -> None:
    """413/429 when adding these memories would take the tenant over a limit of its own."""
    if svc.tenants is None:
        return
    limits = svc.tenants.limits(tenant)
    if "max_memories" not in limits and "max_content_bytes" not in limits:
        return
    usage = svc.graph.tenant_usage(tenant)
    adding = {"memories": memories, "content_bytes": content_chars}
    for limit, used, error, reason in _QUOTAS:
        cap = limits.get(limit)
        if cap is not None and usage[used] + adding[used] > cap:
            raise error(
                f"tenant {tenant} holds {usage[used]} of its {cap} {used.replace('_', ' ')}; "
                f"{adding[used]} more would exceed {limit}",
                reason=reason,
                field=limit,
                extra={"limit": limit, "limit_value": cap, "usage": usage[used]},
            )


# (limit, the usage it bounds, the error past it, its reason)
_QUOTAS: tuple[tuple[str, str, type[AutomemError], str], ...] = (
    ("max_memories", "memories", RateLimited, "tenant_memory_limit"),
    ("max_content_bytes", "content_bytes", PayloadTooLarge, "tenant_content_limit"),
)
