"""Tenants and scoped keys against the real embedded stack: minting, revocation across processes,
isolation of every by-id route, per-tenant entities and deduplication, limits, erasure, export."""

from __future__ import annotations

import gzip
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from automem.app import create_app, stop_app
from automem.cli import main
from automem.services import Services
from automem.settings import Settings
from tests.conftest import ADMIN_TOKEN, Api
from tests.tenancy import ADMIN_ONLY, create_tenant, keyed, mint, store


def test_a_key_is_minted_listed_without_its_secret_and_revoked(client: FlaskClient, api: Api) -> None:
    create_tenant(client, "acme")
    minted = mint(client, "acme", "write", name="ci bot")
    assert minted["key"].startswith("amk_") and len(minted["key"]) > 40
    assert {"id", "tenant", "scope", "name", "created_at", "expires_at"} <= set(minted)
    listing = client.get("/admin/keys", headers=ADMIN_ONLY).get_json()
    shown = [k for k in listing["keys"] if k["id"] == minted["id"]]
    assert shown and shown[0]["active"] is True and shown[0]["tenant"] == "acme"
    assert minted["key"] not in json.dumps(listing) and "digest" not in json.dumps(listing)
    acme = Api(client, minted["key"])
    memory_id = store(acme, "Acme deploys on Tuesdays")
    assert acme.get(f"/memory/{memory_id}").status_code == 200
    assert api.get(f"/memory/{memory_id}").status_code == 404  # the default tenant's key
    revoked = client.delete(f"/admin/keys/{minted['id']}", headers=ADMIN_ONLY)
    assert revoked.status_code == 200 and revoked.get_json()["key"]["active"] is False
    refused = acme.get(f"/memory/{memory_id}")
    assert refused.status_code == 401 and refused.get_json()["code"] == 401
    assert client.delete("/admin/keys/nope", headers=ADMIN_ONLY).status_code == 404
    assert api.get("/admin/keys").status_code == 401  # an API key is not the admin token


def test_revocation_reaches_another_api_process_within_a_second(
    client: FlaskClient, settings: Settings, tmp_path: Path
) -> None:
    # Another API process of the same store (its own vector shard: only one process opens one).
    elsewhere = settings.model_copy(update={"data_dir": str(tmp_path / "other")})
    other: Flask = create_app(elsewhere, start_vector_drain=False)
    try:
        minted = mint(client, "default", "read")
        there = Api(other.test_client(), minted["key"])
        assert there.get("/memory/by-tag?tags=x").status_code == 200  # cached as live there
        assert client.delete(f"/admin/keys/{minted['id']}", headers=ADMIN_ONLY).status_code == 200
        time.sleep(1.1)
        assert there.get("/memory/by-tag?tags=x").status_code == 401
    finally:
        stop_app(other)


def test_an_expired_or_unknown_key_is_refused(client: FlaskClient) -> None:
    expired = mint(client, "default", "write", expires_at="2020-01-01T00:00:00Z")
    assert Api(client, expired["key"]).get("/tags").status_code == 401
    assert Api(client, "amk_" + "x" * 43).get("/tags").status_code == 401
    assert (
        client.post(
            "/admin/keys", json={"tenant": "nowhere", "scope": "read"}, headers=ADMIN_ONLY
        ).status_code
        == 404
    )
    bad_scope = client.post("/admin/keys", json={"tenant": "default", "scope": "owner"}, headers=ADMIN_ONLY)
    assert bad_scope.status_code == 400 and bad_scope.get_json()["field"] == "scope"


def test_another_tenants_memory_is_not_found_by_any_route(client: FlaskClient) -> None:
    create_tenant(client, "alpha")
    create_tenant(client, "beta")
    alpha, beta = keyed(client, "alpha"), keyed(client, "beta")
    a1 = store(alpha, "Alpha's deploy key lives in the vault", tags=["alpha-ops"])
    a2 = store(alpha, "Alpha rotates the vault monthly", tags=["alpha-ops"])
    b1 = store(beta, "Beta uses a password manager", tags=["beta-ops"])
    assert (
        alpha.post("/associate", json={"memory1_id": a1, "memory2_id": a2, "type": "RELATES_TO"}).status_code
        == 201
    )
    for method, path, body in [
        ("GET", f"/memory/{a1}", None),
        ("PATCH", f"/memory/{a1}", {"content": "stolen"}),
        ("DELETE", f"/memory/{a1}", None),
        ("POST", f"/memory/{a1}/recover", None),
        ("GET", f"/memory/{a1}/history", None),
        ("GET", f"/memories/{a1}/related", None),
        ("GET", f"/graph/neighbors/{a1}", None),
    ]:
        response = beta._call(method, path, json=body)
        assert response.status_code == 404, (method, path, response.get_json())
    crossing = beta.post("/associate", json={"memory1_id": b1, "memory2_id": a1, "type": "RELATES_TO"})
    assert crossing.status_code == 404
    listing = beta.get("/memory/by-tag?tags=alpha-ops").get_json()
    assert listing["count"] == 0 if "count" in listing else listing["memories"] == []
    assert "alpha" not in json.dumps(beta.get("/tags").get_json())
    recalled = beta.get("/recall?query=vault deploy key&limit=20").get_json()
    assert a1 not in json.dumps(recalled) and a2 not in json.dumps(recalled)
    assert alpha.get(f"/memory/{a1}").get_json()["memory"]["content"].startswith("Alpha's deploy key")
    related = alpha.get(f"/memories/{a1}/related").get_json()
    assert [m["id"] for m in related["related_memories"]] == [a2]


