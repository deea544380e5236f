"""Import an archive into one tenant (POST /admin/restore?tenant=T): all of it, or nothing.

The archive is validated whole first (as a full restore does), then:

1. A tenant-admin key may import only an archive of its own tenant (the header's `tenant`); the
   admin token may import any archive into any tenant. `mode=empty` (default) refuses a tenant
   that holds memories (409 `store_not_empty`); `mode=replace` replaces them. A memory id of the
   archive that another tenant holds is a 409 `id_conflict` (ids are unique in the store).
2. The records are written into the live graph under a hidden staging tenant `<T>~import`,
   every key marked with a leading `~` (memory ids, history `memory_id`s, entity keys), so
   nothing staged is visible to any key or collides with the tenant's current nodes.
3. One Cypher query commits: it deletes the tenant's current nodes and turns the staged ones into
   the tenant's (FalkorDB runs a query as one transaction, and a unique-key violation rolls all
   of it back). Before it nothing visible changed; a failure before it removes the staging, and
   a crash leaves only the hidden staging, which the next import of the tenant removes.
4. Vectors are derived: the points of the tenant's old and new memories are dropped and rewritten
   from the graph; the tenant's stored idempotent answers are dropped; reconcile queues whatever
   lacks an embedding or enrichment.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from automem.backlog import queue_missing_work
from automem.backup import ArchiveCheck, checked_records
from automem.errors import Conflict, Forbidden
from automem.restore import ArchiveWriter, require_compatible, restore_lock, spooled, tee
from automem.stores.graph_lifecycle import NODE_KEYS
from automem.tenant_admin import erase_data

if TYPE_CHECKING:
    from automem.services import Services

MARK = "~"
PAGE = 500


def staging_tenant(tenant: str) -> str:
    return f"{tenant}{MARK}import"


def restore_into_tenant(
    svc: Services, chunks: Iterable[bytes], tenant: str, mode: str, own_archives_only: bool
) -> dict[str, Any]:
    with restore_lock(svc), tempfile.TemporaryFile(prefix="automem-import-") as spool:
        check = ArchiveCheck(settings=svc.settings)
        for _ in checked_records(tee(chunks, spool), check):
            pass
        source = (check.header or {}).get("tenant")
        if own_archives_only and source != tenant:
            raise Forbidden(
                f"this archive is {'of tenant ' + source if source else 'a whole store'}; "
                f"a tenant-admin key of {tenant} imports its own tenant's archives only",
                reason="foreign_archive",
            )
        require_compatible(svc, check)
        _require_importable(svc, tenant, mode, check)
        staging = staging_tenant(tenant)
        erase_data(svc, staging, vectors=False)  # what an interrupted import left
        try:
            writer = _stage(svc, spool, check, tenant, staging)
            old_ids = _ids_of(svc, tenant)
            replaced = svc.graph.commit_staged_tenant(staging, tenant, MARK)
        except BaseException:
            erase_data(svc, staging, vectors=False)
            raise
        _refresh_vectors(svc, old_ids, sorted(check.memory_ids))
        svc.idempotency.clear(tenant)
    return {
        "status": "success",
        "mode": mode,
        "tenant": tenant,
        "archive_tenant": source,
        "restored": {
            "memories": writer.counts["memory"],
            "events": writer.counts["event"],
            "nodes": writer.counts["node"],
            "edges": writer.counts["edge"],
        },
        "replaced_nodes": replaced,
        "queued": queue_missing_work(svc),
    }


def _require_importable(svc: Services, tenant: str, mode: str, check: ArchiveCheck) -> None:
    held = svc.graph.tenant_usage(tenant)["memories"]
    if mode != "replace" and held:
        raise Conflict(
            f"tenant {tenant} holds {held} memories; import with mode=replace to replace them",
            reason="store_not_empty",
            extra={"counts": {"Memory": held}},
        )
    ids = sorted(check.memory_ids)
    for start in range(0, len(ids), PAGE):
        owners = svc.graph.tenants_of(ids[start : start + PAGE])
        taken = sorted(i for i, owner in owners.items() if owner != tenant)
        if taken:
            raise Conflict(
                f"{len(taken)} memory ids of the archive belong to another tenant (e.g. {taken[0]}); "
                "ids are unique in the store",
                reason="id_conflict",
                field="id",
            )


def _stage(svc: Services, spool: Any, check: ArchiveCheck, tenant: str, staging: str) -> ArchiveWriter:
    spool.seek(0)
    writer = ArchiveWriter(svc.graph)
    for record in checked_records(spooled(spool)):
        staged = staged_record(record, tenant, staging)
        if staged is not None:
            writer.add(staged)
    writer.flush()
    writer.require_complete(check)
    return writer


def staged_record(record: dict[str, Any], tenant: str, staging: str) -> dict[str, Any] | None:
    """The record as it is written under the staging tenant (None: not written; vectors are
    rebuilt from the graph)."""
    kind = record["kind"]
    if kind in ("memory", "event", "node"):
        props = dict(record["props"])
        source = str(props.get("tenant") or "")
        props["tenant"] = staging
        for name in ("id", "memory_id"):
            if isinstance(props.get(name), str):
                props[name] = MARK + props[name]
        if isinstance(props.get("dedup_key"), str):
            props["dedup_key"] = MARK + tenant + ":" + props["dedup_key"].split(":", 1)[-1]
        for name in ("key", "merged_into"):
            if isinstance(props.get(name), str):
                props[name] = _entity_key(props[name], source, tenant)
        if isinstance(props.get("alias_keys"), list):
            props["alias_keys"] = [_entity_key(str(k), source, tenant) for k in props["alias_keys"]]
        return {**record, "props": props}
    if kind == "edge":
        return {
            **record,
            "from": _staged_end(record["from"], tenant),
            "to": _staged_end(record["to"], tenant),
        }
    return None


def _entity_key(key: str, source: str, tenant: str) -> str:
    """`<tenant>:<kind>:<slug>` of the archive's tenant, as the target tenant's, marked."""
    rest = key[len(source) + 1 :] if source and key.startswith(source + ":") else key.split(":", 1)[-1]
    return f"{MARK}{tenant}:{rest}"


def _staged_end(end: dict[str, Any], tenant: str) -> dict[str, Any]:
    label, key = end["label"], end["key"]
    if NODE_KEYS.get(label) == "key":
        prefix = str(key).split(":", 1)[0]
        return {"label": label, "key": _entity_key(str(key), prefix, tenant)}
    return {"label": label, "key": MARK + str(key)}


def _ids_of(svc: Services, tenant: str) -> list[str]:
    return [i for page in svc.graph.tenant_id_pages(tenant, PAGE) for i in page]


def _refresh_vectors(svc: Services, old_ids: list[str], new_ids: list[str]) -> None:
    """Points of the replaced memories go; the imported ones are written from the graph (a
    point of the same id may hold a newer rev than the archive's memory, so it is dropped
    first rather than compared)."""
    if svc.vectors is not None:
        every = sorted(set(old_ids) | set(new_ids))
        for start in range(0, len(every), PAGE):
            svc.vectors.delete(every[start : start + PAGE])
    for start in range(0, len(new_ids), PAGE):
        svc.sync.request(new_ids[start : start + PAGE])
