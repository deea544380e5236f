"""Every route against every kind of caller: no key, a wrong, revoked or expired key, a key of
each scope, the legacy API token, the admin token alone and both. An allowed caller gets past
authentication (any status but 401/403); a refused one gets 401 or 403 in the error envelope, and
the refused request changed nothing (memory graph, history, keys and tenants compared before and
after it). Requests carry bodies that would write if they were allowed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from flask.testing import FlaskClient

from automem.api.routes import routes_app
from automem.openapi import routes
from automem.services import Services
from tests.conftest import ADMIN_TOKEN, API_TOKEN
from tests.envelope import envelope_problem
from tests.tenancy import ADMIN_ONLY, create_tenant, mint, store

PUBLIC = {("GET", "/health"), ("GET", "/metrics"), ("GET", "/viewer/"), ("GET", "/viewer/<path:subpath>")}
# A live stream answers for minutes (tests/integration/test_stream.py checks its keys).
SKIPPED = {("GET", "/stream")}
TENANT_ADMIN = {
    ("GET", "/backup"),
    ("GET", "/entities/audit"),
    ("POST", "/entity/<slug>/merge"),
    ("POST", "/enrichment/reprocess"),
    ("POST", "/admin/existing"),
    ("POST", "/admin/restore"),  # into the key's own tenant (the admin token: the whole store)
    ("DELETE", "/memory/<memory_id>?hard=true"),
    ("DELETE", "/memory/by-tag?hard=true"),
}
ADMIN = {
    ("GET", "/admin/jobs"),
    ("GET", "/admin/reembed"),
    ("POST", "/admin/reembed"),
    ("POST", "/admin/sync"),
    ("GET", "/admin/keys"),
    ("POST", "/admin/keys"),
    ("DELETE", "/admin/keys/<key_id>"),
    ("GET", "/admin/tenants"),
    ("POST", "/admin/tenants"),
    ("GET", "/admin/tenants/<name>"),
    ("PATCH", "/admin/tenants/<name>"),
    ("DELETE", "/admin/tenants/<name>"),
}
# Served on the admin token without an API key.
ADMIN_TOKEN_ALONE = {("GET", "/backup")} | {
    r for r in ADMIN if "/admin/keys" in r[1] or "/admin/tenants" in r[1]
}
READ_POSTS = {("POST", "/recall"), ("POST", "/admin/existing")}
LEVELS = ("public", "read", "write", "tenant-admin", "admin")


@dataclass(frozen=True)
class Caller:
    name: str
    headers: dict[str, str]
    level: str  # the highest level it may call: none, admin-alone, read, write, tenant-admin, all


def needed(route: tuple[str, str]) -> str:
    if route in PUBLIC:
        return "public"
    if route in ADMIN:
        return "admin"
    if route in TENANT_ADMIN:
        return "tenant-admin"
    method = route[0]
    return "read" if method == "GET" or route in READ_POSTS else "write"


def allowed(caller: Caller, route: tuple[str, str]) -> bool:
    need = needed(route)
    if need == "public" or caller.level == "all":
        return True
    if caller.level == "none":
        return False
    if caller.level == "admin-alone":
        return route in ADMIN_TOKEN_ALONE
    return need != "admin" and LEVELS.index(need) <= LEVELS.index(caller.level)


def _callers(client: FlaskClient) -> list[Caller]:
    def key(scope: str, **fields: Any) -> dict[str, str]:
        return {"X-API-Key": mint(client, "default", scope, **fields)["key"]}

    revoked = mint(client, "default", "tenant-admin")
    assert client.delete(f"/admin/keys/{revoked['id']}", headers=ADMIN_ONLY).status_code == 200
    return [
        Caller("no key", {}, "none"),
        Caller("wrong key", {"X-API-Key": "amk_" + "w" * 43}, "none"),
        Caller("wrong legacy token", {"X-API-Key": "not-the-token"}, "none"),
        Caller("revoked key", {"X-API-Key": revoked["key"]}, "none"),
        Caller("expired key", key("tenant-admin", expires_at="2021-06-01T00:00:00Z"), "none"),
        Caller("read key", key("read"), "read"),
        Caller("write key", key("write"), "write"),
        Caller("tenant-admin key", key("tenant-admin"), "tenant-admin"),
        Caller("legacy API token", {"X-API-Key": API_TOKEN}, "write"),
        Caller("admin token alone", {"X-Admin-Token": ADMIN_TOKEN}, "admin-alone"),
        Caller("API token and admin token", {"X-API-Key": API_TOKEN, "X-Admin-Token": ADMIN_TOKEN}, "all"),
        Caller("bearer read key", {"Authorization": "Bearer " + key("read")["X-API-Key"]}, "read"),
    ]


def _targets(client: FlaskClient) -> dict[str, Any]:
    writer = {"X-API-Key": API_TOKEN}
    ids = [
        client.post("/memory", json={"content": f"matrix target {n}", "tags": ["matrix"]}, headers=writer)
        for n in range(2)
    ]
    create_tenant(client, "victim")
    return {
        "memory_id": ids[0].get_json()["memory_id"],
        "other_id": ids[1].get_json()["memory_id"],
        "key_id": mint(client, "victim", "read")["id"],
        "name": "victim",
        "slug": "nobody",
    }


def _request(route: tuple[str, str], t: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(method, concrete path, request kwargs) with a body that would write if allowed."""
    method, rule = route
    path = rule.split("?")[0]
    query = rule.split("?")[1] if "?" in rule else ""
    for name in ("memory_id", "key_id", "name", "slug"):
        path = path.replace(f"<{name}>", str(t[name]))
    path = path.replace("<path:subpath>", "index.html")
    bodies: dict[tuple[str, str], Any] = {
        ("POST", "/memory"): {"content": "matrix probe"},
        ("POST", "/memory/batch"): {"memories": [{"content": "batch probe"}]},
        ("PATCH", "/memory/<memory_id>"): {"content": "changed by the matrix"},
        ("POST", "/associate"): {
            "memory1_id": t["memory_id"],
            "memory2_id": t["other_id"],
            "type": "RELATES_TO",
        },
        ("POST", "/admin/keys"): {"tenant": "default", "scope": "tenant-admin"},
        ("POST", "/admin/tenants"): {"name": f"probe-{uuid.uuid4().hex[:6]}"},
        ("PATCH", "/admin/tenants/<name>"): {"max_memories": 1},
        ("POST", "/recall"): {"query": "matrix"},
        ("POST", "/admin/existing"): {"ids": [t["memory_id"]]},
        ("POST", "/entity/<slug>/merge"): {"merge_into": "somebody"},
        ("POST", "/enrichment/reprocess"): {"all": True},
        ("POST", "/consolidate"): {"mode": "decay", "dry_run": False},
    }
    kwargs: dict[str, Any] = {}
    body = bodies.get((method, rule.split("?")[0]))
    if body is not None:
        kwargs["json"] = body
    elif method in ("POST", "PATCH"):
        kwargs["data"] = b""
    if rule.startswith("/memory/by-tag") and method == "DELETE":
        query = "&".join(q for q in ("tags=matrix", query) if q)
    return method, path + (f"?{query}" if query else ""), kwargs