def test_entities_and_deduplication_stay_within_a_tenant(
    client: FlaskClient, services: Services, jobs: Any
) -> None:
    create_tenant(client, "north")
    create_tenant(client, "south")
    north, south = keyed(client, "north"), keyed(client, "south")
    text = "Met Marie Curie at the PostgreSQL conference"
    n1 = store(north, text, tags=["entity:people:marie-curie"])
    s1 = south.post("/memory", json={"content": text, "tags": ["entity:people:marie-curie"]})
    assert s1.status_code == 201 and s1.get_json().get("deduplicated") is not True
    assert s1.get_json()["memory_id"] != n1
    jobs()
    for tenant_api, other_id in ((north, s1.get_json()["memory_id"]), (south, n1)):
        entity = tenant_api.get("/entity/marie-curie").get_json()
        assert other_id not in json.dumps(entity)
    keys = {k for k, t in _entity_tenants(services).items() if "marie-curie" in k}
    assert {t for k, t in _entity_tenants(services).items() if k in keys} == {"north", "south"}


def _entity_tenants(services: Services) -> dict[str, str]:
    bound = services.graph.node_id_bound()
    return {
        props["key"]: props["tenant"]
        for labels, props in services.graph.nodes_window(0, bound)
        if labels == ["Entity"]
    }


def test_limits_refuse_with_the_limit_named_and_write_nothing(
    client: FlaskClient, services: Services
) -> None:
    create_tenant(client, "small", max_memories=2, max_content_bytes=60)
    small = keyed(client, "small")
    store(small, "first")
    store(small, "second")
    over = small.post("/memory", json={"content": "third"})
    body = over.get_json()
    assert (
        over.status_code == 429
        and body["reason"] == "tenant_memory_limit"
        and body["field"] == "max_memories"
    )
    assert body["limit"] == "max_memories" and body["limit_value"] == 2
    batch = small.post("/memory/batch", json={"memories": [{"content": "x"}]})
    assert batch.status_code == 429
    assert services.graph.tenant_usage("small")["memories"] == 2
    raised = client.patch("/admin/tenants/small", json={"max_memories": None}, headers=ADMIN_ONLY)
    assert raised.status_code == 200 and raised.get_json()["tenant"]["limits"]["max_memories"] is None
    big = small.post("/memory", json={"content": "y" * 80})
    assert big.status_code == 413 and big.get_json()["reason"] == "tenant_content_limit"
    assert big.get_json()["field"] == "max_content_bytes"
    assert services.graph.tenant_usage("small") == {
        "memories": 2,
        "content_bytes": len("first") + len("second"),
    }


def test_a_tenants_write_rate_is_limited_across_its_keys(
    client: FlaskClient, services: Services, one_minute: None
) -> None:
    create_tenant(client, "chatty", writes_per_minute=3)
    one, two = keyed(client, "chatty"), keyed(client, "chatty")
    statuses = [
        api.post("/memory", json={"content": f"note {n}"}).status_code
        for n, api in enumerate([one, two, one, two])
    ]
    assert statuses == [201, 201, 201, 429]
    refused = two.post("/memory", json={"content": "one more"})
    assert refused.get_json()["reason"] == "tenant_rate_limited" and refused.headers.get("Retry-After")
    assert (
        keyed(client, "default").post("/memory", json={"content": "default is not limited"}).status_code
        == 201
    )


