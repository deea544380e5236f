"""Importing an archive into one tenant (POST /admin/restore?tenant=T): the tenant becomes the
archive, or stays as it was; other tenants never change."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from automem.services import Services
from tests.conftest import Api
from tests.tenancy import ADMIN_ONLY, create_tenant, keyed, store


def _export(api: Api) -> bytes:
    response = api.get("/backup")
    assert response.status_code == 200, response.get_json()
    return bytes(response.data)


def _state(archive: bytes) -> dict[str, Any]:
    """What a tenant holds, as its export says (no times of the export itself)."""
    records = [json.loads(line) for line in gzip.decompress(archive).splitlines()]
    memories = {
        r["props"]["id"]: (
            r["props"]["content"],
            sorted(r["props"]["tags"]),
            r["props"]["state"],
            r["props"]["version"],
        )
        for r in records
        if r["kind"] == "memory"
    }
    edges = sorted(
        (r["type"], str(r["from"]["key"]), str(r["to"]["key"])) for r in records if r["kind"] == "edge"
    )
    nodes = sorted(str(r["props"].get("key") or r["props"].get("id")) for r in records if r["kind"] == "node")
    events = sum(1 for r in records if r["kind"] == "event")
    return {"memories": memories, "edges": edges, "nodes": nodes, "events": events}


def _import(api: Api, archive: bytes, query: str = "", headers: dict[str, str] | None = None) -> Any:
    extra = {"Content-Type": "application/gzip", **(headers or {})}
    return api.post(f"/admin/restore{query}", data=archive, headers=extra)


@pytest.fixture
def source(client: FlaskClient, jobs: Any) -> dict[str, Any]:
    """Tenant `src` with memories, an association, entities and history; `default` holds one."""
    create_tenant(client, "src")
    writer, admin = keyed(client, "src"), keyed(client, "src", "tenant-admin")
    ids = [
        store(writer, "Ada Lovelace wrote the first program", tags=["src-topic:history"]),
        store(writer, "Grace Hopper built the first compiler", tags=["src-topic:history", "people"]),
        store(writer, "The team prefers Postgres", tags=["src-topic:db"]),
    ]
    assert (
        writer.post(
            "/associate", json={"memory1_id": ids[0], "memory2_id": ids[1], "type": "RELATES_TO"}
        ).status_code
        == 201
    )
    assert writer.patch(f"/memory/{ids[2]}", json={"importance": 0.9}).status_code == 200
    jobs()
    other = store(keyed(client, "default"), "Default's memory stays put")
    return {"writer": writer, "admin": admin, "ids": ids, "other": other}


def test_a_tenant_admin_restores_its_own_export_over_later_changes(
    client: FlaskClient, services: Services, source: dict[str, Any], jobs: Any
) -> None:
    admin, writer, ids = source["admin"], source["writer"], source["ids"]
    archive = _export(admin)
    before = _state(archive)
    later = store(writer, "Written after the export")
    assert writer.delete(f"/memory/{ids[0]}").status_code == 200
    assert writer.patch(f"/memory/{ids[1]}", json={"content": "Changed after the export"}).status_code == 200
    refused = _import(admin, archive)
    assert refused.status_code == 409 and refused.get_json()["reason"] == "store_not_empty"
    response = _import(admin, archive, "?mode=replace")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["tenant"] == "src" and body["restored"]["memories"] == 3
    jobs()
    assert _state(_export(admin)) == before
    assert writer.get(f"/memory/{later}").status_code == 404
    assert (
        writer.get(f"/memory/{ids[1]}").get_json()["memory"]["content"]
        == "Grace Hopper built the first compiler"
    )
    assert services.vectors is not None and services.vectors.retrieve([later]) == []
    assert {p.id for p in services.vectors.retrieve(ids)} == set(ids)
    found = writer.get("/recall?query=first compiler&limit=5").get_json()
    assert ids[1] in [r["memory"]["id"] for r in found["results"]]
    assert Api(client).get(f"/memory/{source['other']}").status_code == 200
    assert services.graph.tenant_usage("src~import")["memories"] == 0


def test_an_archive_moves_into_another_tenant_with_its_entities(
    client: FlaskClient, services: Services, source: dict[str, Any], jobs: Any
) -> None:
    archive = _export(source["admin"])
    before = _state(archive)
    assert client.delete("/admin/tenants/src", headers=ADMIN_ONLY).status_code == 200
    create_tenant(client, "dst")
    response = _import(Api(client), archive, "?tenant=dst", ADMIN_ONLY)
    assert response.status_code == 200, response.get_json()
    jobs()
    dst_admin = keyed(client, "dst", "tenant-admin")
    after = _state(_export(dst_admin))
    assert after["memories"] == before["memories"] and after["edges"] == [
        (t, a.replace("src:", "dst:", 1), b.replace("src:", "dst:", 1)) for t, a, b in before["edges"]
    ]
    assert all(not key.startswith("src:") for key in after["nodes"])
    assert keyed(client, "dst").get(f"/memory/{source['ids'][0]}").status_code == 200


def test_refusals_leave_every_tenant_as_it_was(
    client: FlaskClient, services: Services, source: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = source["admin"]
    archive = _export(admin)
    before = _state(archive)
    create_tenant(client, "other")
    other_admin = keyed(client, "other", "tenant-admin")
    foreign = _import(other_admin, archive, "?mode=replace")
    assert foreign.status_code == 403 and foreign.get_json()["reason"] == "foreign_archive"
    elsewhere = _import(admin, archive, "?tenant=other")
    assert elsewhere.status_code == 403
    conflict = _import(Api(client), archive, "?tenant=other", ADMIN_ONLY)
    assert conflict.status_code == 409 and conflict.get_json()["reason"] == "id_conflict"
    truncated = _import(admin, archive[: len(archive) // 2], "?mode=replace")
    assert truncated.status_code == 400
    assert keyed(client, "src", "write").post("/admin/restore?mode=replace", data=archive).status_code == 403

    def broken(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("the store fell over while staging edges")

    monkeypatch.setattr(services.graph, "restore_edges", broken)
    assert _import(admin, archive, "?mode=replace").status_code == 500
    monkeypatch.undo()
    assert _state(_export(admin)) == before
    assert services.graph.tenant_usage("src~import")["memories"] == 0
    assert services.graph.tenant_usage("other")["memories"] == 0
    assert Api(client).get(f"/memory/{source['other']}").status_code == 200
