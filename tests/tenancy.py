"""Helpers of the tenant tests: the admin's calls and clients that act with a minted key."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.conftest import ADMIN_TOKEN, Api

ADMIN_ONLY = {"X-Admin-Token": ADMIN_TOKEN}


def create_tenant(client: FlaskClient, name: str, **limits: Any) -> dict[str, Any]:
    response = client.post("/admin/tenants", json={"name": name, **limits}, headers=ADMIN_ONLY)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["tenant"]  # type: ignore[no-any-return]


def mint(client: FlaskClient, tenant: str, scope: str, **fields: Any) -> dict[str, Any]:
    body = {"tenant": tenant, "scope": scope, **fields}
    response = client.post("/admin/keys", json=body, headers=ADMIN_ONLY)
    assert response.status_code == 201, response.get_json()
    return response.get_json()  # type: ignore[no-any-return]


def keyed(client: FlaskClient, tenant: str, scope: str = "write") -> Api:
    """A client of `tenant` with a new key of `scope`."""
    return Api(client, mint(client, tenant, scope)["key"])


def store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["memory_id"]  # type: ignore[no-any-return]