def test_erasing_a_tenant_removes_everything_of_it_and_returns_a_receipt(
    client: FlaskClient, services: Services, jobs: Any
) -> None:
    create_tenant(client, "gone")
    gone = keyed(client, "gone")
    stay = keyed(client, "default")
    kept = store(stay, "The default tenant keeps this")
    ids = [store(gone, f"Gone memory {n} mentions Ada Lovelace", tags=["gone-topic"]) for n in range(3)]
    gone.post("/associate", json={"memory1_id": ids[0], "memory2_id": ids[1], "type": "RELATES_TO"})
    gone.delete(f"/memory/{ids[2]}")
    jobs()
    assert services.vectors is not None and len(services.vectors.retrieve(ids)) >= 2
    receipt = client.delete("/admin/tenants/gone", headers=ADMIN_ONLY)
    assert receipt.status_code == 200, receipt.get_json()
    removed = receipt.get_json()["removed"]
    assert removed["memories"] == 3 and removed["edges"] >= 1 and removed["keys"] == 1
    assert removed["history_events"] >= 1 and removed["vectors"] >= 2
    assert services.graph.tenant_usage("gone")["memories"] == 0
    assert services.vectors.retrieve(ids) == []
    assert _entity_tenants(services) == {k: t for k, t in _entity_tenants(services).items() if t != "gone"}
    assert gone.get("/tags").status_code == 401
    assert client.delete("/admin/tenants/gone", headers=ADMIN_ONLY).status_code == 404
    assert stay.get(f"/memory/{kept}").status_code == 200
    assert client.delete("/admin/tenants/default", headers=ADMIN_ONLY).status_code == 400


def test_a_tenant_admin_key_exports_its_own_tenant_only(client: FlaskClient) -> None:
    create_tenant(client, "owner")
    owner_admin = keyed(client, "owner", "tenant-admin")
    owner = keyed(client, "owner")
    mine = store(owner, "Owner's memory", tags=["owner-tag"])
    theirs = store(keyed(client, "default"), "Default's memory", tags=["default-tag"])
    response = owner_admin.get("/backup")
    assert response.status_code == 200
    records = [json.loads(line) for line in gzip.decompress(response.data).splitlines()]
    assert records[0]["tenant"] == "owner"
    text = json.dumps(records)
    assert mine in text and theirs not in text and "Default's memory" not in text
    assert owner.get("/backup").status_code == 403  # a write key is not enough
    everything = client.get("/backup?tenant=default", headers=ADMIN_ONLY)
    assert theirs.encode() in gzip.decompress(everything.data)


def test_tenants_are_created_listed_and_described(client: FlaskClient, api: Api) -> None:
    created = create_tenant(client, "team-1", writes_per_minute=100)
    assert created["limits"]["writes_per_minute"] == 100 and created["usage"]["memories"] == 0
    again = client.post("/admin/tenants", json={"name": "team-1"}, headers=ADMIN_ONLY)
    assert again.status_code == 409 and again.get_json()["reason"] == "tenant_exists"
    bad = client.post("/admin/tenants", json={"name": "Team One!"}, headers=ADMIN_ONLY)
    assert bad.status_code == 400 and bad.get_json()["field"] == "name"
    names = [t["name"] for t in client.get("/admin/tenants", headers=ADMIN_ONLY).get_json()["tenants"]]
    assert names == sorted(names) and {"default", "team-1"} <= set(names)
    assert client.get("/admin/tenants/none-such", headers=ADMIN_ONLY).status_code == 404
    assert api.get("/admin/tenants", headers=ADMIN_ONLY).status_code == 200  # API key + admin token


@pytest.mark.parametrize("scope", ["read", "write"])
def test_a_smaller_scope_is_refused_with_403_and_writes_nothing(
    client: FlaskClient, services: Services, scope: str
) -> None:
    writer = keyed(client, "default")
    memory_id = store(writer, "Something to protect", tags=["guarded"])
    limited = keyed(client, "default", scope)
    before = services.graph.counts()["total"]
    attempts = [
        limited.post("/memory", json={"content": "sneaky"}),
        limited.delete(f"/memory/{memory_id}?hard=true"),
        limited.delete("/memory/by-tag?tags=guarded&hard=true"),
        limited.post("/enrichment/reprocess", json={"all": True}),
    ]
    expected = [403, 403, 403, 403] if scope == "read" else [201, 403, 403, 403]
    assert [a.status_code for a in attempts] == expected
    for attempt in attempts:
        if attempt.status_code == 403:
            assert attempt.get_json()["reason"] == "insufficient_scope"
    assert services.graph.counts()["total"] == before + (1 if scope == "write" else 0)
    assert limited.get(f"/memory/{memory_id}").status_code == 200