def _state(services: Services) -> tuple[Any, ...]:
    graph = services.graph
    assert services.keys is not None
    access = services.keys.store
    return (
        graph.graph_counts(),
        sorted(r for page in graph.revs_pages(100_000) for r in page),
        access.list_keys(),
        access.list_tenants(),
    )


def test_every_route_against_every_kind_of_caller(client: FlaskClient, services: Services) -> None:
    every = (routes(routes_app()) - SKIPPED) | {r for r in TENANT_ADMIN if "?" in r[1]}
    assert {r for r in TENANT_ADMIN | ADMIN if "?" not in r[1]} <= every, (
        "the table names a route that is gone"
    )
    callers = _callers(client)
    targets = _targets(client)
    failures: list[str] = []
    tried = 0
    for route in sorted(every, key=lambda r: (r[1], r[0])):
        for caller in callers:
            method, path, kwargs = _request(route, targets)
            before = None if allowed(caller, route) else _state(services)
            response = client.open(path, method=method, headers=caller.headers, **kwargs)
            response.get_data()  # a streamed answer (GET /backup) is read to its end
            tried += 1
            label = f"{method} {path} as {caller.name}: {response.status_code}"
            if before is None:
                if response.status_code in (401, 403):
                    failures.append(f"{label}, expected to be let through ({response.get_json()})")
                continue
            if response.status_code not in (401, 403):
                failures.append(f"{label}, expected 401 or 403")
            elif problem := envelope_problem(response.status_code, response.get_json()):
                failures.append(f"{label}: {problem}")
            if _state(services) != before:
                failures.append(f"{label}: a refused request changed the store")
    assert tried >= 50 * len(callers)
    assert not failures, f"{len(failures)} of {tried}:\n" + "\n".join(failures[:40])


def test_a_write_key_sees_its_own_writes_only_in_its_tenant(client: FlaskClient) -> None:
    """The matrix's keys are of `default`; a key of another tenant is refused nothing by scope,
    and reaches none of default's memories."""
    create_tenant(client, "elsewhere")
    theirs = {"X-API-Key": mint(client, "elsewhere", "tenant-admin")["key"]}
    mine = store_default(client)
    for path in (f"/memory/{mine}", f"/memory/{mine}/history", f"/memories/{mine}/related"):
        assert client.get(path, headers=theirs).status_code == 404
    assert client.delete(f"/memory/{mine}?hard=true", headers=theirs).status_code == 404


def store_default(client: FlaskClient) -> str:
    from tests.conftest import Api

    return store(Api(client), "Default's own memory")