def test_health_without_a_key_shows_no_tenant_data(client: FlaskClient) -> None:
    create_tenant(client, "private")
    store(keyed(client, "private"), "Private memory", tags=["private-tag"])
    body = json.dumps(client.get("/health").get_json())
    assert "private" not in body.lower() and str(uuid.UUID(int=0)) not in body


def test_cli_keys_and_tenants_round_trip(
    client: FlaskClient,
    live_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ADMIN_API_TOKEN", ADMIN_TOKEN)

    def cli(*argv: str) -> dict[str, Any]:
        assert main(list(argv)) == 0
        return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]

    made = cli("tenants", "--url", live_url, "create", "cli-team", "--max-memories", "10")
    assert made["tenant"]["limits"]["max_memories"] == 10
    minted = cli(
        "keys", "--url", live_url, "create", "--tenant", "cli-team", "--scope", "write", "--name", "bot"
    )
    memory_id = store(Api(client, minted["key"]), "Stored with a key from the CLI")
    listed = cli("keys", "--url", live_url, "list", "--tenant", "cli-team")
    assert [k["id"] for k in listed["keys"]] == [minted["id"]] and minted["key"] not in json.dumps(listed)
    shown = cli("tenants", "--url", live_url, "show", "cli-team")
    assert shown["tenant"]["usage"]["memories"] == 1 and shown["tenant"]["keys"] == 1
    cli("tenants", "--url", live_url, "limit", "cli-team", "--max-memories", "0")
    assert cli("tenants", "--url", live_url, "show", "cli-team")["tenant"]["limits"]["max_memories"] is None
    assert cli("keys", "--url", live_url, "revoke", minted["id"])["key"]["active"] is False
    assert Api(client, minted["key"]).get(f"/memory/{memory_id}").status_code == 401
    receipt = cli("tenants", "--url", live_url, "delete", "cli-team", "--yes")
    assert receipt["removed"]["memories"] == 1
    assert main(["tenants", "--url", live_url, "delete", "cli-team", "--yes"]) == 2
    assert "404" in capsys.readouterr().err


def test_the_sdk_works_within_its_keys_tenant(client: FlaskClient, live_url: str) -> None:
    from automem.client import AutomemClient, NotFoundError

    create_tenant(client, "sdk-a")
    create_tenant(client, "sdk-b")
    key_a, key_b = (mint(client, t, "write")["key"] for t in ("sdk-a", "sdk-b"))
    with AutomemClient(live_url, api_key=key_a) as a, AutomemClient(live_url, api_key=key_b) as b:
        stored = a.store("SDK tenant A prefers Rust for the CLI", tags=["sdk-a-lang"])
        assert a.get(stored.memory_id).content.startswith("SDK tenant A")
        with pytest.raises(NotFoundError):
            b.get(stored.memory_id)
        assert stored.memory_id not in {r.memory.id for r in b.recall("Rust CLI", limit=10).results}
        assert stored.memory_id in {r.memory.id for r in a.recall("Rust CLI", limit=10).results}


def test_jobs_carry_their_tenant_and_a_tenants_erasure_cancels_them(
    client: FlaskClient, services: Services
) -> None:
    from rq.job import Job

    from enrichment.context import use_services
    from enrichment.intake import dispatch_intake

    create_tenant(client, "busy")
    busy, other = keyed(client, "busy"), keyed(client, "default")
    for n in range(3):
        store(busy, f"Busy tenant memory {n}")
    store(other, "Default tenant memory")
    use_services(services)
    dispatch_intake()  # the intake becomes embed and enrich jobs, one tenant per job
    waiting = [
        Job.fetch(i, connection=services.queue_redis)
        for name in ("embed", "enrich")
        for i in services.jobs.queues[name].get_job_ids()
    ]
    named = [(job.func_name.rsplit(".", 1)[-1], job.meta.get("tenant")) for job in waiting]
    tenants = sorted(n for n in named if n[0] in ("embed_memories", "enrich_memories"))
    assert ("embed_memories", "busy") in tenants and ("enrich_memories", "default") in tenants
    assert all(t in ("busy", "default") for _, t in tenants)
    receipt = client.delete("/admin/tenants/busy", headers=ADMIN_ONLY).get_json()
    assert receipt["removed"]["queued_jobs"] == sum(1 for _, t in tenants if t == "busy")
    left = [
        Job.fetch(i, connection=services.queue_redis)
        for name in ("embed", "enrich")
        for i in services.jobs.queues[name].get_job_ids()
    ]
    assert {j.meta.get("tenant") for j in left if j.func_name.endswith("_memories")} == {"default"}
